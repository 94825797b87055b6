//! An agent pays an HTTP 402 API from its session, end to end on the devnet: a local resource
//! server answers 402 with x402 v2 `PAYMENT-REQUIRED`, the sandbox has the relayer sign a
//! `bursar-session` payment, the server verifies and settles it through the relayer's
//! facilitator endpoints and serves the resource. Replayed and altered payloads are refused; an
//! amount over the session's cap or a payee off its allowlist is refused before anything is
//! signed.

use std::sync::Arc;

use alloy_primitives::{Address, U256};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bursar_bindings::evm::{IFiatToken, USDC};
use serde_json::{json, Value};

use super::flow::{code, past_503, system, usd, System};
use super::*;

/// A resource server charging `amount` to `pay_to` for `GET /report`, settling through the
/// facilitator at `facilitator`.
struct Resource {
    url: String,
    settled: Arc<std::sync::Mutex<Vec<Value>>>,
}

struct Terms {
    facilitator: String,
    network: String,
    asset: Address,
    pay_to: Address,
    amount: String,
    url: std::sync::Mutex<String>,
    settled: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Terms {
    fn required(&self, error: Option<&str>) -> Value {
        json!({
            "x402Version": 2,
            "error": error,
            "resource": { "url": *self.url.lock().unwrap(), "description": "a market report", "mimeType": "text/plain" },
            "accepts": [
                // An option Bursar does not pay with, which the agent must skip.
                { "scheme": "exact", "network": self.network, "amount": self.amount, "asset": self.asset,
                  "payTo": self.pay_to, "maxTimeoutSeconds": 60, "extra": { "name": "USDC", "version": "2" } },
                { "scheme": "bursar-session", "network": self.network, "amount": self.amount, "asset": self.asset,
                  "payTo": self.pay_to, "maxTimeoutSeconds": 60 },
            ],
        })
    }
}

fn payment_required(terms: &Terms, error: Option<&str>) -> Response {
    let header = B64.encode(terms.required(error).to_string());
    (
        StatusCode::PAYMENT_REQUIRED,
        [("PAYMENT-REQUIRED", header)],
        "{}",
    )
        .into_response()
}

/// What a resource server using any x402 facilitator does.
async fn report(State(t): State<Arc<Terms>>, headers: HeaderMap) -> Response {
    let Some(signature) = headers.get("payment-signature") else {
        return payment_required(&t, Some("PAYMENT-SIGNATURE header is required"));
    };
    let payload: Value =
        serde_json::from_slice(&B64.decode(signature.as_bytes()).unwrap()).unwrap();
    // Its own requirements, never the client's copy.
    let requirements = t.required(None)["accepts"][1].clone();
    let body =
        json!({ "x402Version": 2, "paymentPayload": payload, "paymentRequirements": requirements });
    let facilitator = |step: &'static str| {
        let request = reqwest12::Client::new()
            .post(format!("{}/x402/{step}", t.facilitator))
            .json(&body);
        async move {
            let answer = request.send().await.unwrap();
            answer.json::<Value>().await.unwrap()
        }
    };
    let verified = facilitator("verify").await;
    if verified["isValid"] != true {
        return payment_required(&t, verified["invalidReason"].as_str());
    }
    let settled = facilitator("settle").await;
    t.settled.lock().unwrap().push(settled.clone());
    let header = B64.encode(settled.to_string());
    if settled["success"] != true {
        return (
            StatusCode::PAYMENT_REQUIRED,
            [("PAYMENT-RESPONSE", header)],
            "",
        )
            .into_response();
    }
    (
        StatusCode::OK,
        [("PAYMENT-RESPONSE", header)],
        "BTC 97,000; ETH 3,100",
    )
        .into_response()
}

