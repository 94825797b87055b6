//! ABI encoding of words and dynamic `bytes`/`string` arguments, by hand: one small encoder
//! instead of alloy's generic one per event, call and revert type.
//!
//! Every function here is `#[inline]` (as are this crate's other non-generic ones): code this
//! crate compiles on its own, used or not, changed how the wallet's shared helpers were
//! inlined and grew it by 157 bytes compressed.

use alloc::vec::Vec;
use alloy_primitives::U256;

use crate::eip712::{word, Word};

/// One ABI argument: a static word, or a dynamic `bytes`/`string`.
pub enum Arg<'a> {
    /// Anything that fits a word (addresses, integers, `bytes32`, `bool`).
    Word(Word),
    /// `bytes` or `string`: encoded in the tail, its offset in the head.
    Bytes(&'a [u8]),
}

/// `abi.encode(args…)`.
#[inline]
pub fn encode(args: &[Arg]) -> Vec<u8> {
    let mut head = Vec::with_capacity(32 * args.len());
    let mut tail = Vec::new();
    for arg in args {
        match arg {
            Arg::Word(w) => head.extend_from_slice(w),
            Arg::Bytes(b) => {
                head.extend_from_slice(&word(U256::from(32 * args.len() + tail.len())));
                tail.extend_from_slice(&word(U256::from(b.len())));
                tail.extend_from_slice(b);
                tail.resize(tail.len().div_ceil(32) * 32, 0);
            }
        }
    }
    head.extend_from_slice(&tail);
    head
}

/// `selector ‖ abi.encode(args…)`: calldata, or a custom error's revert data.
#[inline]
pub fn encode_call(selector: [u8; 4], args: &[Arg]) -> Vec<u8> {
    let mut data = Vec::from(selector);
    data.extend_from_slice(&encode(args));
    data
}

/// `Error(string)`: what Solidity's `require(condition, reason)` reverts with.
#[inline]
pub fn revert_reason(reason: &str) -> Vec<u8> {
    encode_call([0x08, 0xc3, 0x79, 0xa0], &[Arg::Bytes(reason.as_bytes())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::{String, ToString};
    use alloy_sol_types::{Revert, SolError, SolValue};

    #[test]
    fn encodes_as_alloy_does() {
        let (a, s, b) = (U256::from(7), "agentWallet", [0xab_u8; 40]);
        let ours = encode(&[Arg::Word(word(a)), Arg::Bytes(s.as_bytes()), Arg::Bytes(&b)]);
        let alloys = (
            a,
            s.to_string(),
            alloy_primitives::Bytes::copy_from_slice(&b),
        )
            .abi_encode_params();
        assert_eq!(ours, alloys);
        assert_eq!(
            encode(&[Arg::Bytes(b"")]),
            (String::new(),).abi_encode_params()
        );
        assert_eq!(
            revert_reason("Not authorized"),
            Revert::from("Not authorized").abi_encode()
        );
    }
}
