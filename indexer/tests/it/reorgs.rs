//! Reorgs the follower lives through: a dropped transaction orphaned and mined again, and
//! new heads over WebSocket waking it.

use super::*;

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
pub(super) async fn reorgs_orphan_and_come_back(db: Db) {
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
