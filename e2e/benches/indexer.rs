//! Indexer benchmark (a binary that prints its figures; not a timed test): Bursar events
//! ingested per second from a local node into SQLite and into PostgreSQL, beside the node's raw
//! `eth_getLogs` rate (the ceiling).
//!
//! The events are real `PaymentExecuted` logs (the wallet's event signature, every field set),
//! emitted many per transaction by a small Solidity contract compiled here with the repo's
//! solc-js, on anvil: the devnet runs Stylus WASM only, and generating a million events through
//! the real wallet would take hours.
//!
//! After each ingest it times queries over 200 sessions (a session's timeline, its payments
//! through `/v1/events`, its spend) and the spend of every payment grouped; then Ponder
//! (`tools/ponder`, npm `ponder@0.16.10`) indexes the same events from the same node, on PGlite
//! and on PostgreSQL, and the ratios are printed.
//!
//! ```text
//! cargo bench -p bursar-e2e --bench indexer                 # 200,000 events
//! BENCH_EVENTS=1000000 cargo bench -p bursar-e2e --bench indexer
//! BENCH_PONDER=0 BENCH_QUERIES=0 cargo bench …              # ingest only (e.g. to profile)
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

// The allocator `bursar` (the CLI that runs the indexer) uses.
#[global_allocator]
static ALLOCATOR: bursar_devnet::allocator::MiMalloc = bursar_devnet::allocator::MiMalloc;

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
                "{}: {e} (run cargo xtask setup, or npm ci --prefix tools/solc)",
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

/// Percentile `p` (0–100) of `samples` (sorted here), in milliseconds.
/// CPU seconds (user + system) the processes `pids` have used so far, from `/proc` (0 for a
/// process gone or unreadable).
fn cpu_seconds(pids: &[u32]) -> f64 {
    // USER_HZ: what /proc counts in, 100 on every Linux ABI.
    let ticks = 100.0;
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .map(|stat| {
            // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let field = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<f64>().ok());
            field(14).unwrap_or(0.0) + field(15).unwrap_or(0.0)
        })
        .sum::<f64>()
        / ticks
}

/// The processes named `postgres` (the server and its backends).
fn postgres_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
        })
        .collect()
}

/// CPU seconds used so far by anvil (`anvil`), this process and PostgreSQL's processes.
fn cpu_split(anvil: u32) -> [f64; 3] {
    [
        cpu_seconds(&[anvil]),
        cpu_seconds(&[std::process::id()]),
        cpu_seconds(&postgres_pids()),
    ]
}

fn percentile(samples: &mut [Duration], p: usize) -> f64 {
    samples.sort_unstable();
    let i = (samples.len() * p / 100).min(samples.len() - 1);
    samples[i].as_secs_f64() * 1_000.0
}

/// `eth_getLogs` ranges in flight at once, as the indexer's default.
const PARALLEL_RANGES: usize = 4;

/// The best of three reads of `emitter`'s `events` logs in blocks `from..=to`, in ranges of
/// about `TARGET_LOGS` logs (each emitting block holds [`PER_TX`]), [`PARALLEL_RANGES`] at once.
async fn parallel_logs(
    client: &Client,
    emitter: alloy_primitives::Address,
    from: u64,
    to: u64,
    events: usize,
) -> Duration {
    let blocks = (bursar_indexer::follower::TARGET_LOGS / PER_TX as u64).max(1);
    let ranges: Vec<(u64, u64)> = (from..=to)
        .step_by(blocks as usize)
        .map(|b| (b, (b + blocks - 1).min(to)))
        .collect();
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ranges = std::sync::Arc::new(ranges.clone());
        let started = Instant::now();
        let mut readers = tokio::task::JoinSet::new();
        for _ in 0..PARALLEL_RANGES {
            let client = Client::new(client.url().to_owned());
            let (next, ranges) = (next.clone(), ranges.clone());
            readers.spawn(async move {
                let mut read = 0;
                while let Some(&(a, b)) =
                    ranges.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    read += client
                        .logs(&[emitter], a, Some(b))
                        .await
                        .expect("eth_getLogs")
                        .len();
                }
                read
            });
        }
        let mut read = 0;
        while let Some(n) = readers.join_next().await {
            read += n.expect("a reader");
        }
        best = best.min(started.elapsed());
        assert_eq!(read, events, "every log read once");
    }
    best
}

/// Times `n` GETs of the paths `path(i)` from the indexer on `db` at `addr`; prints p50/p99.
async fn latency(addr: SocketAddr, db: &str, what: &str, n: usize, path: impl Fn(usize) -> String) {
    let http = reqwest::Client::new();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let url = format!("http://{addr}{}", path(i));
        let started = Instant::now();
        let response = http.get(&url).send().await.expect("the indexer answers");
        assert!(
            response.status().is_success(),
            "{url}: {}",
            response.status()
        );
        let _ = response.bytes().await.expect("a body");
        samples.push(started.elapsed());
    }
    let (p50, p99) = (percentile(&mut samples, 50), percentile(&mut samples, 99));
    println!("  {what}: p50 {p50:.1} ms, p99 {p99:.1} ms ({n} requests)");
    bursar_e2e::figure(
        "indexer: queries",
        &format!("{what}, {db}"),
        format!("p50 {p50:.1} ms, p99 {p99:.1} ms ({n} requests)"),
    );
}

