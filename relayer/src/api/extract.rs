//! Who is calling, and request bodies parsed with the API's own errors.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{AppState, MAX_BODY};
use crate::error::ApiError;
use crate::hosts::{self, Host};
use crate::sessions;
use crate::store::SessionRow;

/// Host API keys start with this.
const HOST_KEY_PREFIX: &str = "bhk_";
/// Capability tokens start with this.
const CAPABILITY_PREFIX: &str = "bct_";

fn bearer(parts: &Parts) -> Result<&str, ApiError> {
    parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or(ApiError::Unauthorized)
}

impl FromRequestParts<AppState> for Host {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        let token = bearer(parts)?;
        if !token.starts_with(HOST_KEY_PREFIX) {
            return Err(ApiError::Unauthorized);
        }
        hosts::authenticate(&s.store, token).await
    }
}

/// A sandbox, authenticated by its session's capability token: the live session it acts for.
pub struct Sandbox(pub SessionRow);

impl FromRequestParts<AppState> for Sandbox {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        let token = bearer(parts)?;
        if !token.starts_with(CAPABILITY_PREFIX) {
            return Err(ApiError::Unauthorized);
        }
        Ok(Sandbox(sessions::authenticate(s, token).await?))
    }
}

/// A host or a sandbox, for routes both may call.
pub enum Caller {
    /// A host key.
    Host(Host),
    /// A capability token.
    Sandbox(Box<SessionRow>),
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        if bearer(parts)?.starts_with(CAPABILITY_PREFIX) {
            Ok(Caller::Sandbox(Box::new(
                Sandbox::from_request_parts(parts, s).await?.0,
            )))
        } else {
            Ok(Caller::Host(Host::from_request_parts(parts, s).await?))
        }
    }
}

/// A JSON body of type `T`; malformed JSON, unknown fields and bad values are answered as
/// `invalid_request` naming the problem and where it is.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, s: &AppState) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, s)
            .await
            .map_err(|_| ApiError::TooLarge)?;
        if bytes.len() > MAX_BODY {
            return Err(ApiError::TooLarge);
        }
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        serde_path_to_error::deserialize(&mut de)
            .map(Body)
            .map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                ApiError::Invalid {
                    message: format!("invalid JSON body at {path}: {inner}"),
                    details: json!({ "field": path, "line": inner.line(), "column": inner.column() }),
                }
            })
    }
}
