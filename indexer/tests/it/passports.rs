//! ERC-8004 passports on the demo's chain: the story gave vendor A's data desk (agent 0) and the
//! owner's research agent (agent 1) passports through the relayer; the desk sold the research
//! agent a dataset, and each side rated the other through the ReceiptRegistry for that receipt.
//! Only such feedback counts — not a copy of the proof by someone who never paid, not the payer
//! rating it directly, not the same receipt twice; the on-chain `getSummary` over the indexer's
//! client list gives the indexer's figure, and agent0-sdk reads the same entries. Each passport
//! lists the agent's sessions (their owners held it), what they spent and produced, and the sale.

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::{SolCall, SolError, SolStruct};
use bursar_bindings::eip712::{ReceiptFeedback, RECEIPT_REGISTRY_DOMAIN};
use bursar_bindings::erc8004::{IReputationRegistry, REPUTATION_REGISTRY};
use bursar_bindings::receipts::{
    give_receipt_feedback, receipt_commitment, IReceiptRegistry, Receipt,
};
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
    // The desk's wallet is vendor A's address: the last payment to it is the dataset's sale.
    let sold = *paid.last().expect("the story pays vendor A");
    let proof = receipt_commitment(&receipt(sold));
    let agent = U256::ZERO;
    let registry: Address = sold.address.parse().unwrap();

    // Someone who never paid copies the proof; the payer rates it directly: neither counts.
    // The Sybil rates through agent0-sdk (npm), a third-party ERC-8004 client: its write shows
    // in the passport, not counted.
    let sybil_key = alloy_primitives::hex::encode_prefixed(
        bursar_devnet::accounts::dev_accounts()[4].private_key,
    );
    bursar_e2e::agent0(
        "node",
        client.url(),
        serde_json::json!({ "action": "feedback", "key": sybil_key, "agentId": 0, "value": 1, "tag1": "quality" }),
    )
    .unwrap();
    let mut payer = funded(client, actors.owner.clone()).await;
    rate(client, &mut payer, agent, 100, proof).await;

    // The paying owner cannot rate through the same receipt again: its side has.
    let sale = receipt(sold);
    let receipt_id: U256 = arg(sold, "receiptId").parse().unwrap();
    let signed = ReceiptFeedback {
        receiptId: receipt_id,
        byPayee: false,
        agentId: agent,
        value: 100,
        valueDecimals: 0,
        tag1: "quality".into(),
        tag2: String::new(),
        endpoint: String::new(),
        feedbackURI: String::new(),
        deadline: U256::from(u64::MAX),
    };
    let chain_id = client.chain_id().await.unwrap();
    let digest = signed.eip712_signing_hash(&RECEIPT_REGISTRY_DOMAIN.at(chain_id, registry));
    let again = give_receipt_feedback(&sale, signed, actors.owner.sign_hash_rsv(&digest).into());
    let mut sybil = funded(client, dev_key(4)).await;
    let refused = sybil.transact(client, registry, &again).await.unwrap_err();
    let reason = refused.revert_data().cloned().unwrap_or_default();
    assert!(
        IReceiptRegistry::FeedbackAlreadyGiven::abi_decode(&reason).is_ok(),
        "{refused}"
    );

    synced(indexer, client).await;
    let (status, passport) = get(indexer, "/v1/agents/0").await;
    assert_eq!(status, 200, "{passport}");
    assert_eq!(passport["owner"], vendor.to_checksum(None).as_str());
    let file = passport["agentURI"].as_str().unwrap();
    assert!(file.ends_with("/registration.json"), "{passport}");
    let reputation = &passport["reputation"];
    assert_eq!(reputation["count"], 1, "{passport}");
    assert_eq!(
        (
            reputation["value"].as_str(),
            reputation["decimals"].as_u64()
        ),
        (Some("45"), Some(1)),
        "{passport}"
    );
    assert_eq!(reputation["notCounted"], 2, "{passport}");
    assert_eq!(
        reputation["clients"],
        serde_json::json!([registry.to_checksum(None)])
    );
    let reasons: Vec<&str> = reputation["feedback"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["notCounted"].as_str().unwrap_or("counted"))
        .collect();
    assert_eq!(reasons, ["counted", "not_paid_for", "not_paid_for"]);
    let counted = &reputation["feedback"][0];
    assert_eq!(counted["receiptId"], arg(sold, "receiptId"));
    assert_eq!(counted["side"], "payer");

    // The desk's history: its one session (vendor A's, which held it), the dataset it made,
    // and what its wallet was paid — the sale among them.
    let sessions = passport["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{passport}");
    assert_eq!(sessions[0]["owner"], vendor.to_checksum(None).as_str());
    assert_eq!(sessions[0]["spent"], "0");
    let dataset = &passport["provenance"][0];
    assert_eq!(passport["provenance"].as_array().unwrap().len(), 1);
    let sales = passport["sales"].as_array().unwrap();
    assert_eq!(sales.len(), paid.len(), "{passport}");
    let sale_row = sales.last().unwrap();
    assert_eq!(sale_row["receiptId"], arg(sold, "receiptId"));
    assert_eq!(sale_row["amount"], "500000");
    assert_eq!(passport["claimedByOthers"], serde_json::json!([]));

    // The research agent's: the story's session (spent 66.50 over five receipts), the report
    // derived from the desk's dataset, and the desk's rating of it as payer, counted.
    let (status, research) = get(indexer, "/v1/agents/1").await;
    assert_eq!(status, 200, "{research}");
    assert_eq!(
        research["owner"],
        actors.owner.address().to_checksum(None).as_str()
    );
    let sessions = research["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{research}");
    assert_eq!(sessions[0]["sessionId"], arg(sold, "sessionId"));
    assert_eq!(
        (
            sessions[0]["spent"].as_str(),
            sessions[0]["payments"].as_u64()
        ),
        (Some("66500000"), Some(5))
    );
    assert_eq!(research["totals"][0]["spent"], "66500000", "{research}");
    let report = &research["provenance"][0];
    assert_eq!(
        report["parents"],
        serde_json::json!([dataset["recordId"]]),
        "{research}"
    );
    // Its inputs name the purchase: the sale's receipt, here and in the record's own view.
    assert_eq!(report["boughtWith"], arg(sold, "receiptId"), "{research}");
    let path = format!("/v1/provenance/{}", report["recordId"].as_str().unwrap());
    let (_, record) = get(indexer, &path).await;
    assert_eq!(
        record["purchase"]["receiptId"],
        arg(sold, "receiptId"),
        "{record}"
    );
    assert_eq!(
        record["purchase"]["payee"],
        vendor.to_checksum(None).as_str()
    );
    assert_eq!(dataset["boughtWith"], serde_json::Value::Null);
    let rated = &research["reputation"];
    assert_eq!(
        (rated["count"].as_u64(), rated["value"].as_str()),
        (Some(1), Some("5")),
        "{research}"
    );
    assert_eq!(rated["feedback"][0]["side"], "payee");
    assert_eq!(rated["feedback"][0]["receiptId"], arg(sold, "receiptId"));
    // What any ERC-8004 client asks the chain, over the indexer's client list: the same.
    let summary = IReputationRegistry::getSummaryCall {
        agentId: agent,
        clientAddresses: vec![registry],
        tag1: String::new(),
        tag2: String::new(),
    };
    let out = client
        .call(
            None,
            REPUTATION_REGISTRY,
            &summary.abi_encode(),
            U256::ZERO,
            None,
        )
        .await
        .unwrap();
    let on_chain = IReputationRegistry::getSummaryCall::abi_decode_returns(&out).unwrap();
    assert_eq!((on_chain.count, on_chain.summaryValue), (1, 45));

    // agent0-sdk (npm), a third-party ERC-8004 client, reads the same feedback: each entry's
    // value and revocation as the passport lists it, and its own summary over every client
    // counts them all — the passport counts the one a payment backs.
    for f in reputation["feedback"].as_array().unwrap() {
        let read = bursar_e2e::agent0(
            "node",
            client.url(),
            serde_json::json!({
                "action": "readFeedback", "agentId": 0, "client": f["client"], "index": f["index"],
            }),
        )
        .unwrap();
        let decimals = f["valueDecimals"].as_u64().unwrap() as i32;
        let value = f["value"].as_str().unwrap().parse::<f64>().unwrap() / 10f64.powi(decimals);
        assert_eq!(read["value"].as_f64(), Some(value), "{read} {f}");
        assert_eq!(read["revoked"], f["revoked"], "{read} {f}");
        assert_eq!(read["tags"][0], f["tag1"], "{read} {f}");
    }
    let everyone = bursar_e2e::agent0(
        "node",
        client.url(),
        serde_json::json!({ "action": "summary", "agentId": 0 }),
    )
    .unwrap();
    assert_eq!(everyone["count"], 3, "{everyone}");

    // And on the research agent: one feedback, the desk's 5 as payee, as the passport says.
    let research_summary = bursar_e2e::agent0(
        "node",
        client.url(),
        serde_json::json!({ "action": "summary", "agentId": 1 }),
    )
    .unwrap();
    assert_eq!(research_summary["count"], 1, "{research_summary}");
    assert_eq!(
        research_summary["averageValue"].as_f64(),
        Some(5.0),
        "{research_summary}"
    );

    // Unknown agents are 404; a bad id is a 400.
    assert_eq!(get(indexer, "/v1/agents/7").await.0, 404);
    assert_eq!(get(indexer, "/v1/agents/seven").await.0, 400);
}
