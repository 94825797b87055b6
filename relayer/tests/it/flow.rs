//! The whole flow over HTTP on a devnet running the real contracts: a host prepares a session,
//! the owner signs its typed data as a wallet would, the relayer opens it gaslessly, the
//! sandbox pays (allowed, refused by each rule, pending), heart-beats, records provenance; the
//! host revokes and closes it and the owner gets the rest back. Plus idempotency, host
//! isolation and hostile bodies.

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::token::ITestToken;
use bursar_client::Sender;
use bursar_deploy::{Contract, DeploymentRecord};
use bursar_relayer::engine::submission::EngineConfig;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::{hosts, signing};
use bursar_relayer::{start, Config, Contracts, Relayer, Settings};
use serde_json::{json, Value};

use super::receiver::Receiver;
use super::*;

/// One tUSD in base units (6 decimals).
pub(super) fn usd(n: u64) -> U256 {
    U256::from(n * 1_000_000)
}

/// Sends `req` until it is answered other than 503 (contended past the queue's retries, which
/// a client retries as any 503): the status and the body.
pub(super) async fn past_503(req: reqwest12::RequestBuilder) -> (u16, Value) {
    loop {
        let r = req.try_clone().unwrap().send().await.unwrap();
        let status = r.status().as_u16();
        if status != 503 {
            return (status, r.json().await.unwrap());
        }
    }
}

pub(super) struct System {
    pub(super) _devnet: bursar_devnet::Handle,
    pub(super) db: Db,
    pub(super) client: Arc<Client>,
    pub(super) record: DeploymentRecord,
    pub(super) relayer: Relayer,
    pub(super) http: reqwest12::Client,
    pub(super) base: String,
    /// The host's API key.
    pub(super) host: String,
    /// Another host's API key.
    pub(super) stranger: String,
    pub(super) owner: Key,
    pub(super) vendor_a: Address,
    pub(super) vendor_b: Address,
    pub(super) vendor_c: Address,
    pub(super) list_id: U256,
    /// The host's webhook receiver and its endpoint's id.
    pub(super) store: bursar_relayer::store::Store,
    pub(super) receiver: Receiver,
    pub(super) receiver_secret: String,
    pub(super) endpoint: String,
    /// What the relayer runs with.
    pub(super) settings: Settings,
}

pub(super) fn address_of(record: &DeploymentRecord, c: Contract) -> Address {
    record.address(c.key()).unwrap()
}

/// The test relayer's configuration.
fn relayer_config(
    db: &Db,
    client: &Client,
    record: &DeploymentRecord,
    settings: &Settings,
) -> Config {
    Config {
        rpc: client.url().to_string(),
        db: db.url(),
        listen: "127.0.0.1:0".parse().unwrap(),
        signers: vec![dev_key(9)],
        engine: EngineConfig {
            confirmations: 0,
            poll: Duration::from_millis(20),
            ..EngineConfig::default()
        },
        contracts: Contracts {
            wallet: address_of(record, Contract::SessionWallet),
            gateway: address_of(record, Contract::SessionGateway),
            receipts: address_of(record, Contract::ReceiptRegistry),
            counterparties: address_of(record, Contract::CounterpartyRegistry),
            counterparties_since: 0,
        },
        master_key: MasterKey::from_hex(&"42".repeat(32), "test").unwrap(),
        settings: settings.clone(),
    }
}

pub(super) async fn system(db: Db) -> System {
    system_with(db, |_| {}).await
}

