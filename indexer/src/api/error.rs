//! Why a request failed, and its JSON: `{code, message, details}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::store::StoreError;

/// Why a request failed.
#[derive(Debug)]
pub enum ApiError {
    /// A query parameter is malformed or unknown.
    BadParameter {
        /// Which.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// Nothing with this id.
    NotFound,
    /// The database cannot be reached now.
    Unavailable,
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "store error");
        ApiError::Unavailable
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            ApiError::BadParameter { name, message } => (
                StatusCode::BAD_REQUEST,
                json!({ "code": "invalid_parameter", "message": message, "details": { "parameter": name } }),
            ),
            ApiError::NotFound => (
                StatusCode::NOT_FOUND,
                json!({ "code": "not_found", "message": "not found", "details": {} }),
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "code": "unavailable", "message": "the database is unavailable; retry later", "details": {} }),
            ),
        };
        (status, Json(body)).into_response()
    }
}