impl Resource {
    async fn start(s: &System, pay_to: Address, amount: &str) -> Resource {
        let settled = Arc::new(std::sync::Mutex::new(Vec::new()));
        let terms = Arc::new(Terms {
            facilitator: s.base.clone(),
            network: format!("eip155:{}", s.client.chain_id().await.unwrap()),
            asset: s
                .record
                .address(bursar_deploy::Contract::TestToken.key())
                .unwrap(),
            pay_to,
            amount: amount.to_owned(),
            url: Default::default(),
            settled: settled.clone(),
        });
        let app = axum::Router::new()
            .route("/report", axum::routing::get(report))
            .with_state(terms.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/report", listener.local_addr().unwrap());
        *terms.url.lock().unwrap() = url.clone();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Resource { url, settled }
    }

    async fn get(&self, signature: Option<&str>) -> (u16, HeaderMap, String) {
        let mut req = reqwest12::Client::new().get(&self.url);
        if let Some(sig) = signature {
            req = req.header("PAYMENT-SIGNATURE", sig);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        (status, headers, r.text().await.unwrap())
    }
}

fn decoded(headers: &HeaderMap, name: &str) -> Value {
    serde_json::from_slice(&B64.decode(headers[name].as_bytes()).unwrap()).unwrap()
}

async fn an_agent_pays_a_402_api_from_its_session(db: Db) {
    let s = system(db).await;
    let (_, token) = s.open_session(json!({})).await;
    let (status, supported) = s.get("/x402/supported", "none").await;
    assert_eq!(status, 200, "{supported}");
    assert_eq!(supported["kinds"][0]["scheme"], "bursar-session");
    assert_eq!(supported["kinds"][0]["network"], "eip155:412346");
    assert_eq!(
        supported["signers"]["eip155:*"][0],
        dev_key(9).address().to_string()
    );

    // An x402 v1 body (another shape) is refused as x402 refuses a version, not as malformed.
    let v1 = json!({
        "x402Version": 1,
        "paymentPayload": { "x402Version": 1, "scheme": "exact", "network": "base", "payload": {} },
        "paymentRequirements": { "scheme": "exact", "network": "base", "maxAmountRequired": "1" },
    });
    let (status, verified) = s.post("/x402/verify", "none", v1.clone()).await;
    assert_eq!(status, 200, "{verified}");
    assert_eq!(verified["isValid"], false);
    assert_eq!(
        verified["invalidReason"], "invalid_x402_version",
        "{verified}"
    );
    let (status, settled) = s.post("/x402/settle", "none", v1).await;
    assert_eq!(
        (status, settled["success"].clone()),
        (200, json!(false)),
        "{settled}"
    );
    assert_eq!(settled["errorReason"], "invalid_x402_version", "{settled}");
    let (status, e) = s
        .post("/x402/verify", "none", json!({ "x402Version": 2 }))
        .await;
    assert_eq!((status, code(&e)), (400, "invalid_request"), "{e}");

    // 1. The API answers 402; the agent hands the requirements to the relayer.
    let api = Resource::start(&s, s.vendor_a, &usd(5).to_string()).await;
    let (status, headers, _) = api.get(None).await;
    assert_eq!(status, 402);
    let required = headers["payment-required"].to_str().unwrap().to_owned();
    let (status, paid) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": required }),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    let signature = paid["paymentSignature"].as_str().unwrap().to_owned();
    assert_eq!(
        paid["paymentPayload"]["accepted"]["scheme"],
        "bursar-session"
    );

    // 2. It retries with PAYMENT-SIGNATURE: verified, settled on chain, served.
    let before = s.token_balance(s.vendor_a).await;
    let (status, headers, body) = api.get(Some(&signature)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "BTC 97,000; ETH 3,100");
    let response = decoded(&headers, "payment-response");
    assert_eq!(response["success"], true, "{response}");
    assert_eq!(response["network"], "eip155:412346");
    assert!(response["transaction"].as_str().unwrap().starts_with("0x"));
    assert_eq!(s.token_balance(s.vendor_a).await, before + usd(5));
    // The payment is the session's like any other, its purpose the resource's hash.
    let (_, list) = s.get("/v1/payments", &token).await;
    let payment = &list["payments"][0];
    assert_eq!(payment["status"], "confirmed", "{list}");
    assert_eq!(
        payment["purpose"],
        paid["paymentPayload"]["payload"]["purpose"]
    );

    // 3. Replayed: the same header again is refused, and nothing more is paid.
    let (status, headers, _) = api.get(Some(&signature)).await;
    assert_eq!(status, 402);
    let again = decoded(&headers, "payment-required");
    assert_eq!(again["error"], "WalletNonceUsed", "{again}");
    assert_eq!(s.token_balance(s.vendor_a).await, before + usd(5));
    // Settling the same payload directly is refused too.
    let payload: Value = serde_json::from_slice(&B64.decode(&signature).unwrap()).unwrap();
    let direct = json!({ "x402Version": 2, "paymentPayload": payload, "paymentRequirements": payload["accepted"] });
    let (status, r) = s.post("/x402/settle", "none", direct).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        (r["success"].clone(), r["transaction"].clone()),
        (json!(false), json!("")),
        "{r}"
    );

    // 4. Altered: a fresh payment with the amount or the payee changed in the payload.
    let (_, paid) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": required }),
        )
        .await;
    let fresh: Value = serde_json::from_slice(
        &B64.decode(paid["paymentSignature"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    for (path, value, reason) in [
        (
            "/payload/amount",
            json!(usd(6).to_string()),
            "invalid_bursar_session_amount_mismatch",
        ),
        (
            "/accepted/payTo",
            json!(s.vendor_b),
            "invalid_payment_requirements",
        ),
        (
            "/payload/to",
            json!(s.vendor_b),
            "invalid_bursar_session_recipient_mismatch",
        ),
        (
            "/payload/deadline",
            json!(
                paid["paymentPayload"]["payload"]["deadline"]
                    .as_u64()
                    .unwrap()
                    + 1
            ),
            "WalletWrongSigner",
        ),
    ] {
        let mut altered = fresh.clone();
        *altered.pointer_mut(path).unwrap() = value;
        let header = B64.encode(altered.to_string());
        let (status, headers, _) = api.get(Some(&header)).await;
        assert_eq!(status, 402, "{path}");
        assert_eq!(
            decoded(&headers, "payment-required")["error"],
            reason,
            "{path}"
        );
    }
    // The untouched one still pays.
    let (status, _, _) = api.get(paid["paymentSignature"].as_str()).await;
    assert_eq!(status, 200);
    assert_eq!(s.token_balance(s.vendor_a).await, before + usd(10));

    // 5. Over the session's cap (30), or to a payee off its allowlist: refused by the wallet's
    // rule before anything is signed.
    let pricey = Resource::start(&s, s.vendor_b, &usd(31).to_string()).await;
    let (_, headers, _) = pricey.get(None).await;
    let required = headers["payment-required"].to_str().unwrap();
    let (status, r) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": required }),
        )
        .await;
    assert_eq!((status, code(&r)), (422, "WalletPaymentCapExceeded"), "{r}");
    let stranger = Resource::start(&s, s.vendor_c, "1").await;
    let (_, headers, _) = stranger.get(None).await;
    let required = headers["payment-required"].to_str().unwrap();
    let (status, r) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": required }),
        )
        .await;
    assert_eq!(status, 422, "{r}");
    assert!(code(&r).starts_with("Wallet"), "{r}");
    // Requirements without a bursar-session option, and malformed ones.
    let exact_only = json!({ "x402Version": 2, "resource": { "url": "https://x" }, "accepts": [
        { "scheme": "exact", "network": "eip155:8453", "amount": "1", "asset": Address::ZERO, "payTo": s.vendor_a, "maxTimeoutSeconds": 60 } ] });
    let (status, r) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": exact_only }),
        )
        .await;
    assert_eq!((status, code(&r)), (409, "x402_no_bursar_option"), "{r}");
    let (status, r) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": "not base64!" }),
        )
        .await;
    assert_eq!((status, code(&r)), (400, "invalid_request"), "{r}");
    // Only a sandbox pays: a host key is not a capability token.
    assert_eq!(
        s.post("/v1/x402/pay", &s.host, json!({ "paymentRequired": {} }))
            .await
            .0,
        401
    );
    assert_eq!(
        api.settled.lock().unwrap().len(),
        2,
        "settled only once verified: the two valid payments"
    );
    s.relayer.shutdown().await;
}