/// [`system`] with the relayer's settings tuned.
pub(super) async fn system_with(db: Db, tune: impl FnOnce(&mut Settings)) -> System {
    let (devnet, client) = devnet(true).await;
    let dir = bursar_e2e::scratch("relayer-flow");
    let record = bursar_e2e::deploy(&client, &dir).await;
    let token = address_of(&record, Contract::TestToken);
    let registry = address_of(&record, Contract::CounterpartyRegistry);
    let mut operator = Sender::new(&client, dev_key(0)).await.unwrap();
    // The owner has tokens and no ETH: opening and paying must cost it no gas.
    let owner = Key::from_bytes(&B256::from(U256::from(0xb0b5_u64) << 64)).unwrap();
    operator
        .transact(
            &client,
            token,
            &ITestToken::mintCall {
                to: owner.address(),
                value: usd(100),
            },
        )
        .await
        .unwrap();
    let (vendor_a, vendor_b, vendor_c) = (
        Address::repeat_byte(0xa1),
        Address::repeat_byte(0xb2),
        Address::repeat_byte(0xc3),
    );
    let r = operator
        .transact(&client, registry, &ICounterpartyRegistry::createListCall {})
        .await
        .unwrap();
    let list_id = r.events::<ICounterpartyRegistry::ListCreated>(registry)[0].listId;
    operator
        .transact(
            &client,
            registry,
            &ICounterpartyRegistry::setEntriesCall {
                listId: list_id,
                counterparties: vec![vendor_a, vendor_b],
                allowed: vec![true, true],
                maxPerPayment: vec![usd(25), U256::ZERO],
                labels: vec![B256::right_padding_from(b"model-api"), B256::ZERO],
            },
        )
        .await
        .unwrap();
    let mut settings = Settings {
        // The tests move the chain's clock forward; intents must outlive that.
        intent_ttl: Duration::from_secs(86_400),
        webhook_attempts: 3,
        webhook_backoff: Duration::from_millis(10),
        // The tests' webhook receivers listen on loopback.
        webhook_egress: bursar_egress::Policy {
            allow_loopback: true,
        },
        ..Settings::default()
    };
    tune(&mut settings);
    let relayer = start(relayer_config(&db, &client, &record, &settings))
        .await
        .unwrap();
    let store = db.store().await;
    let host = hosts::create(
        &store,
        "e2b-prod",
        "sessions,payments,provenance,read,webhooks",
    )
    .await
    .unwrap()
    .key;
    let stranger = hosts::create(&store, "daytona-prod", "sessions,payments,provenance,read")
        .await
        .unwrap()
        .key;
    let receiver = Receiver::start().await;
    let base = format!("http://{}", relayer.addr);
    let created: Value = reqwest12::Client::new()
        .post(format!("{base}/v1/webhooks"))
        .bearer_auth(&host)
        .json(&json!({ "url": receiver.url }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let receiver_secret = created["secret"].as_str().unwrap().to_owned();
    receiver.set_secret(&receiver_secret);
    System {
        store,
        receiver,
        receiver_secret,
        endpoint: created["id"].as_str().unwrap().to_owned(),
        base,
        _devnet: devnet,
        db,
        client,
        record,
        relayer,
        http: reqwest12::Client::new(),
        host,
        stranger,
        owner,
        vendor_a,
        vendor_b,
        vendor_c,
        list_id,
        settings,
    }
}

/// What an owner's wallet does with `eth_signTypedData_v4` JSON: hash it per EIP-712 (an
/// implementation independent of the relayer's) and sign.
pub(super) fn wallet_sign(key: &Key, typed: &Value) -> String {
    let typed: alloy_dyn_abi::TypedData = serde_json::from_value(typed.clone()).unwrap();
    let hash = typed.eip712_signing_hash().unwrap();
    format!(
        "0x{}",
        alloy_primitives::hex::encode(key.sign_hash_rsv(&hash))
    )
}

impl System {
    /// Stops the relayer, runs `between`, and starts another relayer on the same database.
    pub(super) async fn restart_with(mut self, between: impl FnOnce()) -> Self {
        self.relayer.shutdown().await;
        between();
        self.relayer = start(relayer_config(
            &self.db,
            &self.client,
            &self.record,
            &self.settings,
        ))
        .await
        .unwrap();
        self.base = format!("http://{}", self.relayer.addr);
        self
    }

    /// Another relayer on the same chain and database, as a second process of a deployment
    /// would be (its own queue, engine and caches), and its base URL.
    pub(super) async fn another_relayer(&self) -> (Relayer, String) {
        let config = relayer_config(&self.db, &self.client, &self.record, &self.settings);
        let relayer = start(config).await.unwrap();
        let base = format!("http://{}", relayer.addr);
        (relayer, base)
    }

    pub(super) async fn call(
        &self,
        method: reqwest12::Method,
        path: &str,
        bearer: &str,
        body: Option<Value>,
        idempotency_key: Option<&str>,
    ) -> (u16, Value, bool) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(bearer);
        if let Some(body) = body {
            req = req.json(&body);
        }
        if let Some(key) = idempotency_key {
            req = req.header("Idempotency-Key", key);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let replayed = r.headers().contains_key("idempotent-replayed");
        let text = r.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, body, replayed)
    }

    pub(super) async fn post(&self, path: &str, bearer: &str, body: Value) -> (u16, Value) {
        let (status, body, _) = self
            .call(reqwest12::Method::POST, path, bearer, Some(body), None)
            .await;
        (status, body)
    }

    pub(super) async fn put(&self, path: &str, bearer: &str, body: Value) -> (u16, Value) {
        let (status, body, _) = self
            .call(reqwest12::Method::PUT, path, bearer, Some(body), None)
            .await;
        (status, body)
    }

    pub(super) async fn delete(&self, path: &str, bearer: &str) -> (u16, Value) {
        let (status, body, _) = self
            .call(reqwest12::Method::DELETE, path, bearer, None, None)
            .await;
        (status, body)
    }

    pub(super) async fn get(&self, path: &str, bearer: &str) -> (u16, Value) {
        let (status, body, _) = self
            .call(reqwest12::Method::GET, path, bearer, None, None)
            .await;
        (status, body)
    }

    pub(super) async fn session_key_of(&self, id: &str) -> String {
        let (_, v) = self.get(&format!("/v1/sessions/{id}"), &self.host).await;
        // Stored in lowercase; answered EIP-55.
        v["sessionKey"].as_str().unwrap().to_lowercase()
    }

    /// Transactions `who` has sent, mined or in the devnet's pool.
    pub(super) async fn sent_by(&self, who: Address) -> U256 {
        self.client
            .request("eth_getTransactionCount", json!([who, "pending"]))
            .await
            .unwrap()
    }

    /// Returns once `who` has sent more than `before` (each look is one read of the pool).
    pub(super) async fn until_sent(&self, who: Address, before: U256) {
        while self.sent_by(who).await == before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Mining paused (`false`, as a real block time pauses it) or on again, with a block of
    /// what waits.
    pub(super) async fn automine(&self, on: bool) {
        let _: Value = self
            .client
            .request("evm_setAutomine", json!([on]))
            .await
            .unwrap();
        if on {
            let _: Value = self.client.request("evm_mine", json!([])).await.unwrap();
        }
    }

    pub(super) async fn chain_now(&self) -> u64 {
        self.client.latest_block().await.unwrap().timestamp.to()
    }

    pub(super) async fn token_balance(&self, of: Address) -> U256 {
        self.client
            .view(
                None,
                address_of(&self.record, Contract::TestToken),
                ITestToken::balanceOfCall { account: of },
            )
            .await
            .unwrap()
    }

    /// Prepares, signs (as the owner's wallet) and opens a session; returns (id, token).
    pub(super) async fn open_session(&self, extra: Value) -> (String, String) {
        let mut terms = json!({
            "owner": self.owner.address(),
            "token": address_of(&self.record, Contract::TestToken),
            "deposit": usd(100).to_string(),
            "perPaymentCap": usd(30).to_string(),
            "periodBudget": usd(40).to_string(),
            "periodSeconds": 3600,
            "coSignThreshold": usd(20).to_string(),
            "expiresAt": self.chain_now().await + 86_400,
            "leaseSeconds": 600,
            "allowlistId": self.list_id.to_string(),
            "metadata": "research agent, job 7",
            "provider": "e2b",
            "sandboxId": "sbx-7",
        });
        for (k, v) in extra.as_object().unwrap() {
            terms[k] = v.clone();
        }
        let (status, prep) = self.post("/v1/sessions/prepare", &self.host, terms).await;
        assert_eq!(status, 201, "{prep}");
        let typed = &prep["typedData"];
        assert_eq!(
            typed["openSession"]["message"]["leaseKeeper"],
            json!(dev_key(9).address())
        );
        assert!(
            typed["permit"].is_object(),
            "the test token has an EIP-2612 permit: {prep}"
        );
        let (status, opened) = self
            .post(
                "/v1/sessions",
                &self.host,
                json!({
                    "preparedId": prep["preparedId"],
                    "ownerSignature": wallet_sign(&self.owner, &typed["openSession"]),
                    "permitSignature": wallet_sign(&self.owner, &typed["permit"]),
                }),
            )
            .await;
        assert_eq!(status, 201, "{opened}");
        assert_eq!(opened["status"], "open", "{opened}");
        assert_eq!(opened["sessionId"], prep["sessionId"]);
        (
            opened["sessionId"].as_str().unwrap().to_owned(),
            opened["capabilityToken"].as_str().unwrap().to_owned(),
        )
    }

    /// Pays and waits until the payment settles; returns the payment.
    pub(super) async fn pay_settled(&self, token: &str, to: Address, amount: U256) -> Value {
        let (status, p) = self.pay(token, to, amount).await;
        assert_eq!(status, 202, "{p}");
        self.settled(token, &p).await
    }

    pub(super) async fn pay(&self, token: &str, to: Address, amount: U256) -> (u16, Value) {
        let body = json!({ "to": to, "amount": amount.to_string(), "purpose": "inference call" });
        self.post("/v1/payments", token, body).await
    }

    pub(super) async fn settled(&self, token: &str, p: &Value) -> Value {
        let id = p["id"].as_str().unwrap();
        let (status, p) = self.get(&format!("/v1/payments/{id}?wait=30"), token).await;
        assert_eq!(status, 200, "{p}");
        p
    }

    /// Returns once `done` is true (see [`System::within`]).
    async fn when<F, Fut>(&self, done: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        assert!(self.within(done).await, "the state asked for never came");
    }

    /// Whether `done` comes to hold within 30 s, looked at again after each engine pass,
    /// settlement and lifecycle change.
    async fn within<F, Fut>(&self, mut done: F) -> bool
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let look = || {
            let fut = done();
            async move { Ok(fut.await.then_some(())) }
        };
        let found = self.relayer.app.wait_for(Duration::from_secs(30), look);
        found.await.unwrap().is_some()
    }

    /// What `GET path` answers `bearer`, once `done` holds of it.
    pub(super) async fn get_when(
        &self,
        path: &str,
        bearer: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let last = std::sync::Mutex::new(Value::Null);
        let found = self
            .within(|| async {
                let (status, v) = self.get(path, bearer).await;
                assert_eq!(status, 200, "{v}");
                let ok = done(&v);
                *last.lock().unwrap() = v;
                ok
            })
            .await;
        let last = last.into_inner().unwrap();
        assert!(found, "{path} never came to the state asked for: {last:#}");
        last
    }

    /// The session as the host sees it, once `done` holds of it.
    pub(super) async fn session_when(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        self.get_when(&format!("/v1/sessions/{id}"), &self.host, done)
            .await
    }
}

/// The wallet's `openSession` of prepared session `prep`'s terms, for an owner who opens it
/// from its own wallet.
pub(super) fn prepared_open_call(
    prep: &Value,
) -> bursar_bindings::wallet::ISessionWallet::openSessionCall {
    let m = &prep["typedData"]["openSession"]["message"];
    let n = |k: &str| m[k].as_str().unwrap().parse::<U256>().unwrap();
    let a = |k: &str| m[k].as_str().unwrap().parse::<Address>().unwrap();
    bursar_bindings::wallet::ISessionWallet::openSessionCall {
        owner: a("owner"),
        sessionKey: a("sessionKey"),
        guardian: a("guardian"),
        token: a("token"),
        deposit: n("deposit"),
        perPaymentCap: n("perPaymentCap"),
        periodBudget: n("periodBudget"),
        periodSeconds: n("periodSeconds").to(),
        coSignThreshold: n("coSignThreshold"),
        validAfter: n("validAfter").to(),
        expiresAt: n("expiresAt").to(),
        leaseSeconds: n("leaseSeconds").to(),
        leaseKeeper: a("leaseKeeper"),
        allowlistId: n("allowlistId"),
        metadata: m["metadata"].as_str().unwrap().parse().unwrap(),
        nonce: n("nonce"),
    }
}

pub(super) fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or_default()
}

