//! A list's stored owner, admins and entries, and the rule that reads an entry.

use alloc::vec::Vec;
use alloy_primitives::{Address, U256};
use stylus_sdk::{prelude::*, storage::*};

/// One counterparty on a list. `exists` and `allowed` share a storage slot.
#[storage]
#[derive(Erase)]
pub struct Entry {
    /// Set by `setEntry`, cleared by `removeEntry`.
    pub exists: StorageBool,
    /// Whether payments to this counterparty are allowed (an entry may list a blocked one).
    pub allowed: StorageBool,
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