on_both_databases!(
    an_agent_pays_a_402_api_from_its_session,
    an_agent_pays_exact_in_usdc_through_a_reservation,
    a_reservation_in_flight_counts_in_every_process,
    reservations_at_once_at_two_processes_never_overdraw,
);

/// A session of the owner's USDC (100 minted to the owner): its id and capability token.
async fn usdc_session(s: &System) -> (String, String) {
    let mut minter = bursar_client::Sender::new(&s.client, dev_key(0))
        .await
        .unwrap();
    minter
        .transact(
            &s.client,
            USDC,
            &IFiatToken::mintCall {
                to: s.owner.address(),
                amount: usd(100),
            },
        )
        .await
        .unwrap();
    s.open_session(json!({ "token": USDC })).await
}

/// Transactions the relayer's signer has sent, mined or in the devnet's pool.
async fn sent(s: &System) -> U256 {
    let signer = dev_key(9).address();
    s.client
        .request("eth_getTransactionCount", json!([signer, "pending"]))
        .await
        .unwrap()
}

/// A `PAYMENT-REQUIRED` header asking `amount` of USDC for `vendor_a` by `exact` alone.
fn exact_required(s: &System, amount: U256) -> String {
    let r = json!({
        "x402Version": 2,
        "resource": { "url": "https://api.example/forecast" },
        "accepts": [{ "scheme": "exact", "network": "eip155:412346", "amount": amount.to_string(),
                      "asset": USDC, "payTo": s.vendor_a, "maxTimeoutSeconds": 60,
                      "extra": { "name": "USD Coin", "version": "2" } }],
    });
    B64.encode(r.to_string())
}

