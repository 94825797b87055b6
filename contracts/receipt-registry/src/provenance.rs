//! Provenance records: what a session produced, from what, where and under which policy.

use alloc::vec::Vec;
use stylus_sdk::{prelude::*, storage::*};

/// One record. The attester is the session key that signed it, never the submitter.
#[storage]
pub struct Record {
    pub session_id: StorageU256,
    pub attester: StorageAddress,
    pub timestamp: StorageU64,
    pub revoked: StorageBool,
    pub subject: StorageB256,
    pub inputs: StorageB256,
    pub runtime: StorageB256,
    pub policy: StorageB256,
    pub uri: StorageB256,
    pub parents: StorageVec<StorageU256>,
}
