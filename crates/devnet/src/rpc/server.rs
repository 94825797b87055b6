//! HTTP transport: the axum router, request envelopes, batches and the answers' JSON text.

use std::sync::{Arc, Mutex};

use axum::extract::State as AxState;
use axum::routing::post;
use axum::Router;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::chain::{Chain, ChainView, PublishedView, Recovered};

use super::api::{execute, read};
use super::error::{error_response, ErrorCode, RpcError};
use super::request::EthRequest;
use super::ws::ws_handler;
use super::{Shared, MAX_BODY_BYTES};

/// What the handlers share: the chain and a watch on its event count (wakes WS subscribers).
#[derive(Clone)]
pub(super) struct App {
    pub(super) chain: Shared,
    pub(super) events: tokio::sync::watch::Receiver<usize>,
    /// The view the chain published last: reads of finished blocks are answered from it.
    view: PublishedView,
}

/// The axum router answering JSON-RPC at `/` (HTTP POST, or WebSocket on GET + upgrade).
/// Installs the chain's event hook (see [`Chain::set_event_hook`]).
pub fn router(chain: Arc<Mutex<Chain>>) -> Router {
    let (tx, rx, view) = {
        let mut c = chain.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = tokio::sync::watch::channel(c.event_count());
        let hook_tx = tx.clone();
        c.set_event_hook(move |n| {
            hook_tx.send_replace(n);
        });
        (tx, rx, c.published_view())
    };
    drop(tx);
    Router::new()
        .route("/", post(http_handler).get(ws_handler))
        // axum's default limit is 2 MB; use geth's.
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(App {
            chain,
            events: rx,
            view,
        })
}

pub(super) async fn http_handler(
    AxState(app): AxState<App>,
    headers: axum::http::HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let (status, reply) = match body {
        // Chain work (WASM execution under the chain's lock) runs on the blocking pool, so the
        // async workers keep serving I/O and WebSocket clients meanwhile.
        // The body is parsed once, here; cheap reads answer on this worker (`quick_read`).
        Ok(body) => {
            let chain = Arc::clone(&app.chain);
            let reply = match parse_body(&body) {
                Err(reply) => reply,
                Ok(batch @ Value::Array(_)) => {
                    blocking(move || answer_body(&batch, |r| handle_request(&chain, r))).await
                }
                Ok(single) => match parse_call(&single) {
                    Err(reply) => reply.to_string(),
                    Ok(call) => answer_single(&app, call).await,
                },
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
                RpcError::new(ErrorCode::InvalidRequest, rejection.body_text())
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

/// Runs chain work (WASM execution under the chain's lock) on the blocking pool, so the async
/// workers keep serving I/O and WebSocket clients meanwhile.
async fn blocking(work: impl FnOnce() -> String + Send + 'static) -> String {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        error_response(Value::Null, &RpcError::internal(e.to_string())).to_string()
    })
}

/// Answers one request. Reads of finished blocks come from the view the chain published last,
/// without its lock, so they never wait for a transaction that is running: light ones on this
/// async worker, heavy ones (logs, receipts, fee history, full blocks) on the blocking pool.
/// Anything else runs against the locked chain on the blocking pool.
async fn answer_single(app: &App, call: Call) -> String {
    let view = app.view.latest();
    let heavy = call.request.as_ref().is_ok_and(EthRequest::is_heavy_read);
    if !heavy {
        if let Some(reply) = answer_from_view(&view, &call) {
            return reply;
        }
    }
    let chain = Arc::clone(&app.chain);
    blocking(move || {
        answer_from_view(&view, &call).unwrap_or_else(|| reply_text(answer_call(&chain, call)))
    })
    .await
}

/// `call`'s response from `view`, if it is a read of finished blocks.
fn answer_from_view(view: &ChainView, call: &Call) -> Option<String> {
    let answer = read(view, call.request.as_ref().ok()?)?;
    Some(reply_text(call.answer(answer)))
}

fn reply_text(reply: Option<Reply>) -> String {
    reply.map_or_else(String::new, |r| String::from(r.get()))
}

/// Answers a raw request body (single request or batch): the response text, empty when the
/// body held only notifications. Never panics; pure apart from the chain it runs on.
pub fn handle_body(chain: &Shared, body: &[u8]) -> String {
    parse_body(body).map_or_else(
        |reply| reply,
        |v| answer_body(&v, |r| handle_request(chain, r)),
    )
}

/// A body as JSON, or the error response for one too large or not JSON.
pub(super) fn parse_body(body: &[u8]) -> Result<Value, String> {
    if body.len() > MAX_BODY_BYTES {
        let too_large = RpcError::too_large(Some(body.len() as u64));
        return Err(error_response(Value::Null, &too_large).to_string());
    }
    serde_json::from_slice(body)
        .map_err(|_| error_response(Value::Null, &RpcError::parse()).to_string())
}

/// Answers a parsed body (one request, or a batch) with `one` per request: the response text,
/// empty when the body held only notifications.
pub(super) fn answer_body(value: &Value, mut one: impl FnMut(&Value) -> Option<Reply>) -> String {
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
        other => one(other).map_or_else(String::new, |v| String::from(v.get())),
    }
}

/// A request that passed the envelope checks, with its method and params parsed (or the
/// error that answers them).
#[derive(Clone)]
pub(super) struct Call {
    /// `None`: a notification (no `id` member), which gets no response.
    pub(super) id: Option<Value>,
    pub(super) request: Result<EthRequest, RpcError>,
}

/// One response of a body's answer, as JSON text (batches are arrays of these).
pub(super) type Reply = Box<RawValue>;

pub(super) fn raw(v: &impl Serialize) -> Reply {
    serde_json::value::to_raw_value(v).expect("JSON values serialize")
}

/// A method's result: a JSON value, or JSON text serialized straight from typed data (logs,
/// where building a `Value` tree per log cost more than the query).
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Answer {
    Json(Value),
    Raw(Reply),
}

impl From<Value> for Answer {
    fn from(v: Value) -> Self {
        Answer::Json(v)
    }
}

impl Call {
    /// The response to this call with `result` (`None` for a notification).
    pub(super) fn answer(&self, result: Result<Answer, RpcError>) -> Option<Reply> {
        reply(self.id.as_ref(), result)
    }
}

/// The response with `result` to the request with `id` (`None`: a notification, unanswered).
fn reply(id: Option<&Value>, result: Result<Answer, RpcError>) -> Option<Reply> {
    #[derive(Serialize)]
    struct Success<'a> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: Answer,
    }
    let id = id?;
    Some(match result {
        Ok(result) => raw(&Success {
            jsonrpc: "2.0",
            id,
            result,
        }),
        Err(e) => raw(&error_response(id.clone(), &e)),
    })
}