/// x402's `exact` in USDC, the only option a resource offers: the relayer reserves an
/// EIP-3009 authorization from the session wallet under the session's rules, and a
/// facilitator (here a plain account, as x402's settles a 65-byte signature) settles it with
/// USDC's own `transferWithAuthorization`, which asks the wallet to vouch (ERC-1271). Over the
/// cap it is refused with the wallet's error before anything is sent.
async fn an_agent_pays_exact_in_usdc_through_a_reservation(db: Db) {
    let s = system(db).await;
    let (_, token) = usdc_session(&s).await;
    let usdc = |of: Address| {
        let client = s.client.clone();
        async move {
            client
                .view(None, USDC, IFiatToken::balanceOfCall { account: of })
                .await
                .unwrap()
        }
    };
    let required = |amount: U256| exact_required(&s, amount);

    // Over the session's cap (30): the wallet's error, and no transaction.
    let (status, e) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": required(usd(31)) }),
        )
        .await;
    assert_eq!(status, 422, "{e}");
    assert!(e.to_string().contains("WalletPaymentCapExceeded"), "{e}");

    let (status, paid) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": required(usd(5)) }),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    let payload = &paid["paymentPayload"];
    assert_eq!(payload["accepted"]["scheme"], "exact");
    let auth = &payload["payload"]["authorization"];
    let wallet = s.record.address("sessionWallet").unwrap();
    assert_eq!(
        auth["from"].as_str().unwrap().parse::<Address>().unwrap(),
        wallet
    );
    assert_eq!(auth["value"], usd(5).to_string());
    let signature: alloy_primitives::Bytes = payload["payload"]["signature"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(signature.len(), 65);

    // The facilitator settles it through USDC (v, r, s): the vendor is paid from the wallet.
    let before = (usdc(s.vendor_a).await, usdc(wallet).await);
    let settle = bursar_bindings::eip712::TransferWithAuthorization {
        from: wallet,
        to: s.vendor_a,
        value: usd(5),
        validAfter: auth["validAfter"].as_str().unwrap().parse().unwrap(),
        validBefore: auth["validBefore"].as_str().unwrap().parse().unwrap(),
        nonce: auth["nonce"].as_str().unwrap().parse().unwrap(),
    }
    .transfer_call(&signature, true);
    let mut facilitator = bursar_client::Sender::new(&s.client, dev_key(5))
        .await
        .unwrap();
    facilitator
        .send(&s.client, Some(USDC), settle.clone(), U256::ZERO)
        .await
        .unwrap();
    assert_eq!(
        (usdc(s.vendor_a).await, usdc(wallet).await),
        (before.0 + usd(5), before.1 - usd(5))
    );
    // Once: a second settlement is refused by USDC.
    let again = facilitator
        .send(&s.client, Some(USDC), settle.clone(), U256::ZERO)
        .await;
    assert!(again.is_err(), "settled twice");

    // The same resource again at once (the same second): an authorization of its own.
    let (status, again) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": required(usd(5)) }),
        )
        .await;
    assert_eq!(status, 200, "{again}");
    let second = &again["paymentPayload"]["payload"]["authorization"];
    assert_ne!(second["nonce"], auth["nonce"]);

    // Payments queued but not mined yet leave 0 of the period's 40 (10 reserved above): a
    // reservation of 6 is refused at once with the wallet's error, saying what is queued,
    // where the chain alone would still allow it.
    let mine = |on: bool| s.client.request::<Value>("evm_setAutomine", json!([on]));
    mine(false).await.unwrap();
    let queued = [
        s.pay(&token, s.vendor_b, usd(15)).await,
        s.pay(&token, s.vendor_b, usd(15)).await,
    ];
    assert!(
        queued.iter().all(|(status, _)| *status == 202),
        "{queued:?}"
    );
    let (status, e) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": required(usd(6)) }),
        )
        .await;
    assert_eq!(
        (status, code(&e)),
        (422, "WalletPeriodBudgetExceeded"),
        "{e}"
    );
    assert_eq!(e["details"]["queued"], usd(30).to_string(), "{e}");
    mine(true).await.unwrap();
    let _: Value = s.client.request("evm_mine", json!([])).await.unwrap();
    for (_, p) in &queued {
        assert_eq!(s.settled(&token, p).await["status"], "confirmed");
    }
}

