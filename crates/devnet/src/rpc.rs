//! Ethereum JSON-RPC 2.0 over HTTP (axum), batches included, with anvil's dev method names.
//!
//! Error codes follow what clients (ethers, alloy, viem, web3.py) expect: -32700 parse error,
//! -32600 invalid request, -32601 method not found, -32602 invalid params, -32000 for
//! transaction validation (geth's messages, e.g. "nonce too low: …") and unknown blocks,
//! 3 "execution reverted" with the revert data hex in `data`.
//!
//! Bad input never takes the node down: malformed JSON, invalid request objects, wrong
//! params and undecodable transactions each get their JSON-RPC error (geth's codes and
//! wording), batches answer every entry, bodies over [`MAX_BODY_BYTES`] get a JSON error with
//! HTTP 413, and a panic inside a method (a bug) becomes -32603 instead of a dropped
//! connection. Requests without an `id` are notifications and get no answer (JSON-RPC 2.0).
//!
//! WebSocket on the same port (a GET with `Upgrade: websocket`): the same methods plus
//! `eth_subscribe` (`newHeads`, `logs`) and `eth_unsubscribe`. Subscriptions and filters read
//! the chain's event record ([`crate::chain::ChainEvent`]), so after a reorg `logs`
//! subscribers first get the removed logs (`removed: true`), then the new ones.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_primitives::{Address, Bytes, B256, U256, U512, U64};
use axum::extract::State as AxState;
use axum::routing::post;
use axum::Router;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::chain::{
    Block, CallRequest, Chain, ChainConfig, ChainLog, FilterChanges, FilterKind, LogFilter,
    MinedTx, Recovered, ReorgError, ReorgOutcome, TxError,
};
use crate::state::State;

/// The largest request body (HTTP) or message (WebSocket) answered: 5 MiB, geth's
/// `maxRequestContentLength`. Bigger ones get -32600 with HTTP status 413.
pub const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;

/// WebSocket messages up to this size are read and, above [`MAX_BODY_BYTES`], answered with
/// the size error; bigger ones close the connection (close code 1009), as geth does.
const WS_MAX_MESSAGE_BYTES: usize = 4 * MAX_BODY_BYTES;

/// The most blocks one `anvil_mine` may mine (every block keeps a state copy).
pub const MAX_MINE_BLOCKS: u64 = 10_000;

/// Timestamps (and `evm_increaseTime` offsets) are capped so the chain's clock arithmetic
/// cannot overflow.
pub const MAX_TIMESTAMP: u64 = i64::MAX as u64 / 4;

/// `web3_clientVersion`.
pub const CLIENT_VERSION: &str = concat!("bursar-devnet/v", env!("CARGO_PKG_VERSION"));

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RpcError {
    /// JSON-RPC error code: -32700..-32600 protocol errors, -32000 server errors, 3 for
    /// reverts (as in geth).
    pub code: i64,
    /// Human-readable message.
    pub message: String,
    /// Extra data: the revert data (hex) for `execution reverted`, otherwise absent.
    pub data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
    /// -32700: the body is not valid JSON.
    pub fn parse() -> Self {
        Self::new(-32700, "parse error")
    }
    /// -32600: the JSON is not a valid JSON-RPC request object.
    pub fn invalid_request() -> Self {
        Self::new(-32600, "invalid request")
    }
    /// -32600: a batch request with no entries.
    pub fn empty_batch() -> Self {
        Self::new(-32600, "empty batch")
    }
    /// A request body over [`MAX_BODY_BYTES`] (geth's wording when the length is known).
    pub fn too_large(content_length: Option<u64>) -> Self {
        Self::new(
            -32600,
            match content_length {
                Some(n) => format!("content length too large ({n}>{MAX_BODY_BYTES})"),
                None => format!("request body too large (limit {MAX_BODY_BYTES} bytes)"),
            },
        )
    }
    /// -32603: an unexpected failure inside the node.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(-32603, format!("internal error: {message}"))
    }
    /// -32601: an unknown method, worded as geth does.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            -32601,
            format!("the method {method} does not exist/is not available"),
        )
    }
    /// -32602: missing or malformed parameters; `why` becomes the message.
    pub fn invalid_params(why: impl std::fmt::Display) -> Self {
        Self::new(-32602, why.to_string())
    }
    /// -32000: a server-side failure such as a rejected transaction, worded as geth does.
    pub fn server(message: impl Into<String>) -> Self {
        Self::new(-32000, message)
    }
    /// Code 3 `execution reverted` with the revert data, as geth answers `eth_call` and
    /// `eth_estimateGas`.
    pub fn reverted(data: &Bytes) -> Self {
        RpcError {
            code: 3,
            message: "execution reverted".into(),
            data: Some(json!(data)),
        }
    }
    fn to_json(&self) -> Value {
        let mut e = json!({ "code": self.code, "message": self.message });
        if let Some(d) = &self.data {
            e["data"] = d.clone();
        }
        e
    }
}

impl From<TxError> for RpcError {
    fn from(e: TxError) -> Self {
        RpcError::server(e.to_string())
    }
}

type Shared = Arc<Mutex<Chain>>;

/// Server settings.
#[derive(Clone, Debug)]
pub struct RpcConfig {
    /// Where to listen; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Chain settings (chain id, gas limit, accounts, ...) for the chain the server starts.
    pub chain: ChainConfig,
    /// Interval mining from the start (`--block-time`); `evm_setIntervalMining` changes it.
    pub block_time: Option<std::time::Duration>,
}

impl Default for RpcConfig {
    fn default() -> Self {
        RpcConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 8547)),
            chain: ChainConfig::default(),
            block_time: None,
        }
    }
}

/// A running server.
pub struct Handle {
    /// `http://ip:port`.
    pub url: String,
    /// `ws://ip:port` (the same server, WebSocket upgrade).
    pub ws_url: String,
    /// The address actually bound (the real port when 0 was asked for).
    pub addr: SocketAddr,
    /// The chain the server runs (shared, for in-process inspection).
    pub chain: Arc<Mutex<Chain>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    miner: tokio::task::JoinHandle<()>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // The miner would otherwise keep the chain alive (and mining) in the background.
        self.miner.abort();
    }
}

impl Handle {
    /// Stops the server and waits for it to finish.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.miner.abort();
        let _ = (&mut self.task).await;
    }
}

/// Binds `config.addr` and serves in a background task (must be called inside a Tokio runtime).
pub async fn spawn(config: RpcConfig) -> std::io::Result<Handle> {
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    let addr = listener.local_addr()?;
    let chain = Arc::new(Mutex::new(Chain::new(config.chain)));
    let miner = crate::miner::spawn(Arc::clone(&chain));
    if config.block_time.is_some() {
        chain
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set_interval_mining(config.block_time);
    }
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let app = router(Arc::clone(&chain));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
    });
    Ok(Handle {
        url: format!("http://{addr}"),
        ws_url: format!("ws://{addr}"),
        addr,
        chain,
        shutdown: Some(tx),
        task,
        miner,
    })
}

/// What the handlers share: the chain and a watch on its event count (wakes WS subscribers).
#[derive(Clone)]
struct App {
    chain: Shared,
    events: tokio::sync::watch::Receiver<usize>,
}

/// The axum router answering JSON-RPC at `/` (HTTP POST, or WebSocket on GET + upgrade).
/// Installs the chain's event hook (see [`Chain::set_event_hook`]).
pub fn router(chain: Arc<Mutex<Chain>>) -> Router {
    let (tx, rx) = {
        let mut c = chain.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = tokio::sync::watch::channel(c.event_count());
        let hook_tx = tx.clone();
        c.set_event_hook(move |n| {
            hook_tx.send_replace(n);
        });
        (tx, rx)
    };
    drop(tx);
    Router::new()
        .route("/", post(http_handler).get(ws_handler))
        // axum's default limit is 2 MB; use geth's.
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(App { chain, events: rx })
}

