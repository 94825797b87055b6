//! Payment receipts: written by the wallet, acknowledged by the payee.

use alloc::vec::Vec;
use stylus_sdk::{prelude::*, storage::*};

/// One receipt: the commitment to its fields (which are in `ReceiptRecorded`), and the payee's
/// acknowledgement (`acknowledged_at == 0` until then).
#[storage]
pub struct Receipt {
    pub commitment: StorageB256,
    pub acknowledged_at: StorageU64,
    pub response_hash: StorageB256,
}
