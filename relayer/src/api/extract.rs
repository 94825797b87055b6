//! Who is calling (as [`super::auth`] settled it), and request bodies parsed with the API's
//! own errors.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::auth::Principal;
use super::state::{AppState, MAX_BODY};
use crate::hosts::Host;
use crate::kernel::Error;
use crate::store::SessionRow;

impl FromRequestParts<AppState> for Host {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Error> {
        match parts.extensions.get::<Principal>() {
            Some(Principal::Host(host)) => Ok(host.clone()),
            _ => Err(Error::Unauthorized),
        }
    }
}

/// A sandbox, authenticated by its session's capability token: the live session it acts for.
pub struct Sandbox(pub SessionRow);

impl FromRequestParts<AppState> for Sandbox {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Error> {
        match parts.extensions.get::<Principal>() {
            Some(Principal::Sandbox(row)) => Ok(Sandbox(row.as_ref().clone())),
            _ => Err(Error::Unauthorized),
        }
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
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Error> {
        match parts.extensions.get::<Principal>() {
            Some(Principal::Host(host)) => Ok(Caller::Host(host.clone())),
            Some(Principal::Sandbox(row)) => Ok(Caller::Sandbox(row.clone())),
            _ => Err(Error::Unauthorized),
        }
    }
}

/// Query parameters of type `T`; a malformed query is answered as `invalid_request` naming the
/// parameter (axum's own `Query` answers plain text).
pub(super) struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Error> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(Params)
            .map_err(|e| {
                let path = e.path().to_string();
                Error::Invalid {
                    message: format!("invalid query: {}", e.into_inner()),
                    details: json!({ "parameter": path }),
                }
            })
    }
}

/// A JSON body of type `T`; malformed JSON, unknown fields and bad values are answered as
/// `invalid_request` naming the problem and where it is.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for Body<T> {
    type Rejection = Error;

    async fn from_request(req: Request, s: &AppState) -> Result<Self, Error> {
        let bytes = Bytes::from_request(req, s)
            .await
            .map_err(|_| Error::TooLarge)?;
        if bytes.len() > MAX_BODY {
            return Err(Error::TooLarge);
        }
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        serde_path_to_error::deserialize(&mut de)
            .map(Body)
            .map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                Error::Invalid {
                    message: format!("invalid JSON body at {path}: {inner}"),
                    details: json!({ "field": path, "line": inner.line(), "column": inner.column() }),
                }
            })
    }
}
