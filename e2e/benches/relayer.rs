//! Relayer benchmark (a binary that prints its figures; not a timed test), on a devnet in this
//! process with the real contracts:
//!
//! * accepted: payment requests over HTTP, each checked by the contracts' rules (a simulated
//!   `pay`) and stored with its signed transaction, per second, from concurrent sandboxes —
//!   with an API-only relayer, so the figure is the accept path's alone; every accepted payment
//!   is then counted in the database (zero lost);
//! * confirmed: payments from request to `confirmed` (mined with automine, receipt read), per
//!   second and p50/p99 latency, with 1, 4 and 16 sandboxes paying one payment after another,
//!   then keeping 32 payments each on their way (`BENCH_IN_FLIGHT`), as an agent making
//!   parallel calls does;
//! * a burst, as a host tried it: 8 sandboxes send 100 payments each at once; every one must
//!   be confirmed (none failed on chain), and the chain's clock must stay with the wall clock
//!   (the devnet once ran minutes ahead under such a burst, and payments failed their
//!   deadlines). On PostgreSQL again over two relayer processes sharing the database.
//!
//! * x402: one agent paying an x402 API from its USDC session, payment after payment: time
//!   from its `POST /v1/x402/pay` to the resource served, p50/p99, by method — `exact`
//!   through EIP-3009 (a reservation, then the facilitator's transfer) with a resource server
//!   built from x402's official packages (`tools/x402`) and x402's own facilitator or
//!   Bursar's; `exact` through ERC-7710 and `bursar-session` (which no official package
//!   implements: the server's part is played here with x402's bodies) through Bursar's;
//!   `batch-settlement` (vouchers on a channel the session deposited into) with x402's own
//!   server and either facilitator, with the transactions and gas per call once x402's channel
//!   manager has claimed, swept and refunded.
//!
//! SQLite always; PostgreSQL too when `BURSAR_TEST_POSTGRES_URL` is set (`cargo xtask
//! postgres` prints it).
//!
//! ```text
//! cargo bench -p bursar-e2e --bench relayer
//! BENCH_ACCEPT=4000 BENCH_CONFIRM=400 BENCH_X402=200 cargo bench -p bursar-e2e --bench relayer
//! BENCH_ONLY=x402 cargo bench -p bursar-e2e --bench relayer
//! BENCH_ONLY=x402 BENCH_X402_CHANNEL=1000 cargo bench -p bursar-e2e --bench relayer
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::evm::{IFiatToken, USDC};
use bursar_bindings::token::ITestToken;
use bursar_client::{Client, Key, Sender};
use bursar_demo::host::wallet_sign;
use bursar_deploy::{Contract, DeploymentRecord};
use bursar_e2e::{deploy, dev_key, devnet, scratch};
use bursar_relayer::engine::submission::EngineConfig;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::store::Store;
use bursar_relayer::{hosts, Config, Contracts, Settings};
use serde_json::{json, Value};

#[global_allocator]
static ALLOCATOR: bursar_devnet::allocator::MiMalloc = bursar_devnet::allocator::MiMalloc;

use bursar_e2e::env_usize as env;

