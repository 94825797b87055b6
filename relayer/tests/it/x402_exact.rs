//! Interop with x402's official packages, unmodified (`tools/x402`, pinned): a resource server
//! built with `@x402/express` asks for `exact` in USDC on the devnet. An agent pays it from its
//! session through `POST /v1/x402/pay` when the server's facilitator is the official exact EVM
//! facilitator (`@x402/evm`, in the server's process) and when it is Bursar's; and x402's own
//! client (`@x402/fetch`, a plain account) pays it through Bursar's facilitator.

use alloy_primitives::{Address, U256};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bursar_bindings::evm::{IFiatToken, USDC};
use bursar_e2e::x402::{dev_key_hex, Facilitator, OfficialServer};
use serde_json::{json, Value};

use super::flow::{system, system_with, usd, System};
use super::*;

fn decoded(response: &reqwest12::Response, name: &str) -> Value {
    let header = response.headers()[name].as_bytes();
    serde_json::from_slice(&B64.decode(header).unwrap()).unwrap()
}

/// (from, to) of the transaction a facilitator's `settled` answer names.
async fn transaction(s: &System, settled: &Value) -> (Address, Address) {
    let hash: alloy_primitives::B256 = settled["transaction"].as_str().unwrap().parse().unwrap();
    let tx: Value = s
        .client
        .request("eth_getTransactionByHash", json!([hash]))
        .await
        .unwrap();
    let address = |v: &Value| v.as_str().unwrap().parse::<Address>().unwrap();
    (address(&tx["from"]), address(&tx["to"]))
}

/// USDC's balance of `of`.
async fn usdc(s: &System, of: Address) -> U256 {
    s.client
        .view(None, USDC, IFiatToken::balanceOfCall { account: of })
        .await
        .unwrap()
}

async fn mint(s: &System, to: Address, amount: U256) {
    let mut minter = bursar_client::Sender::new(&s.client, dev_key(0))
        .await
        .unwrap();
    minter
        .transact(&s.client, USDC, &IFiatToken::mintCall { to, amount })
        .await
        .unwrap();
}