async fn http_handler(
    AxState(app): AxState<App>,
    headers: axum::http::HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let (status, reply) = match body {
        // Chain work (WASM execution under the chain's lock) runs on the blocking pool, so the
        // async workers keep serving I/O and WebSocket clients meanwhile.
        Ok(body) => {
            let reply = match quick_read(&app.chain, &body) {
                Some(reply) => reply,
                None => {
                    let chain = Arc::clone(&app.chain);
                    tokio::task::spawn_blocking(move || handle_body(&chain, &body))
                        .await
                        .unwrap_or_else(|e| {
                            error_response(Value::Null, &RpcError::internal(e.to_string()))
                                .to_string()
                        })
                }
            };
            (StatusCode::OK, reply)
        }
        // axum's own answer would be plain text; clients expect a JSON-RPC error object.
        Err(rejection) => {
            let error = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                let length = headers
                    .get(axum::http::header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok()?.parse().ok());
                RpcError::too_large(length)
            } else {
                RpcError::new(-32600, rejection.body_text())
            };
            (
                rejection.status(),
                error_response(Value::Null, &error).to_string(),
            )
        }
    };
    let mut resp = (status, reply).into_response();
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// Methods that only look things up (no WASM, no waiting): answered on the async worker when
/// the chain is free, saving the blocking pool's two thread hand-offs.
const QUICK_READS: [&str; 8] = [
    "eth_getTransactionReceipt",
    "eth_getTransactionByHash",
    "eth_blockNumber",
    "eth_chainId",
    "eth_getTransactionCount",
    "eth_getBalance",
    "eth_gasPrice",
    "net_version",
];

/// The answer to a body holding one [`QUICK_READS`] request, if the chain's lock is free now;
/// `None` sends the body to the blocking pool (anything else, or a chain busy executing).
fn quick_read(chain: &Shared, body: &[u8]) -> Option<String> {
    if body.len() > 1024 {
        return None;
    }
    let req: Value = serde_json::from_slice(body).ok()?;
    let method = req.get("method")?.as_str()?;
    if !QUICK_READS.contains(&method) {
        return None;
    }
    let mut guard = match chain.try_lock() {
        Ok(guard) => guard,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return None,
    };
    Some(answer_locked(&mut guard, &req, None).map_or_else(String::new, |r| String::from(r.get())))
}

/// Answers a raw request body (single request or batch): the response text, empty when the
/// body held only notifications. Never panics; pure apart from the chain it runs on.
pub fn handle_body(chain: &Shared, body: &[u8]) -> String {
    handle_body_with(body, |r| handle_request(chain, r))
}

fn handle_body_with(body: &[u8], mut one: impl FnMut(&Value) -> Option<Reply>) -> String {
    if body.len() > MAX_BODY_BYTES {
        return error_response(Value::Null, &RpcError::too_large(Some(body.len() as u64)))
            .to_string();
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => return error_response(Value::Null, &RpcError::parse()).to_string(),
    };
    match value {
        Value::Array(items) if items.is_empty() => {
            error_response(Value::Null, &RpcError::empty_batch()).to_string()
        }
        Value::Array(items) => {
            let out: Vec<Reply> = items.iter().filter_map(&mut one).collect();
            if out.is_empty() {
                String::new()
            } else {
                serde_json::to_string(&out).expect("raw JSON values serialize")
            }
        }
        other => one(&other).map_or_else(String::new, |v| String::from(v.get())),
    }
}

// ----- WebSocket ------------------------------------------------------------------------------

enum SubKind {
    Heads,
    Logs(LogFilter),
}

struct Subscription {
    kind: SubKind,
    /// Position in the chain's event record up to which notifications were sent.
    cursor: usize,
}

static NEXT_SUBSCRIPTION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

async fn ws_handler(
    ws: axum::extract::ws::WebSocketUpgrade,
    AxState(app): AxState<App>,
) -> axum::response::Response {
    ws.max_message_size(WS_MAX_MESSAGE_BYTES)
        .max_frame_size(WS_MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| ws_session(socket, app))
}

async fn ws_session(mut socket: axum::extract::ws::WebSocket, app: App) {
    use axum::extract::ws::Message;
    let mut events = app.events.clone();
    let mut subs: std::collections::BTreeMap<u64, Subscription> = Default::default();
    loop {
        tokio::select! {
            msg = socket.recv() => {
                let text = match msg {
                    Some(Ok(Message::Text(t))) => t.as_str().as_bytes().to_vec(),
                    Some(Ok(Message::Binary(b))) => b.to_vec(),
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                let reply = handle_body_with(&text, |r| ws_request(&app.chain, &mut subs, r));
                // Only notifications: nothing to answer.
                if !reply.is_empty() && socket.send(Message::Text(reply.into())).await.is_err() {
                    break;
                }
            }
            changed = events.changed() => {
                if changed.is_err() {
                    break;
                }
            }
        }
        for note in notifications(&app.chain, &mut subs) {
            if socket.send(Message::Text(note.into())).await.is_err() {
                return;
            }
        }
    }
}

/// One WS request: subscriptions here, everything else as over HTTP.
fn ws_request(
    chain: &Shared,
    subs: &mut std::collections::BTreeMap<u64, Subscription>,
    req: &Value,
) -> Option<Reply> {
    let call = match parse_call(req) {
        Ok(call) => call,
        Err(reply) => return Some(raw(&reply)),
    };
    if !matches!(call.method.as_str(), "eth_subscribe" | "eth_unsubscribe") {
        return handle_request(chain, req);
    }
    let params = &call.params;
    let result = (|| -> Result<Answer, RpcError> {
        check_arity(&call.method, params)?;
        if call.method == "eth_unsubscribe" {
            let sub = params
                .raw(0)
                .map(quantity)
                .and_then(Result::ok)
                .unwrap_or(0);
            return Ok(json!(subs.remove(&sub).is_some()).into());
        }
        let c = chain.lock().unwrap_or_else(|e| e.into_inner());
        let kind: String = params.get(0)?;
        let kind = match kind.as_str() {
            "newHeads" => SubKind::Heads,
            "logs" => SubKind::Logs(match params.raw(1) {
                None => LogFilter::default(),
                v => arg(1, parse_log_filter(&c, v))?,
            }),
            other => {
                return Err(RpcError::invalid_params(format!(
                    "unsupported subscription type {other}"
                )))
            }
        };
        let sub = NEXT_SUBSCRIPTION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        subs.insert(
            sub,
            Subscription {
                kind,
                cursor: c.event_count(),
            },
        );
        Ok(q(sub).into())
    })();
    call.answer(result)
}

/// Notifications owed to `subs` since their cursors (heads of added blocks; matching logs of
/// removed blocks with `removed: true`, then of added ones, in chain-event order).
fn notifications(
    chain: &Shared,
    subs: &mut std::collections::BTreeMap<u64, Subscription>,
) -> Vec<String> {
    if subs.is_empty() {
        return vec![];
    }
    let c = chain.lock().unwrap_or_else(|e| e.into_inner());
    let end = c.event_count();
    let mut out = vec![];
    for (id, sub) in subs.iter_mut() {
        for ev in c.events_since(sub.cursor) {
            let results: Vec<Value> = match &sub.kind {
                SubKind::Heads if ev.removed => vec![],
                SubKind::Heads => {
                    let mut h = block_json(&c, &ev.block, false);
                    if let Some(o) = h.as_object_mut() {
                        o.remove("transactions");
                        o.remove("uncles");
                    }
                    vec![h]
                }
                SubKind::Logs(f) => ev
                    .logs
                    .iter()
                    .filter(|l| f.matches(l))
                    .map(|l| json!(LogView::new(&c, l)))
                    .collect(),
            };
            for r in results {
                out.push(
                    json!({
                        "jsonrpc": "2.0",
                        "method": "eth_subscription",
                        "params": { "subscription": q(*id), "result": r },
                    })
                    .to_string(),
                );
            }
        }
        sub.cursor = end;
    }
    out
}

fn error_response(id: Value, e: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": e.to_json() })
}

/// A request that passed the envelope checks.
struct Call {
    /// `None`: a notification (no `id` member), which gets no response.
    id: Option<Value>,
    method: String,
    params: Params,
}

/// One response of a body's answer, as JSON text (batches are arrays of these).
type Reply = Box<RawValue>;

fn raw(v: &impl Serialize) -> Reply {
    serde_json::value::to_raw_value(v).expect("JSON values serialize")
}

/// A method's result: a JSON value, or JSON text serialized straight from typed data (logs,
/// where building a `Value` tree per log cost more than the query).
#[derive(Serialize)]
#[serde(untagged)]
enum Answer {
    Json(Value),
    Raw(Reply),
}

impl From<Value> for Answer {
    fn from(v: Value) -> Self {
        Answer::Json(v)
    }
}

impl Call {
    fn answer(&self, result: Result<Answer, RpcError>) -> Option<Reply> {
        #[derive(Serialize)]
        struct Success<'a> {
            jsonrpc: &'static str,
            id: &'a Value,
            result: Answer,
        }
        let id = self.id.as_ref()?;
        Some(match result {
            Ok(result) => raw(&Success {
                jsonrpc: "2.0",
                id,
                result,
            }),
            Err(e) => raw(&error_response(id.clone(), &e)),
        })
    }
}