async fn the_whole_flow(db: Db) {
    let s = system(db).await;
    s.receiver.fail_first(true);
    let owner_eth = s.client.balance(s.owner.address()).await.unwrap();

    // A signature from someone else is refused before anything is sent.
    let (status, prep) = s
        .post(
            "/v1/sessions/prepare",
            &s.host,
            json!({
                "owner": s.owner.address(),
                "token": address_of(&s.record, Contract::TestToken),
                "deposit": usd(100).to_string(),
                "expiresAt": s.chain_now().await + 86_400,
                "allowlistId": s.list_id.to_string(),
            }),
        )
        .await;
    assert_eq!(status, 201, "{prep}");
    let impostor = dev_key(5);
    let (status, refused) = s
        .post(
            "/v1/sessions",
            &s.host,
            json!({
                "preparedId": prep["preparedId"],
                "ownerSignature": wallet_sign(&impostor, &prep["typedData"]["openSession"]),
                "permitSignature": wallet_sign(&s.owner, &prep["typedData"]["permit"]),
            }),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert!(code(&refused).starts_with("Gateway"), "{refused}");

    let (id, token) = s.open_session(json!({})).await;
    assert!(token.starts_with("bct_"));
    assert_eq!(
        s.token_balance(s.owner.address()).await,
        U256::ZERO,
        "the deposit is escrowed"
    );
    assert_eq!(
        s.client.balance(s.owner.address()).await.unwrap(),
        owner_eth,
        "the owner paid no gas"
    );

    // Allowed.
    let paid = s.pay_settled(&token, s.vendor_a, usd(10)).await;
    assert_eq!(paid["status"], "confirmed", "{paid}");
    assert!(
        paid["receiptId"].is_string() && paid["transactionHash"].is_string(),
        "{paid}"
    );
    assert_eq!(s.token_balance(s.vendor_a).await, usd(10));
    // Waiting for a status a final payment can no longer reach answers at once; a status that
    // does not exist is refused, naming the parameter.
    let paid_id = paid["id"].as_str().unwrap();
    let asked = std::time::Instant::now();
    let (status, again) = s
        .get(
            &format!("/v1/payments/{paid_id}?wait=60&until=queued"),
            &token,
        )
        .await;
    assert_eq!((status, &again["status"]), (200, &json!("confirmed")));
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(30),
        "it waited"
    );
    let until = format!("/v1/payments/{paid_id}?until=settled");
    let (status, e) = s.get(&until, &token).await;
    assert_eq!(
        (status, &e["details"]["field"]),
        (400, &json!("until")),
        "{e}"
    );

    // What the sandbox may still spend, as the wallet counts it, in both units; whom it may pay.
    let (status, limits) = s.get("/v1/limits", &token).await;
    assert_eq!(status, 200, "{limits}");
    let money = |v: &Value| (v["amount"].clone(), v["display"].clone());
    assert_eq!(limits["token"]["symbol"], "tUSD");
    assert_eq!(limits["token"]["decimals"], 6);
    assert_eq!(
        money(&limits["remainingDeposit"]),
        (json!(usd(90).to_string()), json!("90.00 tUSD"))
    );
    let period = &limits["period"];
    assert_eq!(money(&period["remaining"]).1, "30.00 tUSD", "{limits}");
    assert_eq!(money(&period["budget"]).1, "40.00 tUSD");
    assert_eq!(period["seconds"], 3600);
    assert!(period["refillsAt"].as_u64().unwrap() > s.chain_now().await);
    assert_eq!(money(&limits["perPaymentCap"]).1, "30.00 tUSD");
    assert_eq!(money(&limits["coSignThreshold"]).1, "20.00 tUSD");
    assert_eq!(limits["status"], "active");
    assert_eq!(limits["canPay"], true);
    assert_eq!(limits["lease"]["seconds"], 600);
    let payees = limits["counterparties"].as_array().unwrap();
    assert_eq!(payees.len(), 2, "{limits}");
    assert_eq!(payees[0]["address"], json!(s.vendor_a.to_checksum(None)));
    assert_eq!(payees[0]["label"], "model-api");
    assert_eq!(money(&payees[0]["maxPerPayment"]).1, "25.00 tUSD");
    assert_eq!(payees[1]["address"], json!(s.vendor_b.to_checksum(None)));
    assert!(payees[1]["label"].is_null() && payees[1]["maxPerPayment"].is_null());
    let (status, _) = s.get("/v1/limits", &s.host).await;
    assert_eq!(status, 401, "a host has no session of its own");

    // Refused at once, each with its rule's error and arguments.
    let (status, e) = s.pay(&token, s.vendor_b, usd(31)).await;
    assert_eq!((status, code(&e)), (422, "WalletPaymentCapExceeded"), "{e}");
    assert_eq!(
        e["details"],
        json!({ "amount": usd(31).to_string(), "cap": usd(30).to_string() })
    );
    let (status, e) = s.pay(&token, s.vendor_a, usd(26)).await;
    assert_eq!(
        (status, code(&e)),
        (422, "WalletCounterpartyNotAllowed"),
        "{e}"
    );
    let (status, e) = s.pay(&token, s.vendor_c, usd(1)).await;
    assert_eq!(
        (status, code(&e)),
        (422, "WalletCounterpartyNotAllowed"),
        "{e}"
    );
    assert_eq!(
        e["details"]["counterparty"],
        json!(s.vendor_c.to_checksum(None))
    );

    // Above the co-sign threshold: waits for the owner.
    let pending = s.pay_settled(&token, s.vendor_b, usd(25)).await;
    assert_eq!(pending["status"], "pending_approval", "{pending}");
    assert!(pending["pendingId"].is_string(), "{pending}");
    let decision = format!(
        "/v1/sessions/{id}/pending/{}/decision",
        pending["pendingId"].as_str().unwrap()
    );
    let (status, to_sign) = s.get(&format!("{decision}?approve=false"), &s.host).await;
    assert_eq!(status, 200, "{to_sign}");
    assert_eq!(to_sign["payment"]["amount"], usd(25).to_string());
    // A signature by someone else is refused by the gateway before anything is sent.
    let mut body = json!({
        "approve": false,
        "nonce": to_sign["nonce"],
        "deadline": to_sign["deadline"],
        "signature": wallet_sign(&impostor, &to_sign["typedData"]),
    });
    let (status, e) = s.post(&decision, &s.host, body.clone()).await;
    assert_eq!((status, code(&e)), (422, "GatewayInvalidSignature"), "{e}");
    body["signature"] = json!(wallet_sign(&s.owner, &to_sign["typedData"]));
    let (status, d) = s.post(&decision, &s.host, body).await;
    assert_eq!(status, 202, "{d}");
    assert_eq!(d["paymentId"], pending["id"]);
    let path = format!("/v1/payments/{}", pending["id"].as_str().unwrap());
    s.when(|| async {
        let (_, p) = s.get(&path, &token).await;
        p["status"] == "rejected"
    })
    .await;
    assert_eq!(
        s.get(&format!("{decision}?approve=true"), &s.host).await.0,
        409
    );

    // The period budget counts payments queued but not yet mined: 10 + 15 + 15 = 40.
    let (s1, p1) = s.pay(&token, s.vendor_b, usd(15)).await;
    let (s2, p2) = s.pay(&token, s.vendor_b, usd(15)).await;
    assert_eq!((s1, s2), (202, 202), "{p1} {p2}");
    let (status, e) = s.pay(&token, s.vendor_b, usd(1)).await;
    assert_eq!(
        (status, code(&e)),
        (422, "WalletPeriodBudgetExceeded"),
        "{e}"
    );
    for p in [p1, p2] {
        assert_eq!(s.settled(&token, &p).await["status"], "confirmed");
    }
    assert_eq!(s.token_balance(s.vendor_b).await, usd(30));

    // Heartbeats: the lease is renewed once less than half of it is left.
    let path = format!("/v1/sessions/{id}/heartbeat");
    let (status, hb) = s.post(&path, &token, json!({})).await;
    assert_eq!(status, 200, "{hb}");
    assert_eq!(hb["renewalSubmitted"], false, "{hb}");
    let first_lease = hb["leaseExpiresAt"].as_u64().unwrap();
    let _: Value = s
        .client
        .request("evm_increaseTime", json!([400]))
        .await
        .unwrap();
    let _: Value = s.client.request("evm_mine", json!([])).await.unwrap();
    let (status, hb) = s.post(&path, &token, json!({})).await;
    assert_eq!(status, 200, "{hb}");
    assert_eq!(hb["renewalSubmitted"], true, "{hb}");
    let renewed = s
        .session_when(&id, |v| {
            v["chain"]["leaseExpiresAt"].as_u64() > Some(first_lease)
        })
        .await;
    assert!(renewed["lastHeartbeatAt"].is_i64());
    // A sandbox heart-beats only its own session.
    let other = format!("/v1/sessions/0x{}/heartbeat", "11".repeat(32));
    assert_eq!(s.post(&other, &token, json!({})).await.0, 404);

    // Provenance, signed by the session key.
    let (status, rec) = s
        .post(
            "/v1/provenance",
            &token,
            json!({ "artifact": "report-v1.md", "inputs": format!("0x{}", "ab".repeat(32)), "runtime": "python:3.12" }),
        )
        .await;
    assert_eq!(status, 202, "{rec}");
    let (status, rec) = s
        .get(
            &format!("/v1/provenance/{}?wait=30", rec["id"].as_str().unwrap()),
            &token,
        )
        .await;
    assert_eq!(status, 200, "{rec}");
    assert_eq!(rec["status"], "recorded", "{rec}");
    assert!(rec["recordId"].is_string());
    // A record made from what a payment bought names it: its inputs are the receipt's
    // commitment. Not with inputs of its own, nor with another session's or no payment.
    let bought = json!({ "artifact": "summary.md", "purchase": paid["id"] });
    let (status, rec) = s.post("/v1/provenance", &token, bought).await;
    assert_eq!(status, 202, "{rec}");
    assert_eq!(
        rec["record"]["purchase"]["receiptId"], paid["receiptId"],
        "{rec}"
    );
    for refused in [
        json!({ "artifact": "x", "purchase": paid["id"], "inputs": "mine" }),
        json!({ "artifact": "x", "purchase": "pay_0000" }),
    ] {
        let (status, e) = s.post("/v1/provenance", &token, refused).await;
        assert_eq!(
            (status, e["details"]["field"].as_str()),
            (400, Some("purchase")),
            "{e}"
        );
    }

    // Feedback backed by the payment: vendor A holds an ERC-8004 agent, and the sandbox rates
    // it for the $10 it paid; the receipt registry gives it (the client `getSummary` counts).
    let agent = agent_held_by(&s, s.vendor_a).await;
    let rating = json!({
        "paymentId": paid["id"], "agentId": agent.to_string(), "value": "4.5",
        "tag1": "quality", "endpoint": "https://vendor-a.example/report",
    });
    let (status, fb) = s.post("/v1/feedback", &token, rating.clone()).await;
    assert_eq!(status, 202, "{fb}");
    let (status, fb) = s
        .get(
            &format!("/v1/feedback/{}?wait=30", fb["id"].as_str().unwrap()),
            &token,
        )
        .await;
    assert_eq!(status, 200, "{fb}");
    assert_eq!(
        (fb["status"].as_str(), fb["feedbackIndex"].as_i64()),
        (Some("given"), Some(1)),
        "{fb}"
    );
    assert_eq!(fb["rating"]["receiptId"], paid["receiptId"], "{fb}");
    let receipts = address_of(&s.record, Contract::ReceiptRegistry);
    let summary = s
        .client
        .view(
            None,
            bursar_bindings::erc8004::REPUTATION_REGISTRY,
            bursar_bindings::erc8004::IReputationRegistry::getSummaryCall {
                agentId: agent,
                clientAddresses: vec![receipts],
                tag1: String::new(),
                tag2: String::new(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (
            summary.count,
            summary.summaryValue,
            summary.summaryValueDecimals
        ),
        (1, 45, 1)
    );
    // One payment, one rating; a payment to someone else rates no agent of vendor A's.
    let (status, e) = s.post("/v1/feedback", &token, rating).await;
    assert_eq!((status, code(&e)), (422, "FeedbackAlreadyGiven"), "{e}");
    let (status, e) = s
        .post(
            "/v1/feedback",
            &token,
            json!({ "paymentId": paid["id"], "agentId": agent.to_string(), "value": "4.5e1" }),
        )
        .await;
    assert_eq!((status, code(&e)), (400, "invalid_request"), "{e}");

    // Another host sees none of it.
    assert_eq!(
        s.get(&format!("/v1/sessions/{id}"), &s.stranger).await.0,
        404
    );
    assert_eq!(
        s.post(&format!("/v1/sessions/{id}/revoke"), &s.stranger, json!({}))
            .await
            .0,
        404
    );
    let payment = format!("/v1/payments/{}", paid["id"].as_str().unwrap());
    assert_eq!(s.get(&payment, &s.stranger).await.0, 404);
    assert_eq!(s.get(&payment, &s.host).await.0, 200);
    let (_, listed) = s.get("/v1/sessions", &s.stranger).await;
    assert_eq!(listed["sessions"], json!([]));
    let (_, listed) = s
        .get("/v1/sessions?provider=e2b&sandboxId=sbx-7", &s.host)
        .await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");

    // Revoked: the token dies at once, the session on chain soon after.
    let (status, r) = s
        .post(&format!("/v1/sessions/{id}/revoke"), &s.host, json!({}))
        .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["onChain"], "revoked", "{r}");
    assert_eq!(s.pay(&token, s.vendor_a, usd(1)).await.0, 401);
    s.session_when(&id, |v| v["chain"]["status"] == "revoked")
        .await;

    // Closed: 100 − 40 spent comes back.
    let (status, c) = s
        .post(&format!("/v1/sessions/{id}/close"), &s.host, json!({}))
        .await;
    assert_eq!(status, 202, "{c}");
    assert_eq!(c["refund"], usd(60).to_string());
    s.session_when(&id, |v| v["chain"]["status"] == "closed")
        .await;
    assert_eq!(s.token_balance(s.owner.address()).await, usd(60));

    // The host heard about all of it, each message verified, after a refused first attempt.
    s.receiver
        .until(|got| got.iter().any(|(_, p)| p["type"] == "session.closed"))
        .await;
    let got = s.receiver.accepted();
    for (a, _) in &got {
        assert_eq!(s.receiver.attempts(&a.id), 2, "{a:?}");
    }
    let of_type = |t: &str| got.iter().filter(|(_, p)| p["type"] == t).count();
    assert_eq!(of_type("session.opened"), 1);
    assert_eq!(of_type("session.revoked"), 1);
    assert_eq!(of_type("provenance.updated"), 2);
    assert_eq!(of_type("feedback.updated"), 1);
    // 10 confirmed, 25 pending then rejected, 15 and 15 confirmed.
    assert_eq!(of_type("payment.updated"), 5, "{got:#?}");
    let closed = &got
        .iter()
        .find(|(_, p)| p["type"] == "session.closed")
        .unwrap()
        .1;
    assert_eq!(closed["data"]["refund"], usd(60).to_string());
    let rejected = got
        .iter()
        .find(|(_, p)| p["data"]["status"] == "rejected")
        .expect("the rejection was announced");
    assert_eq!(rejected.1["data"]["id"], pending["id"]);
    // The relayer marks a delivery delivered once the receiver's 204 is back: the receiver may
    // have the last one before the relayer has recorded it.
    let delivered = format!("/v1/webhooks/{}/deliveries?status=delivered", s.endpoint);
    s.when(|| async {
        let (_, listed) = s.get(&delivered, &s.host).await;
        listed["deliveries"].as_array().unwrap().len() == got.len()
    })
    .await;
    // The metrics count what happened.
    let metrics = s
        .http
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "bursar_relayer_payments{status=\"confirmed\"} 3",
        "bursar_relayer_payments{status=\"rejected\"} 1",
        "bursar_relayer_webhook_deliveries{status=\"delivered\"} 11",
        "bursar_relayer_rpc_errors_total 0",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    assert!(
        !metrics.contains("bursar_relayer_submit_latency_seconds_count 0"),
        "{metrics}"
    );

    // What a receiver must refuse: a tampered body, another id, a stale timestamp.
    let (a, _) = &got[0];
    let now = a.timestamp.parse::<i64>().unwrap();
    let verify = |id: &str, body: &[u8], now: i64| {
        let tolerance = Duration::from_secs(300);
        signing::verify(
            &s.receiver_secret,
            id,
            &a.timestamp,
            &a.signature,
            body,
            now,
            tolerance,
        )
    };
    assert_eq!(verify(&a.id, &a.body, now), Ok(()));
    let mut tampered = a.body.clone();
    tampered[1] ^= 1;
    assert_eq!(
        verify(&a.id, &tampered, now),
        Err(signing::VerifyError::Mismatch)
    );
    assert_eq!(
        verify("msg_other", &a.body, now),
        Err(signing::VerifyError::Mismatch)
    );
    assert_eq!(
        verify(&a.id, &a.body, now + 301),
        Err(signing::VerifyError::Stale)
    );
    // The Standard Webhooks project's own library agrees: every delivery verifies, and what
    // ours refuses it refuses — a tampered body, another id, a signature cut to `v1,`.
    let arrivals: Vec<_> = got.iter().map(|(a, _)| a.clone()).collect();
    let mut forged = vec![a.clone(), a.clone(), a.clone()];
    forged[0].body = tampered.clone();
    forged[1].id = "msg_other".into();
    forged[2].signature = "v1,".into();
    let verdicts =
        super::receiver::official_verdicts(&s.receiver_secret, &[arrivals, forged].concat());
    let mut expected = vec![true; got.len()];
    expected.extend([false, false, false]);
    assert_eq!(verdicts, expected);
    assert_eq!(
        verify(&a.id, &a.body, now).and(signing::verify(
            &s.receiver_secret,
            &a.id,
            &a.timestamp,
            "v1,",
            &a.body,
            now,
            Duration::from_secs(300)
        )),
        Err(signing::VerifyError::Mismatch)
    );
    // Payload times are RFC 3339, as the specification has them.
    for (_, payload) in &got {
        let at = payload["timestamp"].as_str().unwrap_or_default();
        assert!(
            time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).is_ok(),
            "{payload}"
        );
    }

    // No secret reached the log (everything, at debug level, from every crate).
    let logs = captured_logs();
    assert!(logs.contains(&id), "the log is captured");
    let key_address = s.session_key_of(&id).await;
    let sealed = s
        .store
        .session_key(&key_address)
        .await
        .unwrap()
        .unwrap()
        .sealed;
    let secrets = [
        ("host API key", s.host.clone()),
        ("capability token", token.clone()),
        ("webhook secret", s.receiver_secret.clone()),
        ("master key", "42".repeat(32)),
        ("sealed session key", sealed),
    ];
    for (what, secret) in secrets {
        assert!(!logs.contains(&secret), "the {what} is in the log");
    }
    s.relayer.shutdown().await;
}