fn main() {
    bursar_devnet::allocator::keep_freed_memory();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let accept = env("BENCH_ACCEPT", 8_000);
        let confirm = env("BENCH_CONFIRM", 200);
        println!(
            "relayer benchmark ({} build)",
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        );
        let mut databases = vec![("SQLite", None)];
        if let Ok(url) = std::env::var("BURSAR_TEST_POSTGRES_URL") {
            databases.push(("PostgreSQL", Some(url)));
        }
        // `BENCH_ONLY=x402,burst` runs those phases alone.
        let only = std::env::var("BENCH_ONLY").ok();
        let run = |phase: &str| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|p| p == phase))
        };
        for (name, postgres) in &databases {
            let postgres = postgres.as_deref();
            if run("accepted") {
                accepted(name, postgres, accept).await;
            }
            if run("accepted_up") {
                accepted_as_users_run_it(name, postgres, accept).await;
            }
            if run("confirmed") {
                // One payment at a time per sandbox, then as agents making parallel calls do.
                for in_flight in [1, env("BENCH_IN_FLIGHT", 32)] {
                    for sandboxes in [1, 4, 16] {
                        let total = confirm.max(sandboxes * in_flight * 10);
                        confirmed(name, postgres, sandboxes, in_flight, total).await;
                    }
                }
            }
            if run("burst") {
                // Over two relayer processes too where several may share the database.
                let processes: &[usize] = if postgres.is_some() { &[1, 2] } else { &[1] };
                for &n in processes {
                    burst(name, postgres, n, 8, env("BENCH_BURST", 100)).await;
                }
            }
            if run("x402") {
                x402(name, postgres, env("BENCH_X402", 200)).await;
            }
        }
    });
}

/// A devnet with the contracts, an owner funded in the sessions' token and an allowlist with
/// one payee.
struct Chain {
    _devnet: bursar_devnet::Handle,
    client: Client,
    record: DeploymentRecord,
    owner: Key,
    list: U256,
    payee: Address,
    /// The sessions' token: the test token, or USDC.
    token: Address,
}

async fn chain() -> Chain {
    chain_in(false).await
}

/// [`chain`] with sessions in USDC (`usdc`) or the test token.
async fn chain_in(usdc: bool) -> Chain {
    let (devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("bench-relayer")).await;
    let at = |c: Contract| record.address(c.key()).expect("deployed");
    let owner = Key::from_bytes(&B256::from(U256::from(0xbe7c4_u64) << 64)).expect("key");
    let payee = Address::repeat_byte(0x77);
    let mut operator = Sender::new(&client, dev_key(0)).await.expect("sender");
    // Dev account 0 owns the test token and is USDC's minter.
    let (token, mint) = match usdc {
        true => {
            let to = owner.address();
            let amount = U256::from(1u64) << 100usize;
            (USDC, IFiatToken::mintCall { to, amount }.abi_encode())
        }
        false => {
            let to = owner.address();
            let value = U256::MAX >> 130;
            let mint = ITestToken::mintCall { to, value }.abi_encode();
            (at(Contract::TestToken), mint)
        }
    };
    operator
        .send(&client, Some(token), mint, U256::ZERO)
        .await
        .expect("mint");
    let registry = at(Contract::CounterpartyRegistry);
    let r = operator
        .transact(&client, registry, &ICounterpartyRegistry::createListCall {})
        .await
        .expect("list");
    let list = r.events::<ICounterpartyRegistry::ListCreated>(registry)[0].listId;
    operator
        .transact(
            &client,
            registry,
            &ICounterpartyRegistry::setEntryCall {
                listId: list,
                counterparty: payee,
                allowed: true,
                maxPerPayment: U256::ZERO,
                label: B256::ZERO,
            },
        )
        .await
        .expect("entry");
    Chain {
        _devnet: devnet,
        client,
        record,
        owner,
        list,
        payee,
        token,
    }
}

/// A fresh database: a SQLite file, or a new database on the PostgreSQL server.
async fn database(postgres: Option<&str>) -> String {
    match postgres {
        None => {
            let dir = scratch("bench-relayer-db");
            format!("sqlite://{}", dir.join("relayer.db").display())
        }
        Some(base) => {
            use sqlx::Connection;
            let name = format!(
                "bursar_bench_{}",
                std::process::id() as u64 * 1000 + rand_suffix()
            );
            let mut admin = sqlx::PgConnection::connect(base).await.expect("PostgreSQL");
            sqlx::Executor::execute(&mut admin, format!("CREATE DATABASE {name}").as_str())
                .await
                .expect("create database");
            let (prefix, _) = base.rsplit_once('/').expect("a database URL");
            format!("{prefix}/{name}")
        }
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64 % 1000)
}

