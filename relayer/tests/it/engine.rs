//! The transaction engine: every transaction mined exactly once through crashes, drops, outside
//! transactions and stuck fees.

use alloy_primitives::{Address, Bytes, U256};
use bursar_relayer::engine::submission::{Call, Engine, EngineConfig};
use bursar_relayer::store::TxStatus;

use super::*;

/// A plain transfer of `wei` from `signer` to `to`.
fn transfer(signer: Address, to: Address, wei: u64) -> Call {
    Call {
        signer,
        to,
        data: Bytes::new(),
        value: U256::from(wei),
        gas_limit: 21_000,
    }
}

/// The engine as these tests run it: one process identity, so an engine made after another
/// was dropped (a restart) holds the signers at once.
fn config() -> EngineConfig {
    EngineConfig {
        confirmations: 0,
        poll: std::time::Duration::ZERO,
        owner: "engine-under-test".into(),
        ..EngineConfig::default()
    }
}

async fn engine(db: &Db, client: &Arc<Client>, key: &Key) -> Engine {
    Engine::new(
        db.store().await,
        client.clone(),
        vec![key.clone()],
        config(),
    )
    .await
    .unwrap()
}

/// Ticks until every one of `ids` is final (each tick is one look per due row; a bounded
/// number of looks, not a wait).
async fn settle(engine: &Engine, ids: &[i64]) {
    for _ in 0..20 {
        engine.tick().await.unwrap();
        let mut done = true;
        for id in ids {
            let row = engine.store().transaction(*id).await.unwrap().unwrap();
            done &= matches!(row.status, TxStatus::Confirmed | TxStatus::Failed);
        }
        if done {
            return;
        }
    }
    panic!("not settled after 20 ticks");
}

async fn status(engine: &Engine, id: i64) -> TxStatus {
    engine
        .store()
        .transaction(id)
        .await
        .unwrap()
        .unwrap()
        .status
}

async fn balance(client: &Client, a: Address) -> U256 {
    client.balance(a).await.unwrap()
}

async fn crash_before_and_after_broadcast_loses_and_duplicates_nothing(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let key = dev_key(7);
    let to = Address::repeat_byte(0x51);
    // Stored but never broadcast, then the process dies.
    let first = {
        let e = engine(&db, &client, &key).await;
        e.submit(&transfer(key.address(), to, 1)).await.unwrap()
    };
    assert_eq!(balance(&client, to).await, U256::ZERO);
    // A new process finds it and sends it; a second one is stored and broadcast, and the
    // process dies before it reads the receipt.
    let second = {
        let e = engine(&db, &client, &key).await;
        let id = e.submit(&transfer(key.address(), to, 2)).await.unwrap();
        e.tick().await.unwrap();
        id
    };
    assert_eq!(balance(&client, to).await, U256::from(3));
    // A third process settles both without sending anything twice.
    let e = engine(&db, &client, &key).await;
    settle(&e, &[first, second]).await;
    assert_eq!(status(&e, first).await, TxStatus::Confirmed);
    assert_eq!(status(&e, second).await, TxStatus::Confirmed);
    assert_eq!(balance(&client, to).await, U256::from(3));
    assert_eq!(client.nonce(key.address()).await.unwrap(), 2);
}

async fn a_dropped_transaction_is_sent_again_and_an_outside_one_is_survived(db: Db) {
    let (_devnet, client) = devnet(false).await;
    let key = dev_key(8);
    let to = Address::repeat_byte(0x52);
    let e = engine(&db, &client, &key).await;
    let id = e.submit(&transfer(key.address(), to, 5)).await.unwrap();
    e.tick().await.unwrap();
    assert_eq!(status(&e, id).await, TxStatus::Submitted);
    // The node loses it from its pool.
    let hash = e.store().attempts(id).await.unwrap()[0].hash;
    let dropped: serde_json::Value = client
        .request("anvil_dropTransaction", serde_json::json!([hash]))
        .await
        .unwrap();
    assert!(!dropped.is_null());
    e.tick().await.unwrap();
    let _: serde_json::Value = client
        .request("evm_mine", serde_json::json!([]))
        .await
        .unwrap();
    settle(&e, &[id]).await;
    assert_eq!(status(&e, id).await, TxStatus::Confirmed);
    assert_eq!(balance(&client, to).await, U256::from(5));

    // Someone sends from the relayer's key behind its back; a restarted engine starts from
    // the chain's nonce and its next transaction goes through.
    let mut outside = bursar_client::Sender::new(&client, key.clone())
        .await
        .unwrap();
    let _: serde_json::Value = client
        .request("evm_setAutomine", serde_json::json!([true]))
        .await
        .unwrap();
    outside
        .send(&client, Some(to), vec![], U256::from(100))
        .await
        .unwrap();
    let e = engine(&db, &client, &key).await;
    let next = e.submit(&transfer(key.address(), to, 7)).await.unwrap();
    settle(&e, &[next]).await;
    assert_eq!(status(&e, next).await, TxStatus::Confirmed);
    assert_eq!(balance(&client, to).await, U256::from(112));
}

