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

/// `selector ‖ head ‖ offset ‖ len ‖ tail` padded: an ABI encoding whose static `head` words are
/// followed by one trailing `bytes` argument (revert reasons), without the `bytes` crate that
/// alloy's `Bytes` would bring in.
pub fn encode_with_bytes(selector: [u8; 4], head: &[Word], tail: &[u8]) -> Vec<u8> {
    let mut data = Vec::from(selector);
    data.extend_from_slice(&with_bytes(head, tail));
    data
}

/// `head ‖ offset ‖ len ‖ tail` padded: the ABI encoding of static `head` words and one
/// trailing `bytes` (an event's data, a call's arguments).
pub fn with_bytes(head: &[Word], tail: &[u8]) -> Vec<u8> {
    let offset = 32 * (head.len() + 1);
    let mut data = Vec::with_capacity(offset + 32 + tail.len().next_multiple_of(32));
    data.extend_from_slice(head.as_flattened());
    data.extend_from_slice(&crate::word(U256::from(offset)));
    data.extend_from_slice(&crate::word(U256::from(tail.len())));
    data.extend_from_slice(tail);
    data.resize(data.len().next_multiple_of(32), 0);
    data
}
