//! Bad input never takes the node down and always gets the right JSON-RPC error: a table of
//! malformed requests (in-process, over HTTP and over WebSocket), size limits, and proptest
//! fuzzing of the request handler (`rpc::handle_body`) and the raw-transaction decoder.

use std::sync::{Arc, Mutex};

use crate::common::rpc_client::{sign_1559, sign_legacy, start, Sender, CHAIN_ID};
use alloy_consensus::{SignableTransaction, TxEnvelope, TxLegacy};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, Bytes, Signature, TxKind, U256};
use bursar_devnet::rpc::{decode_raw_transaction, handle_body, ErrorCode, MAX_BODY_BYTES};
use bursar_devnet::Chain;
use futures_util::{SinkExt, StreamExt};
use proptest::prelude::*;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

type Shared = Arc<Mutex<Chain>>;

fn shared() -> Shared {
    Arc::new(Mutex::new(Chain::default()))
}

const ADDR: &str = "0x5555555555555555555555555555555555555555";

fn req(method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string()
}

/// Asserts `v` is one well-formed JSON-RPC 2.0 response object.
fn assert_response(v: &Value) {
    let o = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"));
    assert_eq!(o.get("jsonrpc"), Some(&json!("2.0")), "{v}");
    assert!(
        matches!(
            o.get("id"),
            Some(Value::Null | Value::Number(_) | Value::String(_))
        ),
        "bad id: {v}"
    );
    match (o.get("result"), o.get("error")) {
        (Some(_), None) => {}
        (None, Some(e)) => {
            assert!(e["code"].is_i64(), "{v}");
            assert!(e["message"].is_string(), "{v}");
        }
        _ => panic!("want exactly one of result/error: {v}"),
    }
}

/// Asserts a reply text is a well-formed response or batch (never a crash answer: -32603).
fn assert_reply(text: &str) -> Value {
    let v: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("reply is not JSON ({e}): {text}"));
    let items = match &v {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    for item in &items {
        assert_response(item);
        assert_ne!(item["error"]["code"], -32603, "handler panicked: {item}");
    }
    v
}

/// A legacy transfer from dev account 0 with the given tweaks, signed.
fn legacy(value: U256, tweak: impl FnOnce(&mut TxLegacy)) -> Vec<u8> {
    let mut tx = TxLegacy {
        chain_id: Some(CHAIN_ID),
        nonce: 0,
        gas_price: 1_000_000_000,
        gas_limit: 21_000,
        to: TxKind::Call(Address::repeat_byte(0x55)),
        value,
        input: Bytes::new(),
    };
    tweak(&mut tx);
    sign_legacy(tx, &Sender::dev(0).key).to_vec()
}

fn hex(b: &[u8]) -> String {
    format!("0x{}", alloy_primitives::hex::encode(b))
}

