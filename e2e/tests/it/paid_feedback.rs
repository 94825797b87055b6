//! Feedback backed by payment, with the real WASM: the ReceiptRegistry gives ERC-8004 feedback
//! (as the client, to the Reputation Registry at its Arbitrum One address) for one side of one
//! receipt, on that side's signature. `getSummary(agent, [the ReceiptRegistry])` — a question
//! any ERC-8004 client can ask — then counts exactly the paid-for feedback. Attacks: Sybil
//! clients, a stranger's signature, a misquoted (forged) receipt, another agent's receipt, a
//! receipt used twice, an agent rating itself through its own session, a late signature, an
//! agent transferred away, a revocation by someone else.

use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolStruct};
use bursar_bindings::eip712::{ReceiptFeedback, RevokeReceiptFeedback, RECEIPT_REGISTRY_DOMAIN};
use bursar_bindings::erc8004::{
    IIdentityRegistry, IReputationRegistry, IDENTITY_REGISTRY, REPUTATION_REGISTRY,
};
use bursar_bindings::receipts::{
    give_receipt_feedback, receipt_commitment, IReceiptRegistry,
    IReceiptRegistry::IReceiptRegistryErrors as R, Receipt,
};
use bursar_client::rpc::Receipt as TxReceipt;
use bursar_client::sender::SendError;
use bursar_client::{Client, Key, Sender};
use bursar_demo::scenario::decode_events;

use crate::world::{refused, Terms, World, CHAIN};

/// The receipt of `session` paying `to` `dollars`.
async fn paid(w: &mut World, session: U256, to: Address, dollars: u64) -> (U256, Receipt) {
    let r = w.pay(session, to, dollars).await.unwrap();
    let e = decode_events::<IReceiptRegistry::ReceiptRecorded>(&r.logs, w.registry)[0].clone();
    (e.receiptId, Receipt::from(&e))
}

/// `giveReceiptFeedback` for `receipt` rating `agent` at `value`, signed by `signer`.
async fn feedback(
    w: &World,
    (id, receipt): &(U256, Receipt),
    by_payee: bool,
    agent: U256,
    value: i128,
    signer: &Key,
) -> IReceiptRegistry::giveReceiptFeedbackCall {
    let signed = ReceiptFeedback {
        receiptId: *id,
        byPayee: by_payee,
        agentId: agent,
        value,
        valueDecimals: 0,
        tag1: "paid".into(),
        tag2: String::new(),
        endpoint: "https://seller.example/report".into(),
        feedbackURI: String::new(),
        deadline: U256::from(w.now().await + 300),
    };
    let domain = RECEIPT_REGISTRY_DOMAIN.at(CHAIN, w.registry);
    let signature = signer.sign_hash_rsv(&signed.eip712_signing_hash(&domain));
    give_receipt_feedback(receipt, signed, signature.into())
}

/// The relayer sends `call` to the ReceiptRegistry (anyone may: the signature authorizes it).
async fn send<C: SolCall>(w: &mut World, call: &C) -> Result<TxReceipt, SendError> {
    let registry = w.registry;
    w.relayer.transact(&w.client, registry, call).await
}

/// `(count, value)` of `getSummary(agent, clients, "", "")`.
async fn summary(w: &World, agent: U256, clients: Vec<Address>) -> (u64, i128) {
    let s = w
        .view(
            REPUTATION_REGISTRY,
            IReputationRegistry::getSummaryCall {
                agentId: agent,
                clientAddresses: clients,
                tag1: String::new(),
                tag2: String::new(),
            },
        )
        .await;
    (s.count, s.summaryValue)
}

/// Registers an agent owned (and, by default, paid at) `owner`; returns its id.
async fn register(client: &Client, owner: &mut Sender, uri: &str) -> U256 {
    let call = IIdentityRegistry::register_1Call {
        agentURI: uri.into(),
    };
    let r = owner
        .transact(client, IDENTITY_REGISTRY, &call)
        .await
        .unwrap();
    decode_events::<IIdentityRegistry::Registered>(&r.logs, IDENTITY_REGISTRY)[0].agentId
}

