//! Races inside a block (issue 42), with mining paused as a real block time pauses it: the
//! owner's one signed decision on a pending payment, posted several times at once (a double
//! click, the page and the host's API, two relayer processes), is sent once; a decision
//! transaction that reverts because the payment was decided by another transaction reads the
//! payment's state from the chain instead of leaving it pending for good; and a payment that
//! an earlier transaction of its block made invalid is reported with the wallet's rule.

use alloy_primitives::U256;
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::Sender;
use serde_json::{json, Value};

use super::flow::{code, system, usd, wallet_sign, System};
use super::*;

/// A session with a payment of 25 waiting for the owner (above its co-sign threshold of 20):
/// (session id, capability token, the payment).
async fn pending_payment(s: &System) -> (String, String, Value) {
    let (id, token) = s.open_session(json!({})).await;
    let pending = s.pay_settled(&token, s.vendor_b, usd(25)).await;
    assert_eq!(pending["status"], "pending_approval", "{pending}");
    (id, token, pending)
}

/// The owner's signed approval of `pending`, as the host's API hands it to sign.
async fn signed_approval(s: &System, id: &str, pending: &Value) -> (String, Value) {
    let api = format!(
        "/v1/sessions/{id}/pending/{}/decision",
        pending["pendingId"].as_str().unwrap()
    );
    let (status, to_sign) = s.get(&format!("{api}?approve=true"), &s.host).await;
    assert_eq!(status, 200, "{to_sign}");
    let body = json!({
        "approve": true,
        "nonce": to_sign["nonce"],
        "deadline": to_sign["deadline"],
        "signature": wallet_sign(&s.owner, &to_sign["typedData"]),
    });
    (api, body)
}

/// The owner's own transaction `call` to the wallet and what `relayer` makes the relayer send,
/// in one block, the owner's first: the owner (given gas) sends; once that waits in the pool,
/// `relayer` runs; once the relayer's transaction waits too, one block mines both. The
/// owner's receipt, and what `relayer` answered.
async fn owner_first<T>(
    s: &System,
    call: Vec<u8>,
    relayer: impl std::future::Future<Output = T>,
) -> (bursar_client::rpc::Receipt, T) {
    let wallet = s.record.address("sessionWallet").unwrap();
    let owner = s.owner.address();
    let mut funder = Sender::new(&s.client, dev_key(0)).await.unwrap();
    let gas_money = U256::from(10u64).pow(U256::from(17));
    funder
        .send(&s.client, Some(owner), vec![], gas_money)
        .await
        .unwrap();
    let mut own = Sender::new(&s.client, s.owner.clone()).await.unwrap();
    let gas = own
        .estimate(&s.client, Some(wallet), &call, U256::ZERO)
        .await
        .unwrap();
    let signer = dev_key(9).address();
    s.automine(false).await;
    let (owner_before, relayer_before) = (s.sent_by(owner).await, s.sent_by(signer).await);
    let owners = own.send_with_gas(&s.client, Some(wallet), call, U256::ZERO, gas);
    let relayers = async {
        s.until_sent(owner, owner_before).await;
        let out = relayer.await;
        s.until_sent(signer, relayer_before).await;
        s.automine(true).await;
        out
    };
    let (receipt, out) = tokio::join!(owners, relayers);
    let receipt = receipt.unwrap();
    assert!(receipt.succeeded(), "the owner's transaction lands first");
    (receipt, out)
}

