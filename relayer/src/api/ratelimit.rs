//! Rate limits per credential (host key or capability token): a token bucket of
//! [`crate::Settings::rate_limit`] requests per second with a burst of twice that, kept in this
//! process. Over the limit: `429 rate_limited` with `Retry-After`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::AppState;
use crate::error::ApiError;

/// Buckets per credential hash.
#[derive(Debug, Default)]
pub struct Limiter {
    buckets: Mutex<HashMap<[u8; 32], (f64, Instant)>>,
}

impl Limiter {
    /// Takes one token from `key`'s bucket; `Err(seconds)` until one is available.
    fn take(&self, key: [u8; 32], per_second: f64) -> Result<(), f64> {
        let burst = per_second * 2.0;
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > 100_000 {
            // Forget full buckets rather than grow without bound.
            buckets.retain(|_, (tokens, at)| {
                *tokens + at.elapsed().as_secs_f64() * per_second < burst
            });
        }
        let (tokens, at) = buckets.entry(key).or_insert((burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * per_second).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err((1.0 - *tokens) / per_second)
        }
    }
}

/// The middleware.
pub(super) async fn layer(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let Some(per_second) = s.settings.rate_limit else {
        return next.run(req).await;
    };
    let Some(credential) = req.headers().get(header::AUTHORIZATION) else {
        return next.run(req).await;
    };
    let key: [u8; 32] = Sha256::digest(credential.as_bytes()).into();
    match s.limiter.take(key, per_second) {
        Ok(()) => next.run(req).await,
        Err(wait) => {
            let mut r = ApiError::RateLimited.into_response();
            let secs = wait.ceil().max(1.0) as u64;
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
    }
}