/// Checks the request envelope as geth does (object, `jsonrpc: "2.0"`, an id that is a
/// number, string or null, a non-empty string method, array params); `Err` is the response.
fn parse_call(req: &Value) -> Result<Call, Value> {
    let invalid = |id: Value| error_response(id, &RpcError::invalid_request());
    let Some(obj) = req.as_object() else {
        return Err(invalid(Value::Null));
    };
    let id = match obj.get("id") {
        None => None,
        Some(v @ (Value::Null | Value::Number(_) | Value::String(_))) => Some(v.clone()),
        Some(_) => return Err(invalid(Value::Null)),
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(reply_id));
    }
    let method = match obj.get("method").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.to_owned(),
        _ => return Err(invalid(reply_id)),
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Params(vec![]),
        Some(Value::Array(a)) => Params(a.clone()),
        // ethers-providers' Ws sends `eth_unsubscribe` with the bare id as params.
        Some(v @ Value::String(_)) if method == "eth_unsubscribe" => Params(vec![v.clone()]),
        Some(_) => {
            return Err(error_response(
                reply_id,
                &RpcError::invalid_params("non-array args"),
            ))
        }
    };
    Ok(Call { id, method, params })
}

fn handle_request(chain: &Shared, req: &Value) -> Option<Reply> {
    let recovered = recover_early(req);
    // A poisoned lock only means an earlier request panicked (answered with -32603 below);
    // keep serving.
    answer_locked(
        &mut chain.lock().unwrap_or_else(|e| e.into_inner()),
        req,
        recovered,
    )
}

/// For a well-formed `eth_sendRawTransaction`, the transaction with its sender recovered
/// before the chain is locked, so that concurrent senders' recoveries overlap. Anything else
/// (including malformed input, whose error the method itself words) is `None`.
fn recover_early(req: &Value) -> Option<Recovered> {
    if req.get("method")?.as_str()? != "eth_sendRawTransaction" {
        return None;
    }
    let raw: Bytes = serde_json::from_value(req.get("params")?.get(0)?.clone()).ok()?;
    crate::chain::decode_raw_transaction(&raw)
        .ok()
        .map(Recovered::new)
}

/// One request against the locked chain (`recovered`: see [`recover_early`]).
fn answer_locked(chain: &mut Chain, req: &Value, recovered: Option<Recovered>) -> Option<Reply> {
    let call = match parse_call(req) {
        Ok(call) => call,
        Err(reply) => return Some(raw(&reply)),
    };
    // A panic here is a devnet bug; answer it rather than drop the connection. The chain
    // mutates only after validation, so a panic leaves it as consistent as it can be.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_arity(&call.method, &call.params)?;
        dispatch(chain, &call.method, &call.params, recovered)
    }))
    .unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        Err(RpcError::internal(why))
    });
    call.answer(result)
}

/// `(required, at most)` positional params of each method `dispatch` knows.
fn arity(method: &str) -> Option<(usize, usize)> {
    Some(match method {
        "web3_clientVersion"
        | "eth_chainId"
        | "net_version"
        | "net_listening"
        | "eth_syncing"
        | "eth_accounts"
        | "eth_blockNumber"
        | "eth_gasPrice"
        | "eth_maxPriorityFeePerGas"
        | "eth_newBlockFilter"
        | "anvil_getAutomine"
        | "evm_snapshot"
        | "anvil_snapshot"
        | "anvil_dropAllTransactions"
        | "txpool_status"
        | "txpool_content" => (0, 0),
        "eth_feeHistory" => (2, 3),
        "debug_traceTransaction" => (1, 2),
        "debug_traceCall" => (1, 3),
        "eth_getBalance" | "eth_getTransactionCount" | "eth_getCode" => (1, 2),
        "eth_getStorageAt" => (2, 3),
        "eth_call" => (1, 4),
        "eth_estimateGas" => (1, 3),
        "eth_sendRawTransaction"
        | "eth_getTransactionByHash"
        | "eth_getTransactionReceipt"
        | "eth_getBlockReceipts"
        | "eth_getLogs"
        | "eth_newFilter"
        | "eth_getFilterChanges"
        | "eth_getFilterLogs"
        | "eth_uninstallFilter"
        | "bursar_reorg"
        | "evm_setAutomine"
        | "anvil_setAutomine"
        | "evm_setNextBlockTimestamp"
        | "anvil_setNextBlockTimestamp"
        | "evm_increaseTime"
        | "anvil_increaseTime"
        | "evm_revert"
        | "anvil_revert"
        | "eth_unsubscribe"
        | "anvil_dropTransaction"
        | "anvil_setNextBlockBaseFeePerGas"
        | "evm_setIntervalMining"
        | "anvil_setIntervalMining"
        | "anvil_impersonateAccount"
        | "hardhat_impersonateAccount"
        | "anvil_stopImpersonatingAccount"
        | "hardhat_stopImpersonatingAccount"
        | "eth_sendTransaction" => (1, 1),
        "eth_getBlockByNumber" | "eth_getBlockByHash" | "anvil_reorg" | "eth_subscribe" => (1, 2),
        "evm_mine" => (0, 1),
        "anvil_mine" | "hardhat_mine" => (0, 2),
        "anvil_setBalance" | "hardhat_setBalance" | "anvil_setNonce" | "hardhat_setNonce"
        | "anvil_setCode" | "hardhat_setCode" => (2, 2),
        "anvil_setStorageAt" | "hardhat_setStorageAt" => (3, 3),
        _ => return None,
    })
}

/// Too many or too few params, with geth's messages. Methods not in [`arity`] go unchecked
/// here; `dispatch` answers the unknown ones with -32601.
fn check_arity(method: &str, p: &Params) -> Result<(), RpcError> {
    let Some((required, max)) = arity(method) else {
        return Ok(());
    };
    if p.0.len() > max {
        return Err(RpcError::invalid_params(format!(
            "too many arguments, want at most {max}"
        )));
    }
    if let Some(i) = (0..required).find(|&i| p.0.get(i).is_none_or(Value::is_null)) {
        return Err(RpcError::invalid_params(format!(
            "missing value for required argument {i}"
        )));
    }
    Ok(())
}

/// Prefixes a params error with the argument's position (geth: "invalid argument 1: …").
fn arg<T>(i: usize, r: Result<T, RpcError>) -> Result<T, RpcError> {
    r.map_err(|mut e| {
        if e.code == -32602 && !e.message.starts_with("invalid argument") {
            e.message = format!("invalid argument {i}: {}", e.message);
        }
        e
    })
}

/// Positional params with typed access.
struct Params(Vec<Value>);

impl Params {
    /// Param `i` as `T`; errors name the position, as geth's do.
    fn get<T: DeserializeOwned>(&self, i: usize) -> Result<T, RpcError> {
        let v = self.0.get(i).ok_or_else(|| {
            RpcError::invalid_params(format!("missing value for required argument {i}"))
        })?;
        serde_json::from_value(v.clone())
            .map_err(|e| RpcError::invalid_params(format!("invalid argument {i}: {e}")))
    }
    fn opt<T: DeserializeOwned>(&self, i: usize) -> Result<Option<T>, RpcError> {
        match self.0.get(i) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.get(i).map(Some),
        }
    }
    fn raw(&self, i: usize) -> Option<&Value> {
        self.0.get(i).filter(|v| !v.is_null())
    }
    /// Param `i` as a quantity (required).
    fn quantity(&self, i: usize) -> Result<u64, RpcError> {
        let v = self.raw(i).ok_or_else(|| {
            RpcError::invalid_params(format!("missing value for required argument {i}"))
        })?;
        arg(i, quantity(v))
    }
}

