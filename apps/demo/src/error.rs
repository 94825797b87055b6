//! Why the scenario stopped: one error for the story, the host and the audit trail.

use bursar_client::rpc::RpcError;
use bursar_client::sender::SendError;

/// Why the scenario stopped.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The chain could not be reached or answered wrongly.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// A transaction of step `step` could not be sent or was refused.
    #[error("{step}: {source}")]
    Send {
        /// What the scenario was doing.
        step: &'static str,
        /// Why the send failed.
        #[source]
        source: SendError,
    },
    /// The chain did something other than what the scenario expects.
    #[error("check failed: {0}")]
    Check(String),
    /// The deployment record lacks a contract the scenario needs.
    #[error("the deployment record has no {0}")]
    Missing(&'static str),
}

pub(crate) type Result<T, E = ScenarioError> = std::result::Result<T, E>;
