//! The indexer against a running devnet (the real WASM), on a SQLite file and on a PostgreSQL
//! server (`BURSAR_TEST_POSTGRES_URL`, which `cargo xtask test` and `.ci/run` set).

mod audit;
mod crash;
mod passports;
mod ranges;
mod reorgs;
mod story;
mod sums;
mod upgrades;

use crash::survives_kill_9;
use ranges::shrinks_to_the_providers_range;
use reorgs::reorgs_orphan_and_come_back;
use story::indexes_the_demo_story;
use sums::{bulk_loads_store_rows_verbatim, bulk_loads_sum_spend, sums_256_bit_amounts_exactly};
use upgrades::{
    decimal_session_ids_become_hex_on_connect, raw_logs_survive_the_upgrade_to_bytes,
    spend_sums_are_built_on_upgrade,
};

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
    let contracts = bursar_indexer::followed(d.bursar(), d.agent_registries());
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