fn q(n: impl Into<u128>) -> Value {
    Value::String(format!("{:#x}", n.into()))
}

fn qu(n: U256) -> Value {
    Value::String(format!("{n:#x}"))
}

/// Parses a quantity given as hex string (geth's hexutil messages) or JSON number. Leading
/// zeros are accepted (geth refuses them, anvil does not).
fn quantity(v: &Value) -> Result<u64, RpcError> {
    match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| {
            RpcError::invalid_params(format!(
                "invalid quantity {n}: not a 64-bit unsigned integer"
            ))
        }),
        Value::String(s) => {
            let bad = |why: &str| RpcError::invalid_params(format!("{why}: {s:?}"));
            let hex = s
                .strip_prefix("0x")
                .or_else(|| s.strip_prefix("0X"))
                .ok_or_else(|| bad("hex string without 0x prefix"))?;
            if hex.is_empty() {
                return Err(bad("empty hex number"));
            }
            // `from_str_radix` alone would accept a sign.
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad("invalid hex string"));
            }
            u64::from_str_radix(hex, 16).map_err(|_| bad("hex number > 64 bits"))
        }
        other => Err(RpcError::invalid_params(format!(
            "invalid quantity {other}: want a hex string"
        ))),
    }
}

/// Resolves a block tag / number / EIP-1898 object to a block number (missing = latest).
fn block_number(chain: &Chain, v: Option<&Value>) -> Result<u64, RpcError> {
    let latest = chain.block_number();
    let n = match v {
        None | Some(Value::Null) => latest,
        Some(Value::String(s)) => match s.as_str() {
            "latest" | "pending" => latest,
            // Lag the head by the configured finality depth (0: every block is final).
            "safe" => chain.safe_block_number(),
            "finalized" => chain.finalized_block_number(),
            "earliest" => 0,
            _ => quantity(&Value::String(s.clone())).map_err(|e| {
                RpcError::invalid_params(format!("invalid block number or tag: {}", e.message))
            })?,
        },
        Some(Value::Object(o)) => {
            if let Some(h) = o.get("blockHash") {
                let hash: B256 = serde_json::from_value(h.clone())
                    .map_err(|e| RpcError::invalid_params(e.to_string()))?;
                return chain
                    .block_by_hash(hash)
                    .map(Block::number)
                    .ok_or_else(|| RpcError::server(format!("header for hash {hash} not found")));
            }
            match o.get("blockNumber") {
                Some(n) => return block_number(chain, Some(n)),
                None => {
                    return Err(RpcError::invalid_params(
                        "invalid block selector: want blockHash or blockNumber",
                    ))
                }
            }
        }
        Some(other) => quantity(other)?,
    };
    if n > latest {
        return Err(RpcError::server("header not found"));
    }
    Ok(n)
}

fn state_at<'a>(chain: &'a Chain, p: &Params, i: usize) -> Result<&'a State, RpcError> {
    let n = arg(i, block_number(chain, p.raw(i)))?;
    chain
        .state_at(n)
        .ok_or_else(|| RpcError::server("header not found"))
}