#[tokio::test]
async fn only_a_payment_lets_its_two_sides_rate_each_other() {
    let mut w = World::new().await;
    let mut seller = w.account(5).await;
    let mut stranger = w.account(6).await;
    let stranger_key = Key::from_bytes(&B256::repeat_byte(7)).unwrap();
    let seller_agent = register(&w.client, &mut seller, "https://seller.example/agent.json").await;
    let buyer_agent = register(&w.client, &mut w.owner, "https://buyer.example/agent.json").await;
    let payer = w.owner.key().clone();
    w.allow(seller.address(), 50).await;
    let session = w.open(Terms::default()).await;
    let sale = paid(&mut w, session, seller.address(), 5).await;
    let (registry, agent_key) = (w.registry, w.agent.clone());
    assert_eq!(
        w.view(registry, IReceiptRegistry::reputationRegistryCall {})
            .await,
        REPUTATION_REGISTRY
    );

    // Sybil clients give the seller glowing feedback directly: the registry takes it, the
    // paid-for summary does not count it.
    let sybil = IReputationRegistry::giveFeedbackCall {
        agentId: seller_agent,
        value: 100,
        valueDecimals: 0,
        tag1: "paid".into(),
        tag2: String::new(),
        endpoint: String::new(),
        feedbackURI: String::new(),
        feedbackHash: receipt_commitment(&sale.1),
    };
    stranger
        .transact(&w.client, REPUTATION_REGISTRY, &sybil)
        .await
        .unwrap();
    assert_eq!(
        summary(&w, seller_agent, vec![stranger.address()]).await,
        (1, 100)
    );
    assert_eq!(summary(&w, seller_agent, vec![registry]).await, (0, 0));

    // A stranger's signature, a forged receipt, another agent, a late signature: refused.
    let forged_signer = feedback(&w, &sale, false, seller_agent, 90, &stranger_key).await;
    assert!(matches!(
        refused::<R>(send(&mut w, &forged_signer).await),
        R::FeedbackWrongSigner(e) if e.signer == stranger_key.address()
    ));
    let mut forged = feedback(&w, &sale, false, seller_agent, 90, &agent_key).await;
    forged.amount += U256::from(1);
    assert!(matches!(
        refused::<R>(send(&mut w, &forged).await),
        R::ReceiptMismatch(_)
    ));
    let elsewhere = feedback(&w, &sale, false, buyer_agent, 90, &agent_key).await;
    assert!(matches!(
        refused::<R>(send(&mut w, &elsewhere).await),
        R::FeedbackNotTheAgent(e) if e.agentId == buyer_agent && e.account == seller.address()
    ));
    // Signed for 300 s from now, sent 400 s later.
    let late = feedback(&w, &sale, false, seller_agent, 90, &agent_key).await;
    w.jump(400).await;
    assert!(matches!(
        refused::<R>(send(&mut w, &late).await),
        R::FeedbackDeadlinePassed(_)
    ));

    // The buyer's session key rates the seller: counted, with the receipt as its proof.
    let given = feedback(&w, &sale, false, seller_agent, 90, &agent_key).await;
    let r = send(&mut w, &given).await.unwrap();
    let news = decode_events::<IReputationRegistry::NewFeedback>(&r.logs, REPUTATION_REGISTRY);
    assert_eq!(news.len(), 1);
    assert_eq!(news[0].clientAddress, registry);
    assert_eq!(news[0].feedbackHash, receipt_commitment(&sale.1));
    let ours = decode_events::<IReceiptRegistry::ReceiptFeedbackGiven>(&r.logs, registry);
    assert_eq!(ours[0].giver, agent_key.address());
    assert_eq!(ours[0].feedbackIndex, 1);
    assert_eq!(summary(&w, seller_agent, vec![registry]).await, (1, 90));

    // The same receipt cannot rate twice, whoever signs.
    assert!(matches!(
        refused::<R>(send(&mut w, &given).await),
        R::FeedbackAlreadyGiven(e) if !e.byPayee
    ));
    let by_owner = feedback(&w, &sale, false, seller_agent, 10, &payer).await;
    assert!(matches!(
        refused::<R>(send(&mut w, &by_owner).await),
        R::FeedbackAlreadyGiven(_)
    ));

    // The payee rates the payer's agent (the buyer's owner holds it): its own side.
    let back = feedback(&w, &sale, true, buyer_agent, 80, seller.key()).await;
    send(&mut w, &back).await.unwrap();
    assert_eq!(summary(&w, buyer_agent, vec![registry]).await, (1, 80));
    let wrong_side = feedback(&w, &sale, true, seller_agent, 100, seller.key()).await;
    assert!(matches!(
        refused::<R>(send(&mut w, &wrong_side).await),
        R::FeedbackAlreadyGiven(e) if e.byPayee
    ));

    // An agent's owner paying its own agent cannot rate it through that receipt.
    w.allow(payer.address(), 50).await;
    let own = paid(&mut w, session, payer.address(), 1).await;
    let itself = feedback(&w, &own, false, buyer_agent, 100, &agent_key).await;
    assert!(matches!(
        refused::<R>(send(&mut w, &itself).await),
        R::FeedbackSelfDealing(e) if e.agentId == buyer_agent
    ));
    let by_owner = feedback(&w, &own, true, buyer_agent, 100, &payer).await;
    assert!(matches!(
        refused::<R>(send(&mut w, &by_owner).await),
        R::FeedbackSelfDealing(_)
    ));

    // The seller's agent changes hands: its wallet binding clears, and the old owner's sales
    // no longer rate it.
    let transfer = IIdentityRegistry::transferFromCall {
        from: seller.address(),
        to: stranger.address(),
        tokenId: seller_agent,
    };
    seller
        .transact(&w.client, IDENTITY_REGISTRY, &transfer)
        .await
        .unwrap();
    let wallet = IIdentityRegistry::getAgentWalletCall {
        agentId: seller_agent,
    };
    assert_eq!(w.view(IDENTITY_REGISTRY, wallet).await, Address::ZERO);
    let after = paid(&mut w, session, seller.address(), 2).await;
    let stale = feedback(&w, &after, false, seller_agent, 90, &agent_key).await;
    assert!(matches!(
        refused::<R>(send(&mut w, &stale).await),
        R::FeedbackNotTheAgent(_)
    ));

    // Revocation: only by the giver, once; the paid-for summary drops it.
    let deadline = U256::from(w.now().await + 300);
    let revoke = |signer: &Key| {
        let signed = RevokeReceiptFeedback {
            receiptId: sale.0,
            byPayee: false,
            deadline,
        };
        let domain = RECEIPT_REGISTRY_DOMAIN.at(CHAIN, registry);
        IReceiptRegistry::revokeReceiptFeedbackCall {
            receiptId: sale.0,
            byPayee: false,
            deadline,
            signature: Bytes::from(signer.sign_hash_rsv(&signed.eip712_signing_hash(&domain))),
        }
    };
    assert!(matches!(
        refused::<R>(send(&mut w, &revoke(&stranger_key)).await),
        R::FeedbackWrongSigner(_)
    ));
    send(&mut w, &revoke(&agent_key)).await.unwrap();
    assert_eq!(summary(&w, seller_agent, vec![registry]).await, (0, 0));
    let state = IReceiptRegistry::receiptFeedbackCall {
        receiptId: sale.0,
        byPayee: false,
    };
    let state = w.view(registry, state).await;
    assert_eq!((state.feedbackIndex, state.revoked), (1, true));
    assert!(matches!(
        refused::<R>(send(&mut w, &revoke(&agent_key)).await),
        R::FeedbackUnknown(_)
    ));
}
