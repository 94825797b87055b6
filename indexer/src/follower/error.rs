//! Why a step of the follower failed.

use bursar_client::rpc::RpcError;

use crate::store::StoreError;

/// Why a step failed (the follower retries with backoff).
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// The node.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node answered something inconsistent (a log whose block it does not know).
    #[error("the node's answers disagree: {0}")]
    Inconsistent(String),
    /// A fetching task panicked or was cancelled.
    #[error("a backfill task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}
