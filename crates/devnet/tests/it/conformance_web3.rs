//! A second, independent client: Python web3.py (tools/conformance/web3_client.py) against
//! an in-process devnet. The Rust side deploys the test token and mints to the client's
//! account; the script reads the chain, sends EIP-1559 and legacy transfers, calls and
//! transacts against the token and reads its events; its JSON summary is then checked
//! against the devnet's own view (receipts, balances, logs).
//!
//! The interpreter is `$BURSAR_PYTHON`, else the venv `cargo xtask setup` creates at
//! `${XDG_CACHE_HOME:-$HOME/.cache}/bursar/pyenv`. Missing = failure, not a skip.

use std::path::PathBuf;

use crate::common::rpc_client::*;
use alloy_json_abi::JsonAbi;
use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::{SolCall, SolEvent, SolValue};
use bursar_bindings::token::ITestToken;
use bursar_devnet::accounts::{dev_accounts, DevAccount};
use bursar_devnet::chain::{CallRequest, LogFilter};
use bursar_devnet::Chain;
use serde_json::Value;

fn python() -> PathBuf {
    let p = std::env::var_os("BURSAR_PYTHON").map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .expect("HOME or XDG_CACHE_HOME is set");
            cache.join("bursar/pyenv/bin/python")
        },
        PathBuf::from,
    );
    assert!(
        p.exists(),
        "web3.py interpreter not found at {} (BURSAR_PYTHON, else the default venv): run cargo xtask setup \
         (it creates that venv with pinned web3 and eth-account) or point BURSAR_PYTHON at a \
         python that has them",
        p.display()
    );
    p
}

/// The token ABI as JSON for web3.py, from the human-readable signatures of the `sol!`
/// bindings (checked below to produce the same selectors and event topic).
fn token_abi() -> JsonAbi {
    let abi = JsonAbi::parse([
        "function decimals() external pure returns (uint8)",
        "function balanceOf(address account) external view returns (uint256)",
        "function transfer(address to, uint256 value) external returns (bool)",
        "function mint(address to, uint256 value) external",
        "event Transfer(address indexed from, address indexed to, uint256 value)",
    ])
    .unwrap();
    assert_eq!(
        abi.function("transfer").unwrap()[0].selector(),
        ITestToken::transferCall::SELECTOR
    );
    assert_eq!(
        abi.function("balanceOf").unwrap()[0].selector(),
        ITestToken::balanceOfCall::SELECTOR
    );
    assert_eq!(
        abi.function("decimals").unwrap()[0].selector(),
        ITestToken::decimalsCall::SELECTOR
    );
    assert_eq!(
        abi.event("Transfer").unwrap()[0].selector(),
        ITestToken::Transfer::SIGNATURE_HASH
    );
    abi
}

/// An integer of the summary: a JSON number, or a decimal string for wei balances.
fn u(v: &Value) -> U256 {
    let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    text.parse().unwrap_or_else(|e| panic!("{v}: {e}"))
}

fn addr(v: &Value) -> Address {
    v.as_str().unwrap().parse().unwrap()
}

fn hash(v: &Value) -> B256 {
    v.as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web3_py_drives_the_devnet() {
    let python = python();
    let (handle, p) = start().await;

    // Deploy + activate + construct the token (owner = dev 0), mint to the client (dev 2).
    let mut owner = Sender::dev(0);
    let token = deploy_token(&p, &mut owner).await;
    let client = &dev_accounts()[2];
    let mint = ITestToken::mintCall {
        to: client.address,
        value: U256::from(1_000_000),
    };
    assert_eq!(
        owner.send(&p, Some(token), mint.abi_encode()).await.status,
        Some(1.into())
    );

    let abi_path =
        std::env::temp_dir().join(format!("bursar-token-abi-{}.json", std::process::id()));
    std::fs::write(&abi_path, serde_json::to_vec(&token_abi()).unwrap()).unwrap();
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/conformance/web3_client.py");
    let to = Address::repeat_byte(0x42);
    let args = [
        script.display().to_string(),
        "--url".into(),
        handle.url.clone(),
        "--key".into(),
        client.private_key.to_string(),
        "--to".into(),
        to.to_string(),
        "--token".into(),
        token.to_string(),
        "--abi".into(),
        abi_path.display().to_string(),
    ];
    // The script talks to this process's server: run it off the runtime's threads.
    let py = python.clone();
    let out =
        tokio::task::spawn_blocking(move || std::process::Command::new(&py).args(&args).output())
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("run {}: {e}", python.display()));
    let _ = std::fs::remove_file(&abi_path);
    assert!(
        out.status.success(),
        "web3_client.py failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "summary is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });

    check_against_devnet(&mut handle.chain.lock().unwrap(), &s, client, token, to);
    handle.shutdown().await;
}

