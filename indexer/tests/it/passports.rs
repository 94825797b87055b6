//! ERC-8004 passports on the demo's chain: a vendor the story paid registers as an agent, and
//! only feedback its payer backs with that payment's receipt counts — not a copy of the proof
//! by someone who never paid, not the same receipt twice, not feedback without a receipt.

use alloy_primitives::{Address, B256, U256};
use bursar_bindings::erc8004::{
    IIdentityRegistry, IReputationRegistry, IDENTITY_REGISTRY, REPUTATION_REGISTRY,
};
use bursar_bindings::receipts::{receipt_commitment, Receipt};
use bursar_client::{Client, Key, Sender};
use bursar_demo::scenario::Actors;
use bursar_indexer::store::LogRow;
use bursar_indexer::Indexer;

use super::{dev_key, get, synced};

fn arg<'a>(r: &'a LogRow, name: &str) -> &'a str {
    r.args.as_ref().unwrap()[name].as_str().unwrap()
}

/// A receipt as its `ReceiptRecorded` row tells it.
fn receipt(r: &LogRow) -> Receipt {
    Receipt {
        sessionId: arg(r, "sessionId").parse().unwrap(),
        payer: arg(r, "payer").parse().unwrap(),
        payee: arg(r, "payee").parse().unwrap(),
        token: arg(r, "token").parse().unwrap(),
        amount: arg(r, "amount").parse().unwrap(),
        purpose: arg(r, "purpose").parse().unwrap(),
        timestamp: r.args.as_ref().unwrap()["timestamp"].as_u64().unwrap(),
    }
}

async fn funded(client: &Client, key: Key) -> Sender {
    let mut funder = Sender::new(client, dev_key(3)).await.unwrap();
    let one_eth = U256::from(10u64).pow(U256::from(18));
    funder
        .send(client, Some(key.address()), Vec::new(), one_eth)
        .await
        .unwrap();
    Sender::new(client, key).await.unwrap()
}

async fn rate(client: &Client, by: &mut Sender, agent: U256, value: i128, hash: B256) {
    let call = IReputationRegistry::giveFeedbackCall {
        agentId: agent,
        value,
        valueDecimals: 0,
        tag1: "quality".into(),
        tag2: String::new(),
        endpoint: String::new(),
        feedbackURI: String::new(),
        feedbackHash: hash,
    };
    by.transact(client, REPUTATION_REGISTRY, &call)
        .await
        .unwrap();
}

pub(super) async fn passports(client: &Client, indexer: &Indexer, seed: &str, stored: &[LogRow]) {
    let actors = Actors::fresh(dev_key(0), seed);
    let vendor = actors.vendor_a.address();
    let paid: Vec<&LogRow> = stored
        .iter()
        .filter(|r| r.event.as_deref() == Some("ReceiptRecorded"))
        .filter(|r| arg(r, "payee").parse::<Address>().unwrap() == vendor)
        .collect();
    assert!(!paid.is_empty(), "the story pays vendor A");
    let proof = receipt_commitment(&receipt(paid[0]));

    // The vendor registers: agent 0, owned and paid at its own address.
    let mut seller = funded(client, actors.vendor_a.clone()).await;
    let register = IIdentityRegistry::register_1Call {
        agentURI: "https://vendor-a.example/agent.json".into(),
    };
    seller
        .transact(client, IDENTITY_REGISTRY, &register)
        .await
        .unwrap();
    let agent = U256::ZERO;

    // The payer rates it with the receipt: counted. Again with the same receipt: not.
    let mut payer = funded(client, actors.owner.clone()).await;
    rate(client, &mut payer, agent, 90, proof).await;
    rate(client, &mut payer, agent, 100, proof).await;
    // Someone who never paid copies the proof, or names none: not counted.
    let mut sybil = funded(client, dev_key(4)).await;
    rate(client, &mut sybil, agent, 1, proof).await;
    rate(client, &mut sybil, agent, 1, B256::repeat_byte(0x5b)).await;

    synced(indexer, client).await;
    let (status, passport) = get(indexer, "/v1/agents/0").await;
    assert_eq!(status, 200, "{passport}");
    assert_eq!(passport["owner"], vendor.to_checksum(None).as_str());
    assert_eq!(passport["agentWallet"], vendor.to_checksum(None).as_str());
    assert_eq!(passport["agentURI"], "https://vendor-a.example/agent.json");
    let reputation = &passport["reputation"];
    assert_eq!(reputation["count"], 1, "{passport}");
    assert_eq!(reputation["value"], "90", "{passport}");
    assert_eq!(reputation["notCounted"], 3, "{passport}");
    assert_eq!(
        reputation["clients"],
        serde_json::json!([actors.owner.address().to_checksum(None)])
    );
    let reasons: Vec<&str> = reputation["feedback"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["notCounted"].as_str().unwrap_or("counted"))
        .collect();
    assert_eq!(
        reasons,
        ["counted", "receipt_used", "not_the_payer", "no_receipt"]
    );
    assert_eq!(
        reputation["feedback"][0]["receiptId"],
        arg(paid[0], "receiptId")
    );
    // Unknown agents are 404; a bad id is a 400.
    assert_eq!(get(indexer, "/v1/agents/7").await.0, 404);
    assert_eq!(get(indexer, "/v1/agents/seven").await.0, 400);
}
