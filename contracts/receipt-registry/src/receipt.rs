//! Payment receipts: written by the wallet, acknowledged by the payee, rated by either side.

use alloc::vec::Vec;
use stylus_sdk::{prelude::*, storage::*};

use crate::feedback::Given;

/// One receipt: the commitment to its fields (which are in `ReceiptRecorded`), the payee's
/// acknowledgement (`acknowledged_at == 0` until then), and whether the wallet released it.
#[storage]
pub struct Receipt {
    /// `keccak256` of the receipt's seven fields (see `verifyReceipt`); zero: no receipt.
    pub commitment: StorageB256,
    /// When the payee acknowledged it (unix seconds; 0: not yet).
    pub acknowledged_at: StorageU64,
    /// When the wallet released it: the receipt of an authorization reserved for a third party
    /// that was never used (unix seconds; 0: not released). Shares the slot above.
    pub released_at: StorageU64,
    /// The payee's hash of what it delivered, given with the acknowledgement.
    pub response_hash: StorageB256,
    /// The payer's feedback on the payee's agent.
    pub by_payer: Given,
    /// The payee's feedback on the payer's agent.
    pub by_payee: Given,
}
