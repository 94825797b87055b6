//! `bursar fetch` (and `bursar pay`) as an agent in a sandbox runs it: the binary, with the session's capability
//! token in its environment, against a resource server built with x402's official packages
//! (`@x402/express`, x402's own facilitator) on a devnet with the real USDC, paying through a
//! relayer. It pays once and shows the resource; it refuses loopback unless allowed, a price
//! over `--max-amount` and a token the relayer does not know, paying nothing; it never prints
//! the token. Then `bursar sell`: a seller agent's file behind 402, paid at its agent's wallet,
//! bought with `bursar fetch --agent`.

use std::net::SocketAddr;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::erc8004::{agent_wallet_set_digest, IIdentityRegistry, IDENTITY_REGISTRY};
use bursar_bindings::evm::{IFiatToken, USDC};
use bursar_client::{Client, Key, Sender};
use bursar_deploy::Contract;
use bursar_e2e::x402::{Facilitator, OfficialServer};
use bursar_e2e::{deploy, dev_key, devnet, scratch};
use bursar_relayer::engine::submission::EngineConfig;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::{Config, Contracts, Settings};
use serde_json::{json, Value};

const PRICE: u64 = 10_000; // 0.01 USDC

async fn usdc(client: &Client, of: Address) -> U256 {
    client
        .view(None, USDC, IFiatToken::balanceOfCall { account: of })
        .await
        .unwrap()
}

/// `bursar <command>` with `args`, the relayer at `relayer` and the capability `token`:
/// (success, stdout, stderr).
async fn bursar(
    command: &str,
    args: &[&str],
    relayer: &str,
    token: &str,
) -> (bool, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_bursar"))
        .arg(command)
        .args(args)
        .env_remove("BURSAR_CONFIG")
        .env("BURSAR_RELAYER_URL", relayer)
        .env("BURSAR_CAPABILITY_TOKEN", token)
        .output()
        .await
        .expect("run bursar fetch");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        !stdout.contains(token) && !stderr.contains(token),
        "the token was printed"
    );
    (out.status.success(), stdout, stderr)
}

async fn fetch(args: &[&str], relayer: &str, token: &str) -> (bool, String, String) {
    bursar("fetch", args, relayer, token).await
}

/// A devnet with the contracts, a relayer on SQLite with a host, and a USDC allowlist.
struct Stack {
    _devnet: bursar_devnet::Handle,
    client: std::sync::Arc<Client>,
    relayer: bursar_relayer::Relayer,
    base: String,
    host: String,
    list: U256,
    operator: Sender,
}