fn dispatch(
    chain: &mut Chain,
    method: &str,
    p: &Params,
    recovered: Option<Recovered>,
) -> Result<Answer, RpcError> {
    Ok(match method {
        "web3_clientVersion" => json!(CLIENT_VERSION),
        "eth_chainId" => q(chain.chain_id()),
        "net_version" => json!(chain.chain_id().to_string()),
        "net_listening" => json!(true),
        "eth_syncing" => json!(false),
        "eth_accounts" => json!(crate::accounts::dev_accounts()
            .iter()
            .map(|a| a.address)
            .collect::<Vec<_>>()),
        "eth_blockNumber" => q(chain.block_number()),
        "eth_gasPrice" => q(chain.base_fee()),
        // Arbitrum ignores tips; the devnet accepts them (they go to the coinbase) but does
        // not ask for any.
        "eth_maxPriorityFeePerGas" => q(0u64),
        "eth_feeHistory" => fee_history(chain, p)?,
        "eth_getBalance" => {
            let a: Address = p.get(0)?;
            qu(state_at(chain, p, 1)?.balance(a))
        }
        "eth_getTransactionCount" => {
            let a: Address = p.get(0)?;
            if p.raw(1).and_then(Value::as_str) == Some("pending") {
                q(chain.pending_nonce(a))
            } else {
                q(state_at(chain, p, 1)?.nonce(a))
            }
        }
        "eth_getCode" => {
            let a: Address = p.get(0)?;
            json!(state_at(chain, p, 1)?.code(a))
        }
        "eth_getStorageAt" => {
            let a: Address = p.get(0)?;
            let slot: U256 = p.get(1)?;
            json!(state_at(chain, p, 2)?.storage(a, B256::from(slot)))
        }
        "eth_call" => {
            let req = call_request(chain, p.raw(0))?;
            let at = arg(1, block_number(chain, p.raw(1)))?;
            let over = arg(2, StateOverride::parse(p.raw(2)))?;
            let out = chain.simulate(&req, Some(at), |s| over.apply(s));
            if out.success {
                json!(out.output)
            } else {
                return Err(RpcError::reverted(&out.output));
            }
        }
        "eth_estimateGas" => {
            let req = call_request(chain, p.raw(0))?;
            arg(1, block_number(chain, p.raw(1)))?;
            let over = arg(2, StateOverride::parse(p.raw(2)))?;
            match chain.estimate_gas(&req, |s| over.apply(s)) {
                Ok(gas) => q(gas),
                Err(out)
                    if out.output.is_empty()
                        && out.gas_used >= req.gas.unwrap_or(chain.config().block_gas_limit) =>
                {
                    return Err(RpcError::server("gas required exceeds allowance"))
                }
                Err(out) => return Err(RpcError::reverted(&out.output)),
            }
        }
        "eth_sendTransaction" => send_transaction(chain, p)?,
        "debug_traceTransaction" => {
            let h: B256 = p.get(0)?;
            let only_top = call_tracer_options(p.raw(1))?;
            let frame = chain
                .trace_transaction(h)
                .map_err(|e| RpcError::server(e.to_string()))?;
            trace_json(frame, only_top)
        }
        "debug_traceCall" => {
            let req = call_request(chain, p.raw(0))?;
            let at = arg(1, block_number(chain, p.raw(1)))?;
            let only_top = call_tracer_options(p.raw(2))?;
            match chain.trace_call(&req, Some(at)) {
                Some(frame) => trace_json(frame, only_top),
                None => Value::Null,
            }
        }
        "anvil_impersonateAccount" | "hardhat_impersonateAccount" => {
            chain.impersonate(p.get(0)?);
            Value::Null
        }
        "anvil_stopImpersonatingAccount" | "hardhat_stopImpersonatingAccount" => {
            chain.stop_impersonating(p.get(0)?);
            Value::Null
        }
        "eth_sendRawTransaction" => {
            let tx = match recovered {
                Some(tx) => tx,
                None => {
                    let raw: Bytes = p.get(0)?;
                    Recovered::new(decode_raw_transaction(&raw)?)
                }
            };
            check_cost_fits(chain, tx.envelope())?;
            json!(chain.send_recovered(tx)?)
        }
        "eth_getTransactionByHash" => {
            let h: B256 = p.get(0)?;
            match (chain.transaction(h), chain.pending_transaction(h)) {
                (Some(tx), _) => tx_json(chain, tx),
                (None, Some((env, from))) => envelope_json(env, from, None, env.max_fee_per_gas()),
                (None, None) => Value::Null,
            }
        }
        "eth_getTransactionReceipt" => {
            let h: B256 = p.get(0)?;
            chain
                .transaction(h)
                .map_or(Value::Null, |tx| receipt_json(chain, tx))
        }
        "eth_getBlockReceipts" => {
            // A block number, tag, EIP-1898 object or bare block hash; `null` if unknown.
            let block = match p.raw(0) {
                Some(Value::String(s)) if s.len() == 66 => chain.block_by_hash(p.get(0)?),
                v => match arg(0, block_number(chain, v)) {
                    Ok(n) => chain.block_by_number(n),
                    Err(e) if e.code == -32000 => None,
                    Err(e) => return Err(e),
                },
            };
            block.map_or(Value::Null, |b| {
                b.transactions
                    .iter()
                    .filter_map(|h| chain.transaction(*h))
                    .map(|tx| receipt_json(chain, tx))
                    .collect()
            })
        }
        "eth_getBlockByNumber" => {
            let full: bool = p.opt(1)?.unwrap_or(false);
            match arg(0, block_number(chain, p.raw(0))) {
                Ok(n) => chain
                    .block_by_number(n)
                    .map_or(Value::Null, |b| block_json(chain, b, full)),
                // Unknown future blocks are `null`, as geth answers.
                Err(e) if e.code == -32000 => Value::Null,
                Err(e) => return Err(e),
            }
        }
        "eth_getBlockByHash" => {
            let h: B256 = p.get(0)?;
            let full: bool = p.opt(1)?.unwrap_or(false);
            chain
                .block_by_hash(h)
                .map_or(Value::Null, |b| block_json(chain, b, full))
        }
        "eth_getLogs" => {
            let f = arg(0, parse_log_filter(chain, p.raw(0)))?;
            // As geth (and the execution-apis tests): a range ending past the head is refused,
            // so a client behind a lagging node retries instead of taking `[]` for "no logs".
            if f.to_block.is_some_and(|to| to > chain.block_number()) {
                return Err(RpcError::invalid_params(
                    "block range extends beyond current head block",
                ));
            }
            return logs_answer(chain, &f);
        }
        "eth_newFilter" => {
            let f = arg(0, parse_log_filter(chain, p.raw(0)))?;
            q(chain.new_filter(FilterKind::Logs(f)))
        }
        "eth_newBlockFilter" => q(chain.new_filter(FilterKind::Blocks)),
        "eth_getFilterChanges" => match chain.filter_changes(filter_id(p)?) {
            Some(FilterChanges::Blocks(hashes)) => json!(hashes),
            Some(FilterChanges::Logs(logs)) => return Ok(logs_raw(chain, &logs)),
            None => return Err(filter_not_found()),
        },
        "eth_getFilterLogs" => match chain.filter(filter_id(p)?) {
            Some(FilterKind::Logs(f)) => {
                let f = f.clone();
                return logs_answer(chain, &f);
            }
            _ => return Err(filter_not_found()),
        },
        "eth_uninstallFilter" => json!(chain.uninstall_filter(filter_id(p)?)),
        "anvil_reorg" => anvil_reorg(chain, p)?,
        "bursar_reorg" => bursar_reorg(chain, p)?,
        // ----- dev methods (anvil names) -----
        "evm_mine" => {
            if let Some(ts) = p.raw(0) {
                let ts = match ts {
                    Value::Object(o) => o.get("timestamp").map(quantity).transpose(),
                    other => quantity(other).map(Some),
                };
                if let Some(ts) = arg(0, ts)? {
                    chain.set_next_timestamp(timestamp(0, ts)?);
                }
            }
            chain.mine(1);
            json!("0x0")
        }
        "anvil_mine" | "hardhat_mine" => {
            let n = p.raw(0).map(|_| p.quantity(0)).transpose()?.unwrap_or(1);
            if n > MAX_MINE_BLOCKS {
                return Err(RpcError::invalid_params(format!(
                    "invalid argument 0: at most {MAX_MINE_BLOCKS} blocks per call, got {n}"
                )));
            }
            let interval = p.raw(1).map(|_| p.quantity(1)).transpose()?;
            if let Some(i) = interval {
                // The last block's timestamp must stay representable.
                let last = i
                    .checked_mul(n)
                    .and_then(|d| d.checked_add(chain.latest_block().header.timestamp));
                if last.is_none_or(|t| t > MAX_TIMESTAMP) {
                    return Err(RpcError::invalid_params(format!(
                        "invalid argument 1: timestamps would pass {MAX_TIMESTAMP}"
                    )));
                }
            }
            for _ in 0..n {
                if let Some(i) = interval {
                    let ts = chain.latest_block().header.timestamp + i;
                    chain.set_next_timestamp(ts);
                }
                chain.mine(1);
            }
            Value::Null
        }
        "evm_setAutomine" | "anvil_setAutomine" => {
            let on: bool = p.get(0)?;
            chain.set_automine(on);
            Value::Null
        }
        "anvil_getAutomine" => json!(chain.automine()),
        "evm_setNextBlockTimestamp" | "anvil_setNextBlockTimestamp" => {
            let ts = timestamp(0, p.quantity(0)?)?;
            chain.set_next_timestamp(ts);
            Value::Null
        }
        "evm_increaseTime" | "anvil_increaseTime" => {
            let s = p.quantity(0)?;
            // `increase_time(0)` reads the current offset.
            let offset = chain.increase_time(0).unsigned_abs();
            if offset.saturating_add(s) > MAX_TIMESTAMP {
                return Err(RpcError::invalid_params(format!(
                    "invalid argument 0: the clock offset would pass {MAX_TIMESTAMP} seconds"
                )));
            }
            json!(chain.increase_time(s))
        }
        "evm_snapshot" | "anvil_snapshot" => q(chain.snapshot()),
        "evm_revert" | "anvil_revert" => json!(chain.revert_to(p.quantity(0)?)),
        "anvil_setBalance" | "hardhat_setBalance" => {
            let a: Address = p.get(0)?;
            let v: U256 = p.get(1)?;
            chain.set_balance(a, v);
            Value::Null
        }
        "anvil_setNonce" | "hardhat_setNonce" => {
            let a: Address = p.get(0)?;
            chain.set_nonce(a, p.quantity(1)?);
            Value::Null
        }
        "anvil_setCode" | "hardhat_setCode" => {
            let a: Address = p.get(0)?;
            let code: Bytes = p.get(1)?;
            chain.set_code(a, code);
            Value::Null
        }
        "anvil_setStorageAt" | "hardhat_setStorageAt" => {
            let a: Address = p.get(0)?;
            let slot: U256 = p.get(1)?;
            let value: B256 = p.get(2)?;
            chain.set_storage(a, B256::from(slot), value);
            json!(true)
        }
        "anvil_dropTransaction" => {
            let h: B256 = p.get(0)?;
            if chain.drop_transaction(h) {
                json!(h)
            } else {
                Value::Null
            }
        }
        "evm_setIntervalMining" | "anvil_setIntervalMining" => {
            // Seconds, as anvil takes them; 0 turns interval mining off.
            let secs = p.quantity(0)?;
            chain.set_interval_mining((secs > 0).then(|| std::time::Duration::from_secs(secs)));
            Value::Null
        }
        "anvil_setNextBlockBaseFeePerGas" => {
            chain.set_next_block_base_fee(p.quantity(0)?);
            Value::Null
        }
        "anvil_dropAllTransactions" => {
            chain.drop_all_transactions();
            Value::Null
        }
        "txpool_status" => json!({ "pending": q(chain.pool().count() as u64), "queued": q(0u64) }),
        "txpool_content" => {
            // Sender (lowercase, as anvil) → nonce (decimal) → transaction; no queue for future
            // nonces.
            let mut pending = serde_json::Map::new();
            for (env, from) in chain.pool() {
                let by_nonce = pending
                    .entry(format!("{from:#x}"))
                    .or_insert_with(|| json!({}));
                by_nonce[env.nonce().to_string()] =
                    envelope_json(env, from, None, env.max_fee_per_gas());
            }
            json!({ "pending": pending, "queued": {} })
        }
        _ => return Err(RpcError::method_not_found(method)),
    }
    .into())
}

/// [`crate::chain::decode_raw_transaction`] with its error as a JSON-RPC error (-32000). Pure:
/// the fuzz tests call it directly.
pub fn decode_raw_transaction(raw: &[u8]) -> Result<TxEnvelope, RpcError> {
    crate::chain::decode_raw_transaction(raw).map_err(Into::into)
}

