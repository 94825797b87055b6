//! x402's `batch-settlement` with Bursar as the facilitator: a resource server built with
//! `@x402/express` and x402's batch-settlement server scheme, whose facilitator is the
//! relayer's `…/x402`, is paid by x402's own client (an account); x402's channel manager then
//! claims, settles and refunds through it, the relayer signing as the channels' receiver
//! authorizer. Then what the facilitator refuses, as a hostile payer or server would try it.

use alloy_primitives::{aliases::U40, keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::SolEvent;
use bursar_bindings::evm::{IFiatToken, USDC};
use bursar_bindings::x402::{
    self, ChannelConfig, IX402BatchSettlement as Escrow, BATCH_SETTLEMENT,
};
use bursar_e2e::x402::{official_client, Facilitator, OfficialServer, Scheme};
use serde_json::{json, Value};

use super::flow::{system, usd, System};
use super::*;

/// One call's price: 0.01 USDC.
const PRICE: u64 = 10_000;

async fn usdc(s: &System, of: Address) -> U256 {
    s.client
        .view(None, USDC, IFiatToken::balanceOfCall { account: of })
        .await
        .unwrap()
}

async fn post(s: &System, path: &str, body: &Value) -> Value {
    let response = s
        .http
        .post(format!("{}/x402/{path}", s.base))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// A facilitator request for a `batch-settlement` payload under the server's requirements.
fn request(s_network: &str, pay_to: Address, authorizer: &str, payload: Value) -> Value {
    let requirements = json!({
        "scheme": "batch-settlement",
        "network": s_network,
        "amount": PRICE.to_string(),
        "asset": USDC.to_string(),
        "payTo": pay_to.to_string(),
        "maxTimeoutSeconds": 300,
        "extra": {"receiverAuthorizer": authorizer, "withdrawDelay": 900, "name": "USD Coin", "version": "2"},
    });
    json!({
        "x402Version": 2,
        "paymentPayload": {"x402Version": 2, "accepted": requirements, "payload": payload},
        "paymentRequirements": requirements,
    })
}

fn config_json(c: &ChannelConfig) -> Value {
    json!({
        "payer": c.payer.to_string(),
        "payerAuthorizer": c.payerAuthorizer.to_string(),
        "receiver": c.receiver.to_string(),
        "receiverAuthorizer": c.receiverAuthorizer.to_string(),
        "token": c.token.to_string(),
        "withdrawDelay": c.withdrawDelay.to::<u64>(),
        "salt": c.salt.to_string(),
    })
}

/// A voucher payload for `config` up to `ceiling`, signed by `key`.
fn voucher(kind: &str, config: &ChannelConfig, chain_id: u64, ceiling: u128, key: &Key) -> Value {
    let id = x402::channel_id(config, chain_id);
    let signature = Bytes::from(key.sign_hash_rsv(&x402::voucher_digest(id, ceiling, chain_id)));
    json!({
        "type": kind,
        "channelConfig": config_json(config),
        "voucher": {"channelId": id.to_string(), "maxClaimableAmount": ceiling.to_string(), "signature": signature.to_string()},
    })
}

on_both_databases!(
    bursars_facilitator_runs_x402s_batch_settlement_and_refuses_what_it_must,
    a_session_pays_x402s_batch_settlement_server_with_vouchers,
);

async fn bursars_facilitator_runs_x402s_batch_settlement_and_refuses_what_it_must(db: Db) {
    let system = system(db).await;
    let s = &system;
    let chain_id = s.client.chain_id().await.unwrap();
    let network = format!("eip155:{chain_id}");

    // The relayer offers batch-settlement, naming the receiver authorizer it signs as.
    let supported: Value = s
        .http
        .get(format!("{}/x402/supported", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kind = supported["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["scheme"] == "batch-settlement")
        .cloned()
        .expect("batch-settlement is supported");
    let authorizer: Address = kind["extra"]["receiverAuthorizer"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let signers = s.relayer.app.engine.signers();
    assert!(
        !signers.contains(&authorizer),
        "a key of its own, not a signer's"
    );

    // x402's own client pays twelve calls through x402's server, the relayer facilitating.
    let payer = dev_key(6);
    let mut minter = bursar_client::Sender::new(&s.client, dev_key(0))
        .await
        .unwrap();
    minter
        .transact(
            &s.client,
            USDC,
            &IFiatToken::mintCall {
                to: payer.address(),
                amount: usd(10),
            },
        )
        .await
        .unwrap();
    let facilitator = Facilitator::At(format!("{}/x402", s.base));
    let server = OfficialServer::start_scheme(
        &s.client,
        facilitator,
        Scheme::BatchSettlement,
        s.vendor_b,
        U256::from(PRICE),
    )
    .await;
    let calls = 12;
    let answers = official_client(&s.client, Scheme::BatchSettlement, 6, &server.url, calls).await;
    let mut deposits = Vec::new();
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["status"], 200, "call {i}: {a}");
        let tx = a["paymentResponse"]["transaction"]
            .as_str()
            .unwrap_or_default();
        if !tx.is_empty() {
            deposits.push(tx.parse::<B256>().unwrap());
        }
    }
    assert_eq!(deposits.len(), 2, "a deposit and one top-up");
    // The deposits were sent by the relayer's signers; the channel is the one the client named.
    let receipt = s.client.receipt(deposits[0]).await.unwrap().unwrap();
    let created = receipt
        .logs
        .iter()
        .find_map(|l| {
            Escrow::ChannelCreated::decode_raw_log(l.topics.iter().copied(), &l.data).ok()
        })
        .expect("the first deposit created the channel");
    let config = created.config;
    assert_eq!(
        (config.receiver, config.receiverAuthorizer, config.token),
        (s.vendor_b, authorizer, USDC)
    );
    let tx: Value = s
        .client
        .request("eth_getTransactionByHash", json!([deposits[0]]))
        .await
        .unwrap();
    assert!(signers.contains(&tx["from"].as_str().unwrap().parse().unwrap()));

    // x402's channel manager claims (the relayer signing the batch), settles, refunds.
    let before = usdc(s, payer.address()).await;
    let done = server.settle_channels().await;
    assert_eq!(done["claims"][0]["vouchers"], 1, "{done}");
    assert_eq!(done["refunds"].as_array().unwrap().len(), 1, "{done}");
    let spent = U256::from(calls as u64 * PRICE);
    assert_eq!(usdc(s, s.vendor_b).await, spent);
    assert_eq!(
        usdc(s, payer.address()).await,
        before + U256::from(20 * PRICE) - spent
    );
    assert_eq!(usdc(s, BATCH_SETTLEMENT).await, U256::ZERO);

    // What the facilitator refuses, with x402's codes, sending nothing.
    let authorizer_hex = authorizer.to_string();
    let ask = |payload: Value| request(&network, s.vendor_b, &authorizer_hex, payload);
    let reason = |v: &Value| v["invalidReason"].as_str().unwrap_or_default().to_owned();
    // A voucher beyond what the channel holds, and one below what was claimed.
    let held = 20 * PRICE as u128;
    let beyond = post(
        s,
        "verify",
        &ask(voucher("voucher", &config, chain_id, held + 1, &payer)),
    )
    .await;
    assert_eq!(
        reason(&beyond),
        "invalid_batch_settlement_evm_cumulative_exceeds_balance"
    );
    let stale = post(
        s,
        "verify",
        &ask(voucher("voucher", &config, chain_id, held / 2, &payer)),
    )
    .await;
    assert_eq!(
        reason(&stale),
        "invalid_batch_settlement_evm_cumulative_below_claimed"
    );
    // A voucher another key signed.
    let forger = Key::from_bytes(&keccak256("forger")).unwrap();
    let forged = post(
        s,
        "verify",
        &ask(voucher("voucher", &config, chain_id, held, &forger)),
    )
    .await;
    assert_eq!(
        reason(&forged),
        "invalid_batch_settlement_evm_voucher_signature"
    );
    // Terms naming another chain, another token, another receiver authorizer.
    let elsewhere = request(
        "eip155:1",
        s.vendor_b,
        &authorizer_hex,
        voucher("voucher", &config, chain_id, held, &payer),
    );
    assert_eq!(
        reason(&post(s, "verify", &elsewhere).await),
        "invalid_batch_settlement_evm_network_mismatch"
    );
    let other_token = ChannelConfig {
        token: Address::repeat_byte(0x70),
        ..config.clone()
    };
    let v = post(
        s,
        "verify",
        &ask(voucher("voucher", &other_token, chain_id, held, &payer)),
    )
    .await;
    assert_eq!(reason(&v), "invalid_batch_settlement_evm_token_mismatch");
    let mine = Key::from_bytes(&keccak256("a server's own authorizer")).unwrap();
    let theirs = ChannelConfig {
        receiverAuthorizer: mine.address(),
        payerAuthorizer: payer.address(),
        salt: B256::repeat_byte(1),
        withdrawDelay: U40::from(900),
        ..config.clone()
    };
    let v = post(
        s,
        "verify",
        &ask(voucher("voucher", &theirs, chain_id, held, &payer)),
    )
    .await;
    assert_eq!(
        reason(&v),
        "invalid_batch_settlement_evm_receiver_authorizer_mismatch"
    );
    // A channel that holds nothing.
    let asked = request(
        &network,
        s.vendor_b,
        &mine.address().to_string(),
        voucher("voucher", &theirs, chain_id, 1, &payer),
    );
    assert_eq!(
        reason(&post(s, "verify", &asked).await),
        "invalid_batch_settlement_evm_channel_not_found"
    );

    // Settling: a claim for a channel whose authorizer is not the relayer's is not signed; a
    // sweep with nothing claimed sends nothing; the spent refund nonce is refused.
    let id = x402::channel_id(&theirs, chain_id);
    let digest = x402::voucher_digest(id, 1, chain_id);
    let claim = json!({
        "type": "claim",
        "claims": [{
            "voucher": {"channel": config_json(&theirs), "maxClaimableAmount": "1"},
            "signature": Bytes::from(payer.sign_hash_rsv(&digest)).to_string(),
            "totalClaimed": "1",
        }],
    });
    let refused = post(s, "settle", &ask(claim)).await;
    assert_eq!(refused["success"], false);
    assert_eq!(
        refused["errorReason"],
        "invalid_batch_settlement_evm_authorizer_address_mismatch"
    );
    let sweep =
        json!({"type": "settle", "receiver": s.vendor_b.to_string(), "token": USDC.to_string()});
    let refused = post(s, "settle", &ask(sweep)).await;
    assert_eq!(
        refused["errorReason"],
        "invalid_batch_settlement_evm_nothing_to_settle"
    );
    let mut refund = voucher("refund", &config, chain_id, held, &payer);
    refund["amount"] = json!("1");
    refund["refundNonce"] = json!("0");
    refund["claims"] = json!([]);
    let refused = post(s, "settle", &ask(refund)).await;
    assert_eq!(refused["success"], false);
    assert_eq!(usdc(s, BATCH_SETTLEMENT).await, U256::ZERO, "nothing moved");
}

/// The session's `(deposit, spent)` on chain.
async fn deposit_and_spent(s: &System, session: &str) -> (U256, U256) {
    let wallet = s.record.address("sessionWallet").unwrap();
    let id: U256 = session.parse().unwrap();
    let state = s
        .client
        .view(
            None,
            wallet,
            bursar_bindings::wallet::ISessionWallet::sessionStateCall { sessionId: id },
        )
        .await
        .unwrap();
    (state._1, state._2)
}

/// An agent pays twelve calls of x402's own batch-settlement server from its session: a
/// deposit the wallet reserved under the session's rules (five calls' worth: the session's
/// co-sign threshold bounds it), then vouchers the session key signs, a top-up whenever the
/// channel runs low. x402's channel manager then claims, settles and
/// refunds; the relayer confirms the deposits and credits the refund to the session, which has
/// spent exactly what the calls cost, with its escrow whole.
async fn a_session_pays_x402s_batch_settlement_server_with_vouchers(db: Db) {
    let system = system(db).await;
    let s = &system;
    let wallet = s.record.address("sessionWallet").unwrap();
    let mut minter = bursar_client::Sender::new(&s.client, dev_key(0))
        .await
        .unwrap();
    let mint = IFiatToken::mintCall {
        to: s.owner.address(),
        amount: usd(100),
    };
    minter.transact(&s.client, USDC, &mint).await.unwrap();
    let threshold = 5 * PRICE;
    let terms = json!({ "token": USDC, "coSignThreshold": threshold.to_string() });
    let (session, token) = s.open_session(terms).await;
    let server = OfficialServer::start_scheme(
        &s.client,
        Facilitator::Official(5),
        Scheme::BatchSettlement,
        s.vendor_b,
        U256::from(PRICE),
    )
    .await;
    let calls = 12;
    let mut kinds = Vec::new();
    for i in 0..calls {
        let unpaid = server.get(None).await;
        assert_eq!(unpaid.status(), 402, "call {i}");
        let required = unpaid.headers()["payment-required"]
            .to_str()
            .unwrap()
            .to_owned();
        let (status, paid) = s
            .post(
                "/v1/x402/pay",
                &token,
                json!({ "paymentRequired": required }),
            )
            .await;
        assert_eq!(status, 200, "call {i}: {paid}");
        kinds.push(
            paid["paymentPayload"]["payload"]["type"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
        let served = server
            .get(Some(paid["paymentSignature"].as_str().unwrap()))
            .await;
        assert_eq!(served.status(), 200, "call {i}: {:?}", served.headers());
    }
    // A deposit of five calls with the first voucher, top-ups with the sixth and eleventh.
    let deposits: Vec<usize> = (0..calls).filter(|i| kinds[*i] == "deposit").collect();
    assert_eq!(deposits, [0, 5, 10], "{kinds:?}");
    let (deposit, spent) = deposit_and_spent(s, &session).await;
    assert_eq!(
        spent,
        U256::from(3 * threshold),
        "the deposits are spent when reserved"
    );
    // The agent sees its channel in its limits: deposited, vouched for, what is left.
    let (status, limits) = s.get("/v1/limits", &token).await;
    assert_eq!(status, 200, "{limits}");
    let channel = &limits["x402Channels"][0];
    assert_eq!(
        channel["receiver"],
        s.vendor_b.to_checksum(None),
        "{limits}"
    );
    assert_eq!(channel["deposited"]["amount"], (3 * threshold).to_string());
    let vouched = calls as u64 * PRICE;
    assert_eq!(channel["vouched"]["amount"], vouched.to_string());
    assert_eq!(
        channel["unvouched"]["amount"],
        (3 * threshold - vouched).to_string()
    );
    assert_eq!(
        usdc(s, wallet).await,
        deposit - spent,
        "the deposits left the wallet"
    );

    // x402's channel manager claims the last voucher, sweeps, refunds the rest.
    let done = server.settle_channels().await;
    assert_eq!(done["claims"][0]["vouchers"], 1, "{done}");
    assert_eq!(done["refunds"].as_array().unwrap().len(), 1, "{done}");
    let cost = U256::from(calls as u64 * PRICE);
    assert_eq!(usdc(s, s.vendor_b).await, cost);
    // The relayer confirms the deposits and credits the refund: the session spent the calls.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while deposit_and_spent(s, &session).await.1 != cost {
        assert!(
            std::time::Instant::now() < deadline,
            "the refund was never credited"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(usdc(s, wallet).await, deposit - cost, "the escrow is whole");
    assert_eq!(usdc(s, BATCH_SETTLEMENT).await, U256::ZERO);
}
