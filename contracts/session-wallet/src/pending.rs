//! Payments above a session's co-sign threshold wait here for the owner's decision.

use alloc::vec::Vec;
use stylus_sdk::{prelude::*, storage::*};

/// Pending payments expire this long after they were made (or at the session's expiry, if
/// sooner): an unanswered request must not hold the deposit forever.
pub const PENDING_TTL: u64 = 24 * 60 * 60;

/// One pending payment. Its amount is reserved out of the session's deposit.
#[storage]
pub struct Pending {
    pub session_id: StorageU256,
    pub to: StorageAddress,
    pub status: StorageU8,
    pub expires_at: StorageU64,
    pub amount: StorageU256,
    pub purpose: StorageB256,
    pub nonce: StorageU256,
}