/// `gas * maxFee + value` can exceed 256 bits (a huge `value`); the chain's U256 sum would
/// wrap around to a small cost and accept the transaction. Refuse it as geth does (its big
/// integers do not wrap): insufficient funds.
fn check_cost_fits(chain: &Chain, env: &TxEnvelope) -> Result<(), RpcError> {
    let cost =
        U512::from(env.gas_limit()) * U512::from(env.max_fee_per_gas()) + U512::from(env.value());
    if cost <= U512::from(U256::MAX) {
        return Ok(());
    }
    // An unrecoverable sender is left to the chain's own check ("invalid sender").
    let Ok(from) = env.recover_signer() else {
        return Ok(());
    };
    let have = chain
        .state_at(chain.block_number())
        .map(|s| s.balance(from))
        .unwrap_or_default();
    Err(RpcError::server(format!(
        "insufficient funds for gas * price + value: have {have} want {cost}"
    )))
}

/// Timestamps beyond [`MAX_TIMESTAMP`] are refused (the chain adds to them).
fn timestamp(i: usize, ts: u64) -> Result<u64, RpcError> {
    if ts > MAX_TIMESTAMP {
        return Err(RpcError::invalid_params(format!(
            "invalid argument {i}: timestamp {ts} is above {MAX_TIMESTAMP}"
        )));
    }
    Ok(ts)
}

/// The call object of `eth_call` / `eth_estimateGas` (param 0). Gas above the block gas
/// limit is capped to it, as geth caps at its `--rpc.gascap`.
fn call_request(chain: &Chain, v: Option<&Value>) -> Result<CallRequest, RpcError> {
    let Some(Value::Object(o)) = v else {
        return Err(RpcError::invalid_params(
            "invalid argument 0: want a transaction call object",
        ));
    };
    fn field<T: DeserializeOwned>(o: &Map<String, Value>, k: &str) -> Result<Option<T>, RpcError> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| RpcError::invalid_params(format!("invalid argument 0: {k}: {e}"))),
        }
    }
    Ok(CallRequest {
        from: field(o, "from")?,
        to: field(o, "to")?,
        gas: arg(
            0,
            o.get("gas")
                .filter(|v| !v.is_null())
                .map(quantity)
                .transpose(),
        )?
        .map(|g| g.min(chain.config().block_gas_limit)),
        value: field(o, "value")?.unwrap_or_default(),
        data: match field::<Bytes>(o, "input")? {
            Some(d) => d,
            None => field(o, "data")?.unwrap_or_default(),
        },
    })
}

/// The tracer options of `debug_trace*`: only geth's `callTracer` is offered (the default
/// struct logger traces EVM opcodes, which Stylus programs do not have). Returns `onlyTopCall`.
fn call_tracer_options(v: Option<&Value>) -> Result<bool, RpcError> {
    let tracer = v.and_then(|o| o.get("tracer")).and_then(Value::as_str);
    if tracer != Some("callTracer") {
        return Err(RpcError::invalid_params(
            "only the callTracer is supported: pass {\"tracer\": \"callTracer\"}",
        ));
    }
    Ok(v.and_then(|o| o.pointer("/tracerConfig/onlyTopCall"))
        .and_then(Value::as_bool)
        .unwrap_or(false))
}

fn trace_json(mut frame: crate::trace::CallFrame, only_top: bool) -> Value {
    if only_top {
        frame.calls.clear();
    }
    serde_json::to_value(frame).expect("a call frame serializes")
}

/// `eth_sendTransaction`: the call object plus optional `nonce`, `maxFeePerGas` (or
/// `gasPrice`) and `maxPriorityFeePerGas`; gas is estimated when not given; sent as an
/// EIP-1559 transaction from a dev or impersonated account.
fn send_transaction(chain: &mut Chain, p: &Params) -> Result<Value, RpcError> {
    let req = call_request(chain, p.raw(0))?;
    let Some(from) = req.from else {
        return Err(RpcError::invalid_params(
            "invalid argument 0: from: missing",
        ));
    };
    if !chain.may_send_as(from) {
        return Err(TxError::UnknownAccount.into());
    }
    let o = p
        .raw(0)
        .and_then(Value::as_object)
        .expect("checked by call_request");
    let quantity_field = |k: &str| -> Result<Option<u64>, RpcError> {
        arg(
            0,
            o.get(k).filter(|v| !v.is_null()).map(quantity).transpose(),
        )
    };
    let gas = match req.gas {
        Some(gas) => gas,
        None => chain
            .estimate_gas(&req, |_| {})
            .map_err(|out| RpcError::reverted(&out.output))?,
    };
    let base_fee = chain.base_fee();
    let tx = alloy_consensus::TxEip1559 {
        chain_id: chain.chain_id(),
        nonce: match quantity_field("nonce")? {
            Some(n) => n,
            None => chain.pending_nonce(from),
        },
        gas_limit: gas,
        max_fee_per_gas: u128::from(
            quantity_field("maxFeePerGas")?
                .or(quantity_field("gasPrice")?)
                .unwrap_or(base_fee.saturating_mul(2)),
        ),
        max_priority_fee_per_gas: u128::from(quantity_field("maxPriorityFeePerGas")?.unwrap_or(0)),
        to: req.to.map_or(
            alloy_primitives::TxKind::Create,
            alloy_primitives::TxKind::Call,
        ),
        value: req.value,
        input: req.data,
        access_list: Default::default(),
    };
    Ok(json!(chain.send_as(from, tx)?))
}

/// `eth_call` / `eth_estimateGas` state overrides (geth's format).
#[derive(Default)]
struct StateOverride(Vec<(Address, AccountOverride)>);

#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AccountOverride {
    balance: Option<U256>,
    nonce: Option<U256>,
    code: Option<Bytes>,
    state: Option<std::collections::HashMap<B256, B256>>,
    state_diff: Option<std::collections::HashMap<B256, B256>>,
}

impl StateOverride {
    fn parse(v: Option<&Value>) -> Result<Self, RpcError> {
        let Some(v) = v else {
            return Ok(Self::default());
        };
        let map: std::collections::HashMap<Address, AccountOverride> =
            serde_json::from_value(v.clone())
                .map_err(|e| RpcError::invalid_params(format!("state override: {e}")))?;
        Ok(StateOverride(map.into_iter().collect()))
    }

    fn apply(&self, s: &mut State) {
        for (a, o) in &self.0 {
            if let Some(b) = o.balance {
                s.set_balance(*a, b);
            }
            if let Some(n) = o.nonce {
                s.set_nonce(*a, n.saturating_to());
            }
            if let Some(c) = &o.code {
                s.set_code(*a, c.clone());
            }
            if let Some(full) = &o.state {
                let old: Vec<B256> = s.storage_of(*a).map(|(k, _)| *k).collect();
                for k in old {
                    s.set_storage(*a, k, B256::ZERO);
                }
                for (k, v) in full {
                    s.set_storage(*a, *k, *v);
                }
            }
            if let Some(diff) = &o.state_diff {
                for (k, v) in diff {
                    s.set_storage(*a, *k, *v);
                }
            }
        }
    }
}

fn fee_history(chain: &Chain, p: &Params) -> Result<Value, RpcError> {
    let count = p.quantity(0)?.clamp(1, 1024);
    let newest = arg(1, block_number(chain, p.raw(1)))?;
    let percentiles: Vec<f64> = p.opt(2)?.unwrap_or_default();
    // geth: each within [0, 100], in non-decreasing order.
    for (i, w) in percentiles.iter().enumerate() {
        let before = if i == 0 { 0.0 } else { percentiles[i - 1] };
        if !(0.0..=100.0).contains(w) || *w < before {
            return Err(RpcError::invalid_params(format!(
                "invalid argument 2: invalid reward percentile #{i}: {w}"
            )));
        }
    }
    let oldest = newest.saturating_sub(count - 1);
    let mut base = vec![];
    let mut ratio = vec![];
    let mut reward = vec![];
    for n in oldest..=newest {
        let b = chain.block_by_number(n).expect("within range");
        base.push(q(b.header.base_fee_per_gas.unwrap_or_default()));
        ratio.push(json!(b.header.gas_used as f64 / b.header.gas_limit as f64));
        reward.push(json!(percentiles
            .iter()
            .map(|_| q(0u64))
            .collect::<Vec<_>>()));
    }
    // The constant base fee is also the next block's.
    base.push(q(chain.base_fee()));
    let mut out = json!({
        "oldestBlock": q(oldest),
        "baseFeePerGas": base,
        "gasUsedRatio": ratio,
    });
    if !percentiles.is_empty() {
        out["reward"] = json!(reward);
    }
    Ok(out)
}

