//! The demo's whole story, indexed: every log `eth_getLogs` returns is stored once, decoded,
//! in order; a session's timeline is its events and its state the wallet's own at every block;
//! spend, receipts, provenance and exports answer as the story happened; bad parameters are
//! 400s naming them; and a reorg deeper than the window is survived. The story is told once
//! and each part below checks one face of its index.

use super::*;

/// The story on chain and its index, which every check reads.
struct Story {
    _devnet: bursar_devnet::Handle,
    client: Client,
    record: DeploymentRecord,
    db: Db,
    indexer: Indexer,
    /// The Bursar contracts the indexer follows.
    addresses: Vec<Address>,
    /// Every canonical log the indexer stored after the story.
    stored: Vec<bursar_indexer::store::LogRow>,
    /// The session's `SessionOpened`.
    opened: bursar_indexer::store::LogRow,
    /// The session's id as stored: 0x + 64 hex digits.
    session: String,
    id: U256,
    /// The same id, as the API is asked for it in either form.
    hex: String,
    decimal: String,
    wallet: Address,
    opened_at: u64,
}

impl Story {
    /// The demo's story told on a fresh devnet and indexed into `db` with a small window and
    /// ranges: most of it is backfilled, the rest followed.
    async fn told(db: Db) -> Story {
        let (devnet, client) = devnet().await;
        let record = deploy(&client, &scratch("indexer-demo")).await;
        // The demo's relayer keeps its database in a file named after the actors: one per test.
        let actors = Actors::fresh(dev_key(0), &db.url());
        scenario::run(&client, &record, actors, &mut Transcript::default())
            .await
            .expect("the demo's story");
        let indexer = start(&client, &record, &db, 4).await;
        synced(&indexer, &client).await;
        let (contracts, _) = followed(&record);
        let addresses: Vec<Address> = contracts.iter().map(|(a, _)| *a).collect();
        let stored = all_logs(&indexer, false).await;
        let opened = stored
            .iter()
            .find(|l| l.event.as_deref() == Some("SessionOpened"))
            .unwrap()
            .clone();
        let session = opened.session_id.clone().unwrap();
        // Stored and answered as 0x + 64 hex digits; asked for in either form.
        let id = bursar_client::ids::parse_session_id(&session).unwrap();
        assert_eq!(session, bursar_client::ids::session_id_text(id));
        let wallet = record.address(Contract::SessionWallet.key()).unwrap();
        Story {
            _devnet: devnet,
            hex: session.clone(),
            decimal: id.to_string(),
            opened_at: opened.block_number,
            client,
            record,
            db,
            indexer,
            addresses,
            stored,
            opened,
            session,
            id,
            wallet,
        }
    }
}

pub(super) async fn indexes_the_demo_story(db: Db) {
    let s = Story::told(db).await;
    every_log_once_in_order(&s).await;
    typed_views(&s).await;
    let timeline = timeline(&s).await;
    state_as_of_blocks_and_times(&s).await;
    finality(&s, &timeline).await;
    listed_and_filtered(&s).await;
    spend(&s).await;
    receipts_and_provenance(&s).await;
    export(&s).await;
    // Registers agent 0 (which `every_path_answers` then asks for).
    let seed = s.db.url();
    super::passports::passports(&s.client, &s.indexer, &seed, &s.stored).await;
    every_path_answers(&s).await;
    deeper_than_the_window(&s).await;
    s.indexer.shutdown().await;
}

/// Every log of the Bursar contracts, and the token's moves to or from them, stored once,
/// decoded, in chain order; each payment's transfer beside it.
async fn every_log_once_in_order(s: &Story) {
    let Story {
        client,
        record,
        addresses,
        stored,
        ..
    } = s;
    // The Bursar contracts' logs, and the token's (the demo's USDC) transfers to or from them
    // and approvals for them.
    let ours: Vec<B256> = addresses.iter().map(|a| a.into_word()).collect();
    let token = record.contracts().unwrap().usdc.expect("the devnet's USDC");
    let mut logs = client.logs(addresses, 0, None).await.unwrap();
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
        "ReceiptFeedbackGiven",
        "ProvenanceRecorded",
        "EntrySet",
        "Transfer",
        "Approval",
    ] {
        assert!(events.contains(e), "{e} indexed: {events:?}");
    }
    // The session's rating joins its timeline through its receipt.
    let opened = stored
        .iter()
        .find(|l| l.event.as_deref() == Some("SessionOpened"))
        .unwrap();
    let rated = stored
        .iter()
        .find(|l| l.event.as_deref() == Some("ReceiptFeedbackGiven"))
        .unwrap();
    assert_eq!(rated.session_id, opened.session_id);
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
}

