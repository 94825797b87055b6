//! Indexer benchmark (a binary that prints its figures; not a timed test): Bursar events
//! ingested per second from a local node into SQLite and into PostgreSQL, beside the node's raw
//! `eth_getLogs` rate (the ceiling).
//!
//! The events are real `PaymentExecuted` logs (the wallet's event signature, every field set),
//! emitted many per transaction by a small Solidity contract compiled here with the repo's
//! solc-js, on anvil: the devnet runs Stylus WASM only, and generating a million events through
//! the real wallet would take hours.
//!
//! ```text
//! cargo bench -p bursar-e2e --bench indexer                 # 200,000 events
//! BENCH_EVENTS=1000000 cargo bench -p bursar-e2e --bench indexer
//! ```

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use alloy_primitives::U256;
use alloy_sol_types::SolEvent;
use bursar_bindings::wallet::ISessionWallet::PaymentExecuted;
use bursar_client::{Client, Sender};
use bursar_e2e::{anvil, dev_key, env_usize, repo_root};
use bursar_indexer::{Config, FollowConfig};
use serde_json::{json, Value};

/// Events per emitting transaction.
const PER_TX: usize = 1_000;

fn emitter_source() -> String {
    // The Solidity event must be the wallet's: the logs' topic 0 is checked against the
    // bindings' once emitted.
    r#"// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
contract Emitter {
    event PaymentExecuted(uint256 indexed sessionId, address indexed to, uint256 indexed receiptId, uint256 amount, bytes32 purpose, uint256 nonce);
    function emitMany(uint256 first, uint256 n) external {
        for (uint256 i = first; i < first + n; i++) {
            emit PaymentExecuted(i % 1000 + 1, address(uint160(i % 50 + 1)), i, i * 1000 + 1, bytes32(i), i);
        }
    }
}"#
    .to_owned()
}

/// The emitter's creation bytecode, compiled with tools/solc.
fn compile() -> Vec<u8> {
    let input = json!({
        "language": "Solidity",
        "sources": { "Emitter.sol": { "content": emitter_source() } },
        "settings": { "optimizer": { "enabled": true, "runs": 200 },
            "outputSelection": { "*": { "*": ["evm.bytecode.object"] } } },
    });
    let solc = std::env::var("BURSAR_SOLC")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("tools/solc/solc"));
    let mut child = std::process::Command::new(&solc)
        .arg("--standard-json")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run .ci/run, or npm ci --prefix tools/solc)",
                solc.display()
            )
        });
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let out: Value = serde_json::from_slice(&out.stdout).expect("solc's JSON");
    let hex = out["contracts"]["Emitter.sol"]["Emitter"]["evm"]["bytecode"]["object"]
        .as_str()
        .unwrap_or_else(|| panic!("no bytecode: {out}"));
    alloy_primitives::hex::decode(hex).unwrap()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let events = env_usize("BENCH_EVENTS", 200_000).div_ceil(PER_TX) * PER_TX;
        let node = anvil(&["--gas-limit", "300000000"]).await;
        let client = Client::new(node.url.clone());
        let mut sender = Sender::new(&client, dev_key(0)).await.expect("sender");
        let deployed = sender
            .send(&client, None, compile(), U256::ZERO)
            .await
            .expect("deploy the emitter");
        let emitter = deployed.contract_address.expect("a contract");
        let start_block: u64 = deployed.block();
        let started = Instant::now();
        for tx in 0..events / PER_TX {
            let data = [
                alloy_primitives::keccak256("emitMany(uint256,uint256)")[..4].to_vec(),
                U256::from(tx * PER_TX).to_be_bytes::<32>().to_vec(),
                U256::from(PER_TX).to_be_bytes::<32>().to_vec(),
            ]
            .concat();
            sender
                .send_with_gas(&client, Some(emitter), data, U256::ZERO, 4_000_000)
                .await
                .expect("emit");
        }
        println!(
            "indexer benchmark: {events} PaymentExecuted logs emitted on anvil in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let started = Instant::now();
        let all = client
            .logs(&[emitter], start_block, None)
            .await
            .expect("eth_getLogs");
        let raw = started.elapsed();
        assert_eq!(all.len(), events);
        assert_eq!(all[0].topics[0], PaymentExecuted::SIGNATURE_HASH, "the wallet's event");
        println!(
            "raw eth_getLogs of all {events}: {:.2} s = {:.0} events/s (the ceiling)",
            raw.as_secs_f64(),
            events as f64 / raw.as_secs_f64()
        );
        let mut databases = vec![("SQLite", None)];
        if let Ok(url) = std::env::var("BURSAR_TEST_POSTGRES_URL") {
            databases.push(("PostgreSQL", Some(url)));
        }
        for (name, postgres) in databases {
            let db = match postgres {
                None => bursar_e2e::db::sqlite("bench-index.db"),
                Some(_) => bursar_e2e::db::postgres("bursar_b").await,
            };
            let started = Instant::now();
            let indexer = bursar_indexer::start(Config {
                rpc: node.url.clone(),
                db: db.url(),
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                contracts: vec![(emitter, "SessionWallet")],
                follow: FollowConfig {
                    start_block,
                    ..FollowConfig::default()
                },
            })
            .await
            .expect("indexer");
            let head = client.latest_block().await.expect("head");
            assert!(
                indexer
                    .synced_to(&head.hash.to_string(), Duration::from_secs(3_600))
                    .await,
                "the indexer did not catch up"
            );
            let elapsed = started.elapsed();
            println!(
                "ingested into {name}: {events} events in {:.2} s = {:.0} events/s ({:.0}% of the raw eth_getLogs rate)",
                elapsed.as_secs_f64(),
                events as f64 / elapsed.as_secs_f64(),
                100.0 * raw.as_secs_f64() / elapsed.as_secs_f64()
            );
            indexer.shutdown().await;
        }
    });
}
