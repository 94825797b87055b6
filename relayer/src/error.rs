//! The one error type of the HTTP API, mapped to a status and a JSON body once:
//! `{"code": "...", "message": "...", "details": {...}}`, `code` being stable.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::store::StoreError;

/// Why a request was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No credentials, or credentials the relayer does not know (or that were revoked).
    #[error("missing, unknown or revoked credentials")]
    Unauthorized,
    /// The credentials lack the scope the request needs.
    #[error("this key lacks the {scope:?} scope")]
    Forbidden {
        /// The scope the request needs.
        scope: &'static str,
    },
    /// Nothing with this id that the caller may see.
    #[error("not found")]
    NotFound,
    /// The request is malformed; `details` says where.
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// Where (field names) and what was expected.
        details: Value,
    },
    /// The database or the node cannot be reached now; retrying later may work.
    #[error("a backing service is unavailable; retry later")]
    Unavailable,
    /// A bug or an unexpected state; details are logged, not returned.
    #[error("internal error")]
    Internal,
}

impl ApiError {
    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden { .. } => "forbidden",
            ApiError::NotFound => "not_found",
            ApiError::Invalid { .. } => "invalid_request",
            ApiError::Unavailable => "unavailable",
            ApiError::Internal => "internal",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::Invalid { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn details(&self) -> Value {
        match self {
            ApiError::Forbidden { scope } => json!({ "scope": scope }),
            ApiError::Invalid { details, .. } => details.clone(),
            _ => json!({}),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        // The cause goes to the log; the caller learns only that it may retry.
        tracing::error!(error = %e, "store error");
        match e {
            StoreError::Database(_) => ApiError::Unavailable,
            _ => ApiError::Internal,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({
            "code": self.code(),
            "message": self.to_string(),
            "details": self.details(),
        });
        (self.status(), axum::Json(body)).into_response()
    }
}
