//! The Ethereum precompiles the contracts use: ecrecover (0x01), sha256 (0x02), identity (0x04).

use alloy_consensus::crypto::secp256k1::recover_signer_unchecked;
use alloy_primitives::{address, Address, Signature, B256, U256};
use sha2::{Digest, Sha256};

/// The `ecrecover` precompile (0x01): recovers a signer address from a hash and signature.
pub const ECRECOVER: Address = address!("0000000000000000000000000000000000000001");
/// The `sha256` precompile (0x02).
pub const SHA256: Address = address!("0000000000000000000000000000000000000002");
/// The `identity` precompile (0x04): returns its input unchanged.
pub const IDENTITY: Address = address!("0000000000000000000000000000000000000004");

/// Addresses that are warm from the start of every transaction (EIP-2929).
pub const ALL: [Address; 3] = [ECRECOVER, SHA256, IDENTITY];

/// Result of running a precompile: `None` when the gas does not cover it (all gas consumed).
pub(crate) struct PrecompileOutput {
    pub gas: u64,
    pub output: Vec<u8>,
}

/// Runs the precompile at `address`, if there is one.
pub(crate) fn run(address: Address, input: &[u8]) -> Option<PrecompileOutput> {
    let words = (input.len() as u64).div_ceil(32);
    let (gas, output) = match address {
        ECRECOVER => (3_000, ecrecover(input)),
        SHA256 => (60 + 12 * words, Sha256::digest(input).to_vec()),
        IDENTITY => (15 + 3 * words, input.to_vec()),
        _ => return None,
    };
    Some(PrecompileOutput { gas, output })
}

/// `hash ‖ v ‖ r ‖ s` (right-padded to 128 bytes) → the left-padded signer, or nothing when the
/// input does not recover. Like the real precompile it accepts high-s signatures (recovery
/// does not check `s`), and refuses `r` or `s` of zero or above the group order.
pub fn ecrecover(input: &[u8]) -> Vec<u8> {
    let mut buf = [0u8; 128];
    let n = input.len().min(128);
    buf[..n].copy_from_slice(&input[..n]);
    let v = U256::from_be_slice(&buf[32..64]);
    let parity = if v == U256::from(27) {
        false
    } else if v == U256::from(28) {
        true
    } else {
        return Vec::new();
    };
    let r = U256::from_be_slice(&buf[64..96]);
    let s = U256::from_be_slice(&buf[96..128]);
    if r.is_zero() || s.is_zero() {
        return Vec::new();
    }
    let sig = Signature::new(r, s, parity);
    match recover_signer_unchecked(&sig, B256::from_slice(&buf[..32])) {
        Ok(signer) => B256::left_padding_from(signer.as_slice()).to_vec(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::keccak256;
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
