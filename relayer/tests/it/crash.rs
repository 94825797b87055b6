//! `kill -9` of the relayer process while sandboxes pay: between storing a payment and
//! broadcasting it, and between broadcasting it and its receipt, round after round. Clients
//! retry what got no answer with the same `Idempotency-Key`. In the end every payment is on
//! chain exactly once (one `PaymentExecuted` per intent nonce, one per key), payments queued
//! together having gone out together in `payBatch` transactions. On PostgreSQL the loop runs
//! again with two relayer processes, the requests spread over both and both killed each round.
//!
//! The relayer runs in a child process: this test binary itself, running the ignored test
//! [`relayer_child`] with its configuration in `BURSAR_RELAYER_CHILD`.

use std::collections::{BTreeMap, HashSet};
use std::process::Child;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::Sender;
use bursar_deploy::Contract;
use bursar_relayer::engine::submission::EngineConfig;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::{hosts, Config, Contracts, Settings};
use serde_json::{json, Value};

use super::*;

const CHILD_ENV: &str = "BURSAR_RELAYER_CHILD";

fn config(rpc: &str, db: &str, contracts: &Value, send: bool, owner: &str) -> Config {
    let address = |k: &str| contracts[k].as_str().unwrap().parse::<Address>().unwrap();
    Config {
        rpc: rpc.into(),
        db: db.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        signers: vec![dev_key(9)],
        engine: EngineConfig {
            confirmations: 0,
            poll: Duration::from_millis(20),
            send,
            // A restarted relayer is the same process to the others: it holds its signer at
            // once (a new identity would wait for the dead one's lease).
            owner: owner.into(),
            ..EngineConfig::default()
        },
        contracts: Contracts {
            wallet: address("wallet"),
            gateway: address("gateway"),
            receipts: address("receipts"),
            counterparties: address("counterparties"),
            counterparties_since: 0,
        },
        master_key: MasterKey::from_hex(&"42".repeat(32), "test").unwrap(),
        settings: Settings {
            intent_ttl: Duration::from_secs(86_400),
            rate_limit: None,
            instance_timeout: Duration::from_millis(400),
            ..Settings::default()
        },
    }
}

/// The relayer process of [`payments_survive_kill_9`] (does nothing when run by hand).
#[test]
#[ignore = "run as a child process by payments_survive_kill_9"]
fn relayer_child() {
    let Ok(cfg) = std::env::var(CHILD_ENV) else {
        return;
    };
    let cfg: Value = serde_json::from_str(&cfg).unwrap();

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let config = config(
            cfg["rpc"].as_str().unwrap(),
            cfg["db"].as_str().unwrap(),
            &cfg["contracts"],
            cfg["send"].as_bool().unwrap(),
            cfg["owner"].as_str().unwrap(),
        );
        let relayer = bursar_relayer::start(config).await.unwrap();
        println!("LISTENING {}", relayer.addr);
        // Until killed.
        std::future::pending::<()>().await;
    });
}

/// A running child relayer.
struct ChildRelayer {
    child: Child,
    base: String,
}

impl ChildRelayer {
    /// Starts one and waits (off the runtime's workers, which serve the devnet) until it
    /// listens.
    async fn start(cfg: &Value) -> Self {
        let cfg = cfg.clone();
        tokio::task::spawn_blocking(move || Self::spawn(&cfg))
            .await
            .unwrap()
    }

    fn spawn(cfg: &Value) -> Self {
        // Its stderr is kept beside the test's scratch files for a failure's post-mortem.
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(cfg["stderr"].as_str().unwrap())
            .unwrap();
        let (child, addr) = bursar_e2e::spawn_listening_child(
            "crash::relayer_child",
            (CHILD_ENV, cfg.to_string()),
            stderr.into(),
        );
        ChildRelayer {
            child,
            base: format!("http://{addr}"),
        }
    }

