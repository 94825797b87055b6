//! `kill -9` at random moments — during backfill and while following — then a restart: the
//! database ends equal to an uninterrupted run's (every log, canonical or orphaned, and the
//! checkpoint), because each batch is one database transaction.

use std::process::{Child, Stdio};

use super::*;

const CHILD_ENV: &str = "BURSAR_INDEXER_CHILD";

fn config(rpc: &str, db: &str, record: &std::path::Path) -> Config {
    let record = DeploymentRecord::read(record).unwrap().unwrap();
    let (contracts, start_block) = super::followed(&record);
    Config {
        rpc: rpc.into(),
        db: db.into(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        contracts,
        // Small ranges and window: many batches, so kills land inside the work.
        follow: FollowConfig {
            start_block,
            window: 3,
            max_range: 2,
            poll: Duration::from_millis(5),
            ..FollowConfig::default()
        },
        signing_key: bursar_indexer::audit::sign::generate_key(),
    }
}

#[test]
#[ignore = "run as a child process by survives_kill_9"]
fn indexer_child() {
    let Ok(cfg) = std::env::var(CHILD_ENV) else {
        return;
    };
    let cfg: Value = serde_json::from_str(&cfg).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let config = config(
            cfg["rpc"].as_str().unwrap(),
            cfg["db"].as_str().unwrap(),
            std::path::Path::new(cfg["record"].as_str().unwrap()),
        );
        let indexer = bursar_indexer::start(config).await.unwrap();
        println!("LISTENING {}", indexer.addr);
        std::future::pending::<()>().await;
    });
}

/// Starts the child and waits until it serves (so it has connected and begun).
fn spawn(cfg: &Value) -> Child {
    let (child, _) = bursar_e2e::spawn_listening_child(
        "crash::indexer_child",
        (CHILD_ENV, cfg.to_string()),
        Stdio::null(),
    );
    child
}

/// Sends `n` registry transactions (one block each): events to index.
pub(super) async fn entries(client: &Client, registry: Address, from: u8, n: u8) {
    let mut sender = bursar_client::Sender::new(client, dev_key(2))
        .await
        .unwrap();
    if from == 0 {
        sender
            .transact(client, registry, &ICounterpartyRegistry::createListCall {})
            .await
            .unwrap();
    }
    for i in from..from + n {
        sender
            .transact(
                client,
                registry,
                &ICounterpartyRegistry::setEntryCall {
                    listId: U256::from(1),
                    counterparty: Address::repeat_byte(i + 1),
                    allowed: true,
                    maxPerPayment: U256::from(i),
                    label: B256::ZERO,
                },
            )
            .await
            .unwrap();
    }
}

async fn everything(
    indexer: &Indexer,
) -> (Vec<bursar_indexer::store::LogRow>, Option<(u64, String)>) {
    let logs = all_logs(indexer, true).await;
    (logs, indexer.store.checkpoint().await.unwrap())
}

pub(super) async fn survives_kill_9(db: Db) {
    let (_devnet, client) = devnet().await;
    let dir = scratch("indexer-kill9");
    let record = deploy(&client, &dir).await;
    let registry = record
        .address(Contract::CounterpartyRegistry.key())
        .unwrap();
    entries(&client, registry, 0, 40).await;
    let cfg = json!({
        "rpc": client.url(),
        "db": db.url(),
        "record": dir.join("devnet.json"),
    });
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let store = bursar_indexer::store::Store::connect(&db.url())
        .await
        .unwrap();
    let mut mid_way = 0;
    for round in 0..10u8 {
        let cfg = cfg.clone();
        let mut child = tokio::task::spawn_blocking(move || spawn(&cfg))
            .await
            .unwrap();
        // Later rounds add blocks while it runs: kills while following.
        if round >= 6 {
            entries(&client, registry, 100 + round * 4, 3).await;
        }
        tokio::time::sleep(Duration::from_millis(next() % 40)).await;
        child.kill().unwrap();
        child.wait().unwrap();
        let head = client.block_number().await.unwrap();
        let at = store.checkpoint().await.unwrap().map_or(0, |(n, _)| n);
        if at < head {
            mid_way += 1;
        }
    }
    assert!(
        mid_way >= 3,
        "only {mid_way} of 10 kills landed before the indexer caught up"
    );
    // A last run catches up; an uninterrupted run on a fresh database is the reference.
    let last = bursar_indexer::start(config(client.url(), &db.url(), &dir.join("devnet.json")))
        .await
        .unwrap();
    let reference_db = sqlite();
    let reference = bursar_indexer::start(config(
        client.url(),
        &reference_db.url(),
        &dir.join("devnet.json"),
    ))
    .await
    .unwrap();
    synced(&last, &client).await;
    synced(&reference, &client).await;
    let (logs, checkpoint) = everything(&last).await;
    let (want, want_checkpoint) = everything(&reference).await;
    assert_eq!(logs.len(), want.len());
    assert_eq!(logs, want, "the same logs as an uninterrupted run");
    assert_eq!(checkpoint, want_checkpoint);
    // The list, its 40 entries and 4 rounds of 3 more.
    let registry_logs = logs
        .iter()
        .filter(|l| l.contract == "CounterpartyRegistry")
        .count();
    assert!(registry_logs >= 53, "{registry_logs} registry logs");
    last.shutdown().await;
    reference.shutdown().await;
}
