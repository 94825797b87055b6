//! The prefunded dev accounts: derived from the standard test mnemonic exactly as anvil and
//! hardhat do (BIP-39 seed, BIP-32 path `m/44'/60'/0'/0/i`), so tools that know the well-known
//! keys work unchanged. The derivation is done here (PBKDF2 + HMAC-SHA512 + k256 scalar
//! arithmetic) rather than through a wallet crate, to keep the dependency tree small.

use alloy_primitives::{keccak256, Address, B256};
use hmac::{Hmac, Mac};
use k256::ecdsa::SigningKey;
use k256::elliptic_curve::ops::Reduce;
use sha2::Sha512;

/// The mnemonic every Ethereum dev chain prefunds.
pub const TEST_MNEMONIC: &str = "test test test test test test test test test test test junk";

/// One dev account.
#[derive(Clone, Debug)]
pub struct DevAccount {
    /// The account's address (derived from its public key).
    pub address: Address,
    /// The secp256k1 private key, as 32 big-endian bytes.
    pub private_key: B256,
}

impl DevAccount {
    /// The k256 signing key for `private_key`, to sign transactions from this account.
    pub fn signing_key(&self) -> SigningKey {
        SigningKey::from_bytes(&self.private_key.0.into()).expect("derived keys are valid")
    }

    /// `hash` signed with this account's key: `r ‖ s ‖ v`, `v` 27 or 28, as anvil's
    /// `eth_sign` and `eth_signTypedData_v4` answer.
    pub fn sign_hash(&self, hash: B256) -> [u8; 65] {
        let (signature, recovery) = self
            .signing_key()
            .sign_prehash_recoverable(hash.as_slice())
            .expect("a 32-byte prehash signs");
        let mut out = [0u8; 65];
        out[..64].copy_from_slice(&signature.to_bytes());
        out[64] = 27 + recovery.to_byte();
        out
    }
}

/// The dev account at `address`, if it is one.
pub fn dev_account(address: Address) -> Option<&'static DevAccount> {
    dev_accounts().iter().find(|a| a.address == address)
}

/// The address of a secp256k1 key: the last 20 bytes of keccak(uncompressed point without
/// the 0x04 tag).
pub fn address_of(key: &SigningKey) -> Address {
    let point = key.verifying_key().to_encoded_point(false);
    Address::from_slice(&keccak256(&point.as_bytes()[1..])[12..])
}

type HmacSha512 = Hmac<Sha512>;

fn hmac512(key: &[u8], data: &[u8]) -> [u8; 64] {
    let mut mac = HmacSha512::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Derives the first `count` accounts of `mnemonic` on the Ethereum path `m/44'/60'/0'/0/i`.
pub fn derive(mnemonic: &str, count: u32) -> Vec<DevAccount> {
    // BIP-39: the seed is PBKDF2 over the mnemonic text itself (no word-list check needed).
    let mut seed = [0u8; 64];
    pbkdf2::pbkdf2_hmac::<Sha512>(mnemonic.as_bytes(), b"mnemonic", 2048, &mut seed);
    let master = hmac512(b"Bitcoin seed", &seed);
    let mut node = (scalar(&master[..32]), master[32..].to_vec());
    const H: u32 = 0x8000_0000;
    for index in [44 | H, 60 | H, H, 0] {
        node = child(&node, index);
    }
    (0..count)
        .map(|i| {
            let (k, _) = child(&node, i);
            let key = SigningKey::from_bytes(&k.to_bytes()).expect("non-zero child key");
            DevAccount {
                address: address_of(&key),
                private_key: B256::from_slice(&k.to_bytes()),
            }
        })
        .collect()
}

fn scalar(bytes: &[u8]) -> k256::Scalar {
    <k256::Scalar as Reduce<k256::U256>>::reduce_bytes(k256::FieldBytes::from_slice(bytes))
}

/// BIP-32 private child key derivation.
fn child((key, chain_code): &(k256::Scalar, Vec<u8>), index: u32) -> (k256::Scalar, Vec<u8>) {
    let mut data = Vec::with_capacity(37);
    if index & 0x8000_0000 != 0 {
        data.push(0);
        data.extend_from_slice(&key.to_bytes());
    } else {
        let sk = SigningKey::from_bytes(&key.to_bytes()).expect("non-zero key");
        data.extend_from_slice(sk.verifying_key().to_encoded_point(true).as_bytes());
    }
    data.extend_from_slice(&index.to_be_bytes());
    let i = hmac512(chain_code, &data);
    (scalar(&i[..32]) + key, i[32..].to_vec())
}

/// The ten accounts of [`TEST_MNEMONIC`], derived once.
pub fn dev_accounts() -> &'static [DevAccount] {
    static ACCOUNTS: std::sync::OnceLock<Vec<DevAccount>> = std::sync::OnceLock::new();
    ACCOUNTS.get_or_init(|| derive(TEST_MNEMONIC, 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivation_matches_the_well_known_anvil_accounts() {
        let accounts = dev_accounts();
        assert_eq!(accounts.len(), 10);
        assert_eq!(
            accounts[0].private_key,
            alloy_primitives::b256!(
                "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
            )
        );
        assert_eq!(
            accounts[0].address,
            alloy_primitives::address!("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266")
        );
        assert_eq!(
            accounts[1].address,
            alloy_primitives::address!("70997970C51812dc3A010C7d01b50e0d17dc79C8")
        );
        assert_eq!(
            accounts[9].address,
            alloy_primitives::address!("a0Ee7A142d267C1f36714E4a8F75612F20a79720")
        );
    }
}