async fn idempotent_and_hostile_requests(db: Db) {
    let s = system(db).await;
    // What the owner's page shows may not hide or reorder text: refused at prepare.
    for (field, text) in [
        ("sandboxId", "sbx-\u{202E}7fdp.exe"),
        ("sandboxId", "sbx\u{200B}-7"),
        ("provider", "e2b\u{2066}"),
        ("provider", "e2b\n"),
    ] {
        let mut terms = json!({
            "owner": s.owner.address(),
            "token": s.record.address(bursar_deploy::Contract::TestToken.key()).unwrap(),
            "deposit": "1", "perPaymentCap": "1", "periodBudget": "1", "periodSeconds": 3600,
            "coSignThreshold": "1", "expiresAt": s.chain_now().await + 86_400,
            "allowlistId": s.list_id.to_string(), "provider": "e2b", "sandboxId": "sbx-7",
        });
        terms[field] = json!(text);
        let (status, e) = s.post("/v1/sessions/prepare", &s.host, terms).await;
        assert_eq!(
            (status, code(&e)),
            (400, "invalid_request"),
            "{text:?}: {e}"
        );
        assert_eq!(e["details"]["field"], field, "{e}");
    }
    let (_, token) = s.open_session(json!({ "coSignThreshold": "0" })).await;
    let body = json!({ "to": s.vendor_a, "amount": usd(1).to_string(), "purpose": "same" });

    // The same key twice at once: one payment, the same answer twice.
    let post = |key: &'static str, body: Value| {
        let s = &s;
        let token = token.clone();
        async move {
            s.call(
                reqwest12::Method::POST,
                "/v1/payments",
                &token,
                Some(body),
                Some(key),
            )
            .await
        }
    };
    let (a, b) = tokio::join!(post("k-1", body.clone()), post("k-1", body.clone()));
    assert_eq!((a.0, b.0), (202, 202), "{a:?} {b:?}");
    assert_eq!(a.1["id"], b.1["id"]);
    assert!(a.2 ^ b.2, "exactly one of them is the replay");
    let (_, again, replayed) = post("k-1", body.clone()).await;
    assert!(replayed);
    assert_eq!(again["id"], a.1["id"]);
    // A process that died after its payment committed and before it kept the response: the
    // retry finds the payment by the key stored with it, and makes no second one.
    sqlx::any::install_default_drivers();
    let mut raw = <sqlx::AnyConnection as sqlx::Connection>::connect(&s.db.url())
        .await
        .unwrap();
    let gone = sqlx::Executor::execute(&mut raw, "DELETE FROM idempotency WHERE key = 'k-1'")
        .await
        .unwrap();
    assert_eq!(gone.rows_affected(), 1);
    let (status, again, replayed) = post("k-1", body.clone()).await;
    assert_eq!((status, replayed), (202, false), "{again}");
    assert_eq!(again["id"], a.1["id"], "the retry found the first payment");
    let (status, e, _) = post(
        "k-1",
        json!({ "to": s.vendor_a, "amount": "2", "purpose": "x" }),
    )
    .await;
    assert_eq!((status, code(&e)), (409, "idempotency_key_reused"), "{e}");
    let (_, list) = s.get("/v1/payments", &token).await;
    assert_eq!(list["payments"].as_array().unwrap().len(), 1, "{list}");
    // Refusals are kept too: the same key gets the same refusal, not a new check.
    let over = json!({ "to": s.vendor_a, "amount": usd(31).to_string(), "purpose": "p" });
    let (s1, e1, _) = post("k-2", over.clone()).await;
    let (s2, e2, r2) = post("k-2", over).await;
    assert_eq!((s1, s2, r2), (422, 422, true));
    assert_eq!(e1, e2);

    // Hostile bodies get a 4xx with the API's error shape, never a 5xx.
    let hostile = [
        json!({}),
        json!({ "to": s.vendor_a, "amount": 5, "purpose": "p" }),
        json!({ "to": s.vendor_a, "amount": "-5", "purpose": "p" }),
        json!({ "to": s.vendor_a, "amount": "0x10", "purpose": "p" }),
        json!({ "to": s.vendor_a, "amount": "1e6", "purpose": "p" }),
        json!({ "to": s.vendor_a, "amount": U256::MAX.to_string() + "0", "purpose": "p" }),
        json!({ "to": s.vendor_a, "amount": U256::MAX.to_string(), "purpose": "p" }),
        json!({ "to": s.vendor_a, "amount": "0", "purpose": "p" }),
        json!({ "to": "0x12", "amount": "1", "purpose": "p" }),
        json!({ "to": Address::ZERO, "amount": "1", "purpose": "p" }),
        json!({ "to": s.vendor_a, "amount": "1", "purpose": "p", "extra": true }),
        json!({ "to": s.vendor_a, "amount": "1", "purpose": "x".repeat(5000) }),
        json!([1, 2, 3]),
        json!("pay me"),
        json!(null),
    ];
    for body in hostile {
        let (status, e) = s.post("/v1/payments", &token, body.clone()).await;
        assert!((400..500).contains(&status), "{body} → {status} {e}");
        assert!(
            e["code"].is_string() && e["details"].is_object(),
            "{body} → {e}"
        );
    }
    // Our own contracts as payees: the wallet refuses them by name.
    for own in [
        Contract::SessionWallet,
        Contract::SessionGateway,
        Contract::ReceiptRegistry,
    ] {
        let body = json!({ "to": address_of(&s.record, own), "amount": "1", "purpose": "p" });
        let (status, e) = s.post("/v1/payments", &token, body).await;
        assert_eq!(
            (status, code(&e)),
            (422, "WalletInvalidPayee"),
            "{own:?}: {e}"
        );
    }
    // Terms that end before they start, and a token with no code: refused before anything is
    // sent (the codeless token gets no permit to sign, and its open fails the wallet's check).
    let terms = |token: Address, expires_at: u64| {
        json!({
            "owner": s.owner.address(), "token": token, "deposit": "1",
            "expiresAt": expires_at, "allowlistId": s.list_id.to_string(),
        })
    };
    let now = s.chain_now().await;
    let token_address = address_of(&s.record, Contract::TestToken);
    let (status, e) = s
        .post(
            "/v1/sessions/prepare",
            &s.host,
            terms(token_address, now - 1),
        )
        .await;
    assert_eq!(
        (status, e["details"]["field"].as_str()),
        (400, Some("expiresAt")),
        "{e}"
    );
    let codeless = Address::repeat_byte(0xdd);
    let (status, prep) = s
        .post("/v1/sessions/prepare", &s.host, terms(codeless, now + 600))
        .await;
    assert_eq!(status, 201, "{prep}");
    assert!(prep["typedData"]["permit"].is_null(), "{prep}");
    let open = json!({
        "preparedId": prep["preparedId"],
        "ownerSignature": wallet_sign(&s.owner, &prep["typedData"]["openSession"]),
        "permitSignature": "0x",
    });
    let (status, e) = s.post("/v1/sessions", &s.host, open).await;
    assert_eq!((status, code(&e)), (422, "WalletTokenWithoutCode"), "{e}");

    // Generated ones: the payment's fields (and strangers) with values of every JSON kind,
    // numbers at the edges, long and odd strings, nesting.
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..300 {
        let body = hostile_body(&mut next, 0);
        let (status, e) = s.post("/v1/payments", &token, body.clone()).await;
        assert!((400..500).contains(&status), "{body} → {status} {e}");
    }
    // Bytes that are not JSON at all, and a body over the limit.
    for raw in [b"\xff\xfe{".to_vec(), vec![b' '; 70_000]] {
        let r = s
            .http
            .post(format!("{}/v1/payments", s.base))
            .bearer_auth(&token)
            .body(raw)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_client_error(), "{}", r.status());
    }
    let (status, _) = s
        .post(
            "/v1/sessions/prepare",
            &s.host,
            json!({ "owner": s.owner.address(), "deposit": "1" }),
        )
        .await;
    assert_eq!(status, 400);

    // The capability token dies with its session: past `expiresAt` (moved into the past here,
    // as time passing would) it opens nothing, and says nothing about why.
    let (status, _) = s.pay(&token, s.vendor_a, usd(1)).await;
    assert_eq!(status, 202);
    sqlx::any::install_default_drivers();
    let db = sqlx::AnyPool::connect(&s.db.url()).await.unwrap();
    sqlx::query("UPDATE sessions SET expires_at = 1")
        .execute(&db)
        .await
        .unwrap();
    let (status, e) = s.pay(&token, s.vendor_a, usd(1)).await;
    assert_eq!((status, code(&e)), (401, "unauthorized"), "{e}");
    let (status, _) = s.get("/v1/payments", &token).await;
    assert_eq!(status, 401);
    s.relayer.shutdown().await;
}

