//! `Idempotency-Key` on every POST: the first response to a (caller, key) is kept; the same key
//! with the same body gets that response again (`Idempotent-Replayed: true`) and never a second
//! transaction; the same key with another body gets `409 idempotency_key_reused`. A request
//! that arrives while the first with its key still runs waits for it. Responses the caller may
//! cure by retrying (5xx), and those that started nothing (401, 403, 404, 405, 429), are not
//! kept.
//!
//! It runs after authentication and routing ([`super::router`]): the caller is the
//! authenticated principal (a host, a session), never the header's bytes, so one credential
//! spelled two ways has one key space; anonymous callers have one per route.
//!
//! A process can die after its payment committed and before its response was kept. So the
//! handlers that move money or write records get the key ([`RequestKey`]) and store it with
//! what they create, in the same database transaction: a retry whose claim lapsed finds the
//! payment rather than making a second one.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::auth::Principal;
use super::state::{AppState, MAX_BODY};
use crate::kernel::Error;
use crate::store::{now_ms, Claim};

/// The request header.
pub(super) const HEADER: &str = "idempotency-key";
/// Set on a replayed response.
pub(super) const REPLAYED: &str = "idempotent-replayed";

/// How often, and how many times, a request waits for the first request with its key.
const WAIT_STEP: Duration = Duration::from_millis(25);
const WAIT_STEPS: u32 = 1_200;

/// The request's idempotency key, per caller: `hex(SHA-256(caller ‖ 0 ‖ key))` (the caller as
/// [`Principal::scope`] names it), for the handlers that store it with what they create.
#[derive(Clone, Debug)]
pub(super) struct RequestKey(pub(super) String);

impl RequestKey {
    /// `key` of `caller` (a [`Principal::scope`]).
    pub(super) fn of(caller: &str, key: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(caller.as_bytes());
        hasher.update([0]);
        hasher.update(key.as_bytes());
        RequestKey(hex(&hasher.finalize()))
    }
}

/// The middleware.
pub(super) async fn layer(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let Some(key) = req.headers().get(HEADER) else {
        return next.run(req).await;
    };
    let key = match key.to_str() {
        Ok(k) if !k.is_empty() && k.len() <= 255 => k.to_owned(),
        _ => {
            return Error::invalid(
                HEADER,
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            )
            .into_response()
        }
    };
    // Keys are per caller: the principal the credential authenticated (never the credential).
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or(req.uri().path(), MatchedPath::as_str);
    let caller = match req.extensions().get::<Principal>() {
        Some(p) => p.scope(&format!("POST {route}")),
        None => return Error::Internal.into_response(),
    };
    let (mut parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return Error::TooLarge.into_response();
    };
    let mut hasher = Sha256::new();
    hasher.update(parts.uri.path().as_bytes());
    hasher.update([0]);
    hasher.update(&bytes);
    let request_hash = hex(&hasher.finalize());
    for _ in 0..WAIT_STEPS {
        let claim = match s
            .store
            .claim_idempotency_key(
                &caller,
                &key,
                &request_hash,
                &s.process.instance,
                now_ms(),
                now_ms() - s.settings.instance_timeout.as_millis() as i64,
            )
            .await
        {
            Ok(c) => c,
            Err(e) => return Error::from(e).into_response(),
        };
        match claim {
            Claim::New => {
                parts.extensions.insert(RequestKey::of(&caller, &key));
                let response = next
                    .run(Request::from_parts(parts, Body::from(bytes)))
                    .await;
                return keep(&s, &caller, &key, response).await;
            }
            Claim::Replay { status, response } => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
                let mut r = (status, response).into_response();
                let headers = r.headers_mut();
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                headers.insert(REPLAYED, HeaderValue::from_static("true"));
                return r;
            }
            Claim::Mismatch => {
                return Error::conflict(
                    "idempotency_key_reused",
                    "this Idempotency-Key was used with another request body",
                )
                .into_response()
            }
            Claim::Running => tokio::time::sleep(WAIT_STEP).await,
        }
    }
    Error::conflict(
        "idempotency_key_in_use",
        "a request with this Idempotency-Key is still running; retry later",
    )
    .into_response()
}

/// Keeps `response` for the key (unless a retry may cure it or it started nothing) and returns
/// it.
async fn keep(s: &AppState, caller: &str, key: &str, response: Response) -> Response {
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let started_nothing = [401, 403, 404, 405, 429].contains(&parts.status.as_u16());
    let kept = if parts.status.is_server_error() || started_nothing {
        s.store.release_idempotency_key(caller, key).await
    } else {
        let text = String::from_utf8_lossy(&bytes);
        s.store
            .complete_idempotency_key(caller, key, parts.status.as_u16(), &text)
            .await
    };
    if let Err(e) = kept {
        tracing::error!(error = %e, "could not keep an idempotent response");
    }
    Response::from_parts(parts, Body::from(bytes))
}

fn hex(bytes: &[u8]) -> String {
    alloy_primitives::hex::encode(bytes)
}
