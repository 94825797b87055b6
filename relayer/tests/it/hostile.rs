//! What an attacker tries over HTTP (issue 23): webhook URLs pointing inside the network,
//! credentials spelled differently, absent or bogus, idempotency keys across callers,
//! registered sessions whose terms differ from the prepared ones, capability tokens at their
//! expiry, replayed signed intents.

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::ISessionWallet::openSessionCall;
use bursar_client::Key;
use bursar_deploy::Contract;
use bursar_egress::Policy;
use bursar_relayer::{hosts, webhooks, Settings};
use serde_json::{json, Value};

use super::api::relayer_with;
use super::flow::{code, prepared_open_call, system, usd, System};
use super::receiver::Receiver;
use super::*;

/// Every way of spelling an internal address is refused at registration; what was allowed
/// under another policy (or resolves elsewhere now) is refused again at delivery, before a
/// byte is sent.
async fn webhooks_never_reach_internal_addresses(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let quick = Settings {
        webhook_attempts: 2,
        webhook_backoff: Duration::from_millis(5),
        ..Settings::default()
    };
    let relayer = relayer_with(
        &db,
        &client,
        Settings {
            webhook_egress: Policy {
                allow_loopback: true,
            },
            ..quick.clone()
        },
    )
    .await;
    let store = db.store().await;
    let host = hosts::create(&store, "e2b-prod", "webhooks").await.unwrap();
    let receiver = Receiver::start().await;
    let port = receiver
        .url
        .parse::<reqwest12::Url>()
        .unwrap()
        .port()
        .unwrap();
    let http = reqwest12::Client::new();
    let create = |base: String, url: String| {
        let http = http.clone();
        let key = host.key.clone();
        async move {
            let r = http
                .post(format!("{base}/v1/webhooks"))
                .bearer_auth(key)
                .json(&json!({ "url": url }))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let base = format!("http://{}", relayer.addr);
    // Allowed with the flag: a literal loopback address and a name resolving to one.
    let mut endpoints = Vec::new();
    for url in [
        receiver.url.clone(),
        format!("http://localhost:{port}/hook"),
    ] {
        let (status, e) = create(base.clone(), url).await;
        assert_eq!(status, 201, "{e}");
        endpoints.push(e["id"].as_str().unwrap().to_owned());
    }
    // Never, even with the flag.
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://0.0.0.0/",
    ] {
        let (status, e) = create(base.clone(), url.into()).await;
        assert_eq!((status, code(&e)), (400, "invalid_request"), "{url}: {e}");
    }
    relayer.shutdown().await;

    // The same database under the default policy.
    let relayer = relayer_with(&db, &client, quick).await;
    let base = format!("http://{}", relayer.addr);
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://[::1]:{port}/"),
        "http://0.0.0.0/".into(),
        "http://2130706433/".into(),
        "http://0x7f.1/".into(),
        "http://169.254.169.254/".into(),
        "http://[::ffff:169.254.169.254]/".into(),
        "http://[::ffff:7f00:1]/".into(),
        "http://10.1.2.3/".into(),
        "http://172.31.255.1/".into(),
        "http://192.168.0.10/".into(),
        "http://100.100.100.200/".into(),
        "http://[fd12::1]/".into(),
        "http://[fe80::1]/".into(),
        "http://224.0.0.251/".into(),
    ] {
        let (status, e) = create(base.clone(), url.clone()).await;
        assert_eq!((status, code(&e)), (400, "invalid_request"), "{url}: {e}");
        assert_eq!(e["details"]["field"], "url", "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("public addresses"),
            "{url}: {e}"
        );
    }
    webhooks::emit(
        &relayer.app,
        &host.id,
        "session.opened",
        "s1",
        "open",
        json!({}),
    )
    .await
    .unwrap();
    let dead = |id: String| {
        let (http, base, key) = (http.clone(), base.clone(), host.key.clone());
        async move {
            let r = http
                .get(format!("{base}/v1/webhooks/{id}/deliveries?status=dead"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap();
            let body: Value = r.json().await.unwrap();
            body["deliveries"].as_array().unwrap().first().cloned()
        }
    };
    for id in endpoints {
        let found = relayer
            .app
            .wait_for(Duration::from_secs(30), || async {
                Ok(dead(id.clone()).await)
            })
            .await
            .unwrap();
        let delivery = found.expect("the delivery is dead-lettered");
        let error = delivery["lastError"].as_str().unwrap();
        assert!(error.contains("loopback"), "{delivery}");
        // No answer: the request was never sent (the receiver answers 401 to anything).
        assert_eq!(delivery["lastStatus"], Value::Null, "{delivery}");
    }
    assert!(
        receiver.accepted().is_empty(),
        "nothing reached the receiver"
    );
    relayer.shutdown().await;
}

/// A request with the `Authorization` header exactly as given (or none).
async fn raw(
    method: reqwest12::Method,
    url: &str,
    authorization: Option<&str>,
    body: Option<Value>,
    idempotency_key: Option<&str>,
) -> (u16, Value, bool) {
    let mut req = reqwest12::Client::new().request(method, url);
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    if let Some(k) = idempotency_key {
        req = req.header("idempotency-key", k);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let replayed = r.headers().contains_key("idempotent-replayed");
    let text = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        replayed,
    )
}

/// The limiter counts principals and addresses, not header bytes: one key re-spelled is one
/// bucket; fresh bogus keys run out the address's failures (and are then not looked up);
/// requests without credentials have their address's bucket.
async fn rate_limits_hold_under_respelled_bogus_and_absent_credentials(db: Db) {
    use reqwest12::Method;
    let (_devnet, client) = devnet(true).await;
    let settings = Settings {
        rate_limit: Some(5.0),
        client_rate_limit: Some(5.0),
        auth_failure_limit: Some(2.0),
        ..Settings::default()
    };
    let relayer = relayer_with(&db, &client, settings.clone()).await;
    let store = db.store().await;
    let key = hosts::create(&store, "e2b-prod", "read").await.unwrap().key;
    let base = format!("http://{}", relayer.addr);
    let me = format!("{base}/v1/host");
    // A burst of ten in four spellings, then the eleventh in a fifth: refused.
    let spellings = [
        format!("Bearer {key}"),
        format!("Bearer  {key}"),
        format!("bearer {key}"),
        format!("BEARER {key}  "),
    ];
    for i in 0..10 {
        let (status, body, _) = raw(Method::GET, &me, Some(&spellings[i % 4]), None, None).await;
        assert_eq!(status, 200, "{i}: {body}");
    }
    let (status, body, _) = raw(
        Method::GET,
        &me,
        Some(&format!("Bearer\t{key}")),
        None,
        None,
    )
    .await;
    assert_eq!((status, code(&body)), (429, "rate_limited"), "{body}");

    // Without credentials: five a second per address, bursts of ten.
    let anonymous = [
        (Method::GET, format!("{base}/x402/supported"), None),
        (
            Method::POST,
            format!("{base}/x402/verify"),
            Some(json!({ "x402Version": 2 })),
        ),
        (
            Method::POST,
            format!("{base}/v1/hosts/host_x/providers/e2b/webhook"),
            Some(json!({})),
        ),
    ];
    let mut statuses = Vec::new();
    for i in 0..11 {
        let (m, url, body) = &anonymous[i % 3];
        statuses.push(raw(m.clone(), url, None, body.clone(), None).await.0);
    }
    assert!(statuses[..10].iter().all(|s| *s != 429), "{statuses:?}");
    assert_eq!(statuses[10], 429, "{statuses:?}");
    relayer.shutdown().await;

    // Fresh bogus keys: each a failure of the address; past the burst (four), refused before
    // any lookup — a real key from that address too, until the bucket refills.
    let relayer = relayer_with(&db, &client, settings).await;
    let me = format!("http://{}/v1/host", relayer.addr);
    let mut statuses = Vec::new();
    for i in 0..8 {
        let bogus = format!("Bearer bhk_{i:064x}");
        statuses.push(raw(Method::GET, &me, Some(&bogus), None, None).await.0);
    }
    assert_eq!(statuses, [401, 401, 401, 401, 429, 429, 429, 429]);
    let bogus_sandbox = format!("Bearer bct_{:064x}", 7);
    assert_eq!(
        raw(Method::GET, &me, Some(&bogus_sandbox), None, None)
            .await
            .0,
        429
    );
    let (status, _, _) = raw(Method::GET, &me, Some(&format!("Bearer {key}")), None, None).await;
    assert_eq!(status, 429);
    let (_, metrics, _) = raw(
        Method::GET,
        &format!("http://{}/metrics", relayer.addr),
        None,
        None,
        None,
    )
    .await;
    let metrics = metrics.as_str().unwrap().to_owned();
    assert!(
        metrics.contains("bursar_relayer_rate_limited_total{bucket=\"auth_failures\"} 6"),
        "{metrics}"
    );
    relayer.shutdown().await;
}

/// Idempotency keys belong to the authenticated caller: one capability token spelled two ways
/// gets the first payment back, not a second; anonymous callers' keys are per route and their
/// refusals are not kept; a POST to a GET-only route is 405.
async fn idempotency_keys_belong_to_the_principal(db: Db) {
    use reqwest12::Method;
    let s = system(db).await;
    let (_, token) = s.open_session(json!({ "coSignThreshold": "0" })).await;
    let pay = format!("{}/v1/payments", s.base);
    let body = json!({ "to": s.vendor_a, "amount": usd(1).to_string(), "purpose": "once" });
    let (status, first, _) = raw(
        Method::POST,
        &pay,
        Some(&format!("Bearer {token}")),
        Some(body.clone()),
        Some("k-1"),
    )
    .await;
    assert_eq!(status, 202, "{first}");
    let (status, second, replayed) = raw(
        Method::POST,
        &pay,
        Some(&format!("Bearer  {token}")),
        Some(body.clone()),
        Some("k-1"),
    )
    .await;
    assert_eq!((status, replayed), (202, true), "{second}");
    assert_eq!(second["id"], first["id"]);
    let (_, list) = s.get("/v1/payments", &token).await;
    assert_eq!(list["payments"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(s.settled(&token, &first).await["status"], "confirmed");
    assert_eq!(s.token_balance(s.vendor_a).await, usd(1), "paid once");

    // Anonymous: a 401 is not kept, so the key stays free; other routes are other key spaces.
    let (status, e, _) = raw(Method::POST, &pay, None, Some(body.clone()), Some("k-2")).await;
    assert_eq!((status, code(&e)), (401, "unauthorized"), "{e}");
    let (status, e, replayed) = raw(Method::POST, &pay, None, Some(json!({})), Some("k-2")).await;
    assert_eq!(
        (status, code(&e), replayed),
        (401, "unauthorized", false),
        "{e}"
    );
    let one = format!("{pay}/{}", first["id"].as_str().unwrap());
    let (status, e, _) = raw(Method::POST, &one, None, Some(json!({})), Some("k-2")).await;
    assert_eq!(status, 405, "{e}");
    let (status, e, _) = raw(
        Method::POST,
        &format!("{}/x402/verify", s.base),
        None,
        Some(json!({ "x402Version": 2 })),
        Some("k-2"),
    )
    .await;
    assert_ne!(status, 409, "{e}");
    // The sandbox's own key space is its own: k-2 is new to it.
    let (status, p, replayed) = raw(
        Method::POST,
        &pay,
        Some(&format!("Bearer {token}")),
        Some(body),
        Some("k-2"),
    )
    .await;
    assert_eq!((status, replayed), (202, false), "{p}");
    assert_ne!(p["id"], first["id"]);
    s.relayer.shutdown().await;
}

/// An owner with its own wallet (gas and tokens, the wallet approved) that opens prepared
/// sessions itself, for the host to register.
struct OwnWallet {
    owner: Key,
    sender: bursar_client::Sender,
    token: Address,
    wallet: Address,
}

impl OwnWallet {
    async fn new(s: &System) -> Self {
        let token = s.record.address(Contract::TestToken.key()).unwrap();
        let wallet = s.record.address(Contract::SessionWallet.key()).unwrap();
        let owner = dev_key(4);
        let mut operator = bursar_client::Sender::new(&s.client, dev_key(0))
            .await
            .unwrap();
        let mint = ITestToken::mintCall {
            to: owner.address(),
            value: usd(100),
        };
        operator.transact(&s.client, token, &mint).await.unwrap();
        let mut sender = bursar_client::Sender::new(&s.client, owner.clone())
            .await
            .unwrap();
        let approve = ITestToken::approveCall {
            spender: wallet,
            value: U256::MAX,
        };
        sender.transact(&s.client, token, &approve).await.unwrap();
        OwnWallet {
            owner,
            sender,
            token,
            wallet,
        }
    }

    /// Prepares a session with `session_key` (small caps, a lease, the test's allowlist).
    async fn prepare(&self, s: &System, session_key: Address) -> (u16, Value) {
        let terms = json!({
            "owner": self.owner.address(),
            "token": self.token,
            "deposit": usd(1).to_string(),
            "perPaymentCap": usd(1).to_string(),
            "periodBudget": usd(1).to_string(),
            "periodSeconds": 3600,
            "coSignThreshold": usd(1).to_string(),
            "expiresAt": s.chain_now().await + 86_400,
            "leaseSeconds": 600,
            "allowlistId": s.list_id.to_string(),
            "metadata": "job 9",
            "sessionKey": session_key,
        });
        s.post("/v1/sessions/prepare", &s.host, terms).await
    }

    /// Opens prepared session `prep` from the owner's wallet with its terms as `change` leaves
    /// them, and asks the host to register it.
    async fn open_and_register(
        &mut self,
        s: &System,
        prep: &Value,
        change: impl FnOnce(&mut openSessionCall),
    ) -> (u16, Value) {
        let mut call = prepared_open_call(prep);
        change(&mut call);
        // A native deposit is sent as value.
        let value = if call.token.is_zero() {
            call.deposit
        } else {
            U256::ZERO
        };
        let data = alloy_sol_types::SolCall::abi_encode(&call);
        self.sender
            .send(&s.client, Some(self.wallet), data, value)
            .await
            .unwrap();
        let body = json!({ "preparedId": prep["preparedId"] });
        s.post("/v1/sessions/register", &s.host, body).await
    }
}

/// An owner who opens the prepared session on chain with any term changed (the prepared key
/// and nonce, so owner and key match) is refused at register, naming the term; the session key
/// may not be the relayer's own signer.
async fn register_refuses_terms_other_than_prepared(db: Db) {
    let s = system(db).await;
    let mut own = OwnWallet::new(&s).await;
    let sandbox = Address::repeat_byte(0x5a);
    let (status, e) = own.prepare(&s, dev_key(9).address()).await;
    assert_eq!((status, code(&e)), (400, "invalid_request"), "{e}");
    assert_eq!(e["details"]["field"], "sessionKey", "{e}");
    type Change = fn(&mut openSessionCall);
    let changes: [(&str, Change); 13] = [
        ("guardian", |c| c.guardian = c.owner),
        ("token", |c| c.token = Address::ZERO),
        ("deposit", |c| c.deposit += U256::from(1)),
        ("perPaymentCap", |c| c.perPaymentCap = U256::ZERO),
        ("periodBudget", |c| c.periodBudget += U256::from(1)),
        ("periodSeconds", |c| c.periodSeconds += 1),
        ("coSignThreshold", |c| c.coSignThreshold = U256::ZERO),
        ("validAfter", |c| c.validAfter = 1),
        ("expiresAt", |c| c.expiresAt += 1),
        ("leaseSeconds", |c| c.leaseSeconds += 1),
        ("leaseKeeper", |c| c.leaseKeeper = Address::ZERO),
        ("allowlistId", |c| c.allowlistId += U256::from(1)),
        ("metadata", |c| c.metadata = B256::ZERO),
    ];
    for (field, change) in changes {
        let (status, prep) = own.prepare(&s, sandbox).await;
        assert_eq!(status, 201, "{prep}");
        let (status, e) = own.open_and_register(&s, &prep, change).await;
        assert_eq!(
            (status, code(&e)),
            (409, "session_terms_mismatch"),
            "{field}: {e}"
        );
        assert_eq!(e["details"]["field"], field, "{e}");
        assert!(e["message"].as_str().unwrap().contains(field), "{e}");
        assert_ne!(e["details"]["prepared"], e["details"]["onChain"], "{e}");
    }
    // The prepared terms exactly: registered.
    let (_, prep) = own.prepare(&s, sandbox).await;
    let (status, opened) = own.open_and_register(&s, &prep, |_| {}).await;
    assert_eq!(status, 201, "{opened}");
    s.relayer.shutdown().await;
}

/// A sandbox that signs its own intents replays each one the moment it is accepted, again and
/// again: every replay is refused before anything is sent, so no transaction of the relayer's
/// signer reverts (a replay accepted would fail on chain with `WalletNonceUsed`, its gas paid).
async fn replayed_signed_intents_never_reach_the_chain(db: Db) {
    let s = system(db).await;
    let mut own = OwnWallet::new(&s).await;
    let sandbox = Key::from_bytes(&B256::from(U256::from(0x5a4d_u64) << 64)).unwrap();
    let (_, prep) = own.prepare(&s, sandbox.address()).await;
    let (status, opened) = own.open_and_register(&s, &prep, |_| {}).await;
    assert_eq!(status, 201, "{opened}");
    let bearer = opened["capabilityToken"].as_str().unwrap().to_owned();
    let session: U256 = opened["sessionId"].as_str().unwrap().parse().unwrap();
    let domain = bursar_bindings::eip712::SESSION_WALLET_DOMAIN.at(412_346, own.wallet);
    let signed = |nonce: u64| {
        let intent = bursar_bindings::eip712::PaymentIntent {
            session,
            to: s.vendor_b,
            amount: U256::from(1_000),
            purpose: B256::repeat_byte(7),
            nonce: U256::from(nonce),
            deadline: U256::from(4_000_000_000u64),
        };
        let hash = alloy_sol_types::SolStruct::eip712_signing_hash(&intent, &domain);
        json!({
            "to": intent.to,
            "amount": intent.amount.to_string(),
            "purpose": intent.purpose,
            "nonce": nonce.to_string(),
            "deadline": 4_000_000_000u64,
            "signature": format!("0x{}", alloy_primitives::hex::encode(sandbox.sign_hash_rsv(&hash))),
        })
    };
    let rounds = 30;
    let mut accepted = Vec::new();
    for nonce in 0..rounds {
        let body = signed(nonce);
        let (status, first) = s.post("/v1/payments", &bearer, body.clone()).await;
        assert_eq!(status, 202, "{first}");
        // Replays while it is queued, sent, mined: each refused.
        let id = first["id"].as_str().unwrap().to_owned();
        loop {
            let (status, e) = s.post("/v1/payments", &bearer, body.clone()).await;
            assert_eq!(
                (status, code(&e)),
                (422, "WalletNonceUsed"),
                "nonce {nonce}: {e}"
            );
            let (_, p) = s.get(&format!("/v1/payments/{id}"), &bearer).await;
            if p["status"] == "confirmed" {
                break;
            }
            assert!(
                ["queued", "submitted", "mined"].contains(&p["status"].as_str().unwrap()),
                "{p}"
            );
        }
        accepted.push(id);
    }
    let (_, list) = s.get("/v1/payments?limit=1000", &bearer).await;
    let payments = list["payments"].as_array().unwrap();
    assert_eq!(
        payments.len(),
        rounds as usize,
        "only the originals were stored"
    );
    assert!(
        payments.iter().all(|p| p["status"] == "confirmed"),
        "{list}"
    );
    assert_eq!(
        s.token_balance(s.vendor_b).await,
        U256::from(1_000 * rounds)
    );
    s.relayer.shutdown().await;
}

/// A capability token stops authenticating once the chain's clock reaches the session's
/// `expiresAt`, though the engine looked at the head a moment before the clock jumped.
async fn capability_tokens_end_at_expiry(db: Db) {
    let s = system(db).await;
    // Within 30 s of the expiry the relayer reads the chain's head itself.
    let expires_at = s.chain_now().await + 20;
    let (_, token) = s.open_session(json!({ "expiresAt": expires_at })).await;
    let (status, body) = s.get("/v1/payments", &token).await;
    assert_eq!(status, 200, "{body}");
    // The chain's clock jumps to the expiry.
    let _: Value = s
        .client
        .request("evm_setNextBlockTimestamp", json!([expires_at]))
        .await
        .unwrap();
    let _: Value = s.client.request("evm_mine", json!([])).await.unwrap();
    assert_eq!(s.chain_now().await, expires_at);
    let (status, e) = s.get("/v1/payments", &token).await;
    assert_eq!((status, code(&e)), (401, "unauthorized"), "{e}");
    let (status, e) = s.pay(&token, s.vendor_a, usd(1)).await;
    assert_eq!((status, code(&e)), (401, "unauthorized"), "{e}");
    s.relayer.shutdown().await;
}

on_both_databases!(
    webhooks_never_reach_internal_addresses,
    rate_limits_hold_under_respelled_bogus_and_absent_credentials,
    idempotency_keys_belong_to_the_principal,
    register_refuses_terms_other_than_prepared,
    replayed_signed_intents_never_reach_the_chain,
    capability_tokens_end_at_expiry,
);
