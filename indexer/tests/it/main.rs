//! The indexer against a running devnet (the real WASM), on a SQLite file and on a PostgreSQL
//! server (`BURSAR_TEST_POSTGRES_URL`, which `cargo xtask test` and `.ci/run` set).

mod audit;
mod crash;
mod ranges;

use crash::survives_kill_9;
use ranges::shrinks_to_the_providers_range;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use alloy_consensus::TxEip1559;
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::evm::IFiatToken::{Approval, Transfer};
use bursar_client::{Client, Key};
use bursar_demo::scenario::{self, Actors, Transcript};
use bursar_deploy::{Contract, DeploymentRecord};
use bursar_e2e::{deploy, dev_key, devnet, scratch};
use bursar_indexer::audit::Expect;
use bursar_indexer::store::LogFilter;
use bursar_indexer::{Config, FollowConfig, Indexer};
use serde_json::{json, Value};

use bursar_e2e::db::Db;

fn sqlite() -> Db {
    bursar_e2e::db::sqlite("index.db")
}

async fn postgres() -> Db {
    bursar_e2e::db::postgres("bursar_i").await
}

/// The key the tests' indexers sign exports with.
fn export_key() -> Key {
    Key::from_bytes(&alloy_primitives::keccak256("the indexer's export key")).unwrap()
}

/// What the indexer follows in `record`, and the block it starts from.
pub(crate) fn followed(record: &DeploymentRecord) -> (bursar_indexer::Contracts, u64) {
    let d = record.contracts().unwrap();
    let contracts = bursar_indexer::followed(
        d.session_wallet,
        d.session_gateway,
        d.counterparty_registry,
        d.receipt_registry,
    );
    (contracts, d.first_block)
}