/// Ponder (tools/ponder, npm ponder@0.16.10) indexing the same events: seconds from its start
/// until its table holds all `events`, and the backfill time it reports itself.
async fn ponder(
    rpc: &str,
    emitter: alloy_primitives::Address,
    start_block: u64,
    events: usize,
    postgres: Option<String>,
) -> (f64, Option<f64>) {
    use std::io::BufRead;
    let dir = repo_root().join("tools/ponder");
    if !dir.join("node_modules/ponder").is_dir() {
        let status = std::process::Command::new("npm")
            .args([
                "ci",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&dir)
            .status()
            .expect("npm (install Node.js and npm, or run cargo xtask setup)");
        assert!(status.success(), "npm ci --prefix tools/ponder failed");
    }
    let pglite = tempfile::tempdir().expect("a temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut command = std::process::Command::new("node");
    command
        .current_dir(&dir)
        .arg("node_modules/ponder/dist/esm/bin/ponder.js")
        .args(["start", "--schema", "bench", "--hostname", "127.0.0.1"])
        .args(["--log-format", "json", "--port", &port.to_string()])
        .env_remove("PORT")
        .env_remove("DATABASE_SCHEMA")
        .env("PONDER_TELEMETRY_DISABLED", "true")
        .env("PONDER_RPC_URL", rpc)
        .env("PONDER_ADDRESS", emitter.to_string())
        .env("PONDER_START_BLOCK", start_block.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    match &postgres {
        Some(url) => command.env("DATABASE_URL", url),
        None => command
            .env_remove("DATABASE_URL")
            .env("PONDER_PGLITE_DIR", pglite.path()),
    };
    let started = Instant::now();
    let mut child = command.spawn().expect("node (run cargo xtask setup)");
    // Its log: the port it really took (it moves on when one is busy) and its backfill time.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stdout = child.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    let http = reqwest::Client::new();
    let (mut port, mut backfill) = (port, None);
    let deadline = Instant::now() + Duration::from_secs(3_600);
    loop {
        while let Ok(v) = rx.try_recv() {
            if v["msg"] == "Created HTTP server" {
                port = v["port"].as_u64().map_or(port, |p| p as u16);
            }
            if v["msg"] == "Completed backfill indexing across all chains" {
                backfill = v["duration"].as_f64().map(|ms| ms / 1_000.0);
            }
        }
        let count = async {
            let body: Value = http
                .get(format!("http://127.0.0.1:{port}/count"))
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            body["payment"].as_u64()
        };
        if count.await == Some(events as u64) {
            break;
        }
        assert!(Instant::now() < deadline, "ponder did not finish");
        // A benchmark's poll of another process's progress, not a test's synchronization.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = child.kill();
    let _ = child.wait();
    (elapsed, backfill)
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
        // Empty blocks on top, more than either indexer reads block by block near the head
        // (Ponder the last 30 of chain 31337, ours the 64 of its reorg window): what is
        // measured is the backfill of every event, not the following of dense new blocks.
        let _: Value = client
            .request("anvil_mine", json!(["0x60"]))
            .await
            .expect("anvil_mine");
        println!(
            "indexer benchmark: {events} PaymentExecuted logs emitted on anvil in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        // The ceiling: one eth_getLogs of everything, the best of three.
        let mut raw = Duration::MAX;
        for _ in 0..3 {
            let started = Instant::now();
            let all = client
                .logs(&[emitter], start_block, None)
                .await
                .expect("eth_getLogs");
            raw = raw.min(started.elapsed());
            assert_eq!(all.len(), events);
            assert_eq!(
                all[0].topics[0],
                PaymentExecuted::SIGNATURE_HASH,
                "the wallet's event"
            );
        }
        println!(
            "raw eth_getLogs of all {events} in one call (best of 3): {:.2} s = {:.0} events/s",
            raw.as_secs_f64(),
            events as f64 / raw.as_secs_f64()
        );
        // The ceiling the indexer is held to: the node's rate when read as the indexer reads
        // it, ranges of about 5,000 logs (TARGET_LOGS), four at once.
        let head = client.block_number().await.expect("head");
        let parallel = parallel_logs(&client, emitter, start_block, head, events).await;
        println!(
            "raw eth_getLogs in {PARALLEL_RANGES} parallel ranges of {} logs (best of 3): \
             {:.2} s = {:.0} events/s (the ceiling)",
            bursar_indexer::follower::TARGET_LOGS,
            parallel.as_secs_f64(),
            events as f64 / parallel.as_secs_f64()
        );
        let ingest = format!("indexer: {events} events");
        bursar_e2e::figure(
            &ingest,
            &format!("raw eth_getLogs, {PARALLEL_RANGES} ranges at once (the ceiling)"),
            format!("{:.0} events/s", events as f64 / parallel.as_secs_f64()),
        );
        let raw = parallel;
        let postgres_url = std::env::var("BURSAR_TEST_POSTGRES_URL").ok();
        let mut databases = vec![("SQLite", None)];
        if postgres_url.is_some() {
            databases.push(("PostgreSQL", Some(())));
        }
        let mut ours = Vec::new();
        for (name, postgres) in databases {
            let db = match postgres {
                None => bursar_e2e::db::sqlite("bench-index.db"),
                Some(()) => bursar_e2e::db::postgres("bursar_b").await,
            };
            let cpu_before = cpu_split(node.pid());
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
                signing_key: bursar_indexer::audit::sign::generate_key(),
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
            let elapsed = started.elapsed().as_secs_f64();
            let cpu = cpu_split(node.pid());
            let rate = events as f64 / elapsed;
            ours.push(rate);
            println!(
                "ingested into {name}: {events} events in {elapsed:.2} s = {rate:.0} events/s \
                 ({:.0}% of the parallel raw eth_getLogs rate)",
                100.0 * raw.as_secs_f64() / elapsed,
            );
            // Where the time went: the writes (one transaction per range) against the whole.
            let metrics = reqwest::get(format!("http://{}/metrics", indexer.addr))
                .await
                .expect("metrics")
                .text()
                .await
                .expect("metrics text");
            let metric = |name: &str| {
                metrics
                    .lines()
                    .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
                    .unwrap_or(f64::NAN)
            };
            println!(
                "  of which writing to the database: {:.2} s in {} transactions, and building \
                 the indexes the bulk load left out: {:.2} s",
                metric("bursar_indexer_db_write_seconds_sum "),
                metric("bursar_indexer_db_write_seconds_count "),
                metric("bursar_indexer_index_build_seconds "),
            );
            // Backends of a pool that closed meanwhile are not counted: a lower bound.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let spent: Vec<f64> = (0..3).map(|i| cpu[i] - cpu_before[i]).collect();
            println!(
                "  CPU seconds: anvil {:.2}, the indexer {:.2}, PostgreSQL {:.2} (of {:.2} on {cores} cores)",
                spent[0],
                spent[1],
                spent[2],
                elapsed * cores as f64,
            );
            bursar_e2e::figure(
                &ingest,
                &format!("ingest into {name}"),
                format!(
                    "{rate:.0} events/s = {:.0}% of the ceiling (target ≥ 80%); CPU s: anvil \
                     {:.1}, indexer {:.1}, PostgreSQL {:.1}",
                    100.0 * raw.as_secs_f64() / elapsed,
                    spent[0],
                    spent[1],
                    spent[2],
                ),
            );
            if env_usize("BENCH_QUERIES", 1) == 0 {
                indexer.shutdown().await;
                continue;
            }
            // Sessions 1..=1000 have events/1000 payments each (the emitter's pattern).
            let addr = indexer.addr;
            latency(addr, name, "session timeline (100 events)", 200, |i| {
                format!("/v1/sessions/{}/timeline", i * 7 % 1_000 + 1)
            })
            .await;
            latency(addr, name, "one session's payments (/v1/events, 100)", 200, |i| {
                format!(
                    "/v1/events?session={}&event=PaymentExecuted",
                    i * 11 % 1_000 + 1
                )
            })
            .await;
            latency(addr, name, "one session's spend", 200, |i| {
                format!("/v1/spend?session={}", i * 13 % 1_000 + 1)
            })
            .await;
            latency(
                addr,
                name,
                "spend of every payment by counterparty and day",
                5,
                |_| "/v1/spend?groupBy=counterparty,day".to_owned(),
            )
            .await;
            indexer.shutdown().await;
        }
        let mut theirs = Vec::new();
        let ponders = match env_usize("BENCH_PONDER", 1) {
            0 => vec![],
            _ => vec![("PGlite", false), ("PostgreSQL", true)],
        };
        for (name, postgres) in ponders {
            let url = match (postgres, &postgres_url) {
                (false, _) => None,
                (true, Some(_)) => Some(bursar_e2e::db::postgres("ponder_b").await),
                (true, None) => continue,
            };
            let (elapsed, backfill) = ponder(
                &node.url,
                emitter,
                start_block,
                events,
                url.as_ref().map(|db| db.url()),
            )
            .await;
            let rate = events as f64 / elapsed;
            theirs.push(rate);
            println!(
                "Ponder 0.16.10 on {name}: {events} events in {elapsed:.2} s = {rate:.0} \
                 events/s from its start{}",
                backfill.map_or(String::new(), |b| format!(
                    " ({:.0} events/s over the backfill it reports, {b:.2} s)",
                    events as f64 / b
                ))
            );
        }
        let pairs = [("SQLite", "PGlite"), ("PostgreSQL", "PostgreSQL")];
        for (i, (ours_db, theirs_db)) in pairs.iter().enumerate() {
            if let (Some(a), Some(b)) = (ours.get(i), theirs.get(i)) {
                println!("ours on {ours_db} / Ponder on {theirs_db}: {:.1}x", a / b);
            }
        }
    });
}