/// Payments arriving at once are checked against each other, not only against the chain: of
/// 40 concurrent payments of 3 from a deposit of 100, exactly 33 are accepted and the rest
/// refused with the wallet's error, whichever batches they land in — and all 33 execute.
async fn concurrent_payments_never_overdraw(db: Db) {
    let s = system(db).await;
    let (_, token) = s
        .open_session(json!({ "coSignThreshold": "0", "periodSeconds": 0, "periodBudget": "0" }))
        .await;
    let answers =
        futures_util::future::join_all((0..40).map(|_| s.pay(&token, s.vendor_a, usd(3)))).await;
    let accepted: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == 202)
        .map(|(_, p)| p)
        .collect();
    let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    assert_eq!(accepted.len(), 33, "{statuses:?}");
    for (status, e) in answers.iter().filter(|(status, _)| *status != 202) {
        assert_eq!(
            (*status, code(e)),
            (422, "WalletInsufficientDeposit"),
            "{e}"
        );
        assert!(e["details"]["queued"].is_string(), "{e}");
    }
    for p in &accepted {
        assert_eq!(s.settled(&token, p).await["status"], "confirmed");
    }
    assert_eq!(s.token_balance(s.vendor_a).await, usd(99));
}

/// Two relayer processes on one database check payments against each other's: of 40
/// concurrent payments of 3 from a deposit of 100, half sent to each, exactly 33 are accepted
/// in all, and all 33 execute. (Each checking only its own, they would accept up to 66, and
/// the chain would refuse the excess after the relayer said `queued`.)
async fn two_processes_never_overdraw(db: Db) {
    let s = system(db).await;
    let (_, token) = s
        .open_session(json!({ "coSignThreshold": "0", "periodSeconds": 0, "periodBudget": "0" }))
        .await;
    // Started once the first has sent (the session's opening): the first holds the signer.
    let (other, other_base) = s.another_relayer().await;
    let pay = |base: String| {
        let body =
            json!({ "to": s.vendor_a, "amount": usd(3).to_string(), "purpose": "inference" });
        past_503(
            s.http
                .post(format!("{base}/v1/payments"))
                .bearer_auth(&token)
                .json(&body),
        )
    };
    let answers = futures_util::future::join_all((0..40).map(|i| {
        pay(match i % 2 {
            0 => s.base.clone(),
            _ => other_base.clone(),
        })
    }))
    .await;
    let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    let accepted: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == 202)
        .map(|(_, p)| p)
        .collect();
    assert_eq!(accepted.len(), 33, "{statuses:?}");
    for (status, e) in answers.iter().filter(|(status, _)| *status != 202) {
        assert_eq!(
            (*status, code(e)),
            (422, "WalletInsufficientDeposit"),
            "{e}"
        );
    }
    // Waiting at the process that does not send (the first holds the signer): the news of
    // the payment never reach it, and it looks again on its own well before `wait` runs out.
    let started = std::time::Instant::now();
    let waits = futures_util::future::join_all(accepted.iter().map(|p| {
        let url = format!(
            "{other_base}/v1/payments/{}?wait=30",
            p["id"].as_str().unwrap()
        );
        let req = s.http.get(url).bearer_auth(&token);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    }))
    .await;
    for p in &waits {
        assert_eq!(p["status"], "confirmed", "{p}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the waits ran out ({:?}) instead of seeing the confirmations",
        started.elapsed()
    );
    assert_eq!(s.token_balance(s.vendor_a).await, usd(99));
    other.shutdown().await;
}