async fn a_stuck_transaction_is_replaced_with_higher_fees_and_mined_once(db: Db) {
    let (_devnet, client) = devnet(false).await;
    let key = dev_key(9);
    let to = Address::repeat_byte(0x53);
    let e = Engine::new(
        db.store().await,
        client.clone(),
        vec![key.clone()],
        EngineConfig {
            stuck_after: std::time::Duration::ZERO,
            ..config()
        },
    )
    .await
    .unwrap();
    let id = e.submit(&transfer(key.address(), to, 9)).await.unwrap();
    e.tick().await.unwrap(); // sent
                             // The base fee rises past what the transaction offers: it cannot be mined as it is.
    let base: u64 = 100_000_000 * 5;
    let _: serde_json::Value = client
        .request("anvil_setNextBlockBaseFeePerGas", serde_json::json!([base]))
        .await
        .unwrap();
    let _: serde_json::Value = client
        .request("evm_mine", serde_json::json!([]))
        .await
        .unwrap();
    assert_eq!(balance(&client, to).await, U256::ZERO);
    e.tick().await.unwrap(); // stuck: replaced with fees that cover the new base fee
    let attempts = e.store().attempts(id).await.unwrap();
    assert_eq!(attempts.len(), 2);
    let cap: u128 = attempts[0].max_fee;
    assert!(
        cap >= u128::from(base),
        "replacement cap {cap} below base fee {base}"
    );
    let _: serde_json::Value = client
        .request("evm_mine", serde_json::json!([]))
        .await
        .unwrap();
    settle(&e, &[id]).await;
    let row = e.store().transaction(id).await.unwrap().unwrap();
    assert_eq!(row.status, TxStatus::Confirmed);
    assert_eq!(row.mined_hash, Some(attempts[0].hash));
    assert_eq!(balance(&client, to).await, U256::from(9));
}

async fn concurrent_submits_get_distinct_nonces_and_all_land_once(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let key = dev_key(6);
    let to = Address::repeat_byte(0x54);
    let e = Arc::new(engine(&db, &client, &key).await);
    // Sixteen callers at once: each nonce is allocated inside its own database transaction.
    let tasks: Vec<_> = (1..=16u64)
        .map(|i| {
            let e = e.clone();
            let signer = key.address();
            tokio::spawn(async move { e.submit(&transfer(signer, to, i)).await.unwrap() })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap());
    }
    let mut nonces = Vec::new();
    for id in &ids {
        nonces.push(e.store().transaction(*id).await.unwrap().unwrap().nonce);
    }
    nonces.sort();
    assert_eq!(nonces, (0..16).collect::<Vec<i64>>());
    settle(&e, &ids).await;
    // 1 + 2 + … + 16, each transfer exactly once.
    assert_eq!(balance(&client, to).await, U256::from(136));
    assert_eq!(client.nonce(key.address()).await.unwrap(), 16);
}

/// A TCP proxy in front of a node that the test can cut (refusing new connections and
/// closing open ones) and restore: the node going away and coming back.
struct Outage {
    url: String,
    up: tokio::sync::watch::Sender<bool>,
}

impl Outage {
    async fn in_front_of(node: &str) -> Self {
        let upstream = node.trim_start_matches("http://").to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (up, watch) = tokio::sync::watch::channel(true);
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let mut watch = watch.clone();
                if !*watch.borrow() {
                    continue; // dropped: the connection is refused
                }
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = watch.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Outage { url, up }
    }

    fn set(&self, up: bool) {
        self.up.send_replace(up);
    }
}