/// The agent's side of one payment: the 402, `POST /v1/x402/pay`, the paid retry. Asserts the
/// resource was served and USDC moved from the session wallet to `pay_to`; answers the
/// decoded `PAYMENT-RESPONSE`.
async fn agent_pays(s: &System, token: &str, server: &OfficialServer, pay_to: Address) -> Value {
    let wallet = s.record.address("sessionWallet").unwrap();
    let unpaid = server.get(None).await;
    assert_eq!(unpaid.status(), 402);
    let required = unpaid.headers()["payment-required"]
        .to_str()
        .unwrap()
        .to_owned();
    let asked =
        &serde_json::from_slice::<Value>(&B64.decode(&required).unwrap()).unwrap()["accepts"][0];
    assert_eq!(asked["scheme"], "exact", "{asked}");
    let amount: U256 = asked["amount"].as_str().unwrap().parse().unwrap();

    let (status, paid) = s
        .post(
            "/v1/x402/pay",
            token,
            json!({ "paymentRequired": required }),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    let before = (usdc(s, pay_to).await, usdc(s, wallet).await);
    let served = server
        .get(Some(paid["paymentSignature"].as_str().unwrap()))
        .await;
    assert_eq!(served.status(), 200, "{:?}", served.headers());
    let settlement = decoded(&served, "payment-response");
    assert_eq!(served.text().await.unwrap(), r#"{"report":"all quiet"}"#);
    assert_eq!(settlement["success"], true, "{settlement}");
    assert_eq!(
        settlement["payer"]
            .as_str()
            .unwrap()
            .parse::<Address>()
            .unwrap(),
        wallet
    );
    assert_eq!(
        (usdc(s, pay_to).await, usdc(s, wallet).await),
        (before.0 + amount, before.1 - amount),
        "USDC moved from the session wallet to payTo"
    );
    settlement
}

on_both_databases!(
    an_agent_pays_servers_built_with_x402s_official_packages,
    bursars_facilitator_settles_exact_once_and_only_as_authorized,
    an_agent_pays_exact_by_delegation_when_offered,
    parallel_settles_of_one_payment_answer_success_once,
);

/// The official facilitator settles the session wallet's reservation; then Bursar's settles
/// the same kind of payment for the same server; then x402's own client, paying from an
/// account, goes through Bursar's facilitator too.
async fn an_agent_pays_servers_built_with_x402s_official_packages(db: Db) {
    let system = system(db).await;
    let s = &system;
    mint(s, s.owner.address(), usd(100)).await;
    let (_, token) = s.open_session(json!({ "token": USDC })).await;

    let official =
        OfficialServer::start(&s.client, Facilitator::Official(5), s.vendor_a, usd(2)).await;
    let settled = agent_pays(s, &token, &official, s.vendor_a).await;
    // Sent by the official facilitator's account, not by the relayer.
    let sent = transaction(s, &settled).await;
    assert_eq!(sent.0, dev_key(5).address());

    let ours = OfficialServer::start(
        &s.client,
        Facilitator::At(format!("{}/x402", s.base)),
        s.vendor_b,
        usd(3),
    )
    .await;
    agent_pays(s, &token, &ours, s.vendor_b).await;

    // x402's own client, an account holding USDC, through Bursar's facilitator.
    let payer = dev_key(6);
    mint(s, payer.address(), usd(10)).await;
    let before = (usdc(s, payer.address()).await, usdc(s, s.vendor_b).await);
    let out = tokio::process::Command::new("node")
        .arg(bursar_e2e::x402::tools().unwrap().join("client.mjs"))
        .env("URL", &ours.url)
        .env("CHAIN_ID", s.client.chain_id().await.unwrap().to_string())
        .env("ASSET", USDC.to_string())
        .env("PAYER_KEY", dev_key_hex(6))
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["status"], 200, "{answer}");
    assert_eq!(answer["paymentResponse"]["success"], true, "{answer}");
    assert_eq!(
        (usdc(s, payer.address()).await, usdc(s, s.vendor_b).await),
        (before.0 - usd(3), before.1 + usd(3))
    );
    system.relayer.shutdown().await;
}

/// x402's exact requirements for `amount` USDC to `pay_to`, as `@x402/express` sends them.
fn exact_requirements(chain_id: u64, pay_to: Address, amount: U256) -> Value {
    json!({ "scheme": "exact", "network": format!("eip155:{chain_id}"), "amount": amount.to_string(),
            "asset": USDC, "payTo": pay_to, "maxTimeoutSeconds": 60,
            "extra": { "name": "USD Coin", "version": "2" } })
}

/// An authorization of `value` from `from` to `to`, signed by `signer` under USDC's domain
/// named `name`, as x402's client builds it; returns the facilitator request for `required`.
struct Authorization {
    from: Address,
    to: Address,
    value: U256,
    valid_before: u64,
    nonce: alloy_primitives::B256,
}

impl Authorization {
    fn request(&self, signer: &Key, name: &str, required: &Value) -> Value {
        use alloy_sol_types::SolStruct;
        let message = bursar_bindings::eip712::TransferWithAuthorization {
            from: self.from,
            to: self.to,
            value: self.value,
            validAfter: U256::ZERO,
            validBefore: U256::from(self.valid_before),
            nonce: self.nonce,
        };
        let network: &str = required["network"].as_str().unwrap();
        let chain_id: u64 = network.trim_start_matches("eip155:").parse().unwrap();
        let domain = alloy_sol_types::eip712_domain! {
            name: name.to_owned(),
            version: "2",
            chain_id: chain_id,
            verifying_contract: USDC,
        };
        let signature = signer.sign_hash_rsv(&message.eip712_signing_hash(&domain));
        json!({
            "x402Version": 2,
            "paymentPayload": {
                "x402Version": 2,
                "resource": { "url": "https://api.example/report" },
                "accepted": required,
                "payload": {
                    "signature": alloy_primitives::Bytes::from(signature),
                    "authorization": {
                        "from": self.from, "to": self.to, "value": self.value.to_string(),
                        "validAfter": "0", "validBefore": self.valid_before.to_string(),
                        "nonce": self.nonce,
                    },
                },
            },
            "paymentRequirements": required,
        })
    }
}

/// Bursar's facilitator, asked directly as a resource server asks it: what x402's official
/// facilitator refuses is refused with the same codes, a settlement happens once (two at
/// once included) and is reported settled once, and USDC moves only for what was settled.
async fn bursars_facilitator_settles_exact_once_and_only_as_authorized(db: Db) {
    let system = system(db).await;
    let s = &system;
    let chain_id = s.client.chain_id().await.unwrap();
    let payer = dev_key(6);
    mint(s, payer.address(), usd(10)).await;
    let required = exact_requirements(chain_id, s.vendor_a, usd(1));
    let valid_before = s.chain_now().await + 60;
    let good = |nonce: u8| Authorization {
        from: payer.address(),
        to: s.vendor_a,
        value: usd(1),
        valid_before,
        nonce: alloy_primitives::B256::repeat_byte(nonce),
    };
    let verify = |body: Value| async move {
        let (status, answer) = s.post("/x402/verify", "", body).await;
        assert_eq!(status, 200, "{answer}");
        answer
    };
    let refused = |answer: &Value| answer["invalidReason"].as_str().unwrap_or("").to_owned();

    let ok = verify(good(1).request(&payer, "USD Coin", &required)).await;
    assert_eq!(ok["isValid"], true, "{ok}");
    assert_eq!(
        ok["payer"].as_str().unwrap().parse::<Address>().unwrap(),
        payer.address()
    );

    let cases = [
        (
            Authorization {
                value: usd(2),
                ..good(1)
            }
            .request(&payer, "USD Coin", &required),
            "invalid_exact_evm_payload_authorization_value_mismatch",
        ),
        (
            Authorization {
                to: s.vendor_b,
                ..good(1)
            }
            .request(&payer, "USD Coin", &required),
            "invalid_exact_evm_recipient_mismatch",
        ),
        (
            good(1).request(&dev_key(7), "USD Coin", &required),
            "invalid_exact_evm_signature",
        ),
        (
            Authorization {
                valid_before: s.chain_now().await + 3,
                ..good(1)
            }
            .request(&payer, "USD Coin", &required),
            "invalid_exact_evm_payload_authorization_valid_before",
        ),
        // Signed under another name than the token's: USDC refuses the transfer.
        (
            good(1).request(&payer, "USDC", &{
                let mut r = required.clone();
                r["extra"]["name"] = json!("USDC");
                r
            }),
            "invalid_exact_evm_transaction_simulation_failed",
        ),
        // An account without USDC.
        (
            Authorization {
                from: dev_key(7).address(),
                ..good(1)
            }
            .request(&dev_key(7), "USD Coin", &required),
            "invalid_exact_evm_insufficient_balance",
        ),
        // The session wallet as payer of what it never reserved: it does not vouch.
        (
            Authorization {
                from: s.record.address("sessionWallet").unwrap(),
                ..good(1)
            }
            .request(&payer, "USD Coin", &required),
            "invalid_exact_evm_signature",
        ),
    ];
    for (body, reason) in cases {
        let answer = verify(body.clone()).await;
        assert_eq!(
            (answer["isValid"].clone(), refused(&answer)),
            (json!(false), reason.to_owned()),
            "{answer}"
        );
        let (_, settled) = s.post("/x402/settle", "", body).await;
        assert_eq!(
            (settled["success"].clone(), settled["errorReason"].clone()),
            (json!(false), json!(reason)),
            "{settled}"
        );
    }
    // An asset (or a delegation manager) without code: a call to it would "succeed".
    let mut codeless = required.clone();
    codeless["asset"] = json!(Address::repeat_byte(0xc0));
    let answer = verify(good(1).request(&payer, "USD Coin", &codeless)).await;
    assert_eq!(refused(&answer), "asset_not_deployed_contract", "{answer}");
    let mut other = required.clone();
    other["scheme"] = json!("upto");
    let answer = verify(good(1).request(&payer, "USD Coin", &other)).await;
    assert_eq!(refused(&answer), "unsupported_scheme");

    // Settled once; the same settlement again is refused, as is its verification.
    let before = (usdc(s, payer.address()).await, usdc(s, s.vendor_a).await);
    let body = good(1).request(&payer, "USD Coin", &required);
    let (status, settled) = s.post("/x402/settle", "", body.clone()).await;
    assert_eq!(
        (status, settled["success"].clone()),
        (200, json!(true)),
        "{settled}"
    );
    let sent = transaction(s, &settled).await;
    assert_eq!(sent.0, dev_key(9).address(), "sent by the relayer's signer");
    let (_, again) = s.post("/x402/settle", "", body.clone()).await;
    assert_eq!(
        again["errorReason"], "invalid_exact_evm_nonce_already_used",
        "{again}"
    );
    assert_eq!(
        refused(&verify(body).await),
        "invalid_exact_evm_nonce_already_used"
    );

    // Two settlements of one authorization at once: one transfer.
    let body = good(2).request(&payer, "USD Coin", &required);
    let (a, b) = tokio::join!(
        s.post("/x402/settle", "", body.clone()),
        s.post("/x402/settle", "", body)
    );
    let successes = [&a.1, &b.1].iter().filter(|r| r["success"] == true).count();
    assert_eq!(successes, 1, "{} / {}", a.1, b.1);
    assert_eq!(
        (usdc(s, payer.address()).await, usdc(s, s.vendor_a).await),
        (before.0 - usd(2), before.1 + usd(2)),
        "two authorizations of 1 USDC moved 2"
    );
    system.relayer.shutdown().await;
}

/// x402's `exact` through ERC-7710 (a method no published x402 package implements yet, so the
/// resource server's part is played here with x402's bodies): offered beside EIP-3009, the
/// agent signs a delegation (one transaction, the facilitator's; no reservation), and Bursar's
/// facilitator verifies it by simulating the gateway's `redeemDelegations` with the spec's
/// encoding and settles it once; the redemption must pay exactly what was signed.
async fn an_agent_pays_exact_by_delegation_when_offered(db: Db) {
    let system = system(db).await;
    let s = &system;
    mint(s, s.owner.address(), usd(100)).await;
    let (_, token) = s.open_session(json!({ "token": USDC })).await;
    let chain_id = s.client.chain_id().await.unwrap();
    let wallet = s.record.address("sessionWallet").unwrap();
    let gateway = s.record.address("sessionGateway").unwrap();
    let offer = |amount: U256| {
        let eip3009 = exact_requirements(chain_id, s.vendor_a, amount);
        let mut erc7710 = eip3009.clone();
        erc7710["extra"]["assetTransferMethod"] = json!("erc7710");
        json!({ "x402Version": 2, "resource": { "url": "https://api.example/report" },
                "accepts": [eip3009, erc7710] })
    };

    let (status, e) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": offer(usd(31)) }),
        )
        .await;
    assert_eq!(
        (status, super::flow::code(&e)),
        (422, "WalletPaymentCapExceeded"),
        "{e}"
    );

    let (status, paid) = s
        .post(
            "/v1/x402/pay",
            &token,
            json!({ "paymentRequired": offer(usd(2)) }),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    let payload = paid["paymentPayload"].clone();
    assert_eq!(
        payload["accepted"]["extra"]["assetTransferMethod"],
        "erc7710"
    );
    let address = |v: &Value| v.as_str().unwrap().parse::<Address>().unwrap();
    assert_eq!(address(&payload["payload"]["delegationManager"]), gateway);
    assert_eq!(address(&payload["payload"]["delegator"]), wallet);
    let before = (usdc(s, s.vendor_a).await, usdc(s, wallet).await);
    assert_eq!(before.0, U256::ZERO, "nothing moves before settlement");

    // The resource server asks Bursar's facilitator, with its own requirements.
    let request = |requirements: &Value| json!({ "x402Version": 2, "paymentPayload": payload, "paymentRequirements": requirements });
    let mine = payload["accepted"].clone();
    let (_, verified) = s.post("/x402/verify", "", request(&mine)).await;
    assert_eq!(verified["isValid"], true, "{verified}");
    assert_eq!(address(&verified["payer"]), wallet);
    // The delegation pays what the session key signed: not another amount, and only where
    // the requirements ask for erc7710.
    let mut more = mine.clone();
    more["amount"] = json!(usd(3).to_string());
    let (_, v) = s.post("/x402/verify", "", request(&more)).await;
    assert_eq!(v["invalidReason"], "WalletWrongSigner", "{v}");
    let mut plain = mine.clone();
    plain["extra"] = json!({ "name": "USD Coin", "version": "2" });
    let (_, v) = s.post("/x402/verify", "", request(&plain)).await;
    assert_eq!(v["invalidReason"], "unsupported_payload_type", "{v}");

    let (_, settled) = s.post("/x402/settle", "", request(&mine)).await;
    assert_eq!(settled["success"], true, "{settled}");
    let sent = transaction(s, &settled).await;
    assert_eq!(sent.1, gateway, "one transaction, to the gateway");
    assert_eq!(
        (usdc(s, s.vendor_a).await, usdc(s, wallet).await),
        (before.0 + usd(2), before.1 - usd(2))
    );
    let (_, again) = s.post("/x402/settle", "", request(&mine)).await;
    assert_eq!(
        again["errorReason"], "invalid_exact_evm_nonce_already_used",
        "{again}"
    );
    let (_, v) = s.post("/x402/verify", "", request(&mine)).await;
    assert_eq!(v["invalidReason"], "WalletNonceUsed", "{v}");
    assert_eq!(usdc(s, s.vendor_a).await, usd(2), "paid once");
    system.relayer.shutdown().await;
}

/// Eight `settle`s of one authorization at once, four at each of two relayer processes, with
/// mining paused as a real block time pauses it: one transfer, one `success` (a resource
/// server serves once per `success`), the others `settlement_pending` and, once answered,
/// `invalid_exact_evm_nonce_already_used`. A `settle` whose wait ran out answers
/// `settlement_pending` and the next one hears the outcome, once.
async fn parallel_settles_of_one_payment_answer_success_once(db: Db) {
    let system = system_with(db, |s| s.open_wait = std::time::Duration::from_secs(4)).await;
    let s = &system;
    let (other, other_base) = s.another_relayer().await;
    let chain_id = s.client.chain_id().await.unwrap();
    let payer = dev_key(6);
    mint(s, payer.address(), usd(10)).await;
    let required = exact_requirements(chain_id, s.vendor_a, usd(1));
    let valid_before = s.chain_now().await + 3600;
    let authorization = |nonce: u8| {
        Authorization {
            from: payer.address(),
            to: s.vendor_a,
            value: usd(1),
            valid_before,
            nonce: alloy_primitives::B256::repeat_byte(nonce),
        }
        .request(&payer, "USD Coin", &required)
    };
    let signer = dev_key(9).address();
    let sent = || s.sent_by(signer);
    let automine = |on: bool| s.automine(on);
    let settle = |base: String, body: Value| async move {
        let r = s
            .http
            .post(format!("{base}/x402/settle"))
            .json(&body)
            .send();
        let r = r.await.unwrap();
        assert_eq!(r.status(), 200);
        r.json::<Value>().await.unwrap()
    };
    let reason = |v: &Value| v["errorReason"].as_str().unwrap_or("").to_owned();
    let balances = || async { (usdc(s, payer.address()).await, usdc(s, s.vendor_a).await) };
    let before = balances().await;

    // The first `settle` sends; seven more arrive while its transfer waits in the pool.
    automine(false).await;
    let pool = sent().await;
    let body = authorization(1);
    let first = settle(s.base.clone(), body.clone());
    let duplicates = async {
        s.until_sent(signer, pool).await;
        let all = futures_util::future::join_all((0..7).map(|i| {
            let base = if i % 2 == 0 { &other_base } else { &s.base };
            settle(base.clone(), body.clone())
        }));
        // They must not wait for the block (to answer `success` with the first).
        let answered = tokio::time::timeout(std::time::Duration::from_secs(2), all).await;
        automine(true).await;
        answered
    };
    let (first, duplicates) = tokio::join!(first, duplicates);
    let duplicates = duplicates.expect("the duplicates waited for the block");
    assert_eq!(first["success"], true, "{first}");
    for d in &duplicates {
        assert_eq!(reason(d), "settlement_pending", "{duplicates:#?}");
    }
    assert_eq!(sent().await, pool + U256::from(1), "one transfer sent");
    let again = settle(other_base.clone(), body).await;
    assert_eq!(
        reason(&again),
        "invalid_exact_evm_nonce_already_used",
        "{again}"
    );
    assert_eq!(balances().await, (before.0 - usd(1), before.1 + usd(1)));

    // Not mined within the wait: `settlement_pending`; the next `settle` hears it settled.
    automine(false).await;
    let pool = sent().await;
    let body = authorization(2);
    let pending = settle(s.base.clone(), body.clone()).await;
    assert_eq!(reason(&pending), "settlement_pending", "{pending}");
    assert_eq!(sent().await, pool + U256::from(1));
    automine(true).await;
    let heard = settle(other_base.clone(), body.clone()).await;
    assert_eq!(heard["success"], true, "{heard}");
    let again = settle(s.base.clone(), body).await;
    assert_eq!(
        reason(&again),
        "invalid_exact_evm_nonce_already_used",
        "{again}"
    );
    assert_eq!(balances().await, (before.0 - usd(2), before.1 + usd(2)));
    other.shutdown().await;
}
