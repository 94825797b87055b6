//! Databases an older indexer filled, read the same after each migration and restart.

use super::*;

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
pub(super) async fn raw_logs_survive_the_upgrade_to_bytes(db: Db) {
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
pub(super) async fn spend_sums_are_built_on_upgrade(db: Db) {
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
pub(super) async fn decimal_session_ids_become_hex_on_connect(db: Db) {
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
