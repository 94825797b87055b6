//! Unordered nonces: one bit each in a bitmap of 256-bit words, so that a signer can have
//! many signed messages in flight and use them in any order.

use alloy_primitives::U256;
use stylus_sdk::storage::{StorageMap, StorageU256};

/// Word index and bit mask of `nonce` in its bitmap.
fn position(nonce: U256) -> (U256, U256) {
    let bit = nonce.byte(0) as usize;
    (nonce >> 8, U256::from(1u8) << bit)
}

/// Whether `nonce` is already used in `bitmap`.
pub fn is_used(bitmap: &StorageMap<U256, StorageU256>, nonce: U256) -> bool {
    let (index, mask) = position(nonce);
    bitmap.get(index) & mask != U256::ZERO
}

/// Marks `nonce` used; returns `false` (and changes nothing) when it already was.
pub fn consume(bitmap: &mut StorageMap<U256, StorageU256>, nonce: U256) -> bool {
    let (index, mask) = position(nonce);
    let mut slot = bitmap.setter(index);
    let word = slot.get();
    if word & mask != U256::ZERO {
        return false;
    }
    slot.set(word | mask);
    true
}

/// Marks `nonce` used or unused, whatever it was: for a caller that checked it with
/// [`is_used`], or gives back a nonce it used in the same transaction.
pub fn mark(bitmap: &mut StorageMap<U256, StorageU256>, nonce: U256, used: bool) {
    let (index, mask) = position(nonce);
    let mut slot = bitmap.setter(index);
    let word = slot.get();
    slot.set(if used { word | mask } else { word & !mask });
}
