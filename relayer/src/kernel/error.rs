//! Why a request was refused or failed: the relayer's one error above the store, engine and
//! vault (whose errors convert into it here), with a stable `code`. The API maps it to an HTTP
//! status and a JSON body in one place (`api/error.rs`).

use serde_json::{json, Value};

use bursar_client::revert::ContractError;
use bursar_client::rpc::RpcError;

use crate::engine::submission::EngineError;
use crate::engine::vault::VaultError;
use crate::store::StoreError;

/// Why a request was refused or failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// No credentials, or credentials the relayer does not know (or that were revoked).
    #[error("the token is missing, unknown, revoked or expired (a host key or a session's capability token)")]
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
    /// A signed delivery (a sandbox provider's webhook) was refused: not signed with the
    /// host's secret for its sender (or none is configured), stale, or not in the sender's
    /// format. Nothing changed. `code` is the sender's stable reason.
    #[error("delivery refused: {message}")]
    Delivery {
        /// The stable code (`bad_signature`, `stale_delivery`…).
        code: &'static str,
        /// What was wrong, in words.
        message: String,
        /// Which kind of refusal, for the status it is answered with.
        refusal: Refusal,
    },
    /// The database or the node cannot be reached now; retrying later may work.
    #[error("a backing service is unavailable; retry later")]
    Unavailable,
    /// A bug or an unexpected state; details are logged, not returned.
    #[error("internal error")]
    Internal,
}

/// Why a signed delivery was refused, as far as its answer's status goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not proven to come from its sender: no secret, no or a bad signature, stale.
    Unauthenticated,
    /// Signed, but not in the sender's format.
    Malformed,
    /// Over the size the sender's deliveries may have; unread.
    TooLarge,
}

impl Error {
    /// The stable machine-readable code: the contract error's name for [`Error::Contract`].
    pub fn code(&self) -> &str {
        if let Error::Contract(e) = self {
            return &e.name;
        }
        match self {
            Error::Unauthorized => "unauthorized",
            Error::Forbidden { .. } => "forbidden",
            Error::NotFound => "not_found",
            Error::Invalid { .. } => "invalid_request",
            Error::Contract(_) => "contract_error",
            Error::Conflict { code, .. } => code,
            Error::TermsMismatch { .. } => "session_terms_mismatch",
            Error::TooLarge => "body_too_large",
            Error::Delivery { code, .. } => code,
            Error::RateLimited => "rate_limited",
            Error::Unavailable => "unavailable",
            Error::Internal => "internal",
        }
    }

    /// The error's particulars for the caller (`{}` when there are none).
    pub fn details(&self) -> Value {
        match self {
            Error::Forbidden { scope } => json!({ "scope": scope }),
            Error::Invalid { details, .. } => details.clone(),
            Error::Contract(e) => Value::Object(e.args.clone()),
            Error::TermsMismatch {
                field,
                prepared,
                on_chain,
            } => json!({ "field": field, "prepared": prepared, "onChain": on_chain }),
            _ => json!({}),
        }
    }
}

/// Why one pass of a background job failed (the job logs it and tries again on its next
/// pass). Unlike [`Error`] it answers nobody: it keeps the cause whole for the log instead of
/// mapping it to a status.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The transaction engine.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The vault: a key or secret that does not open.
    #[error(transparent)]
    Vault(#[from] VaultError),
    /// A step the pass shares with the API refused (its error as a caller would hear it).
    #[error("{0} ({code})", code = .0.code())]
    Step(#[from] Error),
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        // The cause goes to the log; the caller learns only that it may retry.
        tracing::error!(error = %e, "store error");
        match e {
            StoreError::Db(bursar_db::DbError::Database(_)) => Error::Unavailable,
            _ => Error::Internal,
        }
    }
}

impl Error {
    /// A malformed request: `message` names the problem, `field` where it is.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Error::Invalid {
            message: message.into(),
            details: json!({ "field": field }),
        }
    }

    /// A conflict with a stable `code`.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Error::Conflict {
            code,
            message: message.into(),
        }
    }
}

impl From<RpcError> for Error {
    fn from(e: RpcError) -> Self {
        // A revert the contracts explain is the caller's answer; anything else is the node's
        // trouble, logged (the URL is redacted by the client) and reported as unavailable.
        if let Some(decoded) = e
            .revert_data()
            .and_then(|d| bursar_client::revert::decode_error(d))
        {
            return Error::Contract(decoded);
        }
        tracing::warn!(error = %e, "node error");
        Error::Unavailable
    }
}

impl From<EngineError> for Error {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Store(e) => e.into(),
            EngineError::Rpc(e) => e.into(),
            EngineError::UnknownSigner(a) => {
                tracing::error!(signer = %a, "a session is pinned to a signer the relayer lacks");
                Error::Internal
            }
        }
    }
}

impl From<VaultError> for Error {
    fn from(e: VaultError) -> Self {
        match e {
            VaultError::Store(e) => e.into(),
            other => {
                tracing::error!(error = %other, "vault error");
                Error::Internal
            }
        }
    }
}
