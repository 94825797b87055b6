//! The HTTP face of [`Error`]: its status, and the JSON body
//! `{"code": "...", "message": "...", "details": {...}}`, `code` being stable.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::kernel::error::{Error, Refusal};

pub(super) fn status(e: &Error) -> StatusCode {
    match e {
        Error::Unauthorized => StatusCode::UNAUTHORIZED,
        Error::Forbidden { .. } => StatusCode::FORBIDDEN,
        Error::NotFound => StatusCode::NOT_FOUND,
        Error::Invalid { .. } => StatusCode::BAD_REQUEST,
        Error::Contract(_) => StatusCode::UNPROCESSABLE_ENTITY,
        Error::Conflict { .. } | Error::TermsMismatch { .. } => StatusCode::CONFLICT,
        Error::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Error::Delivery { refusal, .. } => match refusal {
            Refusal::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::Malformed => StatusCode::BAD_REQUEST,
            Refusal::Unauthenticated => StatusCode::UNAUTHORIZED,
        },
        Error::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        Error::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Error::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Every error's body.
#[derive(Serialize, ToSchema)]
#[schema(as = Error)]
pub(super) struct ErrorBody {
    /// Stable: `unauthorized`, `forbidden`, `not_found`, `invalid_request`, `session_not_open`,
    /// `session_already_opened`, `session_terms_mismatch` (details: field, prepared, onChain),
    /// `idempotency_key_reused`, `rate_limited`, `body_too_large`, `unavailable`… or a contract
    /// error's name (`WalletPeriodBudgetExceeded`…).
    code: String,
    /// What went wrong, in words.
    message: String,
    /// The error's arguments by name (a contract error's), or where a request was malformed.
    #[schema(value_type = Object)]
    details: Value,
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            code: self.code().to_owned(),
            message: self.to_string(),
            details: self.details(),
        };
        (status(&self), axum::Json(body)).into_response()
    }
}
