//! Which requests run where: reads of finished blocks from the published view (on the async
//! worker, or the blocking pool when heavy), everything else against the locked chain on the
//! blocking pool, with a panic answered as an internal error. Both transports (HTTP in
//! [`super::server`], WebSocket in [`super::ws`]) answer through it.

use std::sync::Arc;

use serde_json::Value;

use crate::chain::{Chain, ChainView, PublishedView, Recovered};

use super::api::{execute, read};
use super::envelope::{answer_body, parse_body, parse_call, raw, reply, Call, ResponseText};
use super::error::{error_response, RpcError};
use super::request::EthRequest;
use super::Shared;

/// What the handlers share: the chain and a watch on its event count (wakes WS subscribers).
#[derive(Clone)]
pub(super) struct App {
    pub(super) chain: Shared,
    pub(super) events: tokio::sync::watch::Receiver<usize>,
    /// The view the chain published last: reads of finished blocks are answered from it.
    pub(super) view: PublishedView,
}

/// Runs chain work (WASM execution under the chain's lock) on the blocking pool, so the async
/// workers keep serving I/O and WebSocket clients meanwhile.
async fn blocking(work: impl FnOnce() -> String + Send + 'static) -> String {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        error_response(Value::Null, &RpcError::internal(e.to_string())).to_string()
    })
}

/// Answers a batch, each request against the chain, on the blocking pool.
pub(super) async fn answer_batch(chain: Shared, batch: Value) -> String {
    blocking(move || answer_body(&batch, |r| handle_request(&chain, r))).await
}

/// Answers one request. Reads of finished blocks come from the view the chain published last,
/// without its lock, so they never wait for a transaction that is running: light ones on this
/// async worker, heavy ones (logs, receipts, fee history, full blocks) on the blocking pool.
/// Anything else runs against the locked chain on the blocking pool.
pub(super) async fn answer_single(app: &App, call: Call) -> String {
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

fn reply_text(reply: Option<ResponseText>) -> String {
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

fn handle_request(chain: &Shared, req: &Value) -> Option<ResponseText> {
    match parse_call(req) {
        Ok(call) => answer_call(chain, call),
        Err(reply) => Some(raw(&reply)),
    }
}

/// Answers one call: decodes a raw transaction and recovers its sender before locking the
/// chain (so concurrent senders' recoveries overlap), then runs the call under the lock.
pub(super) fn answer_call(chain: &Shared, call: Call) -> Option<ResponseText> {
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
) -> Option<ResponseText> {
    let Call { id, request } = call;
    // A panic here is a devnet bug; answer it rather than drop the connection, and put the
    // executor back on the head's state (the panic may have left it mid-call).
    let result = request.and_then(|request| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            execute(chain, request, recovered)
        }))
        .unwrap_or_else(|panic| {
            chain.recover();
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