/// The typed SQL views, and the index a bulk load leaves out and builds at its end.
async fn typed_views(s: &Story) {
    let Story {
        db,
        indexer,
        stored,
        ..
    } = s;
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
}

/// The session's timeline: its events in order, paged.
async fn timeline(s: &Story) -> Vec<Value> {
    let Story {
        indexer,
        stored,
        session,
        decimal,
        ..
    } = s;
    let mut timeline = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = get(
            indexer,
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
    timeline
}

/// Derived state equals the wallet's own view as of every block of the story, and as of a
/// time; a receipt as of a block.
async fn state_as_of_blocks_and_times(s: &Story) {
    let Story {
        client,
        indexer,
        stored,
        hex,
        ..
    } = s;
    let id = s.id;
    let wallet = s.wallet;
    let opened_at = s.opened_at;
    // Derived state equals the wallet's own view, now and as of every block of the story.
    let head: u64 = client.block_number().await.unwrap();
    // (At the head the devnet answers in the next block's environment, as for a transaction sent now.)
    for block in opened_at..head {
        let (status, body) = get(indexer, &format!("/v1/sessions/{hex}?asOfBlock={block}")).await;
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
        indexer,
        &format!("/v1/sessions/{hex}?as_of_time={}", paid.block_timestamp),
    )
    .await;
    assert_eq!(status, 200, "{at_time}");
    let resolved = at_time["asOf"]["blockNumber"].as_u64().unwrap();
    assert!(resolved >= paid.block_number, "{at_time}");
    let (_, at_block) = get(indexer, &format!("/v1/sessions/{hex}?asOfBlock={resolved}")).await;
    assert_eq!(at_time["spent"], at_block["spent"]);
    let (status, _) = get(indexer, &format!("/v1/sessions/{hex}?asOfTime=1")).await;
    assert_eq!(status, 404, "nothing had happened at 1970-01-01");
    let (status, body) = get(
        indexer,
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
        let (status, r) = get(indexer, &path).await;
        assert_eq!(
            (status, r["acknowledged"].as_bool()),
            (200, Some(acknowledged)),
            "{r}"
        );
        let path = format!("/v1/receipts?acknowledged={acknowledged}&asOfBlock={block}");
        let (_, list) = get(indexer, &path).await;
        let ids: Vec<&Value> = list["receipts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["receiptId"])
            .collect();
        assert!(ids.contains(&&json!(receipt_id)), "{list}");
    }
}

/// Finality as the node's tags say, on every event and in `/health`.
async fn finality(s: &Story, timeline: &[Value]) {
    let Story {
        client, indexer, ..
    } = s;
    // Finality: as the node's tags say, on every event and in /health.
    let (_, health) = get(indexer, "/health").await;
    let tag = |t: &'static str| async move {
        let block = client.block_by_tag(t).await.unwrap().unwrap();
        block.number.to::<u64>()
    };
    let (safe, finalized) = (tag("safe").await, tag("finalized").await);
    assert_eq!(health["safeBlock"], safe, "{health}");
    assert_eq!(health["finalizedBlock"], finalized, "{health}");
    for e in timeline {
        let block = e["blockNumber"].as_u64().unwrap();
        let want = match block {
            b if b <= finalized => "finalized",
            b if b <= safe => "safe",
            _ => "latest",
        };
        assert_eq!(e["finality"], want, "{e}");
    }
}

/// The session now, and sessions listed by owner, status and metadata.
async fn listed_and_filtered(s: &Story) {
    let Story {
        indexer,
        opened,
        session,
        decimal,
        ..
    } = s;
    let opened_at = s.opened_at;
    let (status, now) = get(indexer, &format!("/v1/sessions/{decimal}")).await;
    assert_eq!(status, 200);
    assert_eq!(now["sessionId"], session.as_str(), "{now}");
    assert_eq!(now["status"], "closed", "{now}");
    assert!(now["refunded"].is_string(), "{now}");
    let owner = opened.args.as_ref().unwrap()["owner"]
        .as_str()
        .unwrap()
        .to_lowercase();
    let (_, list) = get(indexer, &format!("/v1/sessions?owner={owner}")).await;
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
        let (status, list) = get(indexer, &format!("/v1/sessions?{query}")).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(listed_ids(&list).contains(session), has, "{query}: {list}");
    }
    let (status, _) = get(indexer, "/v1/sessions/12345").await;
    assert_eq!(status, 404);
}