struct Running {
    relayer: bursar_relayer::Relayer,
    base: String,
    host: String,
    db: String,
}

/// The bench's relayer: four signers, no rate limit, intents valid for a day.
async fn relayer(chain: &Chain, db: String, send: bool) -> Running {
    let signers = vec![dev_key(9), dev_key(8), dev_key(7), dev_key(6)];
    let settings = Settings {
        rate_limit: None,
        intent_ttl: Duration::from_secs(86_400),
        ..Settings::default()
    };
    let engine = EngineConfig {
        confirmations: 0,
        poll: Duration::from_millis(10),
        send,
        ..EngineConfig::default()
    };
    start(chain, db, signers, engine, settings).await
}

async fn start(
    chain: &Chain,
    db: String,
    signers: Vec<Key>,
    engine: EngineConfig,
    settings: Settings,
) -> Running {
    let at = |c: Contract| chain.record.address(c.key()).expect("deployed");
    let relayer = bursar_relayer::start(Config {
        rpc: chain.client.url().to_string(),
        db: db.clone(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        signers,
        engine,
        contracts: Contracts {
            wallet: at(Contract::SessionWallet),
            gateway: at(Contract::SessionGateway),
            receipts: at(Contract::ReceiptRegistry),
            counterparties: at(Contract::CounterpartyRegistry),
            counterparties_since: 0,
        },
        master_key: MasterKey::from_hex(&"42".repeat(32), "bench").expect("key"),
        settings,
    })
    .await
    .expect("relayer");
    let store = Store::connect(&db).await.expect("store");
    let host = hosts::create(
        &store,
        &format!("bench-{}", relayer.addr.port()),
        "sessions,read",
    )
    .await
    .expect("host")
    .key;
    Running {
        base: format!("http://{}", relayer.addr),
        relayer,
        host,
        db,
    }
}

/// Opens `n` sessions through `r` (each needs a relayer that sends); returns their tokens.
async fn sessions(chain: &Chain, r: &Running, n: usize) -> Vec<String> {
    let http = reqwest::Client::new();
    let now: u64 = chain
        .client
        .latest_block()
        .await
        .expect("block")
        .timestamp
        .to();
    let mut tokens = Vec::new();
    for _ in 0..n {
        let prep: Value = http
            .post(format!("{}/v1/sessions/prepare", r.base))
            .bearer_auth(&r.host)
            .json(&json!({
                "owner": chain.owner.address(),
                "token": chain.token,
                "deposit": (U256::from(1u64) << 100usize).to_string(),
                "expiresAt": now + 86_400,
                "allowlistId": chain.list.to_string(),
            }))
            .send()
            .await
            .expect("prepare")
            .json()
            .await
            .expect("json");
        let typed = &prep["typedData"];
        let opened: Value = http
            .post(format!("{}/v1/sessions", r.base))
            .bearer_auth(&r.host)
            .json(&json!({
                "preparedId": prep["preparedId"],
                "ownerSignature": wallet_sign(&chain.owner, &typed["openSession"]).expect("sign"),
                "permitSignature": wallet_sign(&chain.owner, &typed["permit"]).expect("sign"),
            }))
            .send()
            .await
            .expect("open")
            .json()
            .await
            .expect("json");
        assert_eq!(opened["status"], "open", "{opened}");
        tokens.push(
            opened["capabilityToken"]
                .as_str()
                .expect("token")
                .to_owned(),
        );
    }
    tokens
}

async fn pay(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    payee: Address,
    amount: u64,
) -> Value {
    loop {
        let r = http
            .post(format!("{base}/v1/payments"))
            .bearer_auth(token)
            .json(&json!({ "to": payee, "amount": amount.to_string(), "purpose": "bench" }))
            .send()
            .await
            .expect("pay");
        // Relayer processes contending for one session past the queue's retries: the client
        // retries, as it would any 503.
        if r.status().as_u16() != 503 {
            assert_eq!(r.status().as_u16(), 202);
            return r.json().await.expect("json");
        }
    }
}

/// About `total` payment requests to `r` from 64 clients on the sessions of `tokens` (each
/// session's first, which measures its gas, before the clock starts): how many, and how long.
async fn load(chain: &Chain, r: &Running, tokens: &[String], total: usize) -> (usize, Duration) {
    let http = reqwest::Client::new();
    for t in tokens {
        pay(&http, &r.base, t, chain.payee, 1).await;
    }
    let per_client = total / 64;
    let started = Instant::now();
    let clients: Vec<_> = (0..64)
        .map(|i| {
            let (http, base, token, payee) = (
                http.clone(),
                r.base.clone(),
                tokens[i % tokens.len()].clone(),
                chain.payee,
            );
            tokio::spawn(async move {
                for _ in 0..per_client {
                    pay(&http, &base, &token, payee, 1).await;
                }
            })
        })
        .collect();
    for c in clients {
        c.await.expect("client");
    }
    (per_client * 64, started.elapsed())
}

/// Payment requests accepted and durably queued per second, 16 sandboxes × 4 clients each.
async fn accepted(db_name: &str, postgres: Option<&str>, total: usize) {
    let chain = chain().await;
    let db = database(postgres).await;
    // Sessions are opened by a sending relayer; the measured one only accepts.
    let opener = relayer(&chain, db.clone(), true).await;
    let tokens = sessions(&chain, &opener, 16).await;
    opener.relayer.shutdown().await;
    let r = relayer(&chain, db, false).await;
    let (accepted, elapsed) = load(&chain, &r, &tokens, total).await;
    let store = Store::connect(&r.db).await.expect("store");
    // Payments stored with a signed transaction (several share one `payBatch`).
    let stored = stored(&store, true).await;
    let transactions: i64 = store
        .transaction_counts()
        .await
        .expect("counts")
        .iter()
        .filter(|(s, _)| s == "signed")
        .map(|(_, n)| n)
        .sum();
    let rate = accepted as f64 / elapsed.as_secs_f64();
    println!(
        "accepted over HTTP ({db_name}): {accepted} payments from 64 clients on 16 sessions in {:.2} s = {rate:.0}/s; \
         stored and unsent: {stored} in {transactions} transactions (zero lost: {})",
        elapsed.as_secs_f64(),
        stored as usize == accepted + 16
    );
    intake(
        db_name,
        "intake, the bench's relayer (API only; 64 clients, 16 sessions)",
        rate,
    );
    r.relayer.shutdown().await;
}

/// [`accepted`] through a relayer as `bursar up` runs it: sending with its four signers and the
/// engine's defaults, the default rate limits, and an indexer following the same devnet. Every
/// payment's simulation then shares the devnet with mining and the indexer's reads.
async fn accepted_as_users_run_it(db_name: &str, postgres: Option<&str>, total: usize) {
    let chain = chain().await;
    let r = relayer_as_users_run_it(&chain, database(postgres).await).await;
    let d = chain.record.contracts().expect("contracts");
    let indexer_db = bursar_e2e::db::sqlite("bench-relayer-indexer.db");
    let indexer = bursar_indexer::start(bursar_indexer::Config {
        rpc: chain.client.url().to_string(),
        db: indexer_db.url(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        contracts: bursar_indexer::followed(d.bursar(), d.agent_registries()),
        // As `bursar up` follows the devnet.
        follow: bursar_indexer::FollowConfig {
            start_block: d.first_block,
            poll: Duration::from_millis(200),
            ..bursar_indexer::FollowConfig::default()
        },
        signing_key: bursar_indexer::audit::sign::generate_key(),
    })
    .await
    .expect("indexer");
    let tokens = sessions(&chain, &r, 16).await;
    let (accepted, elapsed) = load(&chain, &r, &tokens, total).await;
    let store = Store::connect(&r.db).await.expect("store");
    let stored = stored(&store, false).await;
    let rate = accepted as f64 / elapsed.as_secs_f64();
    println!(
        "accepted over HTTP ({db_name}, as bursar up runs it: sending, indexer on): {accepted} \
         payments from 64 clients on 16 sessions in {:.2} s = {rate:.0}/s (zero lost: {})",
        elapsed.as_secs_f64(),
        stored as usize == accepted + 16
    );
    intake(
        db_name,
        "intake as `bursar up` runs it (4 signers, indexer on)",
        rate,
    );
    indexer.shutdown().await;
    r.relayer.shutdown().await;
}

/// The payments `store` holds; only those whose transaction is signed and not sent yet when
/// `unsent`.
async fn stored(store: &Store, unsent: bool) -> i64 {
    store
        .payment_status_counts()
        .await
        .expect("counts")
        .iter()
        .filter(|(p, _)| !unsent || p.tx_status == bursar_relayer::store::TxStatus::Signed)
        .map(|(_, n)| n)
        .sum()
}

/// Records an intake figure for `cargo xtask bench`'s table.
fn intake(db_name: &str, what: &str, rate: f64) {
    let section = format!("relayer on {db_name}");
    bursar_e2e::figure(&section, what, format!("{rate:.0}/s (target ≥ 5,000)"));
}

/// Payments confirmed end to end per second, and their latency, with `sandboxes` each keeping
/// `in_flight` payments on their way (a payment waits for its confirmation before the next
/// takes its place).
async fn confirmed(
    db_name: &str,
    postgres: Option<&str>,
    sandboxes: usize,
    in_flight: usize,
    total: usize,
) {
    let chain = chain().await;
    let r = relayer(&chain, database(postgres).await, true).await;
    let tokens = sessions(&chain, &r, sandboxes).await;
    let http = reqwest::Client::new();
    for t in &tokens {
        let p = pay(&http, &r.base, t, chain.payee, 1).await;
        wait_confirmed(&http, &r.base, t, &p).await;
    }
    let per = (total / sandboxes / in_flight).max(1);
    let latencies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let started = Instant::now();
    let runs: Vec<_> = tokens
        .iter()
        .flat_map(|t| std::iter::repeat_n(t, in_flight))
        .map(|t| {
            let (http, base, token, payee, latencies) = (
                http.clone(),
                r.base.clone(),
                t.clone(),
                chain.payee,
                latencies.clone(),
            );
            tokio::spawn(async move {
                for _ in 0..per {
                    let at = Instant::now();
                    let p = pay(&http, &base, &token, payee, 1).await;
                    wait_confirmed(&http, &base, &token, &p).await;
                    latencies.lock().expect("latencies").push(at.elapsed());
                }
            })
        })
        .collect();
    for run in runs {
        run.await.expect("sandbox");
    }
    let elapsed = started.elapsed();
    let mut l = latencies.lock().expect("latencies").clone();
    l.sort();
    let pct = |p: f64| l[((l.len() as f64 * p) as usize).min(l.len() - 1)];
    let rate = l.len() as f64 / elapsed.as_secs_f64();
    let (p50, p99) = (pct(0.5).as_secs_f64() * 1e3, pct(0.99).as_secs_f64() * 1e3);
    println!(
        "confirmed end to end ({db_name}, {sandboxes:>2} sandboxes × {in_flight:>2} in flight): {} payments in {:.2} s = {rate:.0}/s; \
         request → confirmed p50 {p50:.1} ms, p99 {p99:.1} ms",
        l.len(),
        elapsed.as_secs_f64(),
    );
    bursar_e2e::figure(
        &format!("relayer on {db_name}"),
        &format!("confirmed, {sandboxes:>2} sandbox(es) × {in_flight:>2} in flight"),
        format!("{rate:.0}/s (request → confirmed p50 {p50:.0} ms, p99 {p99:.0} ms)"),
    );
    r.relayer.shutdown().await;
}

/// `sandboxes` sandboxes each send `each` payments at once; then every payment is waited
/// for. Panics unless all are confirmed and the chain's clock is within 2 s of the wall clock.
/// `sandboxes` × `each` payments at once, spread over `processes` relayers sharing the database
/// (a deployment scaled out), each answered and then confirmed.
async fn burst(
    db_name: &str,
    postgres: Option<&str>,
    processes: usize,
    sandboxes: usize,
    each: usize,
) {
    let chain = chain().await;
    let db = database(postgres).await;
    let mut relayers = Vec::with_capacity(processes);
    for _ in 0..processes {
        relayers.push(relayer(&chain, db.clone(), true).await);
    }
    let tokens = sessions(&chain, &relayers[0], sandboxes).await;
    let bases: Vec<String> = relayers.iter().map(|r| r.base.clone()).collect();
    let http = reqwest::Client::new();
    let started = Instant::now();
    let mut sends = tokio::task::JoinSet::new();
    for (i, token) in tokens
        .iter()
        .flat_map(|t| std::iter::repeat_n(t, each))
        .enumerate()
    {
        let (http, base, token, payee) = (
            http.clone(),
            bases[i % processes].clone(),
            token.clone(),
            chain.payee,
        );
        sends.spawn(async move {
            let p = pay(&http, &base, &token, payee, 1).await;
            (base, token, p)
        });
    }
    let accepted = sends.join_all().await;
    let accepted_in = started.elapsed();
    let mut waits = tokio::task::JoinSet::new();
    for (base, token, p) in accepted {
        let http = http.clone();
        waits.spawn(async move { wait_confirmed(&http, &base, &token, &p).await });
    }
    let n = waits.join_all().await.len();
    let elapsed = started.elapsed();
    let head = chain.client.latest_block().await.expect("head");
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let drift = head.timestamp.to::<i64>() - wall;
    let over = match processes {
        1 => String::new(),
        n => format!(", over {n} relayer processes"),
    };
    println!(
        "burst ({db_name}{over}, {sandboxes} sandboxes × {each} at once): {n} accepted in {:.2} s, all {n} confirmed in {:.2} s ({:.0}/s), none failed; chain clock − wall clock after: {drift:+} s",
        accepted_in.as_secs_f64(),
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
    );
    bursar_e2e::figure(
        &format!("relayer on {db_name}"),
        &format!("burst, {sandboxes} sandboxes × {each} at once{over}"),
        format!(
            "all {n} confirmed in {:.2} s, none failed",
            elapsed.as_secs_f64()
        ),
    );
    // Ahead is the fault this looks for; behind only means no block lately.
    assert!(drift <= 2, "the chain's clock ran {drift} s ahead");
    for r in relayers {
        r.relayer.shutdown().await;
    }
}

async fn wait_confirmed(http: &reqwest::Client, base: &str, token: &str, p: &Value) {
    let id = p["id"].as_str().expect("id");
    let settled: Value = http
        .get(format!("{base}/v1/payments/{id}?wait=60"))
        .bearer_auth(token)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(settled["status"], "confirmed", "{settled}");
}

/// x402 payments from one USDC session, one after another (see the module's summary), through
/// a relayer as `bursar up` runs it and through the bench's tuned one.
async fn x402(db_name: &str, postgres: Option<&str>, n: usize) {
    for users in [true, false] {
        let chain = chain_in(true).await;
        let db = database(postgres).await;
        let (r, config) = match users {
            true => (
                relayer_as_users_run_it(&chain, db).await,
                "as bursar up runs it",
            ),
            false => (
                relayer(&chain, db, true).await,
                "tuned: engine polls every 10 ms",
            ),
        };
        x402_with(&chain, r, &format!("{db_name}, {config}"), n).await;
    }
}

async fn x402_with(chain: &Chain, r: Running, db_name: &str, n: usize) {
    use bursar_e2e::x402::{tools, Facilitator, OfficialServer};
    let token = sessions(chain, &r, 1).await.remove(0);
    let http = reqwest::Client::new();
    let amount = U256::from(10_000u64); // 0.01 USDC
    let report = |label: &str, mut l: Vec<Duration>| {
        l.sort();
        let pct = |p: f64| l[((l.len() as f64 * p) as usize).min(l.len() - 1)].as_secs_f64() * 1e3;
        println!(
            "x402 ({db_name}) {label:<52} {} payments: POST /v1/x402/pay → resource served p50 {:.1} ms, p99 {:.1} ms",
            l.len(),
            pct(0.5),
            pct(0.99),
        );
    };
    // A `PAYMENT-REQUIRED` header's value, or the object.
    let pay = |required: Value| {
        let (http, base, token) = (http.clone(), r.base.clone(), token.clone());
        async move {
            let paid: Value = http
                .post(format!("{base}/v1/x402/pay"))
                .bearer_auth(&token)
                .json(&json!({ "paymentRequired": required }))
                .send()
                .await
                .expect("pay")
                .json()
                .await
                .expect("json");
            assert!(paid["paymentSignature"].is_string(), "{paid}");
            paid
        }
    };
    if tools().is_none() {
        println!("x402 ({db_name}): tools/x402 is not installed (npm ci --prefix tools/x402): the official server's rows are skipped");
    }
    let facilitators = [
        (
            "exact eip3009, official server + x402's facilitator",
            Facilitator::Official(5),
        ),
        (
            "exact eip3009, official server + Bursar's facilitator",
            Facilitator::At(format!("{}/x402", r.base)),
        ),
    ];
    for (label, facilitator) in facilitators.into_iter().filter(|_| tools().is_some()) {
        let server = OfficialServer::start(&chain.client, facilitator, chain.payee, amount).await;
        let mut latencies = Vec::with_capacity(n);
        for _ in 0..n {
            let unpaid = server.get(None).await;
            let required = unpaid.headers()["payment-required"]
                .to_str()
                .expect("text")
                .to_owned();
            let at = Instant::now();
            let paid = pay(Value::String(required)).await;
            let signature = paid["paymentSignature"]
                .as_str()
                .unwrap_or_else(|| panic!("{paid}"));
            let served = server.get(Some(signature)).await;
            assert_eq!(served.status().as_u16(), 200, "{:?}", served.headers());
            latencies.push(at.elapsed());
        }
        report(label, latencies);
    }
    // x402's batch-settlement: an official server and client flow paid from the session (a
    // deposit reserved under its rules, then vouchers), x402's channel manager claiming,
    // sweeping and refunding once at the end: transactions per channel, not per call.
    let channels = [
        (
            "batch-settlement, official server + x402's facilitator",
            Facilitator::Official(5),
        ),
        (
            "batch-settlement, official server + Bursar's facilitator",
            Facilitator::At(format!("{}/x402", r.base)),
        ),
    ];
    for (label, facilitator) in channels.into_iter().filter(|_| tools().is_some()) {
        let scheme = bursar_e2e::x402::Scheme::BatchSettlement;
        let server =
            OfficialServer::start_scheme(&chain.client, facilitator, scheme, chain.payee, amount)
                .await;
        // A run long enough to show transactions per channel, not per call.
        let n = env("BENCH_X402_CHANNEL", 1_000);
        let mut latencies = Vec::with_capacity(n);
        let mut sent = Vec::new();
        for _ in 0..n {
            let unpaid = server.get(None).await;
            let required = unpaid.headers()["payment-required"]
                .to_str()
                .expect("text")
                .to_owned();
            let at = Instant::now();
            let paid = pay(Value::String(required)).await;
            let signature = paid["paymentSignature"].as_str().expect("signature");
            let served = server.get(Some(signature)).await;
            assert_eq!(served.status().as_u16(), 200, "{:?}", served.headers());
            latencies.push(at.elapsed());
            let response = served.headers()["payment-response"].as_bytes().to_vec();
            let response: Value = serde_json::from_slice(
                &base64::Engine::decode(&base64::engine::general_purpose::STANDARD, response)
                    .expect("base64"),
            )
            .expect("json");
            if let Some(tx) = response["transaction"].as_str().filter(|t| !t.is_empty()) {
                sent.push(tx.to_owned());
            }
        }
        let deposits = sent.len();
        report(label, latencies);
        let done = server.settle_channels().await;
        // The claim and the sweep; the refund when something was left to return.
        let after = [
            &done["claims"][0]["transaction"],
            &done["settled"]["transaction"],
            &done["refunds"][0]["transaction"],
        ];
        let after: Vec<String> = after
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        let refunded = after.len() == 3;
        sent.extend(after);
        let mut gas = 0u64;
        for tx in &sent {
            let hash: B256 = tx.parse().expect("hash");
            let receipt = chain
                .client
                .receipt(hash)
                .await
                .expect("receipt")
                .expect("mined");
            gas += receipt.gas_used.to::<u64>();
        }
        // Each deposit is also the wallet's reservation, sent by the relayer before it.
        let transactions = sent.len() + deposits;
        println!(
            "x402 ({db_name}) {label:<52} {n} calls in {transactions} transactions ({deposits} deposit(s) and their reservations, a claim, a sweep{}): {:.0} calls per transaction, {:.0} gas per call in the escrow's transactions",
            if refunded { ", a refund" } else { "; nothing left to refund" },
            n as f64 / transactions as f64,
            gas as f64 / n as f64,
        );
    }
    // The server's part, with x402's bodies: verify, then settle, at Bursar's facilitator.
    let chain_id = chain.client.chain_id().await.expect("chain id");
    let requirements = |scheme: &str, extra: Value| {
        json!({ "scheme": scheme, "network": format!("eip155:{chain_id}"), "amount": amount.to_string(),
                "asset": USDC, "payTo": chain.payee, "maxTimeoutSeconds": 60, "extra": extra })
    };
    for (label, accepted) in [
        (
            "exact erc7710, Bursar's facilitator",
            requirements(
                "exact",
                json!({ "name": "USD Coin", "version": "2", "assetTransferMethod": "erc7710" }),
            ),
        ),
        (
            "bursar-session, Bursar's facilitator",
            requirements("bursar-session", Value::Null),
        ),
    ] {
        let required = json!({ "x402Version": 2, "resource": { "url": "https://api.example/report" }, "accepts": [accepted] });
        let mut latencies = Vec::with_capacity(n);
        for _ in 0..n {
            let at = Instant::now();
            let paid = pay(required.clone()).await;
            let body = json!({ "x402Version": 2, "paymentPayload": paid["paymentPayload"], "paymentRequirements": accepted });
            for step in ["verify", "settle"] {
                let answer: Value = http
                    .post(format!("{}/x402/{step}", r.base))
                    .json(&body)
                    .send()
                    .await
                    .expect(step)
                    .json()
                    .await
                    .expect("json");
                assert!(
                    answer["isValid"] == true || answer["success"] == true,
                    "{answer}"
                );
            }
            latencies.push(at.elapsed());
        }
        report(label, latencies);
    }
    r.relayer.shutdown().await;
}

/// A relayer as `bursar up` runs one on the devnet: four signers, the engine's defaults (but no
/// confirmations), intents valid for a day, the default rate limits.
async fn relayer_as_users_run_it(chain: &Chain, db: String) -> Running {
    let engine = EngineConfig {
        confirmations: 0,
        ..EngineConfig::default()
    };
    let settings = Settings {
        intent_ttl: Duration::from_secs(86_400),
        ..Settings::default()
    };
    let signers = vec![dev_key(9), dev_key(8), dev_key(7), dev_key(6)];
    start(chain, db, signers, engine, settings).await
}