fn tx_json(chain: &Chain, tx: &MinedTx) -> Value {
    let mut v = envelope_json(
        &tx.envelope,
        tx.from,
        Some(tx),
        tx.receipt.effective_gas_price,
    );
    with_block_timestamp(&mut v, chain, tx.block_hash, tx.block_number);
    v
}

/// Adds `blockTimestamp` (geth ≥ 1.16 and anvil put it on mined transactions, receipts and
/// logs) when the block is known; a log of a block dropped by `evm_revert` has none.
fn with_block_timestamp(v: &mut Value, chain: &Chain, hash: B256, number: u64) {
    if let (Some(ts), Some(o)) = (block_timestamp(chain, hash, number), v.as_object_mut()) {
        o.insert("blockTimestamp".into(), q(ts));
    }
}

/// The timestamp of block `hash` (number `number`), if the chain still knows it.
fn block_timestamp(chain: &Chain, hash: B256, number: u64) -> Option<u64> {
    chain
        .block_by_number(number)
        .filter(|b| b.hash == hash)
        .or_else(|| chain.block_by_hash(hash))
        .map(|b| b.header.timestamp)
}

/// A transaction object; block fields are `null` while it is pending.
fn envelope_json(env: &TxEnvelope, from: Address, mined: Option<&MinedTx>, price: u128) -> Value {
    let sig = env.signature();
    let mut v = json!({
        "hash": env.tx_hash(),
        "nonce": q(env.nonce()),
        "blockHash": mined.map(|t| t.block_hash),
        "blockNumber": mined.map(|t| q(t.block_number)),
        "transactionIndex": mined.map(|t| q(t.index)),
        "from": from,
        "to": env.to(),
        "value": qu(env.value()),
        "gas": q(env.gas_limit()),
        "input": env.input(),
        "r": qu(sig.r()),
        "s": qu(sig.s()),
        "type": q(env.tx_type() as u8),
        "gasPrice": q(price),
    });
    match env {
        TxEnvelope::Legacy(t) => {
            v["v"] = q(alloy_consensus::transaction::to_eip155_value(
                sig.v(),
                t.tx().chain_id,
            ));
            if let Some(id) = t.tx().chain_id {
                v["chainId"] = q(id);
            }
        }
        _ => {
            v["v"] = q(u8::from(sig.v()));
            v["yParity"] = q(u8::from(sig.v()));
            v["chainId"] = q(env.chain_id().unwrap_or_default());
            v["accessList"] = json!(env.access_list().map(|l| l.0.clone()).unwrap_or_default());
            if env.is_dynamic_fee() {
                v["maxFeePerGas"] = q(env.max_fee_per_gas());
                v["maxPriorityFeePerGas"] = q(env.max_priority_fee_per_gas().unwrap_or_default());
            }
        }
    }
    v
}

fn log_json(block_timestamp: &Value, tx: &MinedTx, l: &crate::chain::ReceiptLog) -> Value {
    json!({
        "blockTimestamp": block_timestamp,
        "address": l.log.address,
        "topics": l.log.topics,
        "data": l.log.data,
        "blockHash": tx.block_hash,
        "blockNumber": q(tx.block_number),
        "transactionHash": tx.hash,
        "transactionIndex": q(tx.index),
        "logIndex": q(l.log_index),
        "removed": false,
    })
}

fn receipt_json(chain: &Chain, tx: &MinedTx) -> Value {
    let r = &tx.receipt;
    let ts = chain
        .block_by_hash(tx.block_hash)
        .map_or(Value::Null, |b| q(b.header.timestamp));
    json!({
        "blockTimestamp": ts,
        "transactionHash": tx.hash,
        "transactionIndex": q(tx.index),
        "blockHash": tx.block_hash,
        "blockNumber": q(tx.block_number),
        "from": tx.from,
        "to": tx.envelope.to(),
        "cumulativeGasUsed": q(r.cumulative_gas_used),
        "gasUsed": q(r.gas_used),
        "effectiveGasPrice": q(r.effective_gas_price),
        "contractAddress": r.contract_address,
        "logs": r.logs.iter().map(|l| log_json(&ts, tx, l)).collect::<Vec<_>>(),
        "logsBloom": r.logs_bloom,
        "status": q(u8::from(r.status)),
        "type": q(tx.envelope.tx_type() as u8),
    })
}

fn block_json(chain: &Chain, b: &Block, full: bool) -> Value {
    let h = &b.header;
    let txs: Vec<Value> = if full {
        b.transactions
            .iter()
            .filter_map(|t| chain.transaction(*t).map(|tx| tx_json(chain, tx)))
            .collect()
    } else {
        b.transactions.iter().map(|t| json!(t)).collect()
    };
    json!({
        "number": q(h.number),
        "hash": b.hash,
        "parentHash": h.parent_hash,
        "nonce": h.nonce,
        "sha3Uncles": h.ommers_hash,
        "logsBloom": h.logs_bloom,
        "transactionsRoot": h.transactions_root,
        "stateRoot": h.state_root,
        "receiptsRoot": h.receipts_root,
        "miner": h.beneficiary,
        "difficulty": qu(h.difficulty),
        "totalDifficulty": "0x0",
        "extraData": h.extra_data,
        "size": q(alloy_rlp::Encodable::length(h) as u64),
        "gasLimit": q(h.gas_limit),
        "gasUsed": q(h.gas_used),
        "timestamp": q(h.timestamp),
        "baseFeePerGas": q(h.base_fee_per_gas.unwrap_or_default()),
        "mixHash": h.mix_hash,
        "transactions": txs,
        "uncles": [],
    })
}

/// Parses an `eth_getLogs` / `eth_newFilter` / `logs` subscription filter object: block range
/// (tags kept open, resolved at query time) or `blockHash`, `address` (one or many), `topics`
/// (positional; `null` = any, an array = one of).
pub(crate) fn parse_log_filter(
    chain: &Chain,
    filter: Option<&Value>,
) -> Result<LogFilter, RpcError> {
    let f = match filter {
        Some(Value::Object(o)) => o,
        None => return Err(RpcError::invalid_params("missing filter")),
        Some(_) => return Err(RpcError::invalid_params("filter must be an object")),
    };
    let mut out = LogFilter::default();
    if let Some(h) = f.get("blockHash").filter(|v| !v.is_null()) {
        if f.contains_key("fromBlock") || f.contains_key("toBlock") {
            return Err(RpcError::invalid_params(
                "cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other",
            ));
        }
        out.block_hash = Some(
            serde_json::from_value(h.clone())
                .map_err(|e| RpcError::invalid_params(e.to_string()))?,
        );
    } else {
        let bound = |k: &str| -> Result<Option<u64>, RpcError> {
            match f.get(k).filter(|v| !v.is_null()) {
                None => Ok(None),
                Some(Value::String(s)) if matches!(s.as_str(), "latest" | "pending") => Ok(None),
                Some(Value::String(s)) if s == "earliest" => Ok(Some(0)),
                Some(v @ Value::String(s)) if matches!(s.as_str(), "safe" | "finalized") => {
                    block_number(chain, Some(v)).map(Some)
                }
                Some(v @ Value::Object(_)) => block_number(chain, Some(v)).map(Some),
                Some(v) => quantity(v).map(Some),
            }
        };
        out.from_block = bound("fromBlock")?;
        out.to_block = bound("toBlock")?;
    }
    out.addresses = match f.get("address") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => serde_json::from_value(Value::Array(a.clone()))
            .map_err(|e| RpcError::invalid_params(e.to_string()))?,
        Some(v) => vec![serde_json::from_value(v.clone())
            .map_err(|e| RpcError::invalid_params(e.to_string()))?],
    };
    out.topics = match f.get("topics") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| match t {
                Value::Null => Ok(None),
                Value::Array(alts) => serde_json::from_value(Value::Array(alts.clone()))
                    .map(|v: Vec<B256>| if v.is_empty() { None } else { Some(v) }),
                v => serde_json::from_value(v.clone()).map(|h: B256| Some(vec![h])),
            })
            .collect::<Result<_, _>>()
            .map_err(|e| RpcError::invalid_params(e.to_string()))?,
        Some(_) => return Err(RpcError::invalid_params("topics must be an array")),
    };
    Ok(out)
}

