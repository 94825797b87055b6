//! Signature verification: `ecrecover` through precompile 0x01 with low-s enforced, and
//! ERC-1271 for signers that are contracts.

use alloc::vec::Vec;
use alloy_primitives::{address, Address, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::erc::IERC1271;
use stylus_sdk::{call::RawCall, stylus_core::Host};

use crate::eip712::{word, Word};

const ECRECOVER: Address = address!("0000000000000000000000000000000000000001");

/// Half the secp256k1 group order: signatures with a larger `s` are malleable copies.
const HALF_ORDER: U256 = alloy_primitives::uint!(
    0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0_U256
);

/// Recovers the signer of `hash` from a 65-byte `r ‖ s ‖ v` signature.
///
/// Returns `None` for anything but a canonical signature of a real key: wrong length, `v` not
/// in {0, 1, 27, 28}, high `s`, or a point the precompile rejects.
pub fn recover<H: Host + ?Sized>(vm: &H, hash: B256, signature: &[u8]) -> Option<Address> {
    if signature.len() != 65 {
        return None;
    }
    let v = match signature[64] {
        v @ (0 | 1) => v + 27,
        v @ (27 | 28) => v,
        _ => return None,
    };
    let s = U256::from_be_slice(&signature[32..64]);
    if s > HALF_ORDER {
        return None;
    }
    let mut input = [[0u8; 32]; 4];
    input[0] = word(hash);
    input[1][31] = v;
    input[2].copy_from_slice(&signature[..32]);
    input[3].copy_from_slice(&signature[32..64]);
    // The precompile never reverts: it returns nothing when it cannot recover.
    // SAFETY: a static call to a precompile, which reads none of our storage: nothing to flush.
    let out = unsafe { RawCall::new_static(vm).call(ECRECOVER, input.as_flattened()) }.ok()?;
    if out.len() != 32 {
        return None;
    }
    let signer = Address::from_slice(&out[12..]);
    (signer != Address::ZERO).then_some(signer)
}

/// Whether `signature` is `signer`'s signature of `hash`: ERC-1271 `isValidSignature` when
/// `signer` has code, `ecrecover` otherwise.
pub fn is_valid<H: Host + ?Sized>(vm: &H, signer: Address, hash: B256, signature: &[u8]) -> bool {
    if vm.code_size(signer) == 0 {
        return recover(vm, hash, signature) == Some(signer);
    }
    let selector = IERC1271::isValidSignatureCall::SELECTOR;
    let padded = signature.len().div_ceil(32) * 32;
    let mut data = Vec::with_capacity(4 + 96 + padded);
    data.extend_from_slice(&selector);
    data.extend_from_slice(&word(hash));
    data.extend_from_slice(&word(U256::from(64u8)));
    data.extend_from_slice(&word(U256::from(signature.len())));
    data.extend_from_slice(signature);
    data.resize(4 + 96 + padded, 0);
    let Some(out) = crate::call::view(vm, signer, &data) else {
        return false;
    };
    let mut magic: Word = [0u8; 32];
    magic[..4].copy_from_slice(&selector);
    out.len() == 32 && out[..] == magic[..]
}
