//! Payment receipts: written by the wallet, acknowledged by the payee.

use alloc::vec::Vec;
use stylus_sdk::{prelude::*, storage::*};

/// One receipt. `acknowledged_at == 0` until the payee acknowledges it.
#[storage]
pub struct Receipt {
    pub session_id: StorageU256,
    pub payer: StorageAddress,
    pub timestamp: StorageU64,
    pub payee: StorageAddress,
    pub acknowledged_at: StorageU64,
    pub token: StorageAddress,
    pub amount: StorageU256,
    pub purpose: StorageB256,
    pub response_hash: StorageB256,
}
