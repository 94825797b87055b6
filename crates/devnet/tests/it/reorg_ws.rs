//! Filters, reorgs and WebSocket subscriptions, driven by ethers-providers (HTTP and `Ws`):
//! logs of the real counterparty registry disappear in a reorg (reported as `removed: true` to
//! filters and subscribers) and reappear in a block with a different hash.

use std::time::Duration;

use crate::common::rpc_client::*;
use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::counterparty::ICounterpartyRegistry as reg;
use ethers_core::types as et;
use ethers_providers::{Middleware, Provider, StreamExt, Ws};
use serde_json::{json, Value};

async fn ws(handle: &bursar_devnet::Handle) -> Provider<Ws> {
    Provider::<Ws>::connect(handle.ws_url.as_str())
        .await
        .expect("websocket connects")
}

async fn next<T>(s: &mut (impl futures_util::Stream<Item = T> + Unpin)) -> T {
    tokio::time::timeout(Duration::from_secs(10), s.next())
        .await
        .expect("notification within 10s")
        .expect("stream open")
}

async fn block(p: &Provider<impl ethers_providers::JsonRpcClient>, n: u64) -> et::Block<et::H256> {
    p.get_block(n).await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_subscriptions_see_heads_and_logs() {
    let (handle, p) = start().await;
    let mut owner = Sender::dev(0);
    let registry = deploy_registry(&p, &mut owner).await;
    let w = ws(&handle).await;
    // The same methods answer over WS.
    assert_eq!(w.get_block_number().await.unwrap(), 2.into());
    let mut heads = w.subscribe_blocks().await.unwrap();
    let mut logs = w
        .subscribe_logs(&et::Filter::new().address(h160(registry)))
        .await
        .unwrap();
    let mut entries = w
        .subscribe_logs(
            &et::Filter::new()
                .address(h160(registry))
                .topic0(h256(reg::EntrySet::SIGNATURE_HASH)),
        )
        .await
        .unwrap();

    // Mined over HTTP, seen over WS.
    let created = owner
        .send(&p, Some(registry), reg::createListCall {}.abi_encode())
        .await;
    let set = reg::setEntryCall {
        listId: U256::from(1),
        counterparty: Address::repeat_byte(0xbe),
        allowed: true,
        maxPerPayment: U256::from(5),
        label: B256::ZERO,
    };
    let entry = owner.send(&p, Some(registry), set.abi_encode()).await;

    let h3 = next(&mut heads).await;
    let h4 = next(&mut heads).await;
    assert_eq!(h3.number, Some(3.into()));
    assert_eq!(h3.hash, created.block_hash);
    assert_eq!(h4.number, Some(4.into()));
    assert_eq!(h4.parent_hash, h3.hash.unwrap());
    let l1 = next(&mut logs).await;
    let l2 = next(&mut logs).await;
    assert_eq!(l1.transaction_hash, Some(created.transaction_hash));
    assert_eq!(l2.transaction_hash, Some(entry.transaction_hash));
    assert_eq!(l1.removed, Some(false));
    let e = next(&mut entries).await;
    assert_eq!(e.transaction_hash, Some(entry.transaction_hash));
    assert_eq!(e.block_hash, entry.block_hash);

    // Dropping a stream makes ethers send `eth_unsubscribe` with the server's id (its
    // `SubscriptionStream::unsubscribe` sends the client-side alias instead, which no server
    // knows); the other subscriptions and the connection keep working.
    drop(heads);
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    let again = owner
        .send(&p, Some(registry), reg::createListCall {}.abi_encode())
        .await;
    assert_eq!(
        next(&mut logs).await.transaction_hash,
        Some(again.transaction_hash)
    );
    assert_eq!(w.get_block_number().await.unwrap(), 6.into());
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reorg_removes_and_restores_logs() {
    let (handle, p) = start().await;
    let mut owner = Sender::dev(0);
    let registry = deploy_registry(&p, &mut owner).await;
    let w = ws(&handle).await;
    let mut ws_logs = w
        .subscribe_logs(&et::Filter::new().address(h160(registry)))
        .await
        .unwrap();
    let mut ws_heads = w.subscribe_blocks().await.unwrap();
    let log_filter: et::U256 = p
        .request(
            "eth_newFilter",
            [json!({ "address": registry, "fromBlock": "0x0" })],
        )
        .await
        .unwrap();
    let block_filter: et::U256 = p.request("eth_newBlockFilter", ()).await.unwrap();

    // createList in block 3 (kept as raw bytes to re-add later), an empty block 4 on top.
    let raw = sign_1559(
        owner.tx(
            Some(registry),
            reg::createListCall {}.abi_encode(),
            1_000_000,
        ),
        &owner.key,
    );
    let tx = p.send_raw_transaction(raw.clone()).await.unwrap().tx_hash();
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    let old3 = block(&p, 3).await;
    let old4 = block(&p, 4).await;
    assert_eq!(old3.transactions, vec![tx]);
    let logs = p
        .get_logs(&et::Filter::new().address(h160(registry)).from_block(0))
        .await
        .unwrap();
    assert_eq!(logs.len(), 1);
    let changes: Vec<et::Log> = p
        .request("eth_getFilterChanges", [log_filter])
        .await
        .unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].removed, Some(false));
    let hashes: Vec<et::H256> = p
        .request("eth_getFilterChanges", [block_filter])
        .await
        .unwrap();
    assert_eq!(hashes, vec![old3.hash.unwrap(), old4.hash.unwrap()]);
    let l = next(&mut ws_logs).await;
    assert_eq!((l.transaction_hash, l.removed), (Some(tx), Some(false)));
    assert_eq!(next(&mut ws_heads).await.hash, old3.hash);
    assert_eq!(next(&mut ws_heads).await.hash, old4.hash);

    // Reorg blocks 3..4 without the createList transaction.
    let out: Value = p
        .request("bursar_reorg", [json!({ "depth": 2, "drop": [tx] })])
        .await
        .unwrap();
    assert_eq!(out["blocks"].as_array().unwrap().len(), 2, "{out}");
    assert_eq!(p.get_block_number().await.unwrap(), 4.into());
    assert!(p
        .get_logs(&et::Filter::new().address(h160(registry)).from_block(0))
        .await
        .unwrap()
        .is_empty());
    assert!(p.get_transaction_receipt(tx).await.unwrap().is_none());
    let new2 = block(&p, 2).await;
    let new3 = block(&p, 3).await;
    let new4 = block(&p, 4).await;
    assert_ne!(new3.hash, old3.hash);
    assert_ne!(new4.hash, old4.hash);
    assert!(new3.transactions.is_empty());
    assert_eq!(new3.parent_hash, new2.hash.unwrap());
    assert_eq!(new4.parent_hash, new3.hash.unwrap());
    assert_eq!(new3.timestamp, old3.timestamp);
    // The list is gone from state too (state history rewound to block 2).
    let count = |at: u64| {
        let p = p.clone();
        async move {
            let out: alloy_primitives::Bytes = p
                .request(
                    "eth_call",
                    (
                        json!({ "to": registry, "data": alloy_primitives::Bytes::from(reg::listCountCall {}.abi_encode()) }),
                        format!("{at:#x}"),
                    ),
                )
                .await
                .unwrap();
            reg::listCountCall::abi_decode_returns(&out).unwrap()
        }
    };
    assert_eq!(count(4).await, U256::ZERO);
    assert_eq!(count(3).await, U256::ZERO);
    let changes: Vec<et::Log> = p
        .request("eth_getFilterChanges", [log_filter])
        .await
        .unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].removed, Some(true));
    assert_eq!(changes[0].block_hash, old3.hash);
    assert_eq!(changes[0].transaction_hash, Some(tx));
    let hashes: Vec<et::H256> = p
        .request("eth_getFilterChanges", [block_filter])
        .await
        .unwrap();
    assert_eq!(hashes, vec![new3.hash.unwrap(), new4.hash.unwrap()]);
    let l = next(&mut ws_logs).await;
    assert_eq!((l.transaction_hash, l.removed), (Some(tx), Some(true)));
    assert_eq!(l.block_hash, old3.hash);
    assert_eq!(next(&mut ws_heads).await.hash, new3.hash);
    assert_eq!(next(&mut ws_heads).await.hash, new4.hash);

    // Re-add it with anvil_reorg: block 4 replaced by one holding the transaction.
    let _: Value = p
        .request("anvil_reorg", json!([1, [[raw, 0]]]))
        .await
        .unwrap();
    let logs = p
        .get_logs(&et::Filter::new().address(h160(registry)).from_block(0))
        .await
        .unwrap();
    assert_eq!(logs.len(), 1);
    let again = block(&p, 4).await;
    assert_eq!(logs[0].block_number, Some(4.into()));
    assert_eq!(logs[0].block_hash, again.hash);
    assert_ne!(again.hash, old3.hash);
    assert_ne!(again.hash, new4.hash);
    assert_eq!(again.parent_hash, new3.hash.unwrap());
    assert_eq!(count(4).await, U256::from(1));
    let r = p.get_transaction_receipt(tx).await.unwrap().unwrap();
    assert_eq!(r.block_hash, again.hash);
    let changes: Vec<et::Log> = p
        .request("eth_getFilterChanges", [log_filter])
        .await
        .unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].removed, changes[0].block_hash),
        (Some(false), again.hash)
    );
    let all: Vec<et::Log> = p.request("eth_getFilterLogs", [log_filter]).await.unwrap();
    assert_eq!(all.len(), 1);
    let l = next(&mut ws_logs).await;
    assert_eq!((l.removed, l.block_hash), (Some(false), again.hash));
    assert_eq!(next(&mut ws_heads).await.hash, again.hash);

    // reorder: two transfers in one block come back in reverse order.
    let a = Sender::dev(1);
    let b = Sender::dev(2);
    let _: Value = p.request("evm_setAutomine", [false]).await.unwrap();
    let transfer = |s: &Sender| {
        let mut t = s.tx(Some(Address::repeat_byte(0x33)), vec![], 21_000);
        t.value = U256::from(1);
        sign_1559(t, &s.key)
    };
    let ta = p
        .send_raw_transaction(transfer(&a))
        .await
        .unwrap()
        .tx_hash();
    let tb = p
        .send_raw_transaction(transfer(&b))
        .await
        .unwrap()
        .tx_hash();
    let _: Value = p.request("evm_mine", ()).await.unwrap();
    assert_eq!(block(&p, 5).await.transactions, vec![ta, tb]);
    let _: Value = p
        .request("bursar_reorg", [json!({ "depth": "0x1", "reorder": true })])
        .await
        .unwrap();
    assert_eq!(block(&p, 5).await.transactions, vec![tb, ta]);

    // Replaying the whole chain (deployment and activation included) against genesis: the
    // activation is re-executed on the restored (pre-activation) programs, the state matches.
    let out: Value = p
        .request("bursar_reorg", [json!({ "depth": 5 })])
        .await
        .unwrap();
    assert_eq!(out["excluded"], json!([]), "{out}");
    assert_eq!(count(5).await, U256::from(1));
    let logs = p
        .get_logs(&et::Filter::new().address(h160(registry)).from_block(0))
        .await
        .unwrap();
    assert_eq!(logs.len(), 1);
    assert_ne!(logs[0].block_hash, again.hash);
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filter_lifecycle_and_errors() {
    let (handle, p) = start().await;
    let id: et::U256 = p.request("eth_newBlockFilter", ()).await.unwrap();
    let none: Vec<et::H256> = p.request("eth_getFilterChanges", [id]).await.unwrap();
    assert!(none.is_empty());
    let _: Value = p.request("anvil_mine", [2]).await.unwrap();
    let two: Vec<et::H256> = p.request("eth_getFilterChanges", [id]).await.unwrap();
    assert_eq!(
        two,
        vec![
            block(&p, 1).await.hash.unwrap(),
            block(&p, 2).await.hash.unwrap()
        ]
    );
    let none: Vec<et::H256> = p.request("eth_getFilterChanges", [id]).await.unwrap();
    assert!(none.is_empty());
    // A block filter has no logs to list.
    let e = rpc_error(
        p.request::<_, Value>("eth_getFilterLogs", [id])
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.message.as_str()), (-32000, "filter not found"));
    assert!(p
        .request::<_, bool>("eth_uninstallFilter", [id])
        .await
        .unwrap());
    assert!(!p
        .request::<_, bool>("eth_uninstallFilter", [id])
        .await
        .unwrap());
    for bad in [json!(id), json!("0xdead"), json!("nonsense")] {
        let e = rpc_error(
            p.request::<_, Value>("eth_getFilterChanges", [bad])
                .await
                .unwrap_err(),
        );
        assert_eq!((e.code, e.message.as_str()), (-32000, "filter not found"));
    }
    // ethers' own filter API over the same methods.
    let f = p
        .new_filter(ethers_providers::FilterKind::Logs(
            &et::Filter::new().address(h160(Address::repeat_byte(1))),
        ))
        .await
        .unwrap();
    let changes: Vec<et::Log> = p.get_filter_changes(f).await.unwrap();
    assert!(changes.is_empty());
    assert!(p.uninstall_filter(f).await.unwrap());

    // Bad params.
    let code = |r: Result<Value, ethers_providers::ProviderError>| rpc_error(r.unwrap_err()).code;
    assert_eq!(code(p.request("eth_newFilter", ["x"]).await), -32602);
    assert_eq!(
        code(p.request("eth_newFilter", [json!({ "topics": "x" })]).await),
        -32602
    );
    assert_eq!(code(p.request("eth_getFilterChanges", ()).await), -32602);
    assert_eq!(
        code(p.request("bursar_reorg", [json!({ "depth": 0 })]).await),
        -32602
    );
    assert_eq!(
        code(p.request("bursar_reorg", [json!({ "depth": 3 })]).await),
        -32602
    );
    assert_eq!(
        code(p.request("bursar_reorg", [json!({ "deep": 1 })]).await),
        -32602
    );
    assert_eq!(
        code(p.request("anvil_reorg", json!([1, [["0x02c0", 1]]])).await),
        -32602
    );
    assert_eq!(
        code(p.request("anvil_reorg", json!([1, [["0x02c0", 0]]])).await),
        -32000
    );
    // Nothing changed.
    assert_eq!(p.get_block_number().await.unwrap(), 2.into());
    let w = ws(&handle).await;
    let e = rpc_error(
        w.request::<_, Value>("eth_subscribe", ["newPendingTransactions"])
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, -32602);
    assert!(!w
        .request::<_, bool>("eth_unsubscribe", ["0x99"])
        .await
        .unwrap());
    handle.shutdown().await;
}

