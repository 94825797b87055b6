//! WebSocket sessions: the HTTP methods plus `eth_subscribe` (`newHeads`, `logs`) and
//! `eth_unsubscribe`, fed from the chain's event record.

use axum::extract::State as AxState;
use serde_json::{json, Value};

use crate::chain::LogFilter;

use super::dispatch::{answer_call, App};
use super::envelope::{answer_body, parse_body, parse_call, raw, MethodResult, ResponseText};
use super::error::RpcError;
use super::params::{FilterSpec, Id};
use super::request::EthRequest;
use super::response::{header_view, quantity, LogView};
use super::{Shared, WS_MAX_MESSAGE_BYTES};

pub(super) enum SubKind {
    Heads,
    Logs(LogFilter),
}

pub(super) struct Subscription {
    kind: SubKind,
    /// Position in the chain's event record up to which notifications were sent.
    cursor: usize,
}

pub(super) static NEXT_SUBSCRIPTION: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(1);

pub(super) async fn ws_handler(
    ws: axum::extract::ws::WebSocketUpgrade,
    AxState(app): AxState<App>,
) -> axum::response::Response {
    ws.max_message_size(WS_MAX_MESSAGE_BYTES)
        .max_frame_size(WS_MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| ws_session(socket, app))
}

pub(super) async fn ws_session(mut socket: axum::extract::ws::WebSocket, app: App) {
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
                let reply = parse_body(&text).map_or_else(
                    |reply| reply,
                    |v| answer_body(&v, |r| ws_request(&app.chain, &mut subs, r)),
                );
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
pub(super) fn ws_request(
    chain: &Shared,
    subs: &mut std::collections::BTreeMap<u64, Subscription>,
    req: &Value,
) -> Option<ResponseText> {
    let call = match parse_call(req) {
        Ok(call) => call,
        Err(reply) => return Some(raw(&reply)),
    };
    let result = match &call.request {
        Ok(EthRequest::EthUnsubscribe(Id(id))) => {
            Ok(json!(id.is_some_and(|id| subs.remove(&id).is_some())).into())
        }
        Ok(EthRequest::EthSubscribe(kind, filter)) => subscribe(chain, subs, kind, filter.as_ref()),
        _ => return answer_call(chain, call),
    };
    call.answer(result)
}

fn subscribe(
    chain: &Shared,
    subs: &mut std::collections::BTreeMap<u64, Subscription>,
    kind: &str,
    filter: Option<&FilterSpec>,
) -> Result<MethodResult, RpcError> {
    let c = chain.lock().unwrap_or_else(|e| e.into_inner());
    let kind = match kind {
        "newHeads" => SubKind::Heads,
        "logs" => SubKind::Logs(match filter {
            None => LogFilter::default(),
            Some(f) => f.resolve(&c)?,
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
    Ok(quantity(sub).into())
}

/// Notifications owed to `subs` since their cursors (heads of added blocks; matching logs of
/// removed blocks with `removed: true`, then of added ones, in chain-event order).
pub(super) fn notifications(
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
                SubKind::Heads => vec![json!(header_view(&ev.block))],
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
                        "params": { "subscription": quantity(*id), "result": r },
                    })
                    .to_string(),
                );
            }
        }
        sub.cursor = end;
    }
    out
}
