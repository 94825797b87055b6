//! Agents' MCP server at `/mcp` (the tools of [`bursar_agent::mcp`]), served in process: each
//! tool's request is answered by the function the API's route calls ([`InProcess`]), for the
//! session whose capability token the HTTP request carried, with the API's idempotency (a
//! payment's key is scoped to its session as the API scopes `Idempotency-Key`). No request
//! leaves the process but the agent's own `fetch`.
//!
//! Its sessions are bounded ([`guard`], [`bursar_agent::mcp::sessions`]): a few per token, a
//! cap in all, closed when idle, and each usable only with the token that opened it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bursar_agent::mcp::sessions::{self, Access, Book, Bounds, Owner};
use bursar_agent::mcp::{http_service, HttpService, Sessions, Tools};
use bursar_agent::relayer::{Answer, Ask, Backend, Refusal};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::auth::Principal;
use super::error::status;
use super::idempotency::RequestKey;
use super::state::AppState;
use crate::kernel::Error;
use crate::{feedback, limits, payments, provenance, x402};

/// The header naming an MCP session.
const SESSION: &str = "mcp-session-id";

/// The MCP service and what bounds its sessions.
pub(super) struct Mcp {
    book: Mutex<Book>,
    manager: Arc<Sessions>,
}

/// The `/mcp` service for `app`, and its guard's state.
pub(super) fn service(app: AppState, bounds: Bounds) -> (HttpService, Arc<Mcp>) {
    let manager = sessions::manager(bounds);
    let tools = Tools::served_by(
        Arc::new(InProcess(app.clone())),
        app.settings.fetch_egress,
        app.settings.indexer_url.clone(),
    );
    let mcp = Arc::new(Mcp {
        book: Mutex::new(Book::new(bounds)),
        manager: manager.clone(),
    });
    (http_service(tools, manager), mcp)
}

/// The tools' requests, answered in process.
struct InProcess(AppState);

impl Backend for InProcess {
    fn ask<'a>(&'a self, parts: Option<&'a http::request::Parts>, ask: Ask) -> Answer<'a> {
        Box::pin(async move {
            let app = &*self.0;
            let principal = parts.and_then(|p| p.extensions.get::<Principal>());
            let Some(Principal::Sandbox(session)) = principal else {
                return Err(refusal(Error::Unauthorized));
            };
            let scope = principal.map(|p| p.scope("")).unwrap_or_default();
            let wait = |s: u64| Duration::from_secs(s.min(60));
            let key = |k: &str| RequestKey::of(&scope, k);
            let answer = match ask {
                Ask::Limits => view(limits::limits(app, session).await),
                Ask::Pay { body, key: k } => match body_of(body) {
                    Ok(body) => view(payments::pay(app, session, body, Some(&key(&k).0)).await),
                    Err(e) => Err(e),
                },
                Ask::Payment { id, wait: w } => {
                    view(payments::get(app, session, &id, wait(w), None).await)
                }
                Ask::Payments { limit } => payments::list(app, session, Some(limit.into()))
                    .await
                    .map(|p| json!({ "payments": p })),
                Ask::X402Pay {
                    payment_required,
                    agent_id,
                } => {
                    let id = agent_id.map(|id| alloy_primitives::U256::from_str_radix(&id, 10));
                    let agent_id = match id.transpose() {
                        Ok(id) => id.map(crate::kernel::json::Amount),
                        Err(_) => return Err(refusal(Error::invalid("agentId", "a decimal id"))),
                    };
                    let req = x402::PayRequest {
                        payment_required,
                        agent_id,
                    };
                    view(x402::pay(app, session, req).await)
                }
                Ask::RecordProvenance { body, key: k } => match body_of(body) {
                    Ok(body) => {
                        view(provenance::record(app, session, body, Some(&key(&k).0)).await)
                    }
                    Err(e) => Err(e),
                },
                Ask::Provenance { id, wait: w } => {
                    view(provenance::get(app, session, &id, wait(w)).await)
                }
                Ask::Rate { body, key: k } => match body_of(body) {
                    Ok(body) => view(feedback::rate(app, session, body, Some(&key(&k).0)).await),
                    Err(e) => Err(e),
                },
                Ask::Feedback { id, wait: w } => {
                    view(feedback::get(app, session, &id, wait(w)).await)
                }
            };
            answer.map_err(refusal)
        })
    }
}

/// A view as the API's JSON.
fn view<T: Serialize>(r: Result<T, Error>) -> Result<Value, Error> {
    r.and_then(|v| serde_json::to_value(v).map_err(|_| Error::Internal))
}

/// A request body from JSON, refused as the API refuses a malformed one.
fn body_of<T: DeserializeOwned>(body: Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        Error::Invalid {
            message: format!("invalid JSON body at {path}: {}", e.into_inner()),
            details: json!({ "field": path }),
        }
    })
}

/// An error as the API answers it.
fn refusal(e: Error) -> Refusal {
    Refusal::Refused {
        status: status(&e).as_u16(),
        code: e.code().to_owned(),
        details: e.details(),
        message: e.to_string(),
    }
}

/// Bounds `/mcp`'s sessions: an `initialize` may close the caller's oldest, is refused `503`
/// when the server is full; a request naming a session not the caller's is answered `404` as
/// if it did not exist.
pub(super) async fn guard(State(mcp): State<Arc<Mcp>>, req: Request, next: Next) -> Response {
    // The session the token authenticated (`sandbox_only` let only those in): a token spelled
    // another way is the same owner.
    let Some(Principal::Sandbox(session)) = req.extensions().get::<Principal>() else {
        return Error::Unauthorized.into_response();
    };
    let owner: Owner = Sha256::digest(session.id.as_bytes()).into();
    let now = Instant::now();
    let named = req
        .headers()
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(id) = named else {
        if req.method() != Method::POST {
            return next.run(req).await;
        }
        // A new session (an `initialize`).
        let admission = mcp
            .book
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .admit(owner, now);
        for id in &admission.close {
            sessions::close(&mcp.manager, id).await;
        }
        if !admission.admitted {
            let mut r = Error::Unavailable.into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("10"));
            return r;
        }
        let r = next.run(req).await;
        if let Some(id) = r.headers().get(SESSION).and_then(|v| v.to_str().ok()) {
            let mut book = mcp.book.lock().unwrap_or_else(|e| e.into_inner());
            book.opened(id, owner, now);
        }
        return r;
    };
    let access = mcp
        .book
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .access(&id, owner, now);
    if access == Access::NoSuchSession {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": { "code": -32001, "message": "Session not found" }
            })),
        )
            .into_response();
    }
    let closing = req.method() == Method::DELETE;
    let r = next.run(req).await;
    if closing && r.status().is_success() {
        mcp.book
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed(&id);
    }
    r
}
