//! HTTP transport: the axum router, and JSON-RPC over HTTP POST (WebSocket upgrades go to
//! [`super::ws`]).

use std::sync::{Arc, Mutex};

use axum::extract::State as AxState;
use axum::routing::post;
use axum::Router;
use serde_json::Value;

use crate::chain::Chain;

use super::dispatch::{answer_batch, answer_single, App};
use super::envelope::{parse_body, parse_call};
use super::error::{error_response, ErrorCode, RpcError};
use super::ws::ws_handler;
use super::MAX_BODY_BYTES;

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
                Ok(batch @ Value::Array(_)) => answer_batch(chain, batch).await,
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