/// `(request body, expected code, expected message fragment)`: one case per kind of bad input.
fn cases() -> Vec<(String, i64, String)> {
    let good = legacy(U256::from(1), |_| {});
    let mut trailing = good.clone();
    trailing.push(0x00);
    // r = s = 0: decodes, but no sender can be recovered.
    let unsigned = {
        let tx = TxLegacy {
            chain_id: Some(CHAIN_ID),
            gas_limit: 21_000,
            to: TxKind::Call(Address::repeat_byte(0x55)),
            ..Default::default()
        };
        let signed = tx.into_signed(Signature::new(U256::ZERO, U256::ZERO, false));
        TxEnvelope::from(signed).encoded_2718()
    };
    let c = |body: String, code: i64, msg: &str| (body, code, msg.to_owned());
    vec![
        c("{not json".into(), -32700, "parse error"),
        c("".into(), -32700, "parse error"),
        c("42".into(), -32600, "invalid request"),
        c("null".into(), -32600, "invalid request"),
        c("[]".into(), -32600, "empty batch"),
        c(
            r#"{"jsonrpc":"2.0","id":1}"#.into(),
            -32600,
            "invalid request",
        ),
        c(
            r#"{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}"#.into(),
            -32600,
            "invalid request",
        ),
        c(
            r#"{"id":1,"method":"eth_chainId"}"#.into(),
            -32600,
            "invalid request",
        ),
        c(
            r#"{"jsonrpc":"2.0","id":{},"method":"eth_chainId"}"#.into(),
            -32600,
            "invalid request",
        ),
        c(
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#.into(),
            -32600,
            "invalid request",
        ),
        c(
            req("eth_nope", json!([])),
            -32601,
            "the method eth_nope does not exist/is not available",
        ),
        c(
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":{}}"#.into(),
            -32602,
            "non-array args",
        ),
        c(
            req("eth_blockNumber", json!([1])),
            -32602,
            "too many arguments, want at most 0",
        ),
        c(
            req("eth_getBalance", json!([])),
            -32602,
            "missing value for required argument 0",
        ),
        c(
            req("eth_getBalance", json!(["0x12"])),
            -32602,
            "invalid argument 0",
        ),
        c(
            req("eth_getBalance", json!([format!("{ADDR}55")])),
            -32602,
            "invalid argument 0",
        ),
        c(
            req(
                "eth_getBalance",
                json!(["0xzz55555555555555555555555555555555555555"]),
            ),
            -32602,
            "invalid argument 0",
        ),
        c(
            req("eth_getBalance", json!([ADDR, "lastest"])),
            -32602,
            "invalid argument 1: invalid block number or tag",
        ),
        c(
            req("eth_getBalance", json!([ADDR, "0x"])),
            -32602,
            "empty hex number",
        ),
        c(
            req("eth_getBalance", json!([ADDR, "0x+1"])),
            -32602,
            "invalid hex string",
        ),
        c(
            req("eth_getBalance", json!([ADDR, "0x10000000000000000"])),
            -32602,
            "hex number > 64 bits",
        ),
        c(
            req("eth_getBalance", json!([ADDR, {"foo": 1}])),
            -32602,
            "invalid block selector",
        ),
        c(
            req("eth_getBlockByNumber", json!(["latest", "yes"])),
            -32602,
            "invalid argument 1",
        ),
        c(
            req("eth_call", json!([{"to": ADDR, "gas": "0xg"}])),
            -32602,
            "invalid argument 0",
        ),
        c(
            req("eth_call", json!(["0x00"])),
            -32602,
            "invalid argument 0",
        ),
        c(
            req("eth_feeHistory", json!(["0x1", "latest", [50, 10]])),
            -32602,
            "invalid reward percentile",
        ),
        c(
            req("eth_getLogs", json!([{"topics": "x"}])),
            -32602,
            "invalid argument 0",
        ),
        c(
            req("anvil_mine", json!(["0xffffffffffffffff"])),
            -32602,
            "at most",
        ),
        c(
            req("evm_setNextBlockTimestamp", json!(["0xffffffffffffffff"])),
            -32602,
            "timestamp",
        ),
        c(
            req("evm_increaseTime", json!(["0xffffffffffffffff"])),
            -32602,
            "clock offset",
        ),
        c(
            req("anvil_mine", json!(["0x2", "0xffffffffffffffff"])),
            -32602,
            "timestamps",
        ),
        c(
            req("eth_sendRawTransaction", json!(["0x0"])),
            -32602,
            "invalid argument 0",
        ),
        c(
            req("eth_sendRawTransaction", json!([42])),
            -32602,
            "invalid argument 0",
        ),
        c(
            req("eth_sendRawTransaction", json!(["0x"])),
            -32000,
            "typed transaction too short",
        ),
        c(
            req("eth_sendRawTransaction", json!(["0x02"])),
            -32000,
            "typed transaction too short",
        ),
        c(
            req("eth_sendRawTransaction", json!(["0x05c0"])),
            -32000,
            "transaction type not supported",
        ),
        c(
            req("eth_sendRawTransaction", json!(["0x03c0"])),
            -32000,
            "transaction type not supported",
        ),
        c(
            req("eth_sendRawTransaction", json!(["0x02c0ffee"])),
            -32000,
            "rlp: ",
        ),
        c(
            req("eth_sendRawTransaction", json!(["0xf8deadbeef"])),
            -32000,
            "rlp: ",
        ),
        c(
            req("eth_sendRawTransaction", json!([hex(&trailing)])),
            -32000,
            "rlp: ",
        ),
        c(
            req("eth_sendRawTransaction", json!([hex(&unsigned)])),
            -32000,
            "invalid sender",
        ),
        // gas * price + value beyond 256 bits: the cost used to wrap around and the
        // transaction was accepted.
        c(
            req(
                "eth_sendRawTransaction",
                json!([hex(&legacy(U256::MAX, |_| {}))]),
            ),
            -32000,
            "insufficient funds for gas * price + value",
        ),
        c(
            req(
                "eth_sendRawTransaction",
                json!([hex(&legacy(U256::from(1), |t| t.chain_id = Some(1)))]),
            ),
            -32000,
            "invalid chain id for signer",
        ),
    ]
}