/// `eth_getLogs` (and `eth_getFilterLogs`) over the canonical chain.
fn logs_answer(chain: &Chain, f: &LogFilter) -> Result<Answer, RpcError> {
    if let Some(h) = f.block_hash {
        if chain.block_by_hash(h).is_none() {
            return Err(RpcError::server("unknown block"));
        }
    }
    let latest = chain.block_number();
    if let (Some(from), Some(to)) = (f.from_block, f.to_block) {
        if from > to && from <= latest {
            return Err(RpcError::invalid_params("invalid block range params"));
        }
    }
    Ok(logs_raw(chain, &chain.logs(f)))
}

fn logs_raw(chain: &Chain, logs: &[ChainLog]) -> Answer {
    let views: Vec<LogView<'_>> = logs.iter().map(|l| LogView::new(chain, l)).collect();
    Answer::Raw(raw(&views))
}

/// A log as JSON-RPC returns it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogView<'a> {
    address: Address,
    topics: &'a [B256],
    data: &'a Bytes,
    block_hash: B256,
    block_number: U64,
    /// Absent for a log of a block dropped by `evm_revert` (see [`with_block_timestamp`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    block_timestamp: Option<U64>,
    transaction_hash: B256,
    transaction_index: U64,
    log_index: U64,
    removed: bool,
}

impl<'a> LogView<'a> {
    fn new(chain: &Chain, l: &'a ChainLog) -> Self {
        LogView {
            address: l.log.address,
            topics: &l.log.topics,
            data: &l.log.data,
            block_hash: l.block_hash,
            block_number: U64::from(l.block_number),
            block_timestamp: block_timestamp(chain, l.block_hash, l.block_number).map(U64::from),
            transaction_hash: l.tx_hash,
            transaction_index: U64::from(l.tx_index),
            log_index: U64::from(l.log_index),
            removed: l.removed,
        }
    }
}

/// Filter ids are quantities; anything unparseable is simply not a known filter.
fn filter_id(p: &Params) -> Result<u64, RpcError> {
    let v = p
        .raw(0)
        .ok_or_else(|| RpcError::invalid_params("missing filter id"))?;
    quantity(v).map_err(|_| filter_not_found())
}

fn filter_not_found() -> RpcError {
    RpcError::server("filter not found")
}

/// `bursar_reorg` parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BursarReorg {
    depth: Value,
    #[serde(default)]
    drop: Vec<B256>,
    #[serde(default)]
    reorder: bool,
}

fn reorg_depth(chain: &Chain, v: &Value) -> Result<u64, RpcError> {
    let depth = quantity(v)?;
    if depth == 0 || depth > chain.block_number() {
        return Err(RpcError::invalid_params(format!(
            "reorg depth must be between 1 and the chain height {}, got {depth}",
            chain.block_number()
        )));
    }
    Ok(depth)
}

fn reorg_result(chain: &mut Chain, blocks: Vec<Vec<TxEnvelope>>) -> Result<ReorgOutcome, RpcError> {
    chain.reorg(blocks).map_err(|e| match e {
        ReorgError::Depth { .. } => RpcError::invalid_params(e.to_string()),
        ReorgError::NoHistory { .. } => RpcError::server(e.to_string()),
        ReorgError::Tx(t) => t.into(),
    })
}

/// `anvil_reorg [depth, [[rawTx, blockOffset], ...]]`.
fn anvil_reorg(chain: &mut Chain, p: &Params) -> Result<Value, RpcError> {
    let depth = reorg_depth(
        chain,
        p.raw(0)
            .ok_or_else(|| RpcError::invalid_params("missing depth"))?,
    )?;
    let txs: Vec<(Bytes, Value)> = p.opt(1)?.unwrap_or_default();
    let mut blocks = vec![vec![]; depth as usize];
    for (raw, offset) in txs {
        let offset = quantity(&offset)?;
        if offset >= depth {
            return Err(RpcError::invalid_params(format!(
                "block offset {offset} must be below the depth {depth}"
            )));
        }
        let env = decode_raw_transaction(&raw)?;
        blocks[offset as usize].push(env);
    }
    reorg_result(chain, blocks)?;
    Ok(Value::Null)
}

/// `bursar_reorg {depth, drop, reorder}`: rebuilds the last `depth` blocks from their own
/// transactions minus `drop` (reversed within each block if `reorder`).
fn bursar_reorg(chain: &mut Chain, p: &Params) -> Result<Value, RpcError> {
    let req: BursarReorg = p.get(0)?;
    let depth = reorg_depth(chain, &req.depth)?;
    let head = chain.block_number();
    let blocks: Vec<Vec<TxEnvelope>> = (head - depth + 1..=head)
        .map(|n| {
            let mut txs: Vec<TxEnvelope> = chain
                .block_envelopes(n)
                .into_iter()
                .filter(|t| !req.drop.contains(t.tx_hash()))
                .collect();
            if req.reorder {
                txs.reverse();
            }
            txs
        })
        .collect();
    let out = reorg_result(chain, blocks)?;
    Ok(json!({ "blocks": out.blocks, "excluded": out.excluded }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Shared {
        Arc::new(Mutex::new(Chain::default()))
    }

    fn call(chain: &Shared, body: &str) -> Value {
        serde_json::from_str(&handle_body(chain, body.as_bytes())).unwrap()
    }

    #[test]
    fn protocol_errors() {
        let c = shared();
        assert_eq!(call(&c, "{not json")["error"]["code"], -32700);
        assert_eq!(call(&c, "[]")["error"]["code"], -32600);
        assert_eq!(call(&c, "42")["error"]["code"], -32600);
        assert_eq!(
            call(&c, r#"{"jsonrpc":"2.0","id":1,"method":"eth_nope"}"#)["error"]["code"],
            -32601
        );
        assert_eq!(
            call(
                &c,
                r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x12"]}"#
            )["error"]["code"],
            -32602
        );
        let batch = call(
            &c,
            r#"[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"net_version"},5]"#,
        );
        assert_eq!(batch[0]["result"], "0x64aba");
        assert_eq!(batch[1]["result"], "412346");
        assert_eq!(batch[2]["error"]["code"], -32600);
        let rlp = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x02c0ffee"]}"#,
        );
        assert_eq!(rlp["error"]["code"], -32000);
    }

    #[test]
    fn state_override_fee_history_and_unknown_blocks() {
        let c = shared();
        let poor = "0x7777777777777777777777777777777777777777";
        let req = |over: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{{"from":"{poor}","to":"0x5555555555555555555555555555555555555555","value":"0x10"}},"latest"{over}]}}"#
            )
        };
        // Without funds the value transfer fails: the call reverts with empty data.
        let r = call(&c, &req(""));
        assert_eq!(r["error"]["code"], 3, "{r}");
        assert_eq!(r["error"]["data"], "0x");
        let r = call(&c, &req(&format!(r#",{{"{poor}":{{"balance":"0x10"}}}}"#)));
        assert_eq!(r["result"], "0x", "{r}");
        // Overrides do not persist.
        let r = call(
            &c,
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["{poor}","latest"]}}"#
            ),
        );
        assert_eq!(r["result"], "0x0");
        let r = call(&c, &req(r#",{"0x12":{}}"#));
        assert_eq!(r["error"]["code"], -32602);

        let r = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_feeHistory","params":["0x4","latest",[50]]}"#,
        );
        assert_eq!(r["result"]["oldestBlock"], "0x0");
        assert_eq!(r["result"]["baseFeePerGas"].as_array().unwrap().len(), 2);
        assert_eq!(r["result"]["reward"][0][0], "0x0");

        let r = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x10",false]}"#,
        );
        assert_eq!(r["result"], Value::Null);
        let r = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x5555555555555555555555555555555555555555","0x10"]}"#,
        );
        assert_eq!(r["error"]["code"], -32000);
        let r = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"to":"0x5555555555555555555555555555555555555555"}]}"#,
        );
        assert_eq!(r["result"], "0x5208");
    }
}