async fn sandbox_keys_and_owner_opened_sessions(db: Db) {
    let s = system(db).await;
    // The sandbox holds its own key; the owner opens the session from its own wallet (and pays
    // its own gas) and the host registers it.
    let sandbox = Key::from_bytes(&B256::from(U256::from(0x5a4d_u64) << 64)).unwrap();
    let owner = dev_key(4);
    let token = address_of(&s.record, Contract::TestToken);
    let wallet = address_of(&s.record, Contract::SessionWallet);
    let mut operator = Sender::new(&s.client, dev_key(0)).await.unwrap();
    operator
        .transact(
            &s.client,
            token,
            &ITestToken::mintCall {
                to: owner.address(),
                value: usd(50),
            },
        )
        .await
        .unwrap();
    let (status, prep) = s
        .post(
            "/v1/sessions/prepare",
            &s.host,
            json!({
                "owner": owner.address(),
                "token": token,
                "deposit": usd(50).to_string(),
                "expiresAt": s.chain_now().await + 86_400,
                "allowlistId": s.list_id.to_string(),
                "sessionKey": sandbox.address(),
            }),
        )
        .await;
    assert_eq!(status, 201, "{prep}");
    assert_eq!(prep["sessionKey"], json!(sandbox.address()));
    let (status, e) = s
        .post(
            "/v1/sessions/register",
            &s.host,
            json!({ "preparedId": prep["preparedId"] }),
        )
        .await;
    assert_eq!((status, code(&e)), (409, "session_not_opened"), "{e}");
    let mut own = Sender::new(&s.client, owner.clone()).await.unwrap();
    own.transact(
        &s.client,
        token,
        &ITestToken::approveCall {
            spender: wallet,
            value: usd(50),
        },
    )
    .await
    .unwrap();
    own.transact(&s.client, wallet, &prepared_open_call(&prep))
        .await
        .unwrap();
    let (status, opened) = s
        .post(
            "/v1/sessions/register",
            &s.host,
            json!({ "preparedId": prep["preparedId"] }),
        )
        .await;
    assert_eq!(status, 201, "{opened}");
    assert_eq!(opened["sessionId"], prep["sessionId"]);
    let bearer = opened["capabilityToken"].as_str().unwrap();
    let (status, again) = s
        .post(
            "/v1/sessions/register",
            &s.host,
            json!({ "preparedId": prep["preparedId"] }),
        )
        .await;
    assert_eq!((status, code(&again)), (409, "session_already_opened"));

    // The relayer has no key to sign with; the sandbox signs.
    let (status, e) = s.pay(bearer, s.vendor_c, usd(1)).await;
    assert_eq!(
        (status, code(&e)),
        (409, "session_key_not_custodial"),
        "{e}"
    );
    let session: U256 = prep["sessionId"].as_str().unwrap().parse().unwrap();
    let signed_until = |key: &Key, nonce: u64, deadline: u64| {
        let intent = bursar_bindings::eip712::PaymentIntent {
            session,
            to: s.vendor_b,
            amount: usd(2),
            purpose: B256::repeat_byte(7),
            nonce: U256::from(nonce),
            deadline: U256::from(deadline),
        };
        let domain = bursar_bindings::eip712::SESSION_WALLET_DOMAIN.at(412_346, wallet);
        let signature = key.sign_hash_rsv(&alloy_sol_types::SolStruct::eip712_signing_hash(
            &intent, &domain,
        ));
        json!({
            "to": intent.to,
            "amount": intent.amount.to_string(),
            "purpose": intent.purpose,
            "nonce": nonce.to_string(),
            "deadline": deadline,
            "signature": format!("0x{}", alloy_primitives::hex::encode(signature)),
        })
    };
    let signed = |key: &Key, nonce: u64| signed_until(key, nonce, 4_000_000_000);
    // An intent whose deadline has passed is refused, however well signed.
    let (status, e) = s
        .post("/v1/payments", bearer, signed_until(&sandbox, 8, 1))
        .await;
    assert_eq!((status, code(&e)), (422, "WalletDeadlinePassed"), "{e}");
    let (status, e) = s.post("/v1/payments", bearer, signed(&dev_key(6), 9)).await;
    assert_eq!((status, code(&e)), (422, "WalletWrongSigner"), "{e}");
    let (status, p) = s.post("/v1/payments", bearer, signed(&sandbox, 9)).await;
    assert_eq!(status, 202, "{p}");
    assert_eq!(p["nonce"], "9");
    assert_eq!(s.settled(bearer, &p).await["status"], "confirmed");
    assert_eq!(s.token_balance(s.vendor_b).await, usd(2));
    let (status, e) = s.post("/v1/payments", bearer, signed(&sandbox, 9)).await;
    assert_eq!((status, code(&e)), (422, "WalletNonceUsed"), "{e}");
    // The same signed intent twice at once, without an idempotency key: one is queued, the
    // replay refused — whether it meets the first in flight or already on chain.
    let body = signed(&sandbox, 10);
    let (a, b) = tokio::join!(
        s.post("/v1/payments", bearer, body.clone()),
        s.post("/v1/payments", bearer, body)
    );
    let (accepted, refused) = if a.0 == 202 { (a, b) } else { (b, a) };
    assert_eq!(accepted.0, 202, "{accepted:?}");
    assert_eq!(
        (refused.0, code(&refused.1)),
        (422, "WalletNonceUsed"),
        "{refused:?}"
    );
    assert_eq!(s.settled(bearer, &accepted.1).await["status"], "confirmed");

    // The same, each intent sent to two relayer processes sharing the database at once: each
    // is queued by one of them only.
    let (other, other_base) = s.another_relayer().await;
    let post = |base: &str, body: &Value| {
        past_503(
            s.http
                .post(format!("{base}/v1/payments"))
                .bearer_auth(bearer)
                .json(body),
        )
    };
    // The second's first payment, alone: it knows the session's payments in flight (none),
    // as the first does, and each checks against what it knows.
    let (status, p) = post(&other_base, &signed(&sandbox, 11)).await;
    assert_eq!(status, 202, "{p}");
    assert_eq!(s.settled(bearer, &p).await["status"], "confirmed");
    let intents: Vec<Value> = (12..20).map(|nonce| signed(&sandbox, nonce)).collect();
    // Nothing mined meanwhile: the chain cannot tell either process that a nonce is used.
    let mine = |on: bool| s.client.request::<Value>("evm_setAutomine", json!([on]));
    mine(false).await.unwrap();
    let answers = futures_util::future::join_all(
        intents
            .iter()
            .map(|body| async { tokio::join!(post(&s.base, body), post(&other_base, body)) }),
    )
    .await;
    mine(true).await.unwrap();
    let _: Value = s.client.request("evm_mine", json!([])).await.unwrap();
    for (a, b) in &answers {
        let (accepted, refused) = if a.0 == 202 { (a, b) } else { (b, a) };
        assert_eq!(accepted.0, 202, "{a:?} {b:?}");
        assert_eq!(
            (refused.0, code(&refused.1)),
            (422, "WalletNonceUsed"),
            "{a:?} {b:?}"
        );
        assert_eq!(s.settled(bearer, &accepted.1).await["status"], "confirmed");
    }
    assert_eq!(s.token_balance(s.vendor_b).await, usd(2 * 11));
    other.shutdown().await;
    s.relayer.shutdown().await;
}