async fn the_node_going_away_and_back_loses_nothing(db: Db) {
    let (_devnet, direct) = devnet(true).await;
    let outage = Outage::in_front_of(direct.url()).await;
    let client = Arc::new(Client::new(outage.url.clone()));
    let key = dev_key(4);
    let to = Address::repeat_byte(0x55);
    let e = engine(&db, &client, &key).await;
    let id = e.submit(&transfer(key.address(), to, 11)).await.unwrap();
    outage.set(false);
    // Every look fails while the node is away; the transaction stays stored (marked as handed
    // to the node, which it could not be), not failed.
    for _ in 0..3 {
        e.tick().await.unwrap();
    }
    assert_eq!(status(&e, id).await, TxStatus::Submitted);
    assert!(e.metrics().rpc_errors.get() >= 1);
    assert_eq!(balance(&direct, to).await, U256::ZERO);
    outage.set(true);
    // The backoff delays the next look: force it due, as time passing would.
    e.store().reschedule(id, 0, None).await.unwrap();
    settle(&e, &[id]).await;
    assert_eq!(status(&e, id).await, TxStatus::Confirmed);
    assert_eq!(balance(&direct, to).await, U256::from(11));
}

/// The same engine against anvil, a second independent node, with automine off: sent
/// transactions wait in its pool, one is dropped from it, blocks come when the test mines.
async fn against_anvil_with_automine_off(db: Db) {
    let anvil = bursar_e2e::anvil(&["--no-mining"]).await;
    let client = Arc::new(Client::new(anvil.url.clone()));
    let key = dev_key(2);
    let to = Address::repeat_byte(0x56);
    let e = engine(&db, &client, &key).await;
    let ids = [
        e.submit(&transfer(key.address(), to, 1)).await.unwrap(),
        e.submit(&transfer(key.address(), to, 2)).await.unwrap(),
        e.submit(&transfer(key.address(), to, 4)).await.unwrap(),
    ];
    e.tick().await.unwrap();
    for id in ids {
        assert_eq!(status(&e, id).await, TxStatus::Submitted);
    }
    // anvil forgets the first; the engine sends the same bytes again.
    let first = e.store().attempts(ids[0]).await.unwrap()[0].hash;
    let _: serde_json::Value = client
        .request("anvil_dropTransaction", serde_json::json!([first]))
        .await
        .unwrap();
    e.tick().await.unwrap();
    let _: serde_json::Value = client
        .request("evm_mine", serde_json::json!([]))
        .await
        .unwrap();
    settle(&e, &ids).await;
    for id in ids {
        let row = e.store().transaction(id).await.unwrap().unwrap();
        assert_eq!(row.status, TxStatus::Confirmed);
        assert_eq!(
            e.store().attempts(id).await.unwrap().len(),
            1,
            "no replacement was needed"
        );
    }
    assert_eq!(balance(&client, to).await, U256::from(7));
    assert_eq!(client.nonce(key.address()).await.unwrap(), 3);
}

/// Two processes on one database with the same signer: only the one holding the signer sends;
/// when it stops cleanly the other takes over at once.
async fn one_process_sends_for_a_signer_at_a_time(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let key = dev_key(1);
    let to = Address::repeat_byte(0x57);
    let process = |owner: &str| {
        let config = EngineConfig {
            owner: owner.into(),
            ..config()
        };
        let (db, client, key) = (&db, &client, &key);
        async move {
            Engine::new(db.store().await, client.clone(), vec![key.clone()], config)
                .await
                .unwrap()
        }
    };
    let (a, b) = (process("process-a").await, process("process-b").await);
    // Either may store transactions; a takes the signer on its first tick and sends them.
    let mut ids = Vec::new();
    for (i, e) in [&a, &b, &a, &b].into_iter().enumerate() {
        ids.push(
            e.submit(&transfer(key.address(), to, 1 << i))
                .await
                .unwrap(),
        );
    }
    assert_eq!(a.tick().await.unwrap(), 4);
    assert_eq!(
        b.tick().await.unwrap(),
        0,
        "b holds nothing: it looks at nothing"
    );
    settle(&a, &ids).await;
    assert_eq!(b.tick().await.unwrap(), 0);
    // a stops cleanly; b takes the signer over on its next tick.
    a.release().await.unwrap();
    let late = b.submit(&transfer(key.address(), to, 16)).await.unwrap();
    assert_eq!(b.tick().await.unwrap(), 1);
    settle(&b, &[late]).await;
    for id in ids.iter().chain([&late]) {
        assert_eq!(b.store().attempts(*id).await.unwrap().len(), 1, "sent once");
    }
    assert_eq!(balance(&client, to).await, U256::from(31));
}

on_both_databases!(
    crash_before_and_after_broadcast_loses_and_duplicates_nothing,
    a_dropped_transaction_is_sent_again_and_an_outside_one_is_survived,
    a_stuck_transaction_is_replaced_with_higher_fees_and_mined_once,
    concurrent_submits_get_distinct_nonces_and_all_land_once,
    the_node_going_away_and_back_loses_nothing,
    against_anvil_with_automine_off,
    one_process_sends_for_a_signer_at_a_time,
);