async fn start(client: &Client, record: &DeploymentRecord, db: &Db, window: u64) -> Indexer {
    let (contracts, start_block) = followed(record);
    bursar_indexer::start(Config {
        rpc: client.url().to_string(),
        db: db.url(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        contracts,
        follow: FollowConfig {
            start_block,
            window,
            max_range: 16,
            poll: Duration::from_millis(20),
            ..FollowConfig::default()
        },
        signing_key: export_key(),
    })
    .await
    .unwrap()
}

/// Every log the indexer stored (orphaned ones too, or not), in chain order.
async fn all_logs(indexer: &Indexer, include_orphaned: bool) -> Vec<bursar_indexer::store::LogRow> {
    indexer
        .store
        .logs(&LogFilter {
            include_orphaned,
            limit: u64::MAX,
            ..LogFilter::default()
        })
        .await
        .unwrap()
}

/// Waits until the indexer has the node's head block.
async fn synced(indexer: &Indexer, client: &Client) {
    let head = client.latest_block().await.unwrap();
    assert!(
        indexer
            .synced_to(&head.hash.to_string(), Duration::from_secs(60))
            .await,
        "the indexer did not reach block {}",
        head.number
    );
}

async fn get(indexer: &Indexer, path: &str) -> (u16, Value) {
    let r = reqwest12::get(format!("http://{}{path}", indexer.addr))
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// Spend sums checked against the same from the payments themselves (a block range is not
/// answered from the hourly sums), for several groupings and filters; answers how many
/// payments there are.
async fn spend_both_ways(indexer: &Indexer, session: &str) -> u64 {
    for query in [
        String::new(),
        "groupBy=session".into(),
        "groupBy=owner,token".into(),
        "groupBy=counterparty,day".into(),
        format!("groupBy=hour&session={session}"),
        "groupBy=counterparty&fromTime=0&toTime=4102444799".into(),
    ] {
        let (status, hourly) = get(indexer, &format!("/v1/spend?{query}")).await;
        let (_, raw) = get(indexer, &format!("/v1/spend?{query}&fromBlock=0")).await;
        assert_eq!(status, 200, "{hourly}");
        assert_eq!(hourly["groups"], raw["groups"], "{query}");
    }
    let (_, everything) = get(indexer, "/v1/spend").await;
    let groups = everything["groups"].as_array().unwrap();
    groups.iter().map(|g| g["payments"].as_u64().unwrap()).sum()
}

/// The demo's whole story, indexed: every log `eth_getLogs` returns is stored once, decoded,
/// in order, and a session's timeline is its events; bad parameters are 400s naming them.
async fn indexes_the_demo_story(db: Db) {
    let (_devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("indexer-demo")).await;
    // The demo's relayer keeps its database in a file named after the actors: one per test.
    let actors = Actors::fresh(dev_key(0), &db.url());
    scenario::run(&client, &record, actors, &mut Transcript::default())
        .await
        .expect("the demo's story");
    // A small window and ranges: most of the story is backfilled, the rest followed.
    let indexer = start(&client, &record, &db, 4).await;
    synced(&indexer, &client).await;

    let (contracts, _) = followed(&record);
    let addresses: Vec<Address> = contracts.iter().map(|(a, _)| *a).collect();
    // The Bursar contracts' logs, and the token's (the demo's USDC) transfers to or from them
    // and approvals for them.
    let ours: Vec<B256> = addresses.iter().map(|a| a.into_word()).collect();
    let token = record.contracts().unwrap().usdc.expect("the devnet's USDC");
    let mut logs = client.logs(&addresses, 0, None).await.unwrap();
    let token_logs = client.logs(&[token], 0, None).await.unwrap();
    let moved = token_logs.iter().filter(|l| match l.topics[0] {
        t if t == Transfer::SIGNATURE_HASH => {
            ours.contains(&l.topics[1]) || ours.contains(&l.topics[2])
        }
        t if t == Approval::SIGNATURE_HASH => ours.contains(&l.topics[2]),
        _ => false,
    });
    logs.extend(moved.cloned());
    logs.sort_by_key(|l| (l.block_number, l.log_index));
    let stored = all_logs(&indexer, false).await;
    let key = |b: String, i: u64| (b, i);
    let expected: Vec<_> = logs
        .iter()
        .map(|l| key(l.block_hash.to_string(), l.log_index.to()))
        .collect();
    let got: Vec<_> = stored
        .iter()
        .map(|l| key(l.block_hash.clone(), l.log_index))
        .collect();
    assert_eq!(got, expected, "every log, once, in chain order");
    assert!(stored.iter().all(|l| l.event.is_some() && l.canonical));
    let events: BTreeSet<&str> = stored.iter().filter_map(|l| l.event.as_deref()).collect();
    for e in [
        "SessionOpened",
        "PaymentExecuted",
        "PaymentPending",
        "PaymentApproved",
        "LeaseRenewed",
        "SessionRevoked",
        "SessionClosed",
        "ReceiptRecorded",
        "ReceiptAcknowledged",
        "ProvenanceRecorded",
        "EntrySet",
        "Transfer",
        "Approval",
    ] {
        assert!(events.contains(e), "{e} indexed: {events:?}");
    }
    // Every payment's transfer is the payment's session's, of the same amount to the same
    // payee.
    for paid in stored
        .iter()
        .filter(|l| l.event.as_deref() == Some("PaymentExecuted"))
    {
        let args = paid.args.as_ref().unwrap();
        let transfer = stored
            .iter()
            .find(|l| {
                l.tx_hash == paid.tx_hash
                    && l.event.as_deref() == Some("Transfer")
                    && l.args.as_ref().unwrap()["to"] == args["to"]
            })
            .unwrap_or_else(|| panic!("no transfer with payment {paid:?}"));
        assert_eq!(transfer.contract, "Token");
        assert_eq!(transfer.session_id, paid.session_id);
        assert_eq!(transfer.args.as_ref().unwrap()["value"], args["amount"]);
    }

    // The typed views: every payment, its arguments as columns.
    sqlx::any::install_default_drivers();
    let sql = sqlx::AnyPool::connect(&db.url()).await.unwrap();
    let viewed: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT session_id, to_address, amount FROM payment_executed \
         ORDER BY block_number, log_index",
    )
    .fetch_all(&sql)
    .await
    .unwrap();
    let payments: Vec<(String, String, String)> = stored
        .iter()
        .filter(|l| l.event.as_deref() == Some("PaymentExecuted"))
        .map(|l| {
            let a = l.args.as_ref().unwrap();
            let text = |v: &Value| v.as_str().unwrap().to_owned();
            (
                l.session_id.clone().unwrap(),
                text(&a["to"]),
                text(&a["amount"]),
            )
        })
        .collect();
    assert!(!payments.is_empty());
    assert_eq!(viewed, payments);
    let (deadlines,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM session_opened WHERE expires_at > valid_after")
            .fetch_one(&sql)
            .await
            .unwrap();
    assert!(deadlines >= 1, "times are integers in the views");

    // The backfill into the empty database was a bulk load: the session index was left out
    // and built at its end.
    let index = match db.url().starts_with("sqlite") {
        true => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'logs_session'",
        false => "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'logs_session'",
    };
    let (indexes,): (i64,) = sqlx::query_as(index).fetch_one(&sql).await.unwrap();
    assert_eq!(indexes, 1, "the session index is back");
    let built = indexer.metrics().index_build.get();
    assert!(built > 0.0, "the indexes were built after a bulk load");
    sql.close().await;

    // The session's timeline: its events in order, paged.
    let opened = stored
        .iter()
        .find(|l| l.event.as_deref() == Some("SessionOpened"))
        .unwrap();
    let session = opened.session_id.clone().unwrap();
    // Stored and answered as 0x + 64 hex digits; asked for in either form.
    let id = bursar_client::ids::parse_session_id(&session).unwrap();
    assert_eq!(session, bursar_client::ids::session_id_text(id));
    let (hex, decimal) = (session.clone(), id.to_string());
    let mut timeline = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = get(
            &indexer,
            &format!("/v1/sessions/{decimal}/timeline?limit=3{cursor}"),
        )
        .await;
        assert_eq!(status, 200, "{page}");
        timeline.extend(page["events"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    let mine: Vec<_> = stored
        .iter()
        .filter(|l| l.session_id.as_deref() == Some(session.as_str()))
        .collect();
    assert_eq!(timeline.len(), mine.len());
    // It opens with the owner's permit for the wallet and the deposit moving in, in the
    // opening's transaction.
    let first = timeline.iter().find(|e| e["contract"] != "Token").unwrap();
    assert_eq!(first["event"], "SessionOpened");
    assert_eq!(first["args"]["sessionId"], session.as_str());
    let deposit = timeline
        .iter()
        .find(|e| e["event"] == "Transfer" && e["txHash"] == first["txHash"])
        .expect("the deposit's transfer");
    assert_eq!(deposit["args"]["value"], first["args"]["deposit"]);
    assert_eq!(deposit["args"]["to"], first["address"]);
    assert!(timeline.windows(2).all(
        |w| (w[0]["blockNumber"].as_u64(), w[0]["logIndex"].as_u64())
            < (w[1]["blockNumber"].as_u64(), w[1]["logIndex"].as_u64())
    ));

    // Derived state equals the wallet's own view, now and as of every block of the story.
    let wallet = record.address(Contract::SessionWallet.key()).unwrap();
    let opened_at = opened.block_number;
    let head: u64 = client.block_number().await.unwrap();
    // (At the head the devnet answers in the next block's environment, as for a transaction sent now.)
    for block in opened_at..head {
        let (status, body) = get(&indexer, &format!("/v1/sessions/{hex}?asOfBlock={block}")).await;
        assert_eq!(status, 200, "{body}");
        let view = client
            .view_at(
                None,
                wallet,
                bursar_bindings::wallet::ISessionWallet::sessionStateCall { sessionId: id },
                Some(block),
            )
            .await
            .unwrap();
        let status_name = ["unknown", "active", "revoked", "closed"][view._0 as usize];
        assert_eq!(body["status"], status_name, "block {block}: {body}");
        assert_eq!(body["deposit"], view._1.to_string(), "block {block}");
        assert_eq!(body["spent"], view._2.to_string(), "block {block}");
        assert_eq!(body["reserved"], view._3.to_string(), "block {block}");
        if !body["period"].is_null() {
            assert_eq!(
                body["period"]["spent"],
                view._4.to_string(),
                "block {block}: {body}"
            );
            assert_eq!(body["period"]["start"], view._5, "block {block}");
        }
        let lease = if view._6 == 0 {
            json!(null)
        } else {
            json!(view._6)
        };
        assert_eq!(body["leaseExpiresAt"], lease, "block {block}");
    }
    // As of a time (snake_case spelling): the last block at or before it.
    let paid = stored
        .iter()
        .find(|l| l.event.as_deref() == Some("PaymentExecuted"))
        .unwrap();
    let (status, at_time) = get(
        &indexer,
        &format!("/v1/sessions/{hex}?as_of_time={}", paid.block_timestamp),
    )
    .await;
    assert_eq!(status, 200, "{at_time}");
    let resolved = at_time["asOf"]["blockNumber"].as_u64().unwrap();
    assert!(resolved >= paid.block_number, "{at_time}");
    let (_, at_block) = get(
        &indexer,
        &format!("/v1/sessions/{hex}?asOfBlock={resolved}"),
    )
    .await;
    assert_eq!(at_time["spent"], at_block["spent"]);
    let (status, _) = get(&indexer, &format!("/v1/sessions/{hex}?asOfTime=1")).await;
    assert_eq!(status, 404, "nothing had happened at 1970-01-01");
    let (status, body) = get(
        &indexer,
        &format!("/v1/sessions/{hex}?asOfBlock=1&asOfTime=1"),
    )
    .await;
    assert_eq!(
        (status, body["details"]["parameter"].as_str()),
        (400, Some("asOfTime"))
    );
    // A receipt is unacknowledged as of the block before its acknowledgement.
    let ack = stored
        .iter()
        .find(|l| l.event.as_deref() == Some("ReceiptAcknowledged"))
        .unwrap();
    let receipt_id = ack.args.as_ref().unwrap()["receiptId"].as_str().unwrap();
    for (block, acknowledged) in [(ack.block_number - 1, false), (ack.block_number, true)] {
        let path = format!("/v1/receipts/{receipt_id}?asOfBlock={block}");
        let (status, r) = get(&indexer, &path).await;
        assert_eq!(
            (status, r["acknowledged"].as_bool()),
            (200, Some(acknowledged)),
            "{r}"
        );
        let path = format!("/v1/receipts?acknowledged={acknowledged}&asOfBlock={block}");
        let (_, list) = get(&indexer, &path).await;
        let ids: Vec<&Value> = list["receipts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["receiptId"])
            .collect();
        assert!(ids.contains(&&json!(receipt_id)), "{list}");
    }

    // Finality: as the node's tags say, on every event and in /health.
    let (_, health) = get(&indexer, "/health").await;
    let tag = |t: &'static str| {
        let client = &client;
        async move {
            let block = client.block_by_tag(t).await.unwrap().unwrap();
            block.number.to::<u64>()
        }
    };
    let (safe, finalized) = (tag("safe").await, tag("finalized").await);
    assert_eq!(health["safeBlock"], safe, "{health}");
    assert_eq!(health["finalizedBlock"], finalized, "{health}");
    for e in &timeline {
        let block = e["blockNumber"].as_u64().unwrap();
        let want = match block {
            b if b <= finalized => "finalized",
            b if b <= safe => "safe",
            _ => "latest",
        };
        assert_eq!(e["finality"], want, "{e}");
    }

    let (status, now) = get(&indexer, &format!("/v1/sessions/{decimal}")).await;
    assert_eq!(status, 200);
    assert_eq!(now["sessionId"], session.as_str(), "{now}");
    assert_eq!(now["status"], "closed", "{now}");
    assert!(now["refunded"].is_string(), "{now}");
    let owner = opened.args.as_ref().unwrap()["owner"]
        .as_str()
        .unwrap()
        .to_lowercase();
    let (_, list) = get(&indexer, &format!("/v1/sessions?owner={owner}")).await;
    let listed = list["sessions"].as_array().unwrap();
    assert!(!listed.is_empty());
    assert!(listed
        .iter()
        .all(|s| s["terms"]["owner"].as_str().unwrap().to_lowercase() == owner));
    // Status and metadata filters, as of now and as of the opening.
    let listed_ids = |list: &Value| -> Vec<String> {
        let sessions = list["sessions"].as_array().unwrap();
        sessions
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect()
    };
    for (query, has) in [
        ("status=closed".to_owned(), true),
        ("status=active".to_owned(), false),
        ("status=revoked".to_owned(), false),
        (format!("status=active&asOfBlock={opened_at}"), true),
        (format!("status=closed&asOfBlock={opened_at}"), false),
        (
            format!(
                "metadata={}",
                opened.args.as_ref().unwrap()["metadata"].as_str().unwrap()
            ),
            true,
        ),
        (format!("metadata={}", B256::repeat_byte(0xee)), false),
    ] {
        let (status, list) = get(&indexer, &format!("/v1/sessions?{query}")).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(listed_ids(&list).contains(&session), has, "{query}: {list}");
    }
    let (status, _) = get(&indexer, "/v1/sessions/12345").await;
    assert_eq!(status, 404);

    // Spend: the story paid 12 + 18 to one vendor and 15 + 21 to the other.
    let (_, total) = get(&indexer, &format!("/v1/spend?session={decimal}")).await;
    assert_eq!(
        total["groups"],
        json!([{ "total": "66000000", "payments": 4 }]),
        "{total}"
    );
    // By counterparty and UTC day: the story's hour-later payments fall on the next day when
    // it runs in the last hour before midnight, so a vendor has one or two days.
    let (_, by) = get(&indexer, "/v1/spend?groupBy=counterparty,day").await;
    let mut per_vendor: BTreeMap<String, u64> = BTreeMap::new();
    for g in by["groups"].as_array().unwrap() {
        let total: u64 = g["total"].as_str().unwrap().parse().unwrap();
        *per_vendor
            .entry(g["counterparty"].as_str().unwrap().to_owned())
            .or_default() += total;
    }
    let mut totals: Vec<u64> = per_vendor.values().copied().collect();
    totals.sort();
    assert_eq!(totals, [30_000_000, 36_000_000], "{by}");
    let (vendor, vendor_total) = per_vendor.iter().next().unwrap();
    let (_, one) = get(
        &indexer,
        &format!("/v1/spend?counterparty={vendor}&groupBy=owner"),
    )
    .await;
    assert_eq!(one["groups"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["groups"][0]["total"], vendor_total.to_string());
    let (_, none) = get(&indexer, "/v1/spend?fromTime=1&toTime=2").await;
    assert_eq!(none["groups"], json!([]));
    let (_, none) = get(&indexer, "/v1/spend?toTime=3599").await;
    assert_eq!(none["groups"], json!([]));
    assert_eq!(spend_both_ways(&indexer, &hex).await, 4);

    // Receipts and provenance, with acknowledgements, revocations and lineage.
    let (_, r) = get(&indexer, &format!("/v1/receipts?session={hex}")).await;
    let receipts = r["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 4, "{r}");
    let (_, acked) = get(&indexer, "/v1/receipts?acknowledged=true").await;
    let (_, unacked) = get(&indexer, "/v1/receipts?acknowledged=false").await;
    assert_eq!(acked["receipts"].as_array().unwrap().len(), 1, "{acked}");
    assert_eq!(unacked["receipts"].as_array().unwrap().len(), 3);
    let first = &acked["receipts"][0];
    let (status, one) = get(
        &indexer,
        &format!("/v1/receipts/{}", first["receiptId"].as_str().unwrap()),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(one["acknowledged"], true);
    assert!(one["acknowledgement"]["responseHash"].is_string(), "{one}");
    let payee = first["payee"].as_str().unwrap();
    let (_, by_payee) = get(&indexer, &format!("/v1/receipts?payee={payee}")).await;
    assert!(by_payee["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["payee"] == payee));
    let (_, p) = get(&indexer, &format!("/v1/provenance?session={hex}")).await;
    let records = p["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{p}");
    let (parent, child) = (
        records[0]["recordId"].as_str().unwrap().to_owned(),
        records[1]["recordId"].as_str().unwrap().to_owned(),
    );
    assert_eq!(records[1]["parents"], json!([parent.clone()]));
    let (_, l) = get(&indexer, &format!("/v1/provenance/{child}/lineage")).await;
    assert_eq!(l["lineageValid"], true, "{l}");
    assert_eq!(l["ancestors"][0]["recordId"], parent.as_str());
    let (_, l) = get(&indexer, &format!("/v1/provenance/{parent}/lineage")).await;
    assert_eq!(l["descendants"][0]["recordId"], child.as_str(), "{l}");
    // The owner revokes the parent: the child stays valid on its own, its lineage does not.
    let owner = Actors::fresh(dev_key(0), &db.url()).owner;
    let mut funder = bursar_client::Sender::new(&client, dev_key(3))
        .await
        .unwrap();
    funder
        .send(
            &client,
            Some(owner.address()),
            Vec::new(),
            U256::from(10u64).pow(U256::from(18)),
        )
        .await
        .unwrap();
    let receipts_registry = record.address(Contract::ReceiptRegistry.key()).unwrap();
    bursar_client::Sender::new(&client, owner)
        .await
        .unwrap()
        .transact(
            &client,
            receipts_registry,
            &bursar_bindings::receipts::IReceiptRegistry::revokeProvenanceCall {
                recordId: parent.parse().unwrap(),
                reason: B256::repeat_byte(7),
            },
        )
        .await
        .unwrap();
    synced(&indexer, &client).await;
    let (_, revoked) = get(&indexer, &format!("/v1/provenance/{parent}")).await;
    assert_eq!(revoked["valid"], false, "{revoked}");
    assert!(revoked["revocation"]["by"].is_string());
    let (_, c) = get(&indexer, &format!("/v1/provenance/{child}")).await;
    assert_eq!(c["valid"], true);
    let (_, l) = get(&indexer, &format!("/v1/provenance/{child}/lineage")).await;
    assert_eq!(l["lineageValid"], false, "{l}");
    let (status, _) = get(&indexer, "/v1/provenance/999").await;
    assert_eq!(status, 404);

    // An audit export verifies against the chain, signed by the indexer's key; forged ones do
    // not, nor do damaged ones (a deleted, altered or reordered row).
    let text = reqwest12::get(format!("http://{}/v1/sessions/{hex}/export", indexer.addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let verified = bursar_indexer::audit::verify(&client, &text, &Expect::default())
        .await
        .unwrap();
    assert_eq!(verified.rows as usize, text.lines().count() - 1);
    audit::forgeries_do_not_verify(&client, &text, export_key().address(), &record).await;
    // Through a provider that takes a few blocks per eth_getLogs, in as many requests as that
    // takes.
    let (limited, proxy) = ranges::limited(&client, 0).await;
    let through = bursar_indexer::audit::verify(&limited, &text, &Expect::default()).await;
    assert_eq!(through.unwrap().rows, verified.rows);
    assert!(proxy.refused_some());
    let (_, health) = get(&indexer, "/health").await;
    assert_eq!(
        health["exportSigner"],
        export_key().address().to_checksum(None)
    );
    let lines: Vec<&str> = text.lines().collect();
    let (rows, manifest) = lines.split_at(lines.len() - 1);
    let again = |rows: Vec<String>| {
        let mut t = rows.join("\n");
        t.push('\n');
        t.push_str(manifest[0]);
        t
    };
    let owned: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    let mut deleted = owned.clone();
    deleted.remove(3);
    let e = bursar_indexer::audit::verify(&client, &again(deleted), &Expect::default())
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with("row 4:"), "{e}");
    let mut altered = owned.clone();
    altered[5] = altered[5].replace("\"amount\":\"", "\"amount\":\"9");
    assert_ne!(altered[5], owned[5], "row 5 has an amount");
    let e = bursar_indexer::audit::verify(&client, &again(altered), &Expect::default())
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with("row 5:"), "{e}");
    let mut reordered = owned.clone();
    reordered.swap(1, 2);
    let e = bursar_indexer::audit::verify(&client, &again(reordered), &Expect::default())
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with("row 2:"), "{e}");
    let mut cut = owned.clone();
    cut.pop();
    assert!(
        bursar_indexer::audit::verify(&client, &again(cut), &Expect::default())
            .await
            .is_err()
    );
    assert!(
        bursar_indexer::audit::verify(&client, &owned.join("\n"), &Expect::default())
            .await
            .is_err(),
        "no manifest"
    );
    let csv = reqwest12::get(format!(
        "http://{}/v1/sessions/{hex}/export?format=csv",
        indexer.addr
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(csv.starts_with(bursar_indexer::audit::CSV_HEADER));
    assert_eq!(csv.lines().count(), lines.len() + 1);

    // Every documented path answers (with an id that exists where it takes one).
    let (status, doc) = get(&indexer, "/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    for path in doc["paths"].as_object().unwrap().keys() {
        let concrete = path.replace("{id}", if path.contains("sessions") { &hex } else { "1" });
        let r = reqwest12::get(format!("http://{}{concrete}", indexer.addr))
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
    }

    for (path, parameter) in [
        ("/v1/events?limit=0", "limit"),
        ("/v1/events?fromBlock=-1", "fromBlock"),
        ("/v1/events?cursor=nope", "cursor"),
        ("/v1/events?includeOrphaned=yes", "includeOrphaned"),
        ("/v1/events?colour=red", "colour"),
        ("/v1/events?session=0xzz", "session"),
        ("/v1/sessions/banana/timeline", "id"),
        ("/v1/sessions/1?asOfBlock=x", "asOfBlock"),
        ("/v1/sessions?owner=0x12", "owner"),
        ("/v1/sessions?status=paused", "status"),
        ("/v1/sessions?metadata=0x12", "metadata"),
        ("/v1/events?asOfTime=noon", "asOfTime"),
        ("/v1/receipts/1?as_of_block=x", "asOfBlock"),
        ("/v1/receipts?acknowledged=maybe", "acknowledged"),
        ("/v1/spend?groupBy=colour", "groupBy"),
        ("/v1/sessions/1/export?format=xml", "format"),
        ("/v1/spend?fromTime=soon", "fromTime"),
        ("/v1/receipts?purpose=0x12", "purpose"),
        ("/v1/provenance/1/lineage?depth=0", "depth"),
    ] {
        let (status, e) = get(&indexer, path).await;
        assert_eq!(status, 400, "{path}: {e}");
        assert_eq!(e["code"], "invalid_parameter");
        assert_eq!(e["details"]["parameter"], parameter, "{path}: {e}");
    }
    let (status, health) = get(&indexer, "/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["chainId"], 412346);
    let scrape = reqwest12::get(format!("http://{}/metrics", indexer.addr))
        .await
        .unwrap();
    assert_eq!(
        scrape.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = scrape.text().await.unwrap();
    for kind in [
        "# TYPE bursar_indexer_events_total counter",
        "# TYPE bursar_indexer_indexed_block gauge",
        "# TYPE bursar_indexer_db_write_seconds histogram",
    ] {
        assert!(text.contains(kind), "{kind} not in\n{text}");
    }
    assert_eq!(indexer.metrics().reorgs.get(), 0);
    let metric = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .parse()
            .unwrap()
    };
    let now_stored = all_logs(&indexer, false).await;
    assert_eq!(
        metric("bursar_indexer_events_total"),
        now_stored.len() as u64
    );
    assert_eq!(metric("bursar_indexer_undecoded_events_total"), 0);
    assert_eq!(metric("bursar_indexer_head_lag_blocks"), 0);
    assert_eq!(
        metric("bursar_indexer_indexed_block"),
        client.block_number().await.unwrap()
    );

    // A reorg deeper than the window (4) that drops the first payment: it and whatever its
    // sender sent after it fall out, and the session's state is the wallet's again.
    let first_paid = stored
        .iter()
        .find(|l| l.event.as_deref() == Some("PaymentExecuted"))
        .unwrap();
    let head: u64 = client.block_number().await.unwrap();
    let depth = head - first_paid.block_number + 1;
    assert!(depth > 4, "deeper than the window");
    let dropped: B256 = first_paid.tx_hash.parse().unwrap();
    let _: Value = client
        .request(
            "bursar_reorg",
            json!([{ "depth": depth, "drop": [dropped] }]),
        )
        .await
        .unwrap();
    synced(&indexer, &client).await;
    let after = all_logs(&indexer, true).await;
    let paid: Vec<_> = after
        .iter()
        .filter(|l| l.tx_hash == first_paid.tx_hash)
        .collect();
    assert!(
        paid.iter().all(|l| !l.canonical && l.orphaned_by.is_some()),
        "{paid:?}"
    );
    assert!(!paid.is_empty(), "the orphaned payment is kept as evidence");
    let counted = indexer.metrics();
    assert_eq!(counted.reorgs.get(), 1, "the reorg is counted");
    assert!(counted.orphaned.get() >= paid.len() as u64);
    // The spend sums lost what the reorg dropped.
    let payments = all_logs(&indexer, false)
        .await
        .iter()
        .filter(|l| l.event.as_deref() == Some("PaymentExecuted"))
        .count();
    assert!(payments < 4, "the reorg dropped a payment");
    assert_eq!(spend_both_ways(&indexer, &hex).await, payments as u64);
    let head: u64 = client.block_number().await.unwrap();
    let (_, body) = get(
        &indexer,
        &format!("/v1/sessions/{hex}?asOfBlock={}", head - 1),
    )
    .await;
    let view = client
        .view_at(
            None,
            wallet,
            bursar_bindings::wallet::ISessionWallet::sessionStateCall { sessionId: id },
            Some(head - 1),
        )
        .await
        .unwrap();
    assert_eq!(body["spent"], view._2.to_string(), "{body}");
    assert_eq!(body["deposit"], view._1.to_string(), "{body}");
    if !body["period"].is_null() {
        assert_eq!(body["period"]["spent"], view._4.to_string(), "{body}");
    }
    // Canonical rows are again exactly what the node has.
    let mut expected = client.logs(&addresses, 0, None).await.unwrap();
    expected.retain(|l| !l.removed);
    let canonical_ours = all_logs(&indexer, false).await;
    let ours_bursar: Vec<_> = canonical_ours
        .iter()
        .filter(|l| l.contract != "Token")
        .map(|l| (l.block_hash.clone(), l.log_index))
        .collect();
    let theirs: Vec<_> = expected
        .iter()
        .map(|l| (l.block_hash.to_string(), l.log_index.to::<u64>()))
        .collect();
    assert_eq!(ours_bursar, theirs);
    indexer.shutdown().await;
}

/// Signs a call to the counterparty registry from `key` with `nonce` (raw bytes, hash).
fn signed(client_chain: u64, key: &Key, nonce: u64, to: Address, data: Vec<u8>) -> (Vec<u8>, B256) {
    key.sign_transaction(TxEip1559 {
        chain_id: client_chain,
        nonce,
        gas_limit: 1_000_000,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 0,
        to: TxKind::Call(to),
        value: U256::ZERO,
        input: data.into(),
        access_list: Default::default(),
    })
}

/// A reorg that drops a transaction: its event is kept as orphaned evidence (with the hash of
/// the block that replaced its block), the events re-mined on the new branch are canonical, and
/// once the dropped transaction is mined again its event is canonical again, in a new block.
async fn reorgs_orphan_and_come_back(db: Db) {
    let (_devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("indexer-reorg")).await;
    let registry = record
        .address(Contract::CounterpartyRegistry.key())
        .unwrap();
    let indexer = start(&client, &record, &db, 8).await;
    let key = dev_key(1);
    let chain_id = client.chain_id().await.unwrap();
    let mut nonce = client.nonce(key.address()).await.unwrap();
    let mut send = |data: Vec<u8>| {
        let tx = signed(chain_id, &key, nonce, registry, data);
        nonce += 1;
        tx
    };
    let create = send(ICounterpartyRegistry::createListCall {}.abi_encode());
    client.send_raw_transaction(&create.0).await.unwrap();
    let entry = |who: u8| {
        ICounterpartyRegistry::setEntryCall {
            listId: U256::from(1),
            counterparty: Address::repeat_byte(who),
            allowed: true,
            maxPerPayment: U256::ZERO,
            label: B256::ZERO,
        }
        .abi_encode()
    };
    let (raw_b, hash_b) = send(entry(0xb0));
    let (raw_c, hash_c) = send(entry(0xc0));
    for raw in [&raw_b, &raw_c] {
        client.send_raw_transaction(raw).await.unwrap();
    }
    synced(&indexer, &client).await;
    let before = client.latest_block().await.unwrap();

    // The last two blocks rebuilt without B's transaction; C's (which needs B's nonce first)
    // falls out with it.
    let _: Value = client
        .request("bursar_reorg", json!([{ "depth": 2, "drop": [hash_b] }]))
        .await
        .unwrap();
    synced(&indexer, &client).await;
    let all = all_logs(&indexer, true).await;
    let of = |hash: B256| -> Vec<_> {
        all.iter()
            .filter(|l| l.tx_hash == hash.to_string())
            .cloned()
            .collect()
    };
    let b = of(hash_b);
    assert_eq!(b.len(), 1, "{b:?}");
    assert!(!b[0].canonical, "B's event is orphaned");
    let replaced_by = b[0].orphaned_by.clone().expect("orphaned by a block");
    let now_at = client.block(b[0].block_number).await.unwrap().unwrap();
    assert_eq!(replaced_by, now_at.hash.to_string());
    assert_ne!(b[0].block_hash, replaced_by);
    assert!(of(hash_c).iter().all(|l| !l.canonical));
    assert!(before.number.to::<u64>() >= b[0].block_number);

    // Mined again on the new branch: canonical again, in a new block, the orphan kept.
    for raw in [&raw_b, &raw_c] {
        client.send_raw_transaction(raw).await.unwrap();
    }
    synced(&indexer, &client).await;
    let all = all_logs(&indexer, true).await;
    let b: Vec<_> = all
        .iter()
        .filter(|l| l.tx_hash == hash_b.to_string())
        .collect();
    assert_eq!(b.len(), 2, "the orphan and the re-mined one: {b:?}");
    assert_eq!(b.iter().filter(|l| l.canonical).count(), 1);
    let canonical = indexer
        .store
        .logs(&LogFilter {
            event: Some("EntrySet".into()),
            limit: 1000,
            ..LogFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(canonical.len(), 2, "B and C, once each");
    let (_, page) = get(&indexer, "/v1/events?event=EntrySet&includeOrphaned=true").await;
    assert_eq!(page["events"].as_array().unwrap().len(), 4);
    indexer.shutdown().await;
}

/// With a WebSocket endpoint, new heads wake the follower: with polling an hour apart, it
/// follows each new block all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_heads_over_websocket_wake_the_follower() {
    let (_devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("indexer-ws")).await;
    let (contracts, start_block) = followed(&record);
    let db = sqlite();
    let indexer = bursar_indexer::start(Config {
        rpc: client.url().to_string(),
        db: db.url(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        contracts,
        follow: FollowConfig {
            start_block,
            window: 4,
            poll: Duration::from_secs(3_600),
            ws: Some(client.url().replacen("http://", "ws://", 1)),
            ..FollowConfig::default()
        },
        signing_key: export_key(),
    })
    .await
    .unwrap();
    synced(&indexer, &client).await;
    for _ in 0..3 {
        let _: Value = client.request("evm_mine", json!([])).await.unwrap();
        // `synced` waits 60 s at most: far less than the poll interval.
        synced(&indexer, &client).await;
    }
    indexer.shutdown().await;
}

/// A canonical `PaymentExecuted` of `session` to 0xA1, log `index` of block `(number, hash)`
/// at block time `time`.
fn payment(
    (number, hash): (u64, &str),
    index: u64,
    time: u64,
    session: &str,
    amount: U256,
) -> bursar_indexer::store::LogRow {
    bursar_indexer::store::LogRow {
        chain_id: 31337,
        block_number: number,
        block_hash: hash.to_owned(),
        block_timestamp: time,
        tx_hash: B256::repeat_byte(2).to_string(),
        log_index: index,
        address: Address::repeat_byte(3).to_string(),
        contract: "SessionWallet".into(),
        topics: vec![],
        data: Bytes::new(),
        event: Some("PaymentExecuted".into()),
        args: Some(json!({ "sessionId": session, "to": "0xA1", "amount": amount.to_string() })),
        decode_error: None,
        session_id: Some(session.into()),
        canonical: true,
        orphaned_by: None,
    }
}

/// Spend sums are exact for 256-bit amounts on both databases (SQLite sums in limbs), and
/// saturate rather than wrap.
async fn sums_256_bit_amounts_exactly(db: Db) {
    use bursar_indexer::spend::Group;
    use bursar_indexer::store::{BlockRow, LogRow, Store};
    let store = Store::connect(&db.url()).await.unwrap();
    let big = U256::from(10).pow(U256::from(70));
    let amounts = [
        big,
        big + U256::from(123_456_789_123_456_789u64),
        U256::from(999_999_999u64),
    ];
    let block_hash = B256::repeat_byte(1).to_string();
    let row = |i: u64, session: &str, amount: U256| {
        payment((1, &block_hash), i, 7_200 + i, session, amount)
    };
    let mut rows: Vec<LogRow> = amounts
        .iter()
        .enumerate()
        .map(|(i, a)| row(i as u64, "7", *a))
        .collect();
    // Two maximal amounts in another session: their sum saturates.
    rows.push(row(3, "8", U256::MAX));
    rows.push(row(4, "8", U256::MAX));
    let block = BlockRow {
        number: 1,
        hash: B256::repeat_byte(1).to_string(),
        parent_hash: B256::ZERO.to_string(),
        timestamp: 7_200,
    };
    let hash = block.hash.clone();
    store.ingest(&[block], &rows, (1, &hash)).await.unwrap();
    let sums = store
        .payment_sums(
            &LogFilter::default(),
            &[Group::Session, Group::Hour],
            None,
            None,
        )
        .await
        .unwrap();
    let mut sums = sums;
    sums.sort();
    let expected: U256 = amounts.iter().copied().fold(U256::ZERO, |a, b| a + b);
    assert_eq!(
        sums,
        vec![
            (vec!["7".to_owned(), "7200".to_owned()], expected, 3),
            (vec!["8".to_owned(), "7200".to_owned()], U256::MAX, 2),
        ]
    );
    // From the payments themselves (a block range), the same.
    let keys = [Group::Session, Group::Hour];
    let raw = LogFilter {
        from_block: Some(0),
        ..LogFilter::default()
    };
    let mut from_logs = store.payment_sums(&raw, &keys, None, None).await.unwrap();
    from_logs.sort();
    assert_eq!(from_logs, sums);
    // Orphaned, they are out of the sums; back on the chain, in again.
    store
        .orphan_above((0, &B256::ZERO.to_string()), &[(1, "0xb2".into())])
        .await
        .unwrap();
    for filter in [&LogFilter::default(), &raw] {
        let none = store.payment_sums(filter, &keys, None, None).await.unwrap();
        assert_eq!(none, vec![], "{filter:?}");
    }
    store.ingest(&[], &rows, (1, &hash)).await.unwrap();
    let mut again = store
        .payment_sums(&LogFilter::default(), &keys, None, None)
        .await
        .unwrap();
    again.sort();
    assert_eq!(again, sums);
}

/// A bulk load's batches append their spend sums; they add up while it runs, are merged at its
/// end (the key built again), and later batches add to the merged rows.
async fn bulk_loads_sum_spend(db: Db) {
    use bursar_indexer::spend::Group;
    use bursar_indexer::store::{BlockRow, Store};
    let store = Store::connect(&db.url()).await.unwrap();
    assert!(store.begin_bulk().await.unwrap());
    let hash = |n: u64| format!("0x{n:064x}");
    let block = |n: u64| BlockRow {
        number: n,
        hash: hash(n),
        parent_hash: hash(n - 1),
        timestamp: 3_600 + n,
    };
    let paid = |n: u64, amount: u64| payment((n, &hash(n)), 0, 3_600 + n, "7", U256::from(amount));
    let sums = || {
        let store = store.clone();
        async move {
            let keys = [Group::Session, Group::Hour];
            let filter = LogFilter::default();
            store
                .payment_sums(&filter, &keys, None, None)
                .await
                .unwrap()
        }
    };
    let expect = |total: u64, payments: u64| {
        vec![(
            vec!["7".to_owned(), "3600".to_owned()],
            U256::from(total),
            payments,
        )]
    };
    for n in 1..=2 {
        store
            .ingest(&[block(n)], &[paid(n, n)], (n, &hash(n)))
            .await
            .unwrap();
    }
    assert_eq!(sums().await, expect(3, 2), "appended, while the load runs");
    assert!(store.end_bulk().await.unwrap());
    assert_eq!(sums().await, expect(3, 2), "merged");
    store
        .ingest(&[block(3)], &[paid(3, 4)], (3, &hash(3)))
        .await
        .unwrap();
    assert_eq!(sums().await, expect(7, 3), "added to the merged row");
}

/// A bulk load (rows written without the session index; on PostgreSQL by `COPY`) stores
/// every field verbatim — text that `COPY` must escape, NULLs, orphaned rows — reads the same
/// while it runs and after, and starts only on an empty database.
async fn bulk_loads_store_rows_verbatim(db: Db) {
    use bursar_indexer::store::{BlockRow, LogRow, Store};
    let store = Store::connect(&db.url()).await.unwrap();
    assert!(store.begin_bulk().await.unwrap(), "an empty database");
    let hash = |n: u64| format!("0x{n:064x}");
    let blocks: Vec<BlockRow> = (1..=3)
        .map(|n| BlockRow {
            number: n,
            hash: hash(n),
            parent_hash: hash(n - 1),
            timestamp: 1_700_000_000 + n,
        })
        .collect();
    let log = |n: u64, i: u64| LogRow {
        chain_id: 31337,
        block_number: n,
        block_hash: hash(n),
        block_timestamp: 1_700_000_000 + n,
        tx_hash: hash(100 + n),
        log_index: i,
        address: "0x5FbDB2315678afecb367f032d93F642f64180aa3".into(),
        contract: "SessionWallet".into(),
        topics: vec![B256::with_last_byte(7), B256::with_last_byte(8)],
        // Bytes that are COPY's tab, newline and backslash.
        data: Bytes::from_static(b"\t\n\\\0"),
        event: None,
        args: None,
        decode_error: None,
        session_id: None,
        canonical: true,
        orphaned_by: None,
    };
    let mut logs = vec![log(1, 0), log(2, 0), log(2, 1), log(3, 5)];
    logs[0].decode_error = Some("tab\there, newline\nthere, \\N, back\\slash\r".into());
    logs[1].event = Some("ReceiptRecorded".into());
    logs[1].args = Some(json!({ "purpose": "quote \" and \\ and \t", "receiptId": "9" }));
    logs[1].session_id = Some("7".into());
    logs[2].canonical = false;
    logs[2].orphaned_by = Some(hash(99));
    store
        .ingest(&blocks[..2], &logs[..3], (2, &hash(2)))
        .await
        .unwrap();
    let read = |include_orphaned| {
        let store = store.clone();
        async move {
            store
                .logs(&LogFilter {
                    include_orphaned,
                    limit: 100,
                    ..LogFilter::default()
                })
                .await
                .unwrap()
        }
    };
    assert_eq!(read(true).await, logs[..3], "while the load runs");
    let by_session = LogFilter {
        session_id: Some("7".into()),
        limit: 10,
        ..LogFilter::default()
    };
    assert_eq!(store.logs(&by_session).await.unwrap(), logs[1..2]);
    store
        .ingest(&blocks[2..], &logs[3..], (3, &hash(3)))
        .await
        .unwrap();
    assert!(store.end_bulk().await.unwrap(), "the indexes are built");
    assert!(!store.end_bulk().await.unwrap(), "once");
    assert_eq!(read(true).await, logs);
    assert_eq!(read(false).await.len(), 3, "the orphaned row is kept apart");
    assert_eq!(store.logs(&by_session).await.unwrap(), logs[1..2]);
    assert_eq!(store.checkpoint().await.unwrap(), Some((3, hash(3))));
    assert!(
        !store.begin_bulk().await.unwrap(),
        "not into a database with rows"
    );
    // With the key back, a row seen before becomes canonical again rather than doubled.
    store.ingest(&[], &logs[2..3], (3, &hash(3))).await.unwrap();
    assert_eq!(read(false).await.len(), 4);
    assert_eq!(read(true).await.len(), 4);
}

/// A pool on a database at `url` migrated up to, not including, `version`.
async fn migrated_before(url: &str, version: i64) -> sqlx::AnyPool {
    let backend = if url.starts_with("sqlite:") {
        "sqlite"
    } else {
        "postgres"
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(backend);
    let mut before = sqlx::migrate::Migrator::new(dir).await.unwrap();
    before.migrations = before
        .migrations
        .iter()
        .filter(|m| m.version < version)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    sqlx::any::install_default_drivers();
    let create = match backend {
        "sqlite" => format!("{url}?mode=rwc"),
        _ => url.to_owned(),
    };
    let options = create.parse::<sqlx::any::AnyConnectOptions>().unwrap();
    let pool = sqlx::AnyPool::connect_with(options).await.unwrap();
    before.run(&pool).await.unwrap();
    pool
}

/// A database the indexer filled before logs' topics and data were stored as bytes (migration
/// 4) reads the same after it.
async fn raw_logs_survive_the_upgrade_to_bytes(db: Db) {
    use bursar_indexer::store::Store;
    let url = db.url();
    let pool = migrated_before(&url, 4).await;
    let topics = [B256::repeat_byte(0xab), B256::with_last_byte(1)];
    let data = Bytes::from(vec![0, 1, 0xfe, 0xff]);
    let insert = "INSERT INTO logs (block_number, log_index, block_hash, chain_id, \
        block_timestamp, tx_hash, address, topics, data, contract, canonical) \
        VALUES ($1, $2, '0xb1', 31337, 1, '0xt', '0xa', $3, $4, 'SessionWallet', 1)";
    for (i, (topics, data)) in [
        (serde_json::to_string(&topics).unwrap(), data.to_string()),
        ("[]".to_owned(), "0x".to_owned()),
    ]
    .into_iter()
    .enumerate()
    {
        sqlx::query(insert)
            .bind(1_i64)
            .bind(i as i64)
            .bind(topics)
            .bind(data)
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
    let store = Store::connect(&url).await.unwrap();
    let rows = store
        .logs(&LogFilter {
            limit: 10,
            ..LogFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!((&rows[0].topics[..], &rows[0].data), (&topics[..], &data));
    assert_eq!((rows[1].topics.len(), rows[1].data.len()), (0, 0));
}

/// A database the indexer filled before spend was summed per hour (migration 5) gets the sums
/// of the payments it holds — canonical ones only, 256-bit amounts exact.
async fn spend_sums_are_built_on_upgrade(db: Db) {
    use bursar_indexer::spend::Group;
    use bursar_indexer::store::Store;
    let url = db.url();
    let pool = migrated_before(&url, 5).await;
    let insert = "INSERT INTO logs (block_number, log_index, block_hash, chain_id, \
        block_timestamp, tx_hash, address, topics, data, contract, event, args, session_id, \
        canonical) VALUES ($1, $2, '0xb1', 31337, $3, '0xt', '0xa', $4, $4, 'SessionWallet', \
        'PaymentExecuted', $5, $6, $7)";
    let big = U256::MAX - U256::from(2);
    let payments = [
        // (log index, time, session, to, amount, canonical)
        (0_i64, 7_200_i64, "7", "0xA1", big, 1_i64),
        (1, 7_300, "7", "0xA1", U256::from(2), 1),
        (2, 7_300, "7", "0xA1", U256::from(5), 0),
        (3, 10_800, "8", "0xA2", U256::from(3), 1),
    ];
    for (i, time, session, to, amount, canonical) in payments {
        let args = json!({ "sessionId": session, "to": to, "amount": amount.to_string() });
        sqlx::query(insert)
            .bind(1_i64)
            .bind(i)
            .bind(time)
            .bind(Vec::<u8>::new())
            .bind(args.to_string())
            .bind(session)
            .bind(canonical)
            .execute(&pool)
            .await
            .unwrap();
    }
    sqlx::query("INSERT INTO checkpoint (id, block_number, block_hash) VALUES (1, 1, '0xb1')")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let store = Store::connect(&url).await.unwrap();
    let keys = [Group::Session, Group::Counterparty, Group::Hour];
    let raw = LogFilter {
        from_block: Some(0),
        ..LogFilter::default()
    };
    for filter in [LogFilter::default(), raw] {
        let mut sums = store
            .payment_sums(&filter, &keys, None, None)
            .await
            .unwrap();
        sums.sort();
        let key = |k: [&str; 3]| k.map(str::to_owned).to_vec();
        // The decimal session ids of old rows are read in the one written form.
        let (seven, eight) = (hex_id(7), hex_id(8));
        assert_eq!(
            sums,
            vec![
                (key([&seven, "0xA1", "7200"]), U256::MAX, 2),
                (key([&eight, "0xA2", "10800"]), U256::from(3), 1),
            ],
            "{filter:?}"
        );
    }
}

/// Session `n`'s id as every API writes it.
fn hex_id(n: u64) -> String {
    bursar_client::ids::session_id_text(U256::from(n))
}

/// Rows an indexer stored with decimal session ids (before they had one written form) read
/// with hex ones after a restart: the rows' session, their `sessionId` argument and the spend
/// sums, and a second start finds nothing left to rewrite.
async fn decimal_session_ids_become_hex_on_connect(db: Db) {
    use bursar_indexer::spend::Group;
    use bursar_indexer::store::Store;
    let url = db.url();
    let store = Store::connect(&url).await.unwrap();
    drop(store);
    let pool = migrated_before(&url, i64::MAX).await;
    let insert = "INSERT INTO logs (block_number, log_index, block_hash, chain_id, \
        block_timestamp, tx_hash, address, topics, data, contract, event, args, session_id, \
        canonical) VALUES (1, $1, '0xb1', 31337, 7200, '0xt', '0xa', $2, $2, $3, $4, $5, $6, 1)";
    let big = U256::MAX.to_string();
    let rows = [
        // (log index, contract, event, args, session)
        (
            0_i64,
            "SessionWallet",
            "PaymentExecuted",
            json!({ "sessionId": big, "to": "0xA1", "amount": "5" }),
            Some(big.as_str()),
        ),
        (
            1,
            "Token",
            "Transfer",
            json!({ "from": "0xw", "to": "0xA1", "value": "5" }),
            Some(big.as_str()),
        ),
        (
            2,
            "ReceiptRegistry",
            "ReceiptRecorded",
            json!({ "sessionId": "8", "receiptId": "8" }),
            Some("8"),
        ),
        (
            3,
            "CounterpartyRegistry",
            "ListCreated",
            json!({ "listId": "8" }),
            None,
        ),
    ];
    for (i, contract, event, args, session) in &rows {
        sqlx::query(insert)
            .bind(i)
            .bind(Vec::<u8>::new())
            .bind(*contract)
            .bind(*event)
            .bind(args.to_string())
            .bind(*session)
            .execute(&pool)
            .await
            .unwrap();
    }
    sqlx::query(
        "INSERT INTO spend_by_hour (session_id, counterparty, hour, payments, a0, a1, a2, a3, \
         a4, a5, a6, a7, a8) VALUES ($1, '0xA1', 7200, 1, 0, 0, 0, 0, 0, 0, 0, 0, 5)",
    )
    .bind(&big)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO checkpoint (id, block_number, block_hash) VALUES (1, 1, '0xb1')")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let max = bursar_client::ids::session_id_text(U256::MAX);
    for start in ["first", "second"] {
        let store = Store::connect(&url).await.unwrap();
        let logs = store
            .logs(&LogFilter {
                limit: 10,
                ..LogFilter::default()
            })
            .await
            .unwrap();
        let sessions: Vec<_> = logs.iter().map(|r| r.session_id.as_deref()).collect();
        let eight = hex_id(8);
        assert_eq!(
            sessions,
            [
                Some(max.as_str()),
                Some(max.as_str()),
                Some(eight.as_str()),
                None
            ],
            "{start} start"
        );
        let args: Vec<_> = logs.iter().map(|r| r.args.clone().unwrap()).collect();
        assert_eq!(args[0]["sessionId"], max.as_str());
        assert_eq!(args[1], rows[1].3, "no sessionId argument to rewrite");
        assert_eq!(args[2]["sessionId"], eight.as_str());
        assert_eq!(args[2]["receiptId"], "8", "other ids stay decimal");
        assert_eq!(args[3], rows[3].3);
        let sums = store
            .payment_sums(&LogFilter::default(), &[Group::Session], None, None)
            .await
            .unwrap();
        assert_eq!(
            sums,
            vec![(vec![max.clone()], U256::from(5), 1)],
            "{start} start"
        );
    }
}

macro_rules! on_both_databases {
    ($($test:ident),* $(,)?) => {
        mod sqlite_db {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(super::sqlite()).await
                }
            )*
        }
        mod postgres_db {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(super::postgres().await).await
                }
            )*
        }
    };
}

on_both_databases!(
    raw_logs_survive_the_upgrade_to_bytes,
    spend_sums_are_built_on_upgrade,
    decimal_session_ids_become_hex_on_connect,
    indexes_the_demo_story,
    bulk_loads_store_rows_verbatim,
    bulk_loads_sum_spend,
    sums_256_bit_amounts_exactly,
    reorgs_orphan_and_come_back,
    survives_kill_9,
    shrinks_to_the_providers_range,
);