/// The summary web3.py printed vs the devnet's own records.
fn check_against_devnet(
    chain: &mut Chain,
    s: &Value,
    client: &DevAccount,
    token: Address,
    to: Address,
) {
    assert_eq!(s["chainId"], CHAIN_ID);
    assert_eq!(addr(&s["account"]), client.address);
    assert_eq!(s["clientVersion"], bursar_devnet::rpc::CLIENT_VERSION);
    assert_eq!(
        hash(&s["genesisHash"]),
        chain.block_by_number(0).unwrap().hash
    );
    assert_eq!(s["gasPrice"], chain.base_fee());
    assert_eq!(s["startBlock"], 4, "deploy, activate, construct, mint");

    // Transfers: the receipts web3.py saw are the devnet's.
    let mut fees = U256::ZERO;
    for (summary, ty) in s["transfers"].as_array().unwrap().iter().zip([2u8, 0]) {
        let tx = chain
            .transaction(hash(&summary["transactionHash"]))
            .expect("mined");
        assert_eq!(summary["type"], ty);
        assert_eq!(summary["status"], 1);
        assert_eq!(summary["gasUsed"], tx.receipt.gas_used);
        assert_eq!(summary["gasUsed"], 21_000);
        assert_eq!(summary["blockNumber"], tx.block_number);
        assert_eq!(hash(&summary["blockHash"]), tx.block_hash);
        assert_eq!(
            u(&summary["effectiveGasPrice"]),
            U256::from(tx.receipt.effective_gas_price)
        );
        assert_eq!(tx.from, client.address);
        fees += U256::from(tx.receipt.gas_used) * U256::from(tx.receipt.effective_gas_price);
    }
    assert_eq!(s["transfer1559"]["value"], 12345);
    assert_eq!(s["transfer1559"]["type"], 2);
    assert_eq!(addr(&s["transfer1559"]["from"]), client.address);
    assert_eq!(
        s["transferBlockTxs"][0],
        s["transfers"][0]["transactionHash"]
    );
    let sent = U256::from(12345 + 777);
    assert_eq!(u(&s["balanceAfter"]), u(&s["balanceBefore"]) - sent - fees);
    assert_eq!(u(&s["toBalanceAfter"]), u(&s["toBalanceBefore"]) + sent);
    let after_transfers = s["transfers"][1]["blockNumber"].as_u64().unwrap();
    let state = chain.state_at(after_transfers).unwrap();
    assert_eq!(state.balance(client.address), u(&s["balanceAfter"]));
    assert_eq!(state.balance(to), sent);

    // Token calls and transaction.
    assert_eq!(s["decimals"], 6);
    assert_eq!(s["tokenBalanceBefore"], 1_000_000);
    assert_eq!(s["tokenBalanceAfter"], 999_000);
    assert_eq!(s["tokenToBalance"], 1000);
    // ...and the devnet agrees.
    for (who, want) in [(client.address, 999_000u64), (to, 1000)] {
        let out = chain.simulate(
            &CallRequest {
                from: None,
                to: Some(token),
                gas: None,
                value: U256::ZERO,
                data: ITestToken::balanceOfCall { account: who }
                    .abi_encode()
                    .into(),
                ..Default::default()
            },
            None,
            |_| {},
        );
        assert!(out.success);
        assert_eq!(U256::abi_decode(&out.output).unwrap(), U256::from(want));
    }
    let tx = chain
        .transaction(hash(&s["tokenTransfer"]["transactionHash"]))
        .expect("token transfer mined");
    assert!(tx.receipt.status);
    assert_eq!(s["tokenTransfer"]["gasUsed"], tx.receipt.gas_used);
    assert!(s["tokenTransferGasEstimate"].as_u64().unwrap() >= tx.receipt.gas_used);
    assert_eq!(s["tokenTransfer"]["logs"], tx.receipt.logs.len());
    let ev = &s["receiptEvents"][0];
    assert_eq!(s["receiptEvents"].as_array().unwrap().len(), 1);
    assert_eq!(
        (addr(&ev["from"]), addr(&ev["to"]), &ev["value"]),
        (client.address, to, &Value::from(1000))
    );

    // eth_getLogs through web3.py = the devnet's log index, field by field.
    let logs = chain.logs(&LogFilter {
        from_block: Some(0),
        addresses: vec![token],
        ..Default::default()
    });
    let raw = s["rawLogs"].as_array().unwrap();
    assert_eq!(raw.len(), logs.len());
    assert!(logs.len() >= 2, "mint + transfer at least");
    for (seen, l) in raw.iter().zip(&logs) {
        assert_eq!(seen["blockNumber"], l.block_number);
        assert_eq!(hash(&seen["transactionHash"]), l.tx_hash);
        assert_eq!(seen["logIndex"], l.log_index);
        let topics: Vec<B256> = seen["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(hash)
            .collect();
        assert_eq!(topics, l.log.topics);
        assert_eq!(seen["data"], l.log.data.to_string());
    }
    // Transfer events decoded by web3.py: the mint (from 0) and the transfer.
    let transfers: Vec<(Address, Address, Value)> = s["transferEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (addr(&e["from"]), addr(&e["to"]), e["value"].clone()))
        .collect();
    assert_eq!(
        transfers,
        vec![
            (Address::ZERO, client.address, Value::from(1_000_000)),
            (client.address, to, Value::from(1000)),
        ]
    );
    assert_eq!(s["endBlock"], chain.block_number());
}

/// `eth_sign` and `eth_signTypedData_v4` for a dev account answer what eth-account (the
/// signing library web3.py uses) signs with that account's key; other accounts have no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eth_sign_and_typed_data_match_eth_account() {
    let python = python();
    let (_handle, p) = start().await;
    let dev = &dev_accounts()[3];
    let data = "0x68656c6c6f2c2062757273617221";
    let typed = serde_json::json!({
        "types": {
            "EIP712Domain": [
                { "name": "name", "type": "string" },
                { "name": "version", "type": "string" },
                { "name": "chainId", "type": "uint256" },
                { "name": "verifyingContract", "type": "address" },
            ],
            "Person": [{ "name": "name", "type": "string" }, { "name": "wallet", "type": "address" }],
            "Mail": [
                { "name": "from", "type": "Person" },
                { "name": "to", "type": "Person" },
                { "name": "contents", "type": "string" },
                { "name": "amount", "type": "uint256" },
            ],
        },
        "primaryType": "Mail",
        "domain": {
            "name": "Ether Mail", "version": "1", "chainId": 412346,
            "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC",
        },
        "message": {
            "from": { "name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826" },
            "to": { "name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB" },
            "contents": "Hello, Bob!",
            "amount": "1000000000000000000000",
        },
    });
    let ours_sign: String = p.request("eth_sign", (dev.address, data)).await.unwrap();
    let ours_typed: String = p
        .request("eth_signTypedData_v4", (dev.address, typed.clone()))
        .await
        .unwrap();
    // Wallets also hand the typed data over as a JSON string.
    let as_text: String = p
        .request("eth_signTypedData_v4", (dev.address, typed.to_string()))
        .await
        .unwrap();
    assert_eq!(as_text, ours_typed);

    let script = r#"
import json, sys
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
d = json.load(sys.stdin)
sign = lambda m: "0x" + Account.sign_message(m, d["key"]).signature.hex().removeprefix("0x")
print(json.dumps({
    "sign": sign(encode_defunct(hexstr=d["data"])),
    "typed": sign(encode_typed_data(full_message=d["typed"])),
}))
"#;
    let input = serde_json::json!({ "key": dev.private_key, "data": data, "typed": typed });
    let mut child = std::process::Command::new(&python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python");
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        input.to_string().as_bytes(),
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "eth-account failed");
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ours_sign, theirs["sign"].as_str().unwrap());
    assert_eq!(ours_typed, theirs["typed"].as_str().unwrap());

    // An account without a key here is refused, naming it.
    let stranger = Address::repeat_byte(0x77);
    let refused = p
        .request::<_, String>("eth_sign", (stranger, data))
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("not a dev account"),
        "{refused}"
    );
}