async fn webhooks_are_dead_lettered_and_replayed(db: Db) {
    let s = system(db).await;
    s.receiver.fail_all(true);
    let (id, _) = s.open_session(json!({})).await;
    let deliveries = format!("/v1/webhooks/{}/deliveries", s.endpoint);
    let dead = format!("{deliveries}?status=dead");
    s.when(|| async {
        let (_, d) = s.get(&dead, &s.host).await;
        d["deliveries"].as_array().is_some_and(|d| !d.is_empty())
    })
    .await;
    let (_, d) = s.get(&dead, &s.host).await;
    let letter = &d["deliveries"][0];
    assert_eq!(letter["eventType"], "session.opened");
    assert_eq!(letter["attempts"], 3);
    assert_eq!(letter["lastStatus"], 500);
    let message = letter["messageId"].as_str().unwrap().to_owned();
    assert_eq!(s.receiver.attempts(&message), 3);
    assert!(s.receiver.accepted().is_empty());

    // Another host can neither see nor replay it.
    let stranger = hosts::create(&s.store, "modal-prod", "webhooks")
        .await
        .unwrap()
        .key;
    assert_eq!(s.get(&deliveries, &stranger).await.0, 404);
    let replay = format!("{deliveries}/{message}/replay");
    assert_eq!(s.post(&replay, &stranger, json!({})).await.0, 404);
    s.receiver.fail_all(false);
    let (status, _) = s.post(&replay, &s.host, json!({})).await;
    assert_eq!(status, 202);
    s.receiver
        .until(|got| got.iter().any(|(a, _)| a.id == message))
        .await;
    assert_eq!(s.receiver.accepted()[0].1["data"]["sessionId"], json!(id));
    let unknown = format!("{deliveries}/msg_nope/replay");
    assert_eq!(s.post(&unknown, &s.host, json!({})).await.0, 404);

    // A deleted endpoint is gone from the list.
    let endpoint = format!("/v1/webhooks/{}", s.endpoint);
    let (status, _, _) = s
        .call(reqwest12::Method::DELETE, &endpoint, &s.host, None, None)
        .await;
    assert_eq!(status, 204);
    let (_, listed) = s.get("/v1/webhooks", &s.host).await;
    assert_eq!(listed["webhooks"], json!([]));
    s.relayer.shutdown().await;
}