type RawWs =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn frame(sock: &mut RawWs) -> Value {
    use tokio_tungstenite::tungstenite::Message;
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), sock.next())
            .await
            .expect("frame within 10s")
            .expect("open")
            .unwrap();
        if let Message::Text(t) = msg {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

async fn ask(sock: &mut RawWs, body: &str) -> Value {
    use futures_util::SinkExt;
    sock.send(tokio_tungstenite::tungstenite::Message::Text(body.into()))
        .await
        .unwrap();
    frame(sock).await
}

/// Exact frames: responses, the notification envelope, subscriptions inside a batch,
/// `eth_unsubscribe` with the server's id, and errors for malformed frames.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_websocket_frames() {
    let (handle, p) = start().await;
    let (mut sock, _) = tokio_tungstenite::connect_async(handle.ws_url.as_str())
        .await
        .unwrap();
    assert_eq!(ask(&mut sock, "{nope").await["error"]["code"], -32700);
    assert_eq!(ask(&mut sock, "[]").await["error"]["code"], -32600);
    let r = ask(
        &mut sock,
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#,
    )
    .await;
    assert_eq!(r, json!({ "jsonrpc": "2.0", "id": 1, "result": "0x64aba" }));
    let r = ask(
        &mut sock,
        r#"[{"jsonrpc":"2.0","id":2,"method":"eth_subscribe","params":["newHeads"]},{"jsonrpc":"2.0","id":3,"method":"eth_subscribe","params":["logs",{"address":"0x0000000000000000000000000000000000000071"}]}]"#,
    )
    .await;
    let heads = r[0]["result"].as_str().unwrap().to_string();
    let logs = r[1]["result"].as_str().unwrap().to_string();
    assert_ne!(heads, logs);
    let r = ask(
        &mut sock,
        r#"{"jsonrpc":"2.0","id":4,"method":"eth_subscribe","params":["logs",{"topics":"x"}]}"#,
    )
    .await;
    assert_eq!(r["error"]["code"], -32602);

    let _: Value = p.request("evm_mine", ()).await.unwrap();
    let n = frame(&mut sock).await;
    assert_eq!(n["jsonrpc"], "2.0");
    assert_eq!(n["method"], "eth_subscription");
    assert_eq!(n["params"]["subscription"], json!(heads));
    assert_eq!(n["params"]["result"]["number"], "0x1");
    assert_eq!(
        n["params"]["result"]["hash"],
        json!(block(&p, 1).await.hash.unwrap())
    );
    assert!(n.get("id").is_none());

    let r = ask(
        &mut sock,
        &format!(r#"{{"jsonrpc":"2.0","id":5,"method":"eth_unsubscribe","params":["{heads}"]}}"#),
    )
    .await;
    assert_eq!(r["result"], true);
    // ArbWasm's ProgramActivated log reaches the `logs` subscription; no more heads.
    let mut owner = Sender::dev(0);
    deploy_registry(&p, &mut owner).await;
    let n = frame(&mut sock).await;
    assert_eq!(n["params"]["subscription"], json!(logs));
    assert_eq!(n["params"]["result"]["removed"], false);
    assert_eq!(n["params"]["result"]["blockNumber"], "0x3");
    handle.shutdown().await;
}

/// `eth_getLogs` narrowed by the log index (address / topic criteria) returns exactly what a
/// full scan of the canonical chain filtered by hand returns, after mining, a reorg that drops
/// transactions and a snapshot revert.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexed_log_queries_equal_a_full_scan_across_reorgs_and_reverts() {
    use bursar_bindings::token::ITestToken;
    let (_handle, p) = start().await;
    let mut owner = Sender::dev(0);
    let token = deploy_token(&p, &mut owner).await;
    let recipients: Vec<Address> = (1..=5u8).map(Address::repeat_byte).collect();
    // A small deterministic generator: which recipient, how much.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut mint = Vec::new();
    for i in 0..24u64 {
        let to = recipients[next(5) as usize];
        let call = if i % 4 == 3 {
            ITestToken::approveCall {
                spender: to,
                value: U256::from(i),
            }
            .abi_encode()
        } else {
            ITestToken::mintCall {
                to,
                value: U256::from(1 + next(1000)),
            }
            .abi_encode()
        };
        mint.push(call);
    }
    let mut hashes = Vec::new();
    for call in &mint[..16] {
        let r = owner.send(&p, Some(token), call.clone()).await;
        hashes.push(r.transaction_hash);
    }
    // A reorg rebuilds the last 4 blocks without two of their transactions.
    let drop: Vec<_> = hashes[13..15].to_vec();
    let _: Value = p
        .request("bursar_reorg", [json!({ "depth": 4, "drop": drop })])
        .await
        .unwrap();
    owner.nonce = p
        .get_transaction_count(h160(owner.address), None)
        .await
        .unwrap()
        .as_u64();
    // A snapshot, more blocks, and a revert to it.
    let snap: et::U256 = p.request("evm_snapshot", ()).await.unwrap();
    for call in &mint[16..20] {
        owner.send(&p, Some(token), call.clone()).await;
    }
    let _: bool = p.request("evm_revert", [snap]).await.unwrap();
    owner.nonce = p
        .get_transaction_count(h160(owner.address), None)
        .await
        .unwrap()
        .as_u64();
    for call in &mint[20..] {
        owner.send(&p, Some(token), call.clone()).await;
    }

    let head = p.get_block_number().await.unwrap().as_u64();
    let all = p
        .get_logs(&et::Filter::new().from_block(0).to_block(head))
        .await
        .unwrap();
    assert!(all.len() >= 18, "{}", all.len());
    let transfer = B256::from(ITestToken::Transfer::SIGNATURE_HASH);
    let approval = B256::from(ITestToken::Approval::SIGNATURE_HASH);
    let topic_of = |a: Address| et::H256::from_slice(&B256::left_padding_from(a.as_slice()).0);
    for round in 0..40u64 {
        let from = next(head + 1);
        let to = from + next(head + 1 - from);
        let mut f = et::Filter::new().from_block(from).to_block(to);
        let address = match round % 3 {
            0 => vec![token],
            1 => vec![token, Address::repeat_byte(0x77)],
            _ => vec![],
        };
        if !address.is_empty() {
            f = f.address(address.iter().map(|a| h160(*a)).collect::<Vec<_>>());
        }
        let topic0 = match next(3) {
            0 => Some(vec![transfer]),
            1 => Some(vec![transfer, approval]),
            _ => None,
        };
        if let Some(t) = &topic0 {
            f = f.topic0(t.iter().map(|t| h256(*t)).collect::<Vec<_>>());
        }
        let recipient = (next(2) == 0).then(|| recipients[next(5) as usize]);
        if let Some(r) = recipient {
            f = f.topic2(topic_of(r));
        }
        let got = p.get_logs(&f).await.unwrap();
        let want: Vec<_> = all
            .iter()
            .filter(|l| {
                let n = l.block_number.unwrap().as_u64();
                let t = topics(l);
                (from..=to).contains(&n)
                    && (address.is_empty() || address.contains(&Address::from(l.address.0)))
                    && topic0.as_ref().is_none_or(|alts| alts.contains(&t[0]))
                    && recipient
                        .is_none_or(|r| t.get(2) == Some(&B256::left_padding_from(r.as_slice())))
            })
            .cloned()
            .collect();
        assert_eq!(got, want, "round {round}: {f:?}");
    }
}

