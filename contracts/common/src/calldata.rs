//! Hand-rolled calldata for calls whose arguments are all static words: a few bytes of code
//! instead of a generic ABI encoder per call site.

use alloc::vec::Vec;
use alloy_primitives::U256;

use crate::eip712::Word;

/// `selector ‖ words`.
pub fn encode(selector: [u8; 4], words: &[Word]) -> Vec<u8> {
    let mut data = Vec::with_capacity(4 + 32 * words.len());
    data.extend_from_slice(&selector);
    data.extend_from_slice(words.as_flattened());
    data
}

/// Decodes a single-word return value (`uint256`, `bool`, ...).
pub fn decode_word(out: &[u8]) -> Option<U256> {
    (out.len() >= 32).then(|| U256::from_be_slice(&out[..32]))
}
