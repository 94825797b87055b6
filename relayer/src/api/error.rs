//! The HTTP face of [`Error`]: its status, and the JSON body
//! `{"code": "...", "message": "...", "details": {...}}`, `code` being stable.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::kernel::providers::ProviderError;
use crate::kernel::Error;

fn status(e: &Error) -> StatusCode {
    match e {
        Error::Unauthorized => StatusCode::UNAUTHORIZED,
        Error::Forbidden { .. } => StatusCode::FORBIDDEN,
        Error::NotFound => StatusCode::NOT_FOUND,
        Error::Invalid { .. } => StatusCode::BAD_REQUEST,
        Error::Contract(_) => StatusCode::UNPROCESSABLE_ENTITY,
        Error::Conflict { .. } | Error::TermsMismatch { .. } => StatusCode::CONFLICT,
        Error::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Error::Delivery(e) => match e {
            ProviderError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ProviderError::Malformed(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::UNAUTHORIZED,
        },
        Error::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        Error::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Error::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let body = json!({
            "code": self.code(),
            "message": self.to_string(),
            "details": self.details(),
        });
        (status(&self), axum::Json(body)).into_response()
    }
}
