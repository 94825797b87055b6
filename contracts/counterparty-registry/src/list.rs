//! A list's stored owner, admins and entries, and the rule that reads an entry.

use alloc::vec::Vec;
use alloy_primitives::{Address, U256};
use stylus_sdk::{prelude::*, storage::*};

/// One counterparty on a list. `exists`, `allowed` and `since` share a storage slot.
#[storage]
#[derive(Erase)]
pub struct Entry {
    /// Set by `setEntry`, cleared by `removeEntry`.
    pub exists: StorageBool,
    /// Whether payments to this counterparty are allowed (an entry may list a blocked one).
    pub allowed: StorageBool,
    /// When the entry last widened what may be paid (became allowed, or its cap rose or
    /// went), in unix seconds: a list reference pinned at an earlier time does not count it.
    pub since: StorageU64,
    /// Largest single payment allowed; 0 means no cap.
    pub max_per_payment: StorageU256,
    /// The owner's label for the counterparty (e.g. a hashed name); opaque on chain.
    pub label: StorageB256,
}

impl Entry {
    /// Whether one payment of `amount` to this counterparty is allowed: the entry exists, is
    /// allowed, and `amount` is within its cap (if any).
    pub fn allows(&self, amount: U256) -> bool {
        if !self.exists.get() || !self.allowed.get() {
            return false;
        }
        let max = self.max_per_payment.get();
        max.is_zero() || amount <= max
    }

    /// Whether setting it to `allowed` with cap `max` (0: none) lets more be paid than it
    /// does now: it becomes allowed, or its cap rises or goes.
    pub fn widens(&self, allowed: bool, max: U256) -> bool {
        if !allowed {
            return false;
        }
        if !self.exists.get() || !self.allowed.get() {
            return true;
        }
        let old = self.max_per_payment.get();
        !old.is_zero() && (max.is_zero() || max > old)
    }
}

/// A list reference: the list's id in the low 64 bits and, in the next 32, a time (unix
/// seconds). With a time the reference is pinned: an entry that widened after it does not
/// count (removals and lowered caps do, at once). `None` for a reference with higher bits set.
pub fn reference(list: U256) -> Option<(U256, u64)> {
    if list >> 96 != U256::ZERO {
        return None;
    }
    let limbs = list.as_limbs();
    Some((U256::from(limbs[0]), limbs[1]))
}

/// One allowlist.
#[storage]
pub struct List {
    /// Manages admins and ownership, and edits entries.
    pub owner: StorageAddress,
    /// Accounts that may edit entries (but not admins or ownership).
    pub admins: StorageMap<Address, StorageBool>,
    /// Counterparties by address.
    pub entries: StorageMap<Address, Entry>,
}
