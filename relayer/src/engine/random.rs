//! Randomness from the operating system's CSPRNG: keys, ids, nonces.

use alloy_primitives::U256;

/// `N` random bytes.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    bytes
}

/// A nonce for simulating a signed message before its real nonce is taken: random, with the
/// top bit set, which the consecutive nonces the relayer hands out never have.
pub(crate) fn probe_nonce() -> U256 {
    (U256::from_be_bytes(random_bytes::<32>()) >> 1) | (U256::from(1) << 255)
}