/// An x402 reservation takes its amount off the session's budget from when it is queued, in
/// every relayer process sharing the database: payments sent to another process while it is
/// not mined are checked against it.
async fn a_reservation_in_flight_counts_in_every_process(db: Db) {
    let s = system(db).await;
    let (_, token) = usdc_session(&s).await;
    // Started once the first has sent (the session's opening): the first holds the signer.
    let (other, other_base) = s.another_relayer().await;
    let mine = |on: bool| s.client.request::<Value>("evm_setAutomine", json!([on]));
    mine(false).await.unwrap();
    // 20 of the period's 40, reserved at the other process; its answer waits for the block.
    let reserve = s
        .http
        .post(format!("{other_base}/v1/x402/pay"))
        .bearer_auth(&token)
        .json(&json!({ "paymentRequired": exact_required(&s, usd(20)) }))
        .send();
    // Sent (by the first process, which holds the signer): in the devnet's pool.
    let pending = || sent(&s);
    let before = pending().await;
    let pay_meanwhile = async {
        while pending().await == before {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let (status, first) = s.pay(&token, s.vendor_b, usd(15)).await;
        assert_eq!(status, 202, "{first}");
        // 20 reserved and 15 queued leave 5 of the 40.
        let (status, e) = s.pay(&token, s.vendor_b, usd(10)).await;
        assert_eq!(
            (status, code(&e)),
            (422, "WalletPeriodBudgetExceeded"),
            "{e}"
        );
        assert_eq!(e["details"]["queued"], usd(35).to_string(), "{e}");
        mine(true).await.unwrap();
        let _: Value = s.client.request("evm_mine", json!([])).await.unwrap();
        first
    };
    let (reserved, first) = tokio::join!(reserve, pay_meanwhile);
    let reserved = reserved.unwrap();
    assert_eq!(reserved.status(), 200);
    assert_eq!(s.settled(&token, &first).await["status"], "confirmed");
    // Mined, both hold what they held queued: 5 left.
    let (status, e) = s.pay(&token, s.vendor_b, usd(6)).await;
    assert_eq!(
        (status, code(&e)),
        (422, "WalletPeriodBudgetExceeded"),
        "{e}"
    );
    let (status, last) = s.pay(&token, s.vendor_b, usd(5)).await;
    assert_eq!(status, 202, "{last}");
    other.shutdown().await;
}

/// Six reservations of 10 against a period's 40, sent at once to two relayer processes with
/// mining paused: four are queued and two refused with the wallet's error, so none is sent
/// only to be reverted on chain.
async fn reservations_at_once_at_two_processes_never_overdraw(db: Db) {
    let s = system(db).await;
    let (_, token) = usdc_session(&s).await;
    let (other, other_base) = s.another_relayer().await;
    let mine = |on: bool| s.client.request::<Value>("evm_setAutomine", json!([on]));
    let pending = || sent(&s);
    mine(false).await.unwrap();
    let before = pending().await;
    let reserve = |base: String| {
        past_503(
            s.http
                .post(format!("{base}/v1/x402/pay"))
                .bearer_auth(&token)
                .json(&json!({ "paymentRequired": exact_required(&s, usd(10)) })),
        )
    };
    let all = futures_util::future::join_all((0..6).map(|i| {
        reserve(match i % 2 {
            0 => s.base.clone(),
            _ => other_base.clone(),
        })
    }));
    // The queued ones answer once mined: mine when four are sent.
    let miner = async {
        while pending().await < before + U256::from(4) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        mine(true).await.unwrap();
        let _: Value = s.client.request("evm_mine", json!([])).await.unwrap();
    };
    let (answers, ()) = tokio::join!(all, miner);
    let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        4,
        "{answers:?}"
    );
    for (status, e) in answers.iter().filter(|(status, _)| *status != 200) {
        assert_eq!(
            (*status, code(e)),
            (422, "WalletPeriodBudgetExceeded"),
            "{answers:?}"
        );
    }
    assert_eq!(pending().await, before + U256::from(4), "nothing more sent");
    other.shutdown().await;
}
