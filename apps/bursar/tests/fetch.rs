//! `bursar fetch` (and `bursar pay`) as an agent in a sandbox runs it: the binary, with the session's capability
//! token in its environment, against a resource server built with x402's official packages
//! (`@x402/express`, x402's own facilitator) on a devnet with the real USDC, paying through a
//! relayer. It pays once and shows the resource; it refuses loopback unless allowed, a price
//! over `--max-amount` and a token the relayer does not know, paying nothing; it never prints
//! the token.

use std::net::SocketAddr;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use bursar_bindings::counterparty::ICounterpartyRegistry;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursar_fetch_pays_an_x402_server_once_and_only_within_bounds() {
    let (_devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("bursar-fetch")).await;
    let at = |c: Contract| record.address(c.key()).unwrap();
    let owner = Key::from_bytes(&B256::repeat_byte(0x0f)).unwrap();
    let payee = Address::repeat_byte(0x77);
    let mut operator = Sender::new(&client, dev_key(0)).await.unwrap();
    let mint = IFiatToken::mintCall {
        to: owner.address(),
        amount: U256::from(100_000_000u64),
    };
    operator.transact(&client, USDC, &mint).await.unwrap();
    let registry = at(Contract::CounterpartyRegistry);
    let r = operator
        .transact(&client, registry, &ICounterpartyRegistry::createListCall {})
        .await
        .unwrap();
    let list = r.events::<ICounterpartyRegistry::ListCreated>(registry)[0].listId;
    let entry = ICounterpartyRegistry::setEntryCall {
        listId: list,
        counterparty: payee,
        allowed: true,
        maxPerPayment: U256::ZERO,
        label: B256::ZERO,
    };
    operator.transact(&client, registry, &entry).await.unwrap();

    let db = format!(
        "sqlite://{}",
        scratch("bursar-fetch-db").join("relayer.db").display()
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
    let host = bursar_relayer::hosts::create(&store, "fetch", "sessions")
        .await
        .unwrap()
        .key;

    // The host opens a USDC session; its capability token is all the agent gets.
    let http = reqwest12::Client::new();
    let now: u64 = client.latest_block().await.unwrap().timestamp.to();
    let post = |path: &str, bearer: &str, body: Value| {
        let request = http
            .post(format!("{base}{path}"))
            .bearer_auth(bearer)
            .json(&body);
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let prep = post(
        "/v1/sessions/prepare",
        &host,
        json!({ "owner": owner.address(), "token": USDC, "deposit": "50000000",
                "expiresAt": now + 86_400, "allowlistId": list.to_string() }),
    )
    .await;
    let typed = &prep["typedData"];
    let sign = |t: &Value| bursar_demo::host::wallet_sign(&owner, t).unwrap();
    let opened = post(
        "/v1/sessions",
        &host,
        json!({ "preparedId": prep["preparedId"], "ownerSignature": sign(&typed["openSession"]),
                "permitSignature": sign(&typed["permit"]) }),
    )
    .await;
    assert_eq!(opened["status"], "open", "{opened}");
    let token = opened["capabilityToken"].as_str().unwrap();

    let server =
        OfficialServer::start(&client, Facilitator::Official(5), payee, U256::from(PRICE)).await;
    let url = server.url.as_str();

    // Only public addresses unless loopback is allowed: nothing sent, nothing paid.
    let (ok, _, err) = fetch(&[url], &base, token).await;
    assert!(!ok && err.contains("loopback"), "{err}");
    // A price over --max-amount: refused before the relayer is asked.
    let (ok, _, err) = fetch(
        &[url, "--allow-loopback", "--max-amount", "9999"],
        &base,
        token,
    )
    .await;
    assert!(
        !ok && err.contains("more than the most allowed (9999)"),
        "{err}"
    );
    // A token the relayer does not know.
    let (ok, _, err) = fetch(&[url, "--allow-loopback"], &base, "bct_not-a-session").await;
    assert!(!ok && err.contains("did not pay (401"), "{err}");
    assert_eq!(usdc(&client, payee).await, U256::ZERO, "nothing paid");

    let (ok, out, err) = fetch(
        &[url, "--allow-loopback", "--max-amount", "10000", "-i"],
        &base,
        token,
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\n{\"report\":\"all quiet\"}"), "{out}");
    assert!(err.contains("paid; settled by"), "{err}");
    assert_eq!(usdc(&client, payee).await, U256::from(PRICE), "paid once");

    // `bursar pay` from the same session: confirmed, printed as JSON; a refusal names the rule.
    let to = payee.to_string();
    let pay = |amount: &'static str| {
        let (base, token, to) = (base.clone(), token.to_owned(), to.clone());
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
    assert_eq!(usdc(&client, payee).await, U256::from(PRICE + 5_000));
    // In the token's units, as a person writes them.
    let (ok, out, err) = pay("0.005 USDC").await;
    assert!(ok, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["amount"],
        "5000"
    );
    assert_eq!(usdc(&client, payee).await, U256::from(PRICE + 10_000));
    let (ok, _, err) = pay("0.005 DAI").await;
    assert!(!ok && err.contains("pays in USDC, not DAI"), "{err}");

    // `bursar limits`: what is left, in both units.
    let (ok, out, err) = bursar("limits", &[], &base, token).await;
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
    tokio::time::timeout(Duration::from_secs(30), relayer.shutdown())
        .await
        .unwrap();
}