/// Spend sums by session, counterparty, day and owner.
async fn spend(s: &Story) {
    let Story {
        indexer,
        hex,
        decimal,
        ..
    } = s;
    // Spend: the story paid 12 + 18 + 0.50 (the desk's dataset) to vendor A and 15 + 21 to
    // vendor B.
    let (_, total) = get(indexer, &format!("/v1/spend?session={decimal}")).await;
    assert_eq!(
        total["groups"],
        json!([{ "total": "66500000", "payments": 5 }]),
        "{total}"
    );
    // By counterparty and UTC day: the story's hour-later payments fall on the next day when
    // it runs in the last hour before midnight, so a vendor has one or two days.
    let (_, by) = get(indexer, "/v1/spend?groupBy=counterparty,day").await;
    let mut per_vendor: BTreeMap<String, u64> = BTreeMap::new();
    for g in by["groups"].as_array().unwrap() {
        let total: u64 = g["total"].as_str().unwrap().parse().unwrap();
        *per_vendor
            .entry(g["counterparty"].as_str().unwrap().to_owned())
            .or_default() += total;
    }
    let mut totals: Vec<u64> = per_vendor.values().copied().collect();
    totals.sort();
    assert_eq!(totals, [30_500_000, 36_000_000], "{by}");
    let (vendor, vendor_total) = per_vendor.iter().next().unwrap();
    let (_, one) = get(
        indexer,
        &format!("/v1/spend?counterparty={vendor}&groupBy=owner"),
    )
    .await;
    assert_eq!(one["groups"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["groups"][0]["total"], vendor_total.to_string());
    let (_, none) = get(indexer, "/v1/spend?fromTime=1&toTime=2").await;
    assert_eq!(none["groups"], json!([]));
    let (_, none) = get(indexer, "/v1/spend?toTime=3599").await;
    assert_eq!(none["groups"], json!([]));
    assert_eq!(spend_both_ways(indexer, hex).await, 5);
}

/// Receipts with acknowledgements; provenance with lineage and revocation.
async fn receipts_and_provenance(s: &Story) {
    let Story {
        client,
        record,
        db,
        indexer,
        hex,
        ..
    } = s;
    // Receipts and provenance, with acknowledgements, revocations and lineage.
    let (_, r) = get(indexer, &format!("/v1/receipts?session={hex}")).await;
    let receipts = r["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 5, "{r}");
    let (_, acked) = get(indexer, "/v1/receipts?acknowledged=true").await;
    let (_, unacked) = get(indexer, "/v1/receipts?acknowledged=false").await;
    assert_eq!(acked["receipts"].as_array().unwrap().len(), 1, "{acked}");
    assert_eq!(unacked["receipts"].as_array().unwrap().len(), 4);
    let first = &acked["receipts"][0];
    let (status, one) = get(
        indexer,
        &format!("/v1/receipts/{}", first["receiptId"].as_str().unwrap()),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(one["acknowledged"], true);
    assert!(one["acknowledgement"]["responseHash"].is_string(), "{one}");
    let payee = first["payee"].as_str().unwrap();
    let (_, by_payee) = get(indexer, &format!("/v1/receipts?payee={payee}")).await;
    assert!(by_payee["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["payee"] == payee));
    // The session's one record, the report, derives from the dataset it bought: a record of
    // the desk's session.
    let (_, p) = get(indexer, &format!("/v1/provenance?session={hex}")).await;
    let records = p["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{p}");
    let child = records[0]["recordId"].as_str().unwrap().to_owned();
    let parent = records[0]["parents"][0].as_str().unwrap().to_owned();
    let (_, bought) = get(indexer, &format!("/v1/provenance/{parent}")).await;
    assert_ne!(bought["sessionId"], hex.as_str(), "{bought}");
    let (_, l) = get(indexer, &format!("/v1/provenance/{child}/lineage")).await;
    assert_eq!(l["lineageValid"], true, "{l}");
    assert_eq!(l["ancestors"][0]["recordId"], parent.as_str());
    let (_, l) = get(indexer, &format!("/v1/provenance/{parent}/lineage")).await;
    assert_eq!(l["descendants"][0]["recordId"], child.as_str(), "{l}");
    // Its maker (vendor A, the desk's owner) revokes the dataset: the report stays valid on
    // its own, its lineage does not.
    let owner = Actors::fresh(dev_key(0), &db.url()).vendor_a;
    let mut funder = bursar_client::Sender::new(client, dev_key(3))
        .await
        .unwrap();
    funder
        .send(
            client,
            Some(owner.address()),
            Vec::new(),
            U256::from(10u64).pow(U256::from(18)),
        )
        .await
        .unwrap();
    let receipts_registry = record.address(Contract::ReceiptRegistry.key()).unwrap();
    bursar_client::Sender::new(client, owner)
        .await
        .unwrap()
        .transact(
            client,
            receipts_registry,
            &bursar_bindings::receipts::IReceiptRegistry::revokeProvenanceCall {
                recordId: parent.parse().unwrap(),
                reason: B256::repeat_byte(7),
            },
        )
        .await
        .unwrap();
    synced(indexer, client).await;
    let (_, revoked) = get(indexer, &format!("/v1/provenance/{parent}")).await;
    assert_eq!(revoked["valid"], false, "{revoked}");
    assert!(revoked["revocation"]["by"].is_string());
    let (_, c) = get(indexer, &format!("/v1/provenance/{child}")).await;
    assert_eq!(c["valid"], true);
    let (_, l) = get(indexer, &format!("/v1/provenance/{child}/lineage")).await;
    assert_eq!(l["lineageValid"], false, "{l}");
    let (status, _) = get(indexer, "/v1/provenance/999").await;
    assert_eq!(status, 404);
}

/// Audit exports: verified against the chain, forgeries and damage refused.
async fn export(s: &Story) {
    let Story {
        client,
        record,
        indexer,
        hex,
        ..
    } = s;
    // An audit export verifies against the chain, signed by the indexer's key; forged ones do
    // not, nor do damaged ones (a deleted, altered or reordered row).
    let text = reqwest12::get(format!("http://{}/v1/sessions/{hex}/export", indexer.addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let verified = bursar_indexer::audit::verify(client, &text, &Expect::default())
        .await
        .unwrap();
    assert_eq!(verified.rows as usize, text.lines().count() - 1);
    audit::forgeries_do_not_verify(client, &text, export_key().address(), record).await;
    // Through a provider that takes a few blocks per eth_getLogs, in as many requests as that
    // takes.
    let (limited, proxy) = ranges::limited(client, 0).await;
    let through = bursar_indexer::audit::verify(&limited, &text, &Expect::default()).await;
    assert_eq!(through.unwrap().rows, verified.rows);
    assert!(proxy.refused_some());
    let (_, health) = get(indexer, "/health").await;
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
    let e = bursar_indexer::audit::verify(client, &again(deleted), &Expect::default())
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with("row 4:"), "{e}");
    let mut altered = owned.clone();
    altered[5] = altered[5].replace("\"amount\":\"", "\"amount\":\"9");
    assert_ne!(altered[5], owned[5], "row 5 has an amount");
    let e = bursar_indexer::audit::verify(client, &again(altered), &Expect::default())
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with("row 5:"), "{e}");
    let mut reordered = owned.clone();
    reordered.swap(1, 2);
    let e = bursar_indexer::audit::verify(client, &again(reordered), &Expect::default())
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with("row 2:"), "{e}");
    let mut cut = owned.clone();
    cut.pop();
    assert!(
        bursar_indexer::audit::verify(client, &again(cut), &Expect::default())
            .await
            .is_err()
    );
    assert!(
        bursar_indexer::audit::verify(client, &owned.join("\n"), &Expect::default())
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
}

/// Every documented path answers; bad parameters are 400s naming them; health and metrics.
async fn every_path_answers(s: &Story) {
    let Story {
        client,
        indexer,
        hex,
        ..
    } = s;
    // Every documented path answers (with an id that exists where it takes one).
    let (status, doc) = get(indexer, "/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    for path in doc["paths"].as_object().unwrap().keys() {
        let concrete = path
            .replace("{id}", if path.contains("sessions") { hex } else { "1" })
            .replace("{agentId}", "0");
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
        let (status, e) = get(indexer, path).await;
        assert_eq!(status, 400, "{path}: {e}");
        assert_eq!(e["code"], "invalid_parameter");
        assert_eq!(e["details"]["parameter"], parameter, "{path}: {e}");
    }
    let (status, health) = get(indexer, "/health").await;
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
    let now_stored = all_logs(indexer, false).await;
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
}

/// A reorg deeper than the window: orphaned rows kept, sums and state the chain's again.
async fn deeper_than_the_window(s: &Story) {
    let Story {
        client,
        indexer,
        addresses,
        stored,
        hex,
        ..
    } = s;
    let id = s.id;
    let wallet = s.wallet;
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
    synced(indexer, client).await;
    let after = all_logs(indexer, true).await;
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
    let payments = all_logs(indexer, false)
        .await
        .iter()
        .filter(|l| l.event.as_deref() == Some("PaymentExecuted"))
        .count();
    assert!(payments < 4, "the reorg dropped a payment");
    assert_eq!(spend_both_ways(indexer, hex).await, payments as u64);
    let head: u64 = client.block_number().await.unwrap();
    let (_, body) = get(
        indexer,
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
    let mut expected = client.logs(addresses, 0, None).await.unwrap();
    expected.retain(|l| !l.removed);
    let canonical_ours = all_logs(indexer, false).await;
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
}