    fn kill_9(mut self) {
        // SIGKILL: no destructor, no graceful shutdown, no flush.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// What a payment request got.
#[derive(Debug, PartialEq)]
enum Answer {
    /// Accepted: its intent nonce.
    Accepted(String),
    /// Refused by a rule of the session (its code): the budget, once spent.
    Refused(String),
}

/// One payment request: its answer, or `Err(())` when the relayer died first.
async fn pay(
    http: &reqwest12::Client,
    base: &str,
    token: &str,
    key: &str,
    to: Address,
    amount: u64,
) -> Result<Answer, ()> {
    let r = http
        .post(format!("{base}/v1/payments"))
        .bearer_auth(token)
        .header("Idempotency-Key", key)
        .json(&json!({ "to": to, "amount": amount.to_string(), "purpose": key }))
        .send()
        .await
        .map_err(|_| ())?;
    let status = r.status().as_u16();
    let body: Value = r.json().await.map_err(|_| ())?;
    match status {
        202 => Ok(Answer::Accepted(body["nonce"].as_str().unwrap().to_owned())),
        422 => Ok(Answer::Refused(body["code"].as_str().unwrap().to_owned())),
        // Contended past the queue's retries: nothing was queued; the client tries again.
        503 => Err(()),
        _ => panic!("{key}: {status} {body}"),
    }
}

/// Every relayer of a round: `processes` children, each its own process identity (the same
/// across rounds).
async fn start_children(cfg: &Value, processes: usize, send: bool) -> Vec<ChildRelayer> {
    let mut children = Vec::with_capacity(processes);
    for i in 0..processes {
        let mut cfg = cfg.clone();
        cfg["send"] = json!(send);
        cfg["owner"] = json!(format!("crash-relayer-{i}"));
        children.push(ChildRelayer::start(&cfg).await);
    }
    children
}

/// How hard [`payments_survive_kill_9`] tries.
struct Load {
    /// Relayer processes sharing the database, all killed each round.
    processes: usize,
    /// New payment requests per round, each its own client, spread over the processes.
    clients: usize,
    /// Rounds, each ending in a SIGKILL of every process.
    rounds: usize,
}

impl Load {
    /// The sizes `BURSAR_CRASH_PROCESSES`, `…_CLIENTS` and `…_ROUNDS` give (`cargo xtask crash`),
    /// else `processes` and the test's own.
    fn from_env(processes: usize) -> Self {
        let var = |name: &str, default: usize| {
            std::env::var(format!("BURSAR_CRASH_{name}"))
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        Load {
            processes: var("PROCESSES", processes),
            clients: var("CLIENTS", 10),
            rounds: var("ROUNDS", 8),
        }
    }
}

async fn payments_survive_kill_9(db: Db, load: Load) {
    let Load {
        processes,
        clients,
        rounds,
    } = load;
    let (_devnet, client) = devnet(true).await;
    let dir = bursar_e2e::scratch("relayer-kill9");
    let record = bursar_e2e::deploy(&client, &dir).await;
    let at = |c: Contract| record.address(c.key()).unwrap();
    let contracts = json!({
        "wallet": at(Contract::SessionWallet),
        "gateway": at(Contract::SessionGateway),
        "receipts": at(Contract::ReceiptRegistry),
        "counterparties": at(Contract::CounterpartyRegistry),
    });
    let stderr = dir.join("relayer-children.err");
    let cfg = json!({
        "rpc": client.url(),
        "db": db.url(),
        "contracts": contracts,
        "stderr": stderr,
    });

    // One session whose budget is about half of what its clients ask (amounts 1 to 1,000:
    // 250 a request on average), opened through an in-process relayer.
    let budget = 250 * (clients * rounds) as u64;
    let token_address = at(Contract::TestToken);
    let registry = at(Contract::CounterpartyRegistry);
    let payee = Address::repeat_byte(0x77);
    let owner = Key::from_bytes(&B256::from(U256::from(0x0e11_u64) << 64)).unwrap();
    let mut operator = Sender::new(&client, dev_key(0)).await.unwrap();
    operator
        .transact(
            &client,
            token_address,
            &ITestToken::mintCall {
                to: owner.address(),
                value: U256::from(1_000_000_000u64),
            },
        )
        .await
        .unwrap();
    let r = operator
        .transact(
            &client,
            registry,
            &bursar_bindings::counterparty::ICounterpartyRegistry::createListCall {},
        )
        .await
        .unwrap();
    let list = r
        .events::<bursar_bindings::counterparty::ICounterpartyRegistry::ListCreated>(registry)[0]
        .listId;
    operator
        .transact(
            &client,
            registry,
            &bursar_bindings::counterparty::ICounterpartyRegistry::setEntryCall {
                listId: list,
                counterparty: payee,
                allowed: true,
                maxPerPayment: U256::ZERO,
                label: B256::ZERO,
            },
        )
        .await
        .unwrap();
    let store = db.store().await;
    let host = hosts::create(&store, "crash-host", "sessions,read")
        .await
        .unwrap()
        .key;
    let http = reqwest12::Client::new();
    let token = {
        let relayer = bursar_relayer::start(config(
            client.url(),
            &db.url(),
            &cfg["contracts"],
            true,
            "crash-setup",
        ))
        .await
        .unwrap();
        let base = format!("http://{}", relayer.addr);
        let now: u64 = client.latest_block().await.unwrap().timestamp.to();
        let prep: Value = http
            .post(format!("{base}/v1/sessions/prepare"))
            .bearer_auth(&host)
            .json(&json!({
                "owner": owner.address(), "token": token_address, "deposit": "1000000000",
                "periodBudget": budget.to_string(), "periodSeconds": 30 * 86_400,
                "expiresAt": now + 86_400, "allowlistId": list.to_string(),
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let sign = |typed: &Value| {
            let typed: alloy_dyn_abi::TypedData = serde_json::from_value(typed.clone()).unwrap();
            format!(
                "0x{}",
                alloy_primitives::hex::encode(
                    owner.sign_hash_rsv(&typed.eip712_signing_hash().unwrap())
                )
            )
        };
        let opened: Value = http
            .post(format!("{base}/v1/sessions"))
            .bearer_auth(&host)
            .json(&json!({
                "preparedId": prep["preparedId"],
                "ownerSignature": sign(&prep["typedData"]["openSession"]),
                "permitSignature": sign(&prep["typedData"]["permit"]),
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(opened["status"], "open", "{opened}");
        relayer.shutdown().await;
        opened["capabilityToken"].as_str().unwrap().to_owned()
    };

    // Blocks come only when the test mines them: transactions wait between broadcast and
    // receipt for as long as the test wants.
    let _: Value = client
        .request("evm_setAutomine", json!([false]))
        .await
        .unwrap();
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut accepted: BTreeMap<String, (String, u64)> = BTreeMap::new(); // key → (nonce, amount)
    let mut refused: BTreeMap<String, String> = BTreeMap::new(); // key → the rule
    let mut unanswered: Vec<(String, u64)> = Vec::new();
    let (mut seen_signed, mut seen_submitted) = (0, 0);
    let mut n = 0;
    for round in 0..rounds {
        // Even rounds: an API-only relayer, killed after storing and before anything is sent.
        // Odd rounds: one that sends into a chain that mines only when the test says, killed
        // between broadcast and receipt.
        let children = start_children(&cfg, processes, round % 2 == 1).await;
        // Requests that got no answer first, with the same keys and bodies.
        let retries = std::mem::take(&mut unanswered);
        let fresh: Vec<(String, u64)> = (0..clients)
            .map(|_| {
                n += 1;
                (format!("pay-{n}"), 1 + next() % 1_000)
            })
            .collect();
        let (answered, mut answers) = tokio::sync::mpsc::unbounded_channel();
        for (i, (key, amount)) in retries.into_iter().chain(fresh).enumerate() {
            let base = children[i % processes].base.clone();
            let (http, token) = (http.clone(), token.clone());
            let answered = answered.clone();
            tokio::spawn(async move {
                let r = pay(&http, &base, &token, &key, payee, amount).await;
                let _ = answered.send((key, amount, r));
            });
        }
        drop(answered);
        // Kill it once a few payments are in, at a random moment after that, while the rest
        // are in flight.
        let mut results = Vec::new();
        while results.len() < 3 {
            results.push(answers.recv().await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(next() % 15)).await;
        if round % 4 == 3 {
            let _: Value = client.request("evm_mine", json!([])).await.unwrap();
        }
        for child in children {
            child.kill_9();
        }
        while let Some(r) = answers.recv().await {
            results.push(r);
        }
        for (key, amount, result) in results {
            answered_as(
                &mut accepted,
                &mut refused,
                &mut unanswered,
                key,
                amount,
                result,
            );
        }
        let counts = store.transaction_counts().await.unwrap();
        let count = |s: &str| counts.iter().find(|(x, _)| x == s).map_or(0, |(_, n)| *n);
        seen_signed += count("signed");
        seen_submitted += count("submitted");
    }
    println!(
        "kill -9 loop: {n} payments, {} answered before a kill, {} left for the last relayer; \
         {seen_signed} stored but unsent and {seen_submitted} sent but unmined at the kills",
        accepted.len() + refused.len(),
        unanswered.len()
    );
    assert!(
        seen_signed > 0,
        "no kill landed between storing and broadcasting"
    );
    assert!(
        seen_submitted > 0,
        "no kill landed between broadcasting and the receipt"
    );

    // A last relayer, blocks on demand again, and every request answered.
    let _: Value = client
        .request("evm_setAutomine", json!([true]))
        .await
        .unwrap();
    // All of them: whichever held the signer at its kill holds it again at once.
    let children = start_children(&cfg, processes, true).await;
    let child = &children[0];
    while !unanswered.is_empty() {
        for (key, amount) in std::mem::take(&mut unanswered) {
            let result = pay(&http, &child.base, &token, &key, payee, amount).await;
            answered_as(
                &mut accepted,
                &mut refused,
                &mut unanswered,
                key,
                amount,
                result,
            );
        }
    }
    assert_eq!(
        accepted.len() + refused.len(),
        n,
        "every request was answered in the end"
    );
    for (key, rule) in &refused {
        assert_eq!(rule, "WalletPeriodBudgetExceeded", "{key}");
    }
    let _: Value = client.request("evm_mine", json!([])).await.unwrap();
    let list: Value = http
        .get(format!("{}/v1/payments?limit=1000", child.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for p in list["payments"].as_array().unwrap() {
        let path = format!(
            "{}/v1/payments/{}?wait=30",
            child.base,
            p["id"].as_str().unwrap()
        );
        let settled: Value = http
            .get(&path)
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(settled["status"], "confirmed", "{settled}");
    }
    for child in children {
        child.kill_9();
    }

    // On chain: one execution per accepted payment, none twice.
    let wallet = at(Contract::SessionWallet);
    let logs = client.logs(&[wallet], 0, None).await.unwrap();
    let mut per_transaction: BTreeMap<B256, usize> = BTreeMap::new();
    let executed: Vec<(U256, U256)> = logs
        .iter()
        .filter_map(|l| {
            let e = <ISessionWallet::PaymentExecuted as alloy_sol_types::SolEvent>::decode_raw_log(
                l.topics.iter().copied(),
                &l.data,
            )
            .ok()?;
            *per_transaction.entry(l.transaction_hash).or_default() += 1;
            Some((e.nonce, e.amount))
        })
        .collect();
    // Payments queued together went out together (`payBatch`).
    let largest = per_transaction.values().copied().max().unwrap_or_default();
    println!(
        "{} payments executed by {} transactions (at most {largest} in one)",
        executed.len(),
        per_transaction.len()
    );
    assert!(largest > 1, "no two payments shared a transaction");
    // The claim: never over the budget, nothing accepted then lost, nothing paid twice.
    let distinct: HashSet<U256> = executed.iter().map(|(nonce, _)| *nonce).collect();
    let duplicates = executed.len() - distinct.len();
    let lost = accepted
        .values()
        .filter(|(nonce, _)| !distinct.contains(&nonce.parse::<U256>().unwrap()))
        .count();
    let spent: U256 = executed.iter().map(|(_, amount)| *amount).sum();
    let over = spent.saturating_sub(U256::from(budget));
    println!(
        "crash claim: {processes} relayer process(es) on one database, {n} payments from \
         {clients} clients a round over {rounds} rounds, each round ending in a SIGKILL of every \
         process, the chain mining only when told; {} accepted, {} refused by the budget; \
         budget {budget}, spent {spent}; over budget: {over}, accepted then lost: {lost}, \
         duplicates: {duplicates}",
        accepted.len(),
        refused.len(),
    );
    let section = format!("crash: {processes} relayer process(es), one database");
    for (figure, value) in [
        (
            "payments asked (clients × rounds)",
            format!("{clients} × {rounds} = {n}"),
        ),
        (
            "SIGKILLs (every process, every round)",
            (processes * rounds).to_string(),
        ),
        (
            "accepted / refused by the budget",
            format!("{} / {}", accepted.len(), refused.len()),
        ),
        ("budget / spent (base units)", format!("{budget} / {spent}")),
        ("paid over the budget", over.to_string()),
        ("payments accepted then lost", lost.to_string()),
        ("payments executed twice", duplicates.to_string()),
    ] {
        bursar_e2e::figure(&section, figure, value);
    }
    assert_eq!(over, U256::ZERO, "spent {spent} of a budget of {budget}");
    assert_eq!((lost, duplicates), (0, 0), "lost, duplicates");
    assert_eq!(
        executed.len(),
        accepted.len(),
        "only accepted payments executed"
    );
    assert!(
        !refused.is_empty(),
        "the budget never ran out: the load proved nothing"
    );
}

/// Records `result` of the request `key` for `amount`: accepted (once, with one nonce), refused,
/// or to be tried again with the same key.
fn answered_as(
    accepted: &mut BTreeMap<String, (String, u64)>,
    refused: &mut BTreeMap<String, String>,
    unanswered: &mut Vec<(String, u64)>,
    key: String,
    amount: u64,
    result: Result<Answer, ()>,
) {
    match result {
        Ok(Answer::Accepted(nonce)) => {
            assert!(!refused.contains_key(&key), "{key} refused, then accepted");
            if let Some((earlier, _)) = accepted.insert(key.clone(), (nonce.clone(), amount)) {
                assert_eq!(earlier, nonce, "{key} answered with two payments");
            }
        }
        Ok(Answer::Refused(rule)) => {
            assert!(!accepted.contains_key(&key), "{key} accepted, then refused");
            refused.insert(key, rule);
        }
        Err(()) => unanswered.push((key, amount)),
    }
}

mod sqlite_db {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn payments_survive_kill_9() {
        super::payments_survive_kill_9(super::sqlite(), super::Load::from_env(1)).await
    }
}

mod postgres_db {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn payments_survive_kill_9() {
        super::payments_survive_kill_9(super::postgres().await, super::Load::from_env(1)).await
    }

    /// Two processes sharing the database, as a deployment scales out.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn payments_survive_kill_9_of_two_processes() {
        super::payments_survive_kill_9(super::postgres().await, super::Load::from_env(2)).await
    }
}
