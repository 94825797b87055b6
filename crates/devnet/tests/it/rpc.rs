//! The JSON-RPC server driven by an independent client (`ethers-providers`): deploy the real
//! counterparty registry through the prelude + ArbWasm activation flow with signed
//! transactions, use it, read receipts and logs, and check the error codes clients rely on.

use crate::common::rpc_client::*;

use alloy_consensus::TxLegacy;
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use alloy_sol_types::{SolCall, SolEvent, SolInterface};
use bursar_bindings::counterparty::ICounterpartyRegistry::{
    self as reg, ICounterpartyRegistryErrors as Errors,
};
use bursar_devnet::arbwasm::{IArbWasm, ARBWASM_ADDRESS};
use ethers_core::types as et;
use ethers_providers::Middleware;
use k256::ecdsa::SigningKey;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_activate_and_use_the_registry_over_json_rpc() {
    let (handle, p) = start().await;
    assert_eq!(p.get_chainid().await.unwrap(), CHAIN_ID.into());
    assert_eq!(p.get_block_number().await.unwrap(), 0.into());
    let mut owner = Sender::dev(0);
    assert_eq!(
        p.get_balance(h160(owner.address), None).await.unwrap(),
        et::U256::exp10(22)
    );

    // Deploy: a plain creation tx with the 43-byte prelude initcode.
    let code = crate::common::code("counterparty_registry");
    let initcode = stylus_activation::deploy_initcode(&code);
    let receipt = owner.send(&p, None, initcode).await;
    assert_eq!(receipt.status, Some(1.into()));
    let registry = Address::from(receipt.contract_address.expect("contract address").0);
    let deployed = p.get_code(h160(registry), None).await.unwrap();
    assert_eq!(deployed.as_ref(), &code[..]);

    // Not activated yet: a call reverts (empty data), and ArbWasm says so.
    let list_count = reg::listCountCall {}.abi_encode();
    let err = p
        .request::<_, et::Bytes>(
            "eth_call",
            (
                json!({ "to": registry, "data": Bytes::from(list_count.clone()) }),
                "latest",
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(rpc_error(err).code, 3);
    let codehash = alloy_primitives::keccak256(&code);
    let err = p
        .request::<_, et::Bytes>(
            "eth_call",
            (json!({ "to": ARBWASM_ADDRESS, "data": Bytes::from(IArbWasm::codehashVersionCall { codehash }.abi_encode()) }),),
        )
        .await
        .unwrap_err();
    let e = rpc_error(err);
    assert_eq!(e.code, 3);
    assert_eq!(e.data, Some(json!("0x6f809c4e")), "ProgramNotActivated()");

    // Activate through ArbWasm.
    let activate = IArbWasm::activateProgramCall { program: registry }.abi_encode();
    let receipt = owner
        .send(&p, Some(ARBWASM_ADDRESS), activate.clone())
        .await;
    assert_eq!(receipt.status, Some(1.into()));
    let log = &receipt.logs[0];
    let ev = IArbWasm::ProgramActivated::decode_raw_log(topics(log), &log.data).unwrap();
    assert_eq!(
        (ev.codehash, ev.program, ev.version),
        (codehash, registry, 2)
    );
    // Activating again reverts with ProgramUpToDate().
    let err = p
        .request::<_, et::Bytes>(
            "eth_call",
            (json!({ "from": owner.address, "to": ARBWASM_ADDRESS, "data": Bytes::from(activate) }),),
        )
        .await
        .unwrap_err();
    assert_eq!(rpc_error(err).data, Some(json!("0xcc944bf2")));

    // createList / setEntry through signed transactions; events decoded by the bindings.
    let receipt = owner
        .send(&p, Some(registry), reg::createListCall {}.abi_encode())
        .await;
    assert_eq!(receipt.status, Some(1.into()));
    assert_eq!(receipt.logs.len(), 1);
    let created =
        reg::ListCreated::decode_raw_log(topics(&receipt.logs[0]), &receipt.logs[0].data).unwrap();
    assert_eq!(created.owner, owner.address);
    let list_id = created.listId;
    let created_block = receipt.block_number.unwrap();

    let payee = Address::repeat_byte(0xbe);
    let set = reg::setEntryCall {
        listId: list_id,
        counterparty: payee,
        allowed: true,
        maxPerPayment: U256::from(500),
        label: B256::repeat_byte(0x11),
    };
    let receipt = owner.send(&p, Some(registry), set.abi_encode()).await;
    assert_eq!(receipt.status, Some(1.into()));
    assert!(receipt.gas_used.unwrap() > 21_000.into());
    assert_eq!(receipt.effective_gas_price, Some(100_000_000u64.into()));
    assert_eq!(receipt.logs[0].log_index, Some(0.into()));
    let entry =
        reg::EntrySet::decode_raw_log(topics(&receipt.logs[0]), &receipt.logs[0].data).unwrap();
    assert_eq!((entry.counterparty, entry.by), (payee, owner.address));

    // isAllowed through eth_call.
    let allowed = |amount: u64| {
        let data = reg::isAllowedCall {
            listId: list_id,
            counterparty: payee,
            amount: U256::from(amount),
        }
        .abi_encode();
        let tx: et::transaction::eip2718::TypedTransaction = et::TransactionRequest::new()
            .to(h160(registry))
            .data(data)
            .into();
        let p = p.clone();
        async move {
            let out = p.call(&tx, None).await.unwrap();
            reg::isAllowedCall::abi_decode_returns(&out).unwrap()
        }
    };
    assert!(allowed(500).await);
    assert!(!allowed(501).await);

    // State override: the same (activated) code at a fresh address has fresh storage.
    let elsewhere = Address::repeat_byte(0x99);
    let out: Bytes = p
        .request(
            "eth_call",
            (
                json!({ "to": elsewhere, "data": Bytes::from(list_count.clone()) }),
                "latest",
                json!({ elsewhere.to_string(): { "code": Bytes::from(code.clone()) } }),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        reg::listCountCall::abi_decode_returns(&out).unwrap(),
        U256::ZERO
    );
    let out: Bytes = p
        .request(
            "eth_call",
            (
                json!({ "to": registry, "data": Bytes::from(list_count.clone()) }),
                "latest",
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        reg::listCountCall::abi_decode_returns(&out).unwrap(),
        U256::from(1)
    );

    // Blocks chain by parentHash; full and hash-only bodies.
    let head = p
        .get_block_with_txs(receipt.block_number.unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(head.transactions[0].hash, receipt.transaction_hash);
    let parent = p
        .get_block(head.number.unwrap() - 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(head.parent_hash, parent.hash.unwrap());
    let by_hash = p.get_block(head.hash.unwrap()).await.unwrap().unwrap();
    assert_eq!(by_hash.transactions, vec![receipt.transaction_hash]);
    let tx = p
        .get_transaction(receipt.transaction_hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tx.from, h160(owner.address));

    // eth_getLogs: by address, by topic, by range, by block hash.
    let all = p
        .get_logs(&et::Filter::new().address(h160(registry)).from_block(0))
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
    let only_entries = p
        .get_logs(
            &et::Filter::new()
                .from_block(0)
                .topic0(h256(reg::EntrySet::SIGNATURE_HASH)),
        )
        .await
        .unwrap();
    assert_eq!(only_entries.len(), 1);
    let by_payee = p
        .get_logs(
            &et::Filter::new()
                .from_block(0)
                .topic2(h256(B256::left_padding_from(payee.as_slice()))),
        )
        .await
        .unwrap();
    assert_eq!(by_payee.len(), 1);
    let in_range = p
        .get_logs(
            &et::Filter::new()
                .from_block(created_block)
                .to_block(created_block),
        )
        .await
        .unwrap();
    assert_eq!(in_range.len(), 1);
    let by_hash = p
        .get_logs(&et::Filter::new().at_block_hash(receipt.block_hash.unwrap()))
        .await
        .unwrap();
    assert_eq!(by_hash.len(), 1);
    let none = p
        .get_logs(
            &et::Filter::new()
                .from_block(0)
                .address(h160(Address::repeat_byte(9))),
        )
        .await
        .unwrap();
    assert!(none.is_empty());

    // A revert surfaces as code 3 with the custom error in `data`.
    let stranger = Address::repeat_byte(0x77);
    let err = p
        .request::<_, et::Bytes>(
            "eth_call",
            (
                json!({ "from": stranger, "to": registry, "data": Bytes::from(set.abi_encode()) }),
                "latest",
            ),
        )
        .await
        .unwrap_err();
    let e = rpc_error(err);
    assert_eq!((e.code, e.message.as_str()), (3, "execution reverted"));
    let data: Bytes = serde_json::from_value(e.data.unwrap()).unwrap();
    assert!(matches!(
        Errors::abi_decode(&data).unwrap(),
        Errors::CounterpartyUnauthorized(u) if u.caller == stranger
    ));
    // estimateGas reports the same revert.
    let err = p
        .request::<_, et::U256>(
            "eth_estimateGas",
            [json!({ "from": stranger, "to": registry, "data": Bytes::from(set.abi_encode()) })],
        )
        .await
        .unwrap_err();
    assert_eq!(rpc_error(err).code, 3);

    // A reverting transaction is mined with status 0.
    owner.nonce = p
        .get_transaction_count(h160(owner.address), None)
        .await
        .unwrap()
        .as_u64();
    let bad = reg::setEntryCall {
        listId: U256::from(99),
        ..set.clone()
    };
    let raw = sign_1559(
        owner.tx(Some(registry), bad.abi_encode(), 500_000),
        &owner.key,
    );
    let pending = p.send_raw_transaction(raw).await.unwrap();
    let r = p
        .get_transaction_receipt(pending.tx_hash())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.status, Some(0.into()));
    assert!(r.logs.is_empty());

    // Validation errors.
    let stale = sign_1559(owner.tx(Some(registry), vec![], 50_000), &owner.key);
    let e = rpc_error(p.send_raw_transaction(stale).await.unwrap_err());
    assert_eq!(e.code, -32000);
    assert!(e.message.starts_with("nonce too low"), "{}", e.message);
    let poor = SigningKey::from_bytes(&[7u8; 32].into()).unwrap();
    let raw = sign_legacy(
        TxLegacy {
            chain_id: Some(CHAIN_ID),
            nonce: 0,
            gas_price: 100_000_000,
            gas_limit: 21_000,
            to: TxKind::Call(payee),
            value: U256::from(1),
            input: Bytes::new(),
        },
        &poor,
    );
    let e = rpc_error(p.send_raw_transaction(raw).await.unwrap_err());
    assert_eq!(e.code, -32000);
    assert!(
        e.message
            .starts_with("insufficient funds for gas * price + value"),
        "{}",
        e.message
    );

    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_methods_and_protocol_errors() {
    let (handle, p) = start().await;
    let sender = Sender::dev(1);
    let to = Address::repeat_byte(0x55);
    let transfer = |nonce: u64, value: u64| {
        let mut tx = sender.tx(Some(to), vec![], 21_000);
        tx.nonce = nonce;
        tx.value = U256::from(value);
        sign_1559(tx, &sender.key)
    };

    // Snapshot / revert.
    let snap: et::U256 = p.request("evm_snapshot", ()).await.unwrap();
    p.send_raw_transaction(transfer(0, 5)).await.unwrap();
    assert_eq!(p.get_balance(h160(to), None).await.unwrap(), 5.into());
    assert_eq!(p.get_block_number().await.unwrap(), 1.into());
    let reverted: bool = p.request("evm_revert", [snap]).await.unwrap();
    assert!(reverted);
    assert_eq!(p.get_balance(h160(to), None).await.unwrap(), 0.into());
    assert_eq!(p.get_block_number().await.unwrap(), 0.into());

    // Time travel.
    let t0 = p.get_block(0).await.unwrap().unwrap().timestamp;
    let _: Value = p.request("evm_increaseTime", [3600]).await.unwrap();
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    let t1 = p.get_block(1).await.unwrap().unwrap().timestamp;
    assert!(t1 >= t0 + 3600, "{t0} -> {t1}");
    let _: Value = p
        .request("evm_setNextBlockTimestamp", [t1.as_u64() + 10_000])
        .await
        .unwrap();
    let _: Value = p.request("anvil_mine", [json!("0x2")]).await.unwrap();
    assert_eq!(p.get_block_number().await.unwrap(), 3.into());
    assert_eq!(
        p.get_block(2).await.unwrap().unwrap().timestamp,
        t1 + 10_000
    );

    // Manual mining: transactions wait for evm_mine.
    let _: Value = p.request("evm_setAutomine", [false]).await.unwrap();
    let pending = p.send_raw_transaction(transfer(0, 1)).await.unwrap();
    assert!(p
        .get_transaction_receipt(pending.tx_hash())
        .await
        .unwrap()
        .is_none());
    let n: et::U256 = p
        .request("eth_getTransactionCount", (h160(sender.address), "pending"))
        .await
        .unwrap();
    assert_eq!(n, 1.into());
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    assert!(p
        .get_transaction_receipt(pending.tx_hash())
        .await
        .unwrap()
        .is_some());

    // anvil_setBalance.
    let _: Value = p
        .request("anvil_setBalance", (h160(to), "0x100"))
        .await
        .unwrap();
    assert_eq!(p.get_balance(h160(to), None).await.unwrap(), 0x100.into());

    // Raw protocol errors.
    let http = reqwest::Client::new();
    let post = |body: &'static str| {
        let http = http.clone();
        let url = handle.url.clone();
        async move {
            http.post(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    assert_eq!(post("{\"jsonrpc\":").await["error"]["code"], -32700);
    assert_eq!(
        post(r#"{"jsonrpc":"2.0","id":1,"method":"eth_foo","params":[]}"#).await["error"]["code"],
        -32601
    );
    assert_eq!(
        post(r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":[1]}"#).await["error"]
            ["code"],
        -32602
    );
    let rlp = post(
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0xf8deadbeef"]}"#,
    )
    .await;
    assert_eq!(rlp["error"]["code"], -32000, "{rlp}");
    let batch = post(
        r#"[{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber"},{"jsonrpc":"2.0","id":8,"method":"nope"}]"#,
    )
    .await;
    assert_eq!(batch[0]["id"], 7);
    assert_eq!(batch[0]["result"], "0x4");
    assert_eq!(batch[1]["error"]["code"], -32601);

    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_and_finalized_lag_the_head_by_the_finality_depth() {
    use bursar_devnet::ChainConfig;
    let number = |b: Value| {
        u64::from_str_radix(b["number"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };

    // Default: every block is final at once.
    let (_handle, p) = start().await;
    let _: Value = p.request("anvil_mine", [json!("0x5")]).await.unwrap();
    for tag in ["latest", "safe", "finalized"] {
        let b: Value = p
            .request("eth_getBlockByNumber", (tag, false))
            .await
            .unwrap();
        assert_eq!(number(b), 5, "{tag}");
    }

    // Depth 2: safe is 2 blocks behind the head, finalized 4 (never below genesis).
    let (_handle, p) = start_with(ChainConfig {
        finality_depth: 2,
        ..ChainConfig::default()
    })
    .await;
    let at = |tag: &'static str| {
        let p = p.clone();
        async move {
            let b: Value = p
                .request("eth_getBlockByNumber", (tag, false))
                .await
                .unwrap();
            number(b)
        }
    };
    let _: Value = p.request("anvil_mine", [json!("0x3")]).await.unwrap();
    assert_eq!(
        (at("latest").await, at("safe").await, at("finalized").await),
        (3, 1, 0)
    );
    let _: Value = p.request("anvil_mine", [json!("0x4")]).await.unwrap();
    assert_eq!(
        (at("latest").await, at("safe").await, at("finalized").await),
        (7, 5, 3)
    );

    // Log ranges take the tags as bounds: from block 8 (a transfer) to `safe` (6) is inverted.
    let sender = Sender::dev(1);
    let tx = sign_1559(
        sender.tx(Some(Address::repeat_byte(0x55)), vec![], 21_000),
        &sender.key,
    );
    p.send_raw_transaction(tx).await.unwrap();
    assert_eq!(at("safe").await, 6);
    let err = p
        .request::<_, Vec<Value>>(
            "eth_getLogs",
            [json!({ "fromBlock": "0x8", "toBlock": "safe" })],
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("invalid block range"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_receipts_and_log_ranges_past_the_head() {
    let (_handle, p) = start().await;
    let sender = Sender::dev(1);
    let tx = sign_1559(
        sender.tx(Some(Address::repeat_byte(0x55)), vec![], 21_000),
        &sender.key,
    );
    let hash = p.send_raw_transaction(tx).await.unwrap().tx_hash();
    let one: Value = p
        .request("eth_getTransactionReceipt", [hash])
        .await
        .unwrap();
    let block_hash = one["blockHash"].clone();

    // eth_getBlockReceipts by tag, number and hash: the block's receipts, as one by one.
    for id in [json!("latest"), json!("0x1"), block_hash] {
        let all: Value = p.request("eth_getBlockReceipts", [&id]).await.unwrap();
        assert_eq!(all, json!([one]), "{id}");
    }
    let genesis: Value = p
        .request("eth_getBlockReceipts", ["earliest"])
        .await
        .unwrap();
    assert_eq!(genesis, json!([]));
    let future: Value = p.request("eth_getBlockReceipts", ["0x99"]).await.unwrap();
    assert_eq!(future, Value::Null);

    // A log range ending past the head is refused (geth), not answered with `[]`.
    let err = p
        .request::<_, Vec<Value>>(
            "eth_getLogs",
            [json!({ "fromBlock": "0x0", "toBlock": "0x2" })],
        )
        .await
        .unwrap_err();
    let err = rpc_error(err);
    assert_eq!(
        (err.code, err.message.as_str()),
        (-32602, "block range extends beyond current head block")
    );
    let up_to_head: Vec<Value> = p
        .request(
            "eth_getLogs",
            [json!({ "fromBlock": "0x0", "toBlock": "0x1" })],
        )
        .await
        .unwrap();
    assert!(up_to_head.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_replacement_drops_and_state_setters() {
    let (_handle, p) = start().await;
    let sender = Sender::dev(2);
    let to = Address::repeat_byte(0x66);
    let transfer = |nonce: u64, max_fee: u128, tip: u128| {
        let mut tx = sender.tx(Some(to), vec![], 21_000);
        tx.nonce = nonce;
        tx.max_fee_per_gas = max_fee;
        tx.max_priority_fee_per_gas = tip;
        tx.value = U256::from(nonce + 1);
        sign_1559(tx, &sender.key)
    };
    let status = |p: ethers_providers::Provider<ethers_providers::Http>| async move {
        let s: Value = p.request("txpool_status", ()).await.unwrap();
        (s["pending"].clone(), s["queued"].clone())
    };

    // With automine off the pool holds transactions, by sender and nonce.
    let _: Value = p.request("evm_setAutomine", [false]).await.unwrap();
    let first = p
        .send_raw_transaction(transfer(0, 1_000_000_000, 10))
        .await
        .unwrap()
        .tx_hash();
    let second = p
        .send_raw_transaction(transfer(1, 1_000_000_000, 10))
        .await
        .unwrap()
        .tx_hash();
    assert_eq!(status(p.clone()).await, (json!("0x2"), json!("0x0")));
    let content: Value = p.request("txpool_content", ()).await.unwrap();
    let mine = &content["pending"][format!("{:#x}", sender.address)];
    assert_eq!(mine["0"]["hash"], json!(first));
    assert_eq!(mine["1"]["hash"], json!(second));
    assert_eq!(content["queued"], json!({}));

    // Replacing nonce 1 needs 10% more in both fee cap and tip (geth's price bump).
    let err = p
        .send_raw_transaction(transfer(1, 1_000_000_000, 10))
        .await
        .unwrap_err();
    assert_eq!(rpc_error(err).message, "already known");
    for (max_fee, tip) in [
        (1_000_000_001, 10),
        (1_099_999_999, 11),
        (1_100_000_000, 10),
    ] {
        let err = p
            .send_raw_transaction(transfer(1, max_fee, tip))
            .await
            .unwrap_err();
        assert_eq!(
            rpc_error(err).message,
            "replacement transaction underpriced"
        );
    }
    let replacement = p
        .send_raw_transaction(transfer(1, 1_100_000_000, 11))
        .await
        .unwrap()
        .tx_hash();
    let content: Value = p.request("txpool_content", ()).await.unwrap();
    let mine = &content["pending"][format!("{:#x}", sender.address)];
    assert_eq!(mine["1"]["hash"], json!(replacement));
    assert_eq!(status(p.clone()).await.0, json!("0x2"));

    // Dropping: one by hash (unknown hashes answer null), then all; the block mined is empty.
    let dropped: Value = p.request("anvil_dropTransaction", [second]).await.unwrap();
    assert_eq!(dropped, Value::Null, "replaced, so no longer pooled");
    let dropped: Value = p
        .request("anvil_dropTransaction", [replacement])
        .await
        .unwrap();
    assert_eq!(dropped, json!(replacement));
    assert_eq!(status(p.clone()).await.0, json!("0x1"));
    let _: Value = p.request("anvil_dropAllTransactions", ()).await.unwrap();
    assert_eq!(status(p.clone()).await.0, json!("0x0"));
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    let block: Value = p
        .request("eth_getBlockByNumber", ("latest", false))
        .await
        .unwrap();
    assert_eq!(block["transactions"], json!([]));
    assert_eq!(p.get_balance(h160(to), None).await.unwrap(), 0.into());

    // State setters act on the head state at once.
    let account = Address::repeat_byte(0x77);
    let _: Value = p
        .request("anvil_setNonce", (account, "0x2a"))
        .await
        .unwrap();
    assert_eq!(
        p.get_transaction_count(h160(account), None).await.unwrap(),
        42.into()
    );
    let _: Value = p
        .request("anvil_setCode", (account, "0x6001"))
        .await
        .unwrap();
    assert_eq!(
        p.get_code(h160(account), None).await.unwrap().as_ref(),
        [0x60, 0x01]
    );
    let set: bool = p
        .request(
            "anvil_setStorageAt",
            (account, "0x5", B256::with_last_byte(9)),
        )
        .await
        .unwrap();
    assert!(set);
    let word: B256 = p
        .request("eth_getStorageAt", (account, "0x5", "latest"))
        .await
        .unwrap();
    assert_eq!(word, B256::with_last_byte(9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_block_base_fee_can_be_set_and_underpriced_transactions_wait() {
    let (_handle, p) = start().await;
    let sender = Sender::dev(3);
    let to = Address::repeat_byte(0x67);
    let transfer = |nonce: u64, max_fee: u128| {
        let mut tx = sender.tx(Some(to), vec![], 21_000);
        tx.nonce = nonce;
        tx.max_fee_per_gas = max_fee;
        tx.value = U256::from(1);
        sign_1559(tx, &sender.key)
    };
    let pending = |p: ethers_providers::Provider<ethers_providers::Http>| async move {
        let s: Value = p.request("txpool_status", ()).await.unwrap();
        s["pending"].clone()
    };

    // Two transactions pooled at 1 gwei; then the base fee goes to 2 gwei.
    let _: Value = p.request("evm_setAutomine", [false]).await.unwrap();
    p.send_raw_transaction(transfer(0, 1_000_000_000))
        .await
        .unwrap();
    p.send_raw_transaction(transfer(1, 1_000_000_000))
        .await
        .unwrap();
    let _: Value = p
        .request("anvil_setNextBlockBaseFeePerGas", ["0x77359400"])
        .await
        .unwrap();
    let price: et::U256 = p.request("eth_gasPrice", ()).await.unwrap();
    assert_eq!(price, 2_000_000_000u64.into());
    // A new one below it is refused; the pooled ones wait, in order, through the next block.
    let err = p
        .send_raw_transaction(transfer(2, 1_500_000_000))
        .await
        .unwrap_err();
    assert!(rpc_error(err)
        .message
        .starts_with("max fee per gas less than block base fee"),);
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    let block: Value = p
        .request("eth_getBlockByNumber", ("latest", false))
        .await
        .unwrap();
    assert_eq!(block["baseFeePerGas"], json!("0x77359400"));
    assert_eq!(block["transactions"], json!([]));
    assert_eq!(pending(p.clone()).await, json!("0x2"));
    // Back down: both are mined.
    let _: Value = p
        .request("anvil_setNextBlockBaseFeePerGas", ["0x5f5e100"])
        .await
        .unwrap();
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    let block: Value = p
        .request("eth_getBlockByNumber", ("latest", false))
        .await
        .unwrap();
    assert_eq!(block["transactions"].as_array().unwrap().len(), 2);
    assert_eq!(pending(p.clone()).await, json!("0x0"));
    assert_eq!(p.get_balance(h160(to), None).await.unwrap(), 2.into());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_transaction_as_dev_and_impersonated_accounts() {
    let (_handle, p) = start().await;
    let to = Address::repeat_byte(0x68);
    let whale = Address::repeat_byte(0xaa);
    let send = |from: Address, value: u64| {
        let p = p.clone();
        async move {
            p.request::<_, B256>(
                "eth_sendTransaction",
                [json!({ "from": from, "to": to, "value": format!("{value:#x}") })],
            )
            .await
        }
    };

    // Not a dev account, not impersonated: refused.
    let err = send(whale, 1).await.unwrap_err();
    assert_eq!(rpc_error(err).message, "unknown account");

    // Impersonated: sent without its key, mined, reported as its own.
    let _: Value = p
        .request("anvil_setBalance", (whale, "0xde0b6b3a7640000"))
        .await
        .unwrap();
    // (Mined into a block, so that the reorg below restores a state where it is funded.)
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    let _: Value = p
        .request("anvil_impersonateAccount", [whale])
        .await
        .unwrap();
    let hash = send(whale, 7).await.unwrap();
    let tx: Value = p.request("eth_getTransactionByHash", [hash]).await.unwrap();
    assert_eq!(tx["from"], json!(whale));
    let receipt: Value = p
        .request("eth_getTransactionReceipt", [hash])
        .await
        .unwrap();
    assert_eq!(
        (receipt["from"].clone(), receipt["status"].clone()),
        (json!(whale), json!("0x1"))
    );
    assert_eq!(p.get_balance(h160(to), None).await.unwrap(), 7.into());
    // A reorg re-executes it as the same sender.
    let _: Value = p
        .request("bursar_reorg", [json!({ "depth": 1 })])
        .await
        .unwrap();
    let receipt: Value = p
        .request("eth_getTransactionReceipt", [hash])
        .await
        .unwrap();
    assert_eq!(receipt["from"], json!(whale));
    assert_eq!(p.get_balance(h160(to), None).await.unwrap(), 7.into());
    let _: Value = p
        .request("anvil_stopImpersonatingAccount", [whale])
        .await
        .unwrap();
    let err = send(whale, 1).await.unwrap_err();
    assert_eq!(rpc_error(err).message, "unknown account");

    // A dev account's transaction is signed with its key: its raw form recovers to it.
    let dev = Sender::dev(4).address;
    let hash = send(dev, 5).await.unwrap();
    let tx = p.get_transaction(h256(hash)).await.unwrap().unwrap();
    assert_eq!(tx.recover_from().unwrap(), h160(dev));
    assert_eq!(p.get_balance(h160(to), None).await.unwrap(), 12.into());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// Holding the chain's lock across requests is the point: it stands for a running transaction.
#[allow(clippy::await_holding_lock)]
async fn reads_of_finished_blocks_are_answered_while_the_chain_is_busy() {
    let (handle, p) = start().await;
    let mut sender = Sender::dev(0);
    let to = Address::repeat_byte(0x42);
    let mut tx = sender.tx(Some(to), vec![], 21_000);
    tx.value = U256::from(7);
    let pending = p
        .send_raw_transaction(sign_1559(tx, &sender.key))
        .await
        .unwrap();
    sender.nonce += 1;
    let hash = pending.tx_hash();
    let mined = p.get_transaction_receipt(hash).await.unwrap().unwrap();
    let head = mined.block_number.unwrap();
    let block = p.get_block(head).await.unwrap().unwrap();

    let busy = handle.chain.lock().unwrap();
    // Bounded, so that a read waiting for the lock fails the test instead of hanging it.
    let within = std::time::Duration::from_secs(10);
    macro_rules! unlocked {
        ($read:expr) => {
            tokio::time::timeout(within, $read)
                .await
                .expect(concat!(
                    stringify!($read),
                    " answered while the chain is locked"
                ))
                .unwrap()
        };
    }
    assert_eq!(unlocked!(p.get_transaction_receipt(hash)), Some(mined));
    assert!(unlocked!(p.get_transaction_receipt(et::H256::repeat_byte(9))).is_none());
    assert_eq!(unlocked!(p.get_transaction(hash)).unwrap().hash, hash);
    assert_eq!(unlocked!(p.get_block_number()), head);
    assert_eq!(unlocked!(p.get_block(head)), Some(block.clone()));
    assert_eq!(unlocked!(p.get_block(block.hash.unwrap())), Some(block));
    assert_eq!(unlocked!(p.get_balance(h160(to), None)), 7.into());
    assert_eq!(
        unlocked!(p.get_transaction_count(h160(sender.address), None)),
        1.into()
    );
    let all = et::Filter::new().from_block(0).to_block(head);
    assert!(unlocked!(p.get_logs(&all)).is_empty());
    assert_eq!(
        unlocked!(p.fee_history(1u64, et::BlockNumber::Latest, &[])).oldest_block,
        et::U256::from(head.as_u64())
    );
    // What needs the chain itself (here: the pool's nonce) waits for it.
    let pool_nonce =
        p.get_transaction_count(h160(sender.address), Some(et::BlockNumber::Pending.into()));
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(200), pool_nonce)
            .await
            .is_err()
    );
    drop(busy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_block_keeper_forgets_old_transactions_and_their_logs() {
    use bursar_bindings::token::ITestToken;
    use bursar_devnet::ChainConfig;
    let (_handle, p) = start_with(ChainConfig {
        transaction_block_keeper: Some(3),
        ..ChainConfig::default()
    })
    .await;
    let mut owner = Sender::dev(0);
    let token = deploy_token(&p, &mut owner).await;
    // Five mints, one block each: each logs a Transfer.
    let mut mints = Vec::new();
    for i in 1..=5u64 {
        let call = ITestToken::mintCall {
            to: Address::repeat_byte(0x70),
            value: U256::from(i),
        };
        let r = owner.send(&p, Some(token), call.abi_encode()).await;
        mints.push((r.transaction_hash, r.block_number.unwrap().as_u64()));
    }
    let receipt = |h: et::H256| {
        let p = p.clone();
        async move { p.get_transaction_receipt(h).await.unwrap() }
    };
    // The last three blocks keep their transactions; the two mints before are forgotten.
    for (h, _) in &mints[..2] {
        assert!(receipt(*h).await.is_none());
        assert!(p.get_transaction(*h).await.unwrap().is_none());
    }
    for (h, _) in &mints[2..] {
        assert!(receipt(*h).await.is_some());
    }
    // Their blocks keep their headers (hash, number, timestamp), without transactions.
    let (first, old_block) = (mints[0].0, mints[0].1);
    let block: Value = p
        .request("eth_getBlockByNumber", (format!("{old_block:#x}"), false))
        .await
        .unwrap();
    assert_eq!(block["number"], json!(format!("{old_block:#x}")));
    assert_eq!(block["transactions"], json!([]));
    // eth_getLogs returns the kept blocks' Transfers only (through the log index and without).
    let transfer = <ITestToken::Transfer as SolEvent>::SIGNATURE_HASH;
    for filter in [
        json!({ "address": token, "fromBlock": "0x0", "topics": [transfer] }),
        json!({ "fromBlock": "0x0" }),
    ] {
        let logs: Vec<et::Log> = p.request("eth_getLogs", [filter]).await.unwrap();
        let txs: Vec<et::H256> = logs.iter().filter_map(|l| l.transaction_hash).collect();
        assert_eq!(txs, mints[2..].iter().map(|m| m.0).collect::<Vec<_>>());
        assert!(!txs.contains(&first));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_history_keeps_the_last_n_block_states() {
    use bursar_devnet::ChainConfig;
    let (_handle, p) = start_with(ChainConfig {
        prune_history: Some(3),
        ..ChainConfig::default()
    })
    .await;
    let dev = Sender::dev(0).address;
    let _: Value = p.request("anvil_mine", [json!("0xa")]).await.unwrap();
    let balance_at = |n: u64| {
        let p = p.clone();
        async move {
            p.request::<_, et::U256>("eth_getBalance", (dev, format!("{n:#x}")))
                .await
        }
    };
    // Blocks 8, 9 and 10 keep their state; older ones answer geth's `header not found`.
    for n in 8..=10 {
        assert!(balance_at(n).await.is_ok(), "block {n}");
    }
    let err = balance_at(7).await.unwrap_err();
    assert_eq!(rpc_error(err).message, "header not found");
    // Blocks themselves are kept; a reorg reaches back as far as the states do.
    let block: Value = p
        .request("eth_getBlockByNumber", ("0x1", false))
        .await
        .unwrap();
    assert_eq!(block["number"], json!("0x1"));
    let ok: Result<Value, _> = p.request("bursar_reorg", [json!({ "depth": 2 })]).await;
    assert!(ok.is_ok(), "{ok:?}");
    let err = p
        .request::<_, Value>("bursar_reorg", [json!({ "depth": 5 })])
        .await
        .unwrap_err();
    assert!(rpc_error(err).message.contains("is not kept"));
}
