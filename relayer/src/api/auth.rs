//! Who is calling, settled once per request before routing: the `Authorization` header parsed
//! (`Bearer` in any case, any whitespace around the token), the credential authenticated, the
//! caller's rate limit taken ([`super::ratelimit`]), and the [`Principal`] left in the
//! request's extensions for the extractors ([`super::extract`]) and for idempotency keys.
//!
//! A credential of ours (`bhk_…`, `bct_…`) that does not authenticate is refused here with
//! `401` on any route, and counted against the client's address; other credentials (another
//! service's bearer token a client sends everywhere) leave the caller anonymous.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use std::sync::Arc;

use super::ratelimit::{client_key, Bucket, Limiter};
use super::state::AppState;
use crate::hosts::{self, Host};
use crate::kernel::Error;
use crate::sessions;
use crate::store::SessionRow;

/// Host API keys start with this.
pub(super) const HOST_KEY_PREFIX: &str = "bhk_";
/// Capability tokens start with this.
pub(super) const CAPABILITY_PREFIX: &str = "bct_";

/// Who a request comes from.
#[derive(Clone, Debug)]
pub enum Principal {
    /// A host, by its API key.
    Host(Host),
    /// A sandbox, by its session's capability token.
    Sandbox(Box<SessionRow>),
    /// No credential of ours.
    Anonymous,
}

impl Principal {
    /// The caller's own space of idempotency keys: the host or the session; anonymous callers
    /// share one per route (`route`: the method and the matched path).
    pub(super) fn scope(&self, route: &str) -> String {
        match self {
            Principal::Host(h) => format!("host:{}", h.id),
            Principal::Sandbox(s) => format!("session:{}", s.id),
            Principal::Anonymous => format!("anonymous:{route}"),
        }
    }
}

/// Lets only a sandbox (a live session's capability token) through, to agents' MCP server;
/// anyone else is answered 401 as the API answers it, with the challenge.
pub(super) async fn sandbox_only(req: Request, next: Next) -> Response {
    match req.extensions().get::<Principal>() {
        Some(Principal::Sandbox(_)) => next.run(req).await,
        // A host key is a valid token, for another resource.
        Some(Principal::Host(_)) => unauthorized(Some(
            "a session's capability token is needed here, not a host key",
        )),
        _ => unauthorized(None),
    }
}

/// `401` with RFC 6750's challenge: `error="invalid_token"` and why, when a token was sent.
fn unauthorized(invalid: Option<&str>) -> Response {
    let mut r = Error::Unauthorized.into_response();
    let challenge = match invalid {
        Some(why) => {
            format!("Bearer realm=\"bursar\", error=\"invalid_token\", error_description=\"{why}\"")
        }
        None => "Bearer realm=\"bursar\"".to_owned(),
    };
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

/// The bearer token of an `Authorization` header: `None` without one or for another scheme.
pub(super) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(|c: char| c.is_ascii_whitespace())?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The middleware.
pub(super) async fn layer(
    State((s, limiter)): State<(AppState, Arc<Limiter>)>,
    mut req: Request,
    next: Next,
) -> Response {
    let client = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| client_key(c.0.ip()));
    let settings = &s.settings;
    let token = bearer(req.headers())
        .filter(|t| t.starts_with(HOST_KEY_PREFIX) || t.starts_with(CAPABILITY_PREFIX));
    let principal = match token {
        None => Principal::Anonymous,
        Some(token) => {
            // Over its failures, a client's next credentials are not even looked up.
            if let Some(rate) = settings.auth_failure_limit {
                if let Err(wait) = limiter.check(Bucket::Failures(client), rate) {
                    return limited(wait);
                }
            }
            let authenticated = if token.starts_with(HOST_KEY_PREFIX) {
                hosts::authenticate(&s.store, token)
                    .await
                    .map(Principal::Host)
            } else {
                sessions::authenticate(&s, token)
                    .await
                    .map(|row| Principal::Sandbox(Box::new(row)))
            };
            match authenticated {
                Ok(p) => p,
                Err(Error::Unauthorized) => {
                    if let Some(rate) = settings.auth_failure_limit {
                        let _ = limiter.take(Bucket::Failures(client), rate);
                    }
                    return unauthorized(Some("the token is unknown, revoked or expired"));
                }
                Err(e) => return e.into_response(),
            }
        }
    };
    let (bucket, rate) = match &principal {
        Principal::Host(h) => (Bucket::Host(h.id.clone()), settings.rate_limit),
        Principal::Sandbox(row) => (Bucket::Session(row.id.clone()), settings.rate_limit),
        Principal::Anonymous => (Bucket::Client(client), settings.client_rate_limit),
    };
    if let Some(rate) = rate {
        if let Err(wait) = limiter.take(bucket, rate) {
            return limited(wait);
        }
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// `429` with `Retry-After` (whole seconds, at least 1).
fn limited(wait: f64) -> Response {
    let mut r = Error::RateLimited.into_response();
    let secs = wait.ceil().max(1.0) as u64;
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn one_token_however_the_header_is_spelled() {
        for value in [
            "Bearer bct_ab",
            "Bearer  bct_ab",
            "bearer bct_ab",
            "BEARER\tbct_ab ",
            " Bearer bct_ab",
        ] {
            assert_eq!(bearer(&headers(value)), Some("bct_ab"), "{value:?}");
        }
        for value in [
            "Basic dXNlcjpwYXNz",
            "Bearer",
            "Bearer   ",
            "bct_ab",
            "Bearerbct_ab",
        ] {
            assert_eq!(bearer(&headers(value)), None, "{value:?}");
        }
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
