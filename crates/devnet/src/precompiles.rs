//! The precompiles at 0x01-0x11 (Prague's set: ecrecover, sha256, ripemd160, identity, modexp,
//! BN254 add/mul/pairing, blake2f, KZG point evaluation, the BLS12-381 operations) and P-256
//! verification at 0x100 (RIP-7212, 3,450 gas, as ArbOS 30 and later have it), all run by
//! `revm-precompile` for EVM and Stylus callers alike.

use std::sync::LazyLock;

use alloy_primitives::{address, Address, Bytes};
use revm_precompile::{secp256r1, PrecompileStatus, Precompiles};

/// The `ecrecover` precompile (0x01): recovers a signer address from a hash and signature.
pub const ECRECOVER: Address = address!("0000000000000000000000000000000000000001");
/// The `sha256` precompile (0x02).
pub const SHA256: Address = address!("0000000000000000000000000000000000000002");
/// The `identity` precompile (0x04): returns its input unchanged.
pub const IDENTITY: Address = address!("0000000000000000000000000000000000000004");
/// RIP-7212 `P256VERIFY` (0x100).
pub const P256VERIFY: Address = address!("0000000000000000000000000000000000000100");

static SET: LazyLock<Precompiles> = LazyLock::new(|| {
    let mut set = Precompiles::prague().clone();
    set.extend([secp256r1::P256VERIFY]);
    set
});

/// Every precompile address: warm from the start of every transaction (EIP-2929).
pub fn all() -> impl Iterator<Item = Address> {
    SET.addresses().copied()
}

/// How a precompile call ended: `None` output when it failed (bad input or too little gas),
/// which consumes all the gas it was given.
pub(crate) struct PrecompileOutput {
    pub gas: u64,
    pub output: Option<Bytes>,
}

/// Runs the precompile at `address` with `gas`, if there is one.
pub(crate) fn run(address: Address, input: &[u8], gas: u64) -> Option<PrecompileOutput> {
    let precompile = SET.get(&address)?;
    Some(match precompile.execute(input, gas, 0) {
        Ok(out) if out.status == PrecompileStatus::Success => PrecompileOutput {
            gas: out.gas_used,
            output: Some(out.bytes),
        },
        _ => PrecompileOutput { gas, output: None },
    })
}

/// `hash ‖ v ‖ r ‖ s` (right-padded to 128 bytes) → the left-padded signer, or nothing when the
/// input does not recover. Like the real precompile it accepts high-s signatures (recovery
/// does not check `s`), and refuses `r` or `s` of zero or above the group order.
pub fn ecrecover(input: &[u8]) -> Vec<u8> {
    run(ECRECOVER, input, 3_000)
        .and_then(|out| out.output)
        .map(|b| b.to_vec())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{keccak256, U256};
    use k256::ecdsa::SigningKey;

    #[test]
    fn ecrecover_accepts_low_and_high_s() {
        let key = SigningKey::from_slice(&[7u8; 32]).unwrap();
        let point = key.verifying_key().to_encoded_point(false);
        let signer = Address::from_slice(&keccak256(&point.as_bytes()[1..])[12..]);
        let hash = keccak256(b"message");
        let (sig, recid) = key.sign_prehash_recoverable(hash.as_slice()).unwrap();
        let mut input = hash.to_vec();
        input.extend_from_slice(&U256::from(27 + recid.to_byte()).to_be_bytes::<32>());
        input.extend_from_slice(&sig.to_bytes());
        let out = ecrecover(&input);
        assert_eq!(out.len(), 32);
        assert_eq!(&out[12..], signer.as_slice());

        // The same signature with s' = n - s and the other v.
        let n = U256::from_be_slice(&hex_n());
        let s = U256::from_be_slice(&input[96..128]);
        let high = (n - s).to_be_bytes::<32>();
        let mut input2 = input.clone();
        input2[96..].copy_from_slice(&high);
        input2[63] = if input[63] == 27 { 28 } else { 27 };
        assert_eq!(ecrecover(&input2), out);

        input2[63] = 29;
        assert!(ecrecover(&input2).is_empty());

        // r or s of zero, or at or above the group order, recover nothing.
        for (at, value) in [(64, U256::ZERO), (96, U256::ZERO), (64, n), (96, n)] {
            let mut bad = input.clone();
            bad[at..at + 32].copy_from_slice(&value.to_be_bytes::<32>());
            assert!(ecrecover(&bad).is_empty(), "word at {at} = {value}");
        }
    }

    fn hex_n() -> [u8; 32] {
        alloy_primitives::hex!("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
    }
}