/// A random JSON value meant to be refused as a payment body: mostly objects with the real
/// fields (`to`, `amount`, `purpose`, `nonce`, `deadline`, `signature`) holding wrong or edge
/// values.
fn hostile_body(next: &mut impl FnMut() -> u64, depth: u32) -> Value {
    let strings = [
        "",
        "0",
        "-1",
        "1e6",
        "0x",
        "0x12",
        "1.5",
        " 1",
        "٣",
        "\u{0}",
        "null",
        "115792089237316195423570985008687907853269984665640564039457584007913129639936",
        "0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1",
    ];
    let scalar = |n: u64| match n % 8 {
        0 => Value::Null,
        1 => json!(n.is_multiple_of(2)),
        2 => json!(n as i64),
        3 => json!(-(n as i64)),
        4 => json!(f64::from((n % 1000) as u32) / 7.0),
        5 => json!(strings[(n as usize) % strings.len()]),
        6 => json!("x".repeat((n % 6000) as usize)),
        _ => json!(format!("0x{}", "ab".repeat((n % 40) as usize))),
    };
    let n = next();
    if depth > 2 || n.is_multiple_of(5) {
        return scalar(next());
    }
    if n % 5 == 1 {
        return Value::Array((0..n % 4).map(|_| hostile_body(next, depth + 1)).collect());
    }
    let fields = [
        "to",
        "amount",
        "purpose",
        "nonce",
        "deadline",
        "signature",
        "extra",
    ];
    let mut object = serde_json::Map::new();
    for field in fields {
        // Keep most fields, each with a random (usually wrong) value; now and then a valid one.
        if !next().is_multiple_of(4) {
            let value = match (field, next() % 6) {
                ("to", 0) => json!(Address::repeat_byte(0xa1)),
                ("amount", 0) => json!("1"),
                ("purpose", 0) => json!("p"),
                _ => hostile_body(next, depth + 1),
            };
            object.insert(field.into(), value);
        }
    }
    Value::Object(object)
}

on_both_databases!(
    the_whole_flow,
    idempotent_and_hostile_requests,
    concurrent_payments_never_overdraw,
    two_processes_never_overdraw,
    sandbox_keys_and_owner_opened_sessions,
    webhooks_are_dead_lettered_and_replayed,
);

/// An ERC-8004 agent held by `holder` (registered by a dev account, then given to it): a
/// payment to `holder` pays that agent.
async fn agent_held_by(s: &System, holder: Address) -> U256 {
    use bursar_bindings::erc8004::{IIdentityRegistry, IDENTITY_REGISTRY};
    let mut registrant = Sender::new(&s.client, dev_key(6)).await.unwrap();
    let register = IIdentityRegistry::register_1Call {
        agentURI: "https://vendor-a.example/agent.json".into(),
    };
    let r = registrant
        .transact(&s.client, IDENTITY_REGISTRY, &register)
        .await
        .unwrap();
    let agent = r.events::<IIdentityRegistry::Registered>(IDENTITY_REGISTRY)[0].agentId;
    let give = IIdentityRegistry::transferFromCall {
        from: registrant.address(),
        to: holder,
        tokenId: agent,
    };
    registrant
        .transact(&s.client, IDENTITY_REGISTRY, &give)
        .await
        .unwrap();
    agent
}