impl Stack {
    async fn start(name: &str) -> Stack {
        let (devnet, client) = devnet().await;
        let record = deploy(&client, &scratch(name)).await;
        let at = |c: Contract| record.address(c.key()).unwrap();
        let mut operator = Sender::new(&client, dev_key(0)).await.unwrap();
        let registry = at(Contract::CounterpartyRegistry);
        let r = operator
            .transact(&client, registry, &ICounterpartyRegistry::createListCall {})
            .await
            .unwrap();
        let list = r.events::<ICounterpartyRegistry::ListCreated>(registry)[0].listId;
        let db = format!(
            "sqlite://{}",
            scratch(&format!("{name}-db")).join("relayer.db").display()
        );
        let relayer = bursar_relayer::start(Config {
            rpc: client.url().to_string(),
            db: db.clone(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            signers: vec![dev_key(9)],
            engine: EngineConfig {
                confirmations: 0,
                ..EngineConfig::default()
            },
            contracts: Contracts {
                wallet: at(Contract::SessionWallet),
                gateway: at(Contract::SessionGateway),
                receipts: at(Contract::ReceiptRegistry),
                counterparties: at(Contract::CounterpartyRegistry),
                counterparties_since: 0,
            },
            master_key: MasterKey::from_hex(&"42".repeat(32), "test").unwrap(),
            settings: Settings::default(),
        })
        .await
        .unwrap();
        let base = format!("http://{}", relayer.addr);
        let store = bursar_relayer::store::Store::connect(&db).await.unwrap();
        let host = bursar_relayer::hosts::create(&store, "fetch", "sessions,read")
            .await
            .unwrap()
            .key;
        Stack {
            _devnet: devnet,
            client: std::sync::Arc::new(client),
            relayer,
            base,
            host,
            list,
            operator,
        }
    }

    async fn post(&self, path: &str, bearer: &str, body: Value) -> Value {
        let request = reqwest12::Client::new()
            .post(format!("{}{path}", self.base))
            .bearer_auth(bearer)
            .json(&body);
        request.send().await.unwrap().json::<Value>().await.unwrap()
    }

    /// Puts `payee` on the list, with no cap of its own.
    async fn allow(&mut self, payee: Address) {
        let entry = ICounterpartyRegistry::setEntryCall {
            listId: self.list,
            counterparty: payee,
            allowed: true,
            maxPerPayment: U256::ZERO,
            label: B256::ZERO,
        };
        let registry = self.relayer.app.contracts.counterparties;
        self.operator
            .transact(&self.client, registry, &entry)
            .await
            .unwrap();
    }

    /// A USDC session of `owner` (given `deposit`, minted first) paying the list, with
    /// `extra` terms: its capability token.
    async fn session(&mut self, owner: &Key, deposit: u64, extra: Value) -> String {
        let mint = IFiatToken::mintCall {
            to: owner.address(),
            amount: U256::from(deposit),
        };
        self.operator
            .transact(&self.client, USDC, &mint)
            .await
            .unwrap();
        let now: u64 = self.client.latest_block().await.unwrap().timestamp.to();
        let mut terms = json!({ "owner": owner.address(), "token": USDC, "deposit": deposit.to_string(),
                "expiresAt": now + 86_400, "allowlistId": self.list.to_string() });
        for (k, v) in extra.as_object().unwrap() {
            terms[k] = v.clone();
        }
        let prep = self.post("/v1/sessions/prepare", &self.host, terms).await;
        let typed = &prep["typedData"];
        let sign = |t: &Value| bursar_demo::host::wallet_sign(owner, t).unwrap();
        let opened = self
            .post(
                "/v1/sessions",
                &self.host,
                json!({ "preparedId": prep["preparedId"], "ownerSignature": sign(&typed["openSession"]),
                        "permitSignature": sign(&typed["permit"]) }),
            )
            .await;
        assert_eq!(opened["status"], "open", "{opened}");
        opened["capabilityToken"].as_str().unwrap().to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursar_fetch_pays_an_x402_server_once_and_only_within_bounds() {
    let mut stack = Stack::start("bursar-fetch").await;
    let owner = Key::from_bytes(&B256::repeat_byte(0x0f)).unwrap();
    let payee = Address::repeat_byte(0x77);
    stack.allow(payee).await;
    // The host opens a USDC session; its capability token is all the agent gets.
    let token = &stack.session(&owner, 50_000_000, json!({})).await;
    let (client, base) = (&stack.client, &stack.base);

    let server =
        OfficialServer::start(client, Facilitator::Official(5), payee, U256::from(PRICE)).await;
    let url = server.url.as_str();

    // Only public addresses unless loopback is allowed: nothing sent, nothing paid.
    let (ok, _, err) = fetch(&[url], base, token).await;
    assert!(!ok && err.contains("loopback"), "{err}");
    // A price over --max-amount: refused before the relayer is asked.
    let (ok, _, err) = fetch(
        &[url, "--allow-loopback", "--max-amount", "9999"],
        base,
        token,
    )
    .await;
    assert!(
        !ok && err.contains("more than the most allowed (9999)"),
        "{err}"
    );
    // A token the relayer does not know.
    let (ok, _, err) = fetch(&[url, "--allow-loopback"], base, "bct_not-a-session").await;
    assert!(!ok && err.contains("did not pay (401"), "{err}");
    assert_eq!(usdc(client, payee).await, U256::ZERO, "nothing paid");

    let (ok, out, err) = fetch(
        &[url, "--allow-loopback", "--max-amount", "10000", "-i"],
        base,
        token,
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\n{\"report\":\"all quiet\"}"), "{out}");
    assert!(err.contains("paid; settled by"), "{err}");
    assert_eq!(usdc(client, payee).await, U256::from(PRICE), "paid once");

    // `bursar pay` from the same session: confirmed, printed as JSON; a refusal names the rule.
    let to = payee.to_string();
    let pay = |amount: &'static str| {
        let (base, token, to) = (base.to_owned(), token.to_owned(), to.clone());
        async move {
            let args = [
                "--to",
                to.as_str(),
                "--amount",
                amount,
                "--purpose",
                "a script's call",
            ];
            bursar("pay", &args, &base, &token).await
        }
    };
    let (ok, out, err) = pay("5000").await;
    assert!(ok, "{err}");
    let paid: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(paid["status"], "confirmed", "{paid}");
    assert_eq!(usdc(client, payee).await, U256::from(PRICE + 5_000));
    // In the token's units, as a person writes them.
    let (ok, out, err) = pay("0.005 USDC").await;
    assert!(ok, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["amount"],
        "5000"
    );
    assert_eq!(usdc(client, payee).await, U256::from(PRICE + 10_000));
    let (ok, _, err) = pay("0.005 DAI").await;
    assert!(!ok && err.contains("pays in USDC, not DAI"), "{err}");

    // `bursar limits`: what is left, in both units.
    let (ok, out, err) = bursar("limits", &[], base, token).await;
    assert!(ok, "{err}");
    let limits: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(limits["token"]["symbol"], "USDC", "{limits}");
    let left = limits["remainingDeposit"]["amount"].as_str().unwrap();
    assert_eq!(left, (50_000_000 - PRICE - 10_000).to_string());
    assert!(
        limits["remainingDeposit"]["display"]
            .as_str()
            .unwrap()
            .ends_with(" USDC"),
        "{limits}"
    );
    assert!(
        limits["counterparties"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["address"] == json!(payee.to_checksum(None))),
        "{limits}"
    );
    let (ok, _, err) = pay("60000000").await;
    assert!(!ok && err.contains("WalletInsufficientDeposit"), "{err}");
    tokio::time::timeout(Duration::from_secs(30), stack.relayer.shutdown())
        .await
        .unwrap();
}

/// `bursar sell` as a seller agent runs it in its sandbox, `bursar fetch --agent` as a buyer's:
/// the file is served once paid, and the payment lands at the seller agent's `agentWallet`; a
/// buyer that means another agent pays nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursar_sell_is_paid_at_the_agents_wallet_and_fetch_buys_from_the_agent_meant() {
    use tokio::io::AsyncBufReadExt;
    let mut stack = Stack::start("bursar-sell").await;
    let seller = Key::from_bytes(&B256::repeat_byte(0x5e)).unwrap();
    let wallet = Key::from_bytes(&B256::repeat_byte(0x3a)).unwrap();
    let buyer = Key::from_bytes(&B256::repeat_byte(0xb7)).unwrap();

    // The seller's owner gets its agent a passport through the relayer, and makes an account
    // of its own (on the buyer's allowlist) the agent's wallet.
    let host = stack.host.clone();
    let prepared = stack
        .post(
            "/v1/agents/prepare",
            &host,
            json!({ "owner": seller.address(), "name": "desk" }),
        )
        .await;
    let consent = json!({
        "agentRef": prepared["agentRef"],
        "ownerSignature": bursar_demo::host::wallet_sign(&seller, &prepared["typedData"]).unwrap(),
    });
    stack.post("/v1/agents", &host, consent).await;
    let path = format!(
        "{}/v1/agents/{}?wait=30",
        stack.base,
        prepared["agentRef"].as_str().unwrap()
    );
    let registered: Value = reqwest12::Client::new()
        .get(path)
        .bearer_auth(&host)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(registered["status"], "registered", "{registered}");
    let agent: U256 = registered["agentId"].as_str().unwrap().parse().unwrap();
    let gas = U256::from(10u64).pow(U256::from(17));
    let client = stack.client.clone();
    stack
        .operator
        .send(&client, Some(seller.address()), Vec::new(), gas)
        .await
        .unwrap();
    let deadline = U256::from(client.latest_block().await.unwrap().timestamp.to::<u64>() + 60);
    let chain = client.chain_id().await.unwrap();
    let digest = agent_wallet_set_digest(
        (chain, IDENTITY_REGISTRY),
        agent,
        wallet.address(),
        seller.address(),
        deadline,
    );
    let set = IIdentityRegistry::setAgentWalletCall {
        agentId: agent,
        newWallet: wallet.address(),
        deadline,
        signature: wallet.sign_hash_rsv(&digest).into(),
    };
    Sender::new(&client, seller.clone())
        .await
        .unwrap()
        .transact(&client, IDENTITY_REGISTRY, &set)
        .await
        .unwrap();
    stack.allow(wallet.address()).await;
    let agent_text = agent.to_string();
    let selling = stack
        .session(&seller, 1_000_000, json!({ "agentId": agent_text }))
        .await;
    let buying = stack.session(&buyer, 5_000_000, json!({})).await;

    // The seller's sandbox sells a file it made.
    let file = scratch("bursar-sell-file").join("prices.csv");
    std::fs::write(&file, "vendor,price\nmodel-api,0.012\n").unwrap();
    let mut sell = tokio::process::Command::new(env!("CARGO_BIN_EXE_bursar"))
        .args(["sell", file.to_str().unwrap(), "--price", "0.02 USDC"])
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("BURSAR_CONFIG")
        .env("BURSAR_RELAYER_URL", &stack.base)
        .env("BURSAR_CAPABILITY_TOKEN", &selling)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(sell.stdout.take().unwrap()).lines();
    let banner = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("bursar sell announces itself")
        .unwrap()
        .unwrap();
    assert!(!banner.contains(&selling), "the token was printed");
    let wallet_text = wallet.address().to_checksum(None);
    assert!(
        banner.contains(&format!("agent #{agent}'s wallet {wallet_text}")),
        "{banner}"
    );
    let url = banner
        .split(" at ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_owned();

    // A buyer that means another agent pays nothing; one that means this one gets the file.
    let other = (agent + U256::from(1)).to_string();
    let (ok, _, err) = fetch(
        &[&url, "--allow-loopback", "--agent", &other],
        &stack.base,
        &buying,
    )
    .await;
    assert!(!ok && err.contains("x402_not_the_agent"), "{err}");
    assert_eq!(usdc(&client, wallet.address()).await, U256::ZERO);
    let (ok, out, err) = fetch(
        &[&url, "--allow-loopback", "--agent", &agent_text],
        &stack.base,
        &buying,
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(out, "vendor,price\nmodel-api,0.012\n");
    assert_eq!(usdc(&client, wallet.address()).await, U256::from(20_000));
    sell.kill().await.unwrap();
}