/// Interval mining mines blocks on its own, from `--block-time` (`RpcConfig::block_time`) or
/// `evm_setIntervalMining`, and stops when set to 0; waits on `newHeads`, not on a clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interval_mining_mines_on_its_own_and_can_be_switched_off() {
    let (handle, p) = start().await;
    let w = ws(&handle).await;
    let mut heads = w.subscribe_blocks().await.unwrap();
    let _: Value = p.request("evm_setIntervalMining", [1]).await.unwrap();
    let automine: bool = p.request("anvil_getAutomine", ()).await.unwrap();
    assert!(!automine, "interval mining turns automine off");
    assert_eq!(next(&mut heads).await.number, Some(1.into()));
    let _: Value = p.request("evm_setIntervalMining", [0]).await.unwrap();
    assert_eq!(handle.chain.lock().unwrap().interval_mining(), None);

    // From the configuration: a block every 50 ms.
    let handle = bursar_devnet::spawn(bursar_devnet::RpcConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        block_time: Some(Duration::from_millis(50)),
        ..Default::default()
    })
    .await
    .unwrap();
    let w = ws(&handle).await;
    let mut heads = w.subscribe_blocks().await.unwrap();
    let first = next(&mut heads).await.number.unwrap();
    assert_eq!(next(&mut heads).await.number, Some(first + 1));
}
