//! Payments (and reservations) above a session's co-sign threshold wait here for the owner's
//! decision.

use alloc::vec::Vec;
use stylus_sdk::{prelude::*, storage::*};

/// Pending payments expire this long after they were made (or at the session's expiry, if
/// sooner): an unanswered request must not hold the deposit forever.
pub const PENDING_TTL: u64 = 24 * 60 * 60;

/// One pending payment. Its amount is held out of the session's deposit.
#[storage]
pub struct Pending {
    /// The session it would be paid from.
    pub session_id: StorageU256,
    /// The payee.
    pub to: StorageAddress,
    /// A `PendingStatus`: unknown (0), pending, approved or rejected.
    pub status: StorageU8,
    /// When it can no longer be approved and anyone may clear it (unix seconds).
    pub expires_at: StorageU64,
    /// Held out of the session's deposit while pending.
    pub amount: StorageU256,
    /// The intent's purpose, carried into the receipt.
    pub purpose: StorageB256,
    /// The intent's nonce (consumed when the request was made).
    pub nonce: StorageU256,
    /// For a held `reserve`: the authorization's digest, reserved on approval (zero for a
    /// payment; written only for reservations, so payments pay nothing for it).
    pub authorization: StorageB256,
}