fn check_case(body: &str, reply: &Value, code: i64, msg: &str) {
    assert_eq!(reply["error"]["code"], code, "{body} -> {reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains(msg), "{body} -> {message:?}, want {msg:?}");
    // Parse errors and unreadable requests carry a null id; others echo theirs.
    let want_id = match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(o)) if matches!(o.get("id"), Some(Value::Number(_))) => json!(1),
        _ => Value::Null,
    };
    assert_eq!(reply["id"], want_id, "{body} -> {reply}");
}

#[test]
fn every_kind_of_bad_input_gets_its_error() {
    let chain = shared();
    for (body, code, msg) in cases() {
        let reply = assert_reply(&handle_body(&chain, body.as_bytes()));
        check_case(&body, &reply, code, &msg);
    }
    // The node still works, and nothing was mined by the bad transactions.
    let reply = assert_reply(&handle_body(
        &chain,
        req("eth_blockNumber", json!([])).as_bytes(),
    ));
    assert_eq!(reply["result"], "0x0");
}

#[test]
fn batches_answer_every_entry_and_notifications_get_nothing() {
    let chain = shared();
    let body = json!([
        { "jsonrpc": "2.0", "id": 1, "method": "eth_chainId" },
        { "jsonrpc": "2.0", "id": "two", "method": "eth_nope" },
        5,
        { "jsonrpc": "2.0", "method": "eth_chainId" },
        { "jsonrpc": "2.0", "id": 4, "method": "eth_getBalance", "params": ["0x12"] },
        { "jsonrpc": "2.0", "id": 5, "params": [] },
    ])
    .to_string();
    let reply = assert_reply(&handle_body(&chain, body.as_bytes()));
    let items = reply.as_array().unwrap();
    // The notification (no id) is not answered; everything else is, in order.
    let summary: Vec<(Value, Value)> = items
        .iter()
        .map(|r| (r["id"].clone(), r["error"]["code"].clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (json!(1), Value::Null),
            (json!("two"), json!(-32601)),
            (Value::Null, json!(-32600)),
            (json!(4), json!(-32602)),
            (json!(5), json!(-32600)),
        ]
    );
    assert_eq!(items[0]["result"], format!("{CHAIN_ID:#x}"));
    let only_notifications = r#"[{"jsonrpc":"2.0","method":"eth_chainId"}]"#;
    assert_eq!(handle_body(&chain, only_notifications.as_bytes()), "");
    assert_eq!(
        handle_body(&chain, br#"{"jsonrpc":"2.0","method":"evm_mine"}"#),
        ""
    );
    // ...but it ran.
    let reply = assert_reply(&handle_body(
        &chain,
        req("eth_blockNumber", json!([])).as_bytes(),
    ));
    assert_eq!(reply["result"], "0x1");
}

/// A valid JSON body just over the limit.
fn oversized_body() -> String {
    let pad = "0".repeat(MAX_BODY_BYTES);
    req(
        "eth_call",
        json!([{ "to": ADDR, "data": format!("0x{pad}") }]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answers_bad_input_with_json() {
    let (handle, _) = start().await;
    let http = reqwest::Client::new();
    for (body, code, msg) in cases() {
        let resp = http
            .post(&handle.url)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{body}");
        let reply = assert_reply(&resp.text().await.unwrap());
        check_case(&body, &reply, code, &msg);
    }

    // Over the body limit: HTTP 413 with a JSON-RPC error, not axum's plain text.
    let resp = http
        .post(&handle.url)
        .body(oversized_body())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let reply = assert_reply(&resp.text().await.unwrap());
    assert_eq!(reply["error"]["code"], -32600);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("content length too large (") && message.ends_with(">5242880)"),
        "{message}"
    );

    // Just under the limit (and over axum's default 2 MB): answered normally.
    let pad = "0".repeat(MAX_BODY_BYTES - 1024);
    let big = req(
        "eth_call",
        json!([{ "to": ADDR, "data": format!("0x{pad}") }]),
    );
    assert!(big.len() < MAX_BODY_BYTES && big.len() > 4 << 20);
    let resp = http.post(&handle.url).body(big).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(assert_reply(&resp.text().await.unwrap())["result"], "0x");

    // A notification: 200 with an empty body.
    let resp = http
        .post(&handle.url)
        .body(r#"{"jsonrpc":"2.0","method":"eth_chainId"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "");

    // Still serving.
    let resp = http
        .post(&handle.url)
        .body(req("eth_chainId", json!([])))
        .send()
        .await
        .unwrap();
    assert_eq!(
        assert_reply(&resp.text().await.unwrap())["result"],
        "0x64aba"
    );
    handle.shutdown().await;
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Sends one text frame and returns the next text frame, checked to be a valid reply.
async fn roundtrip(ws: &mut Ws, body: String) -> Value {
    ws.send(Message::Text(body)).await.unwrap();
    loop {
        match ws.next().await.expect("connection open").unwrap() {
            Message::Text(t) => return assert_reply(&t),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_answers_bad_input_the_same_way() {
    let (handle, _) = start().await;
    let (mut ws, _) = tokio_tungstenite::connect_async(handle.ws_url.as_str())
        .await
        .unwrap();
    for (body, code, msg) in cases() {
        let reply = roundtrip(&mut ws, body.clone()).await;
        check_case(&body, &reply, code, &msg);
    }
    // Over the limit: answered, and the connection stays usable.
    let reply = roundtrip(&mut ws, oversized_body()).await;
    assert_eq!(reply["error"]["code"], -32600);
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("content length too large"));
    // A notification gets no answer: the next frame is the answer to the request after it.
    ws.send(Message::Text(
        json!({ "jsonrpc": "2.0", "method": "evm_mine" }).to_string(),
    ))
    .await
    .unwrap();
    let reply = roundtrip(&mut ws, req("eth_blockNumber", json!([]))).await;
    assert_eq!(
        (reply["id"].clone(), reply["result"].clone()),
        (json!(1), json!("0x1"))
    );
    drop(ws);
    handle.shutdown().await;
}

// ----- fuzzing --------------------------------------------------------------------------------

/// Methods worth aiming at (every method the devnet knows, a few it does not).
const METHODS: &[&str] = &[
    "web3_clientVersion",
    "net_version",
    "eth_chainId",
    "eth_blockNumber",
    "eth_gasPrice",
    "eth_feeHistory",
    "eth_getBalance",
    "eth_getTransactionCount",
    "eth_getCode",
    "eth_getStorageAt",
    "eth_call",
    "eth_estimateGas",
    "eth_sendRawTransaction",
    "eth_getTransactionByHash",
    "eth_getTransactionReceipt",
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getLogs",
    "eth_newFilter",
    "eth_newBlockFilter",
    "eth_getFilterChanges",
    "eth_getFilterLogs",
    "eth_uninstallFilter",
    "anvil_reorg",
    "bursar_reorg",
    "evm_mine",
    "anvil_mine",
    "evm_setAutomine",
    "anvil_getAutomine",
    "evm_setNextBlockTimestamp",
    "evm_increaseTime",
    "evm_snapshot",
    "evm_revert",
    "anvil_setBalance",
    "eth_subscribe",
    "eth_nope",
    "",
];

/// Strings that mean something to the handlers: tags, quantities, addresses, hashes.
fn interesting_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("latest".to_owned()),
        Just("earliest".to_owned()),
        Just("pending".to_owned()),
        Just("0x".to_owned()),
        Just("0xffffffffffffffff".to_owned()),
        "0x[0-9a-f]{0,4}",
        "0x[0-9a-fA-F]{40}",
        "0x[0-9a-f]{64}",
        "0x[0-9a-f]{0,300}",
        ".{0,12}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        interesting_string().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            Just("to".to_owned()),
            Just("from".to_owned()),
            Just("data".to_owned()),
            Just("gas".to_owned()),
            Just("value".to_owned()),
            Just("blockHash".to_owned()),
            Just("blockNumber".to_owned()),
            Just("fromBlock".to_owned()),
            Just("toBlock".to_owned()),
            Just("address".to_owned()),
            Just("topics".to_owned()),
            Just("depth".to_owned()),
            Just("timestamp".to_owned()),
            "[a-z]{1,6}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Request-shaped values: mostly valid envelopes around random params.
fn request() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(METHODS),
        prop::collection::vec(json_value(), 0..4),
        prop_oneof![
            Just(Some(json!(1))),
            Just(None),
            json_value().prop_map(Some)
        ],
        prop_oneof![4 => Just(json!("2.0")), 1 => json_value()],
    )
        .prop_map(|(method, params, id, version)| {
            let mut r = json!({ "jsonrpc": version, "method": method, "params": params });
            if let Some(id) = id {
                r["id"] = id;
            }
            r
        })
}

/// A notification or a batch of them only: the one case with an empty reply.
fn all_notifications(v: &Value) -> bool {
    let is_notification = |r: &Value| {
        r.get("id").is_none()
            && r.get("jsonrpc") == Some(&json!("2.0"))
            && r.get("method")
                .and_then(Value::as_str)
                .is_some_and(|m| !m.is_empty())
            && matches!(r.get("params"), None | Some(Value::Null | Value::Array(_)))
    };
    match v {
        Value::Array(a) => !a.is_empty() && a.iter().all(is_notification),
        other => is_notification(other),
    }
}

fn check_any(chain: &Shared, body: &[u8]) {
    let reply = handle_body(chain, body);
    if reply.is_empty() {
        let v: Value = serde_json::from_slice(body).expect("empty reply only for valid JSON");
        assert!(all_notifications(&v), "no reply to {v}");
    } else {
        assert_reply(&reply);
    }
}

/// A signed transfer from dev account 1 whose encoding is then damaged at random.
fn damaged_tx() -> impl Strategy<Value = Vec<u8>> {
    let sender = Sender::dev(1);
    let mut tx = sender.tx(Some(Address::repeat_byte(0x66)), vec![], 21_000);
    tx.value = U256::from(3);
    let good = sign_1559(tx, &sender.key).to_vec();
    let len = good.len();
    prop::collection::vec((0..len, any::<u8>()), 1..4).prop_map(move |edits| {
        let mut raw = good.clone();
        for (i, b) in edits {
            raw[i] = b;
        }
        raw
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bytes_get_a_well_formed_reply(body in prop::collection::vec(any::<u8>(), 0..256)) {
        check_any(&shared(), &body);
    }

    #[test]
    fn random_json_gets_a_well_formed_reply(v in json_value()) {
        check_any(&shared(), v.to_string().as_bytes());
    }

    #[test]
    fn random_requests_and_batches_get_well_formed_replies(
        reqs in prop::collection::vec(request(), 1..4),
        batch in any::<bool>(),
    ) {
        let chain = shared();
        if batch {
            check_any(&chain, Value::Array(reqs).to_string().as_bytes());
        } else {
            for r in reqs {
                check_any(&chain, r.to_string().as_bytes());
            }
        }
    }

    #[test]
    fn the_raw_tx_decoder_never_panics(raw in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Err(e) = decode_raw_transaction(&raw) {
            prop_assert_eq!(e.code, ErrorCode::ServerError);
        }
    }

    #[test]
    fn damaged_transactions_are_refused_cleanly(raw in damaged_tx()) {
        // Straight into the decoder, then through the whole eth_sendRawTransaction path.
        if let Err(e) = decode_raw_transaction(&raw) {
            prop_assert_eq!(e.code, ErrorCode::ServerError);
        }
        let chain = shared();
        let reply = assert_reply(&handle_body(
            &chain,
            req("eth_sendRawTransaction", json!([hex(&raw)])).as_bytes(),
        ));
        // Either accepted (a damaged byte can still be a valid tx from some key) or -32000.
        if let Some(code) = reply["error"]["code"].as_i64() {
            prop_assert_eq!(code, -32000, "{}", reply);
        }
    }
}
