//! Provenance records: what a session produced, from what, where and under which policy.

use alloc::vec::Vec;
use stylus_sdk::{prelude::*, storage::*};

/// One record. The attester is the session key that signed it, never the submitter.
#[storage]
pub struct Record {
    /// The session whose key signed it.
    pub session_id: StorageU256,
    /// The session key that signed it.
    pub attester: StorageAddress,
    /// When it was recorded (unix seconds).
    pub timestamp: StorageU64,
    /// Set by `revokeProvenance`; a revoked record is not valid and cannot be a parent.
    pub revoked: StorageBool,
    /// Hash of what was produced.
    pub subject: StorageB256,
    /// Hash of what it was produced from.
    pub inputs: StorageB256,
    /// Hash of the runtime (image, model, code) that produced it.
    pub runtime: StorageB256,
    /// Hash of the policy it was produced under.
    pub policy: StorageB256,
    /// Hash of where the artifact is stored.
    pub uri: StorageB256,
    /// Earlier records this one derives from (distinct, unrevoked when recorded).
    pub parents: StorageVec<StorageU256>,
}