/// Six posts of one signed decision at once — the host's API and the owner's page, at two
/// relayer processes — with mining paused: one is sent, five hear `409 decision_pending`; the
/// payment executes once.
async fn one_decision_posted_at_once_is_sent_once(db: Db) {
    let s = system(db).await;
    let (id, token, pending) = pending_payment(&s).await;
    let (api, body) = signed_approval(&s, &id, &pending).await;
    let page = format!("/approve/pending/{}", pending["id"].as_str().unwrap());
    let (other, other_base) = s.another_relayer().await;
    let signer = dev_key(9).address();
    let paid_before = s.token_balance(s.vendor_b).await;
    s.automine(false).await;
    let before = s.sent_by(signer).await;
    let post = |base: &str, path: &str, bearer: Option<&str>| {
        let mut req = s.http.post(format!("{base}{path}")).json(&body);
        if let Some(bearer) = bearer {
            req = req.bearer_auth(bearer);
        }
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let answers = futures_util::future::join_all([
        post(&s.base, &api, Some(&s.host)),
        post(&s.base, &page, None),
        post(&other_base, &api, Some(&s.host)),
        post(&other_base, &page, None),
        post(&s.base, &api, Some(&s.host)),
        post(&other_base, &page, None),
    ])
    .await;
    let accepted = answers.iter().filter(|(status, _)| *status == 202).count();
    assert_eq!(accepted, 1, "{answers:?}");
    for (status, e) in answers.iter().filter(|(status, _)| *status != 202) {
        assert_eq!((*status, code(e)), (409, "decision_pending"), "{answers:?}");
    }
    s.until_sent(signer, before).await;
    assert_eq!(s.sent_by(signer).await, before + U256::from(1), "one sent");
    s.automine(true).await;
    let path = format!("/v1/payments/{}", pending["id"].as_str().unwrap());
    let settled = s
        .get_when(&path, &token, |p| p["status"] != "pending_approval")
        .await;
    assert_eq!(settled["status"], "confirmed", "{settled}");
    assert!(settled["receiptId"].is_string(), "{settled}");
    assert_eq!(s.token_balance(s.vendor_b).await, paid_before + usd(25));
    // Decided: the link and the API take no other decision.
    let (status, e) = s.post(&api, &s.host, body.clone()).await;
    assert_eq!((status, code(&e)), (409, "pending_resolved"), "{e}");
    other.shutdown().await;
}

/// The owner approves from its own wallet (its own transaction) while the relayer's decision
/// is on its way: both land in one block, the owner's first, and the relayer's reverts. The
/// payment is read from the chain — approved, with the receipt the owner's transaction wrote —
/// instead of staying `pending_approval` with the revert as its error.
async fn a_reverted_decision_reads_the_payment_from_the_chain(db: Db) {
    let s = system(db).await;
    let (id, token, pending) = pending_payment(&s).await;
    let (api, body) = signed_approval(&s, &id, &pending).await;
    let wallet = s.record.address("sessionWallet").unwrap();
    let pending_id: U256 = pending["pendingId"].as_str().unwrap().parse().unwrap();
    let approve = alloy_sol_types::SolCall::abi_encode(&ISessionWallet::approvePendingCall {
        pendingId: pending_id,
    });
    let decide = async {
        let (status, d) = s.post(&api, &s.host, body.clone()).await;
        assert_eq!(status, 202, "{d}");
    };
    let (owners, ()) = owner_first(&s, approve, decide).await;
    let executed = owners.events::<ISessionWallet::PaymentExecuted>(wallet);
    let receipt_id = executed[0].receiptId.to_string();
    let path = format!("/v1/payments/{}", pending["id"].as_str().unwrap());
    let settled = s
        .get_when(&path, &token, |p| p["status"] != "pending_approval")
        .await;
    assert_eq!(settled["status"], "confirmed", "{settled}");
    assert_eq!(settled["receiptId"], json!(receipt_id), "{settled}");
}

/// The owner revokes the session from its own wallet while a payment is on its way: both land
/// in one block, the revocation first. The payment failed by the wallet's rule
/// (`WalletSessionRevoked`), read from the transaction itself: replayed on the block's parent
/// state it would have succeeded.
async fn a_payment_refused_by_an_earlier_transaction_of_its_block_names_the_rule(db: Db) {
    let s = system(db).await;
    let (id, token) = s.open_session(json!({})).await;
    let session: U256 = id.parse().unwrap();
    let revoke =
        alloy_sol_types::SolCall::abi_encode(&ISessionWallet::revokeCall { sessionId: session });
    let pay = async {
        let (status, p) = s.pay(&token, s.vendor_b, usd(1)).await;
        assert_eq!(status, 202, "accepted before the revocation is mined: {p}");
        p
    };
    let (_, p) = owner_first(&s, revoke, pay).await;
    // The host reads it (the sandbox's token may be refused once the session is revoked).
    let failed = s.settled(&s.host, &p).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], "WalletSessionRevoked", "{failed}");
    assert_eq!(failed["error"]["details"]["sessionId"], session.to_string());
}

on_both_databases!(
    one_decision_posted_at_once_is_sent_once,
    a_reverted_decision_reads_the_payment_from_the_chain,
    a_payment_refused_by_an_earlier_transaction_of_its_block_names_the_rule,
);
