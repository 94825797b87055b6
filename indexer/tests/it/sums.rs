//! Spend sums: exact for 256-bit amounts on both databases, and kept right through a bulk
//! load, whose rows are stored verbatim.

use super::*;

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
pub(super) async fn sums_256_bit_amounts_exactly(db: Db) {
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
pub(super) async fn bulk_loads_sum_spend(db: Db) {
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
pub(super) async fn bulk_loads_store_rows_verbatim(db: Db) {
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
