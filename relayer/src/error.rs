//! The one error type of the HTTP API, mapped to a status and a JSON body once:
//! `{"code": "...", "message": "...", "details": {...}}`, `code` being stable.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use bursar_client::revert::ContractError;
use bursar_client::rpc::RpcError;

use crate::store::StoreError;
use crate::submission::EngineError;
use crate::vault::VaultError;

/// Why a request was refused or failed.
#[derive(Clone, Debug, thiserror::Error)]
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
    /// The contracts refuse it: `code` is the contract error's name (`WalletPeriodBudgetExceeded`)
    /// and `details` its decoded arguments. Checked before anything is sent, by the contracts'
    /// own rules at the current block.
    #[error("refused by the contracts: {}", .0.name)]
    Contract(ContractError),
    /// The request conflicts with the state of what it names (a session not open yet, an
    /// idempotency key used with another body…); `code` says which.
    #[error("{message}")]
    Conflict {
        /// The stable code.
        code: &'static str,
        /// What conflicts.
        message: String,
    },
    /// A session the owner opened on chain with terms other than the prepared ones: `field`
    /// (the `OpenSession` field's name) is the first that differs.
    #[error("the session on chain has {field} = {on_chain}, prepared {prepared}: it was opened with other terms than prepared")]
    TermsMismatch {
        /// The first field that differs.
        field: &'static str,
        /// Its prepared value.
        prepared: String,
        /// Its value on chain.
        on_chain: String,
    },
    /// The credential sent more requests than its rate limit allows; retry after
    /// `Retry-After` seconds.
    #[error("rate limit exceeded; retry later")]
    RateLimited,
    /// The request body is larger than the API accepts.
    #[error("request body too large")]
    TooLarge,
    /// A sandbox provider's delivery was refused: not signed with the host's secret for that
    /// provider (or none is configured), stale, or not in the provider's format. Nothing
    /// changed.
    #[error("delivery refused: {0}")]
    Delivery(crate::providers::ProviderError),
    /// The database or the node cannot be reached now; retrying later may work.
    #[error("a backing service is unavailable; retry later")]
    Unavailable,
    /// A bug or an unexpected state; details are logged, not returned.
    #[error("internal error")]
    Internal,
}

impl ApiError {
    /// The stable machine-readable code: the contract error's name for [`ApiError::Contract`].
    pub fn code(&self) -> &str {
        if let ApiError::Contract(e) = self {
            return &e.name;
        }
        match self {
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden { .. } => "forbidden",
            ApiError::NotFound => "not_found",
            ApiError::Invalid { .. } => "invalid_request",
            ApiError::Contract(_) => "contract_error",
            ApiError::Conflict { code, .. } => code,
            ApiError::TermsMismatch { .. } => "session_terms_mismatch",
            ApiError::TooLarge => "body_too_large",
            ApiError::Delivery(e) => e.code(),
            ApiError::RateLimited => "rate_limited",
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
            ApiError::Contract(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Conflict { .. } | ApiError::TermsMismatch { .. } => StatusCode::CONFLICT,
            ApiError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Delivery(e) => match e {
                crate::providers::ProviderError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
                crate::providers::ProviderError::Malformed(_) => StatusCode::BAD_REQUEST,
                _ => StatusCode::UNAUTHORIZED,
            },
            ApiError::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn details(&self) -> Value {
        match self {
            ApiError::Forbidden { scope } => json!({ "scope": scope }),
            ApiError::Invalid { details, .. } => details.clone(),
            ApiError::Contract(e) => Value::Object(e.args.clone()),
            ApiError::TermsMismatch {
                field,
                prepared,
                on_chain,
            } => json!({ "field": field, "prepared": prepared, "onChain": on_chain }),
            _ => json!({}),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        // The cause goes to the log; the caller learns only that it may retry.
        tracing::error!(error = %e, "store error");
        match e {
            StoreError::Db(bursar_db::DbError::Database(_)) => ApiError::Unavailable,
            _ => ApiError::Internal,
        }
    }
}

impl ApiError {
    /// A malformed request: `message` names the problem, `field` where it is.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        ApiError::Invalid {
            message: message.into(),
            details: json!({ "field": field }),
        }
    }

    /// A conflict with a stable `code`.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::Conflict {
            code,
            message: message.into(),
        }
    }
}

impl From<RpcError> for ApiError {
    fn from(e: RpcError) -> Self {
        // A revert the contracts explain is the caller's answer; anything else is the node's
        // trouble, logged (the URL is redacted by the client) and reported as unavailable.
        if let Some(decoded) = e
            .revert_data()
            .and_then(|d| bursar_client::revert::decode_error(d))
        {
            return ApiError::Contract(decoded);
        }
        tracing::warn!(error = %e, "node error");
        ApiError::Unavailable
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Store(e) => e.into(),
            EngineError::Rpc(e) => e.into(),
            EngineError::UnknownSigner(a) => {
                tracing::error!(signer = %a, "a session is pinned to a signer the relayer lacks");
                ApiError::Internal
            }
        }
    }
}

impl From<VaultError> for ApiError {
    fn from(e: VaultError) -> Self {
        match e {
            VaultError::Store(e) => e.into(),
            other => {
                tracing::error!(error = %other, "vault error");
                ApiError::Internal
            }
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