/// Checks the request envelope as geth does (object, `jsonrpc: "2.0"`, an id that is a
/// number, string or null, a non-empty string method, array params); `Err` is the response.
pub(super) fn parse_call(req: &Value) -> Result<Call, Value> {
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
        Some(m) if !m.is_empty() => m,
        _ => return Err(invalid(reply_id)),
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(a)) => Ok(a.clone()),
        // ethers-providers' Ws sends `eth_unsubscribe` with the bare id as params.
        Some(v @ Value::String(_)) if method == "eth_unsubscribe" => Ok(vec![v.clone()]),
        Some(_) => Err(RpcError::invalid_params("non-array args")),
    };
    let request = params.and_then(|p| EthRequest::parse(method, p));
    Ok(Call { id, request })
}

fn handle_request(chain: &Shared, req: &Value) -> Option<Reply> {
    match parse_call(req) {
        Ok(call) => answer_call(chain, call),
        Err(reply) => Some(raw(&reply)),
    }
}

/// Answers one call: decodes a raw transaction and recovers its sender before locking the
/// chain (so concurrent senders' recoveries overlap), then runs the call under the lock.
pub(super) fn answer_call(chain: &Shared, call: Call) -> Option<Reply> {
    let recovered = match &call.request {
        Ok(EthRequest::EthSendRawTransaction(raw)) => crate::chain::decode_raw_transaction(raw)
            .ok()
            .map(Recovered::new),
        _ => None,
    };
    // A poisoned lock only means an earlier request panicked (answered with -32603 below);
    // keep serving.
    answer_locked(
        &mut chain.lock().unwrap_or_else(|e| e.into_inner()),
        call,
        recovered,
    )
}

/// One call against the locked chain (`recovered`: see [`answer_call`]).
pub(super) fn answer_locked(
    chain: &mut Chain,
    call: Call,
    recovered: Option<Recovered>,
) -> Option<Reply> {
    let Call { id, request } = call;
    // A panic here is a devnet bug; answer it rather than drop the connection. The chain
    // mutates only after validation, so a panic leaves it as consistent as it can be.
    let result = request.and_then(|request| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            execute(chain, request, recovered)
        }))
        .unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            Err(RpcError::internal(why))
        })
    });
    reply(id.as_ref(), result)
}
