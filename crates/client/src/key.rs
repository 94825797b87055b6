//! Private keys: from a hex string, a key file, an encrypted keystore or the environment.
//! A [`Key`] never shows its secret: `Debug` prints the address only, and no error message
//! quotes the input it failed to parse.

use std::fmt;
use std::path::{Path, PathBuf};

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{keccak256, Address, Signature, B256, U256};
use k256::ecdsa::SigningKey;

/// The environment variable holding the deployer's hex private key.
pub const DEPLOYER_KEY_ENV: &str = "BURSAR_DEPLOYER_KEY";
/// The environment variable holding a keystore's password.
pub const KEYSTORE_PASSWORD_ENV: &str = "BURSAR_KEYSTORE_PASSWORD";

/// Why a key could not be loaded. Messages name the source, never the secret.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The text is not 32 bytes of hex, or not a valid secp256k1 scalar.
    #[error("{source_name}: not a secp256k1 private key (expected 32 bytes of hex, optionally 0x-prefixed)")]
    Malformed {
        /// Where the text came from (a file path or an environment variable).
        source_name: String,
    },
    /// The key file could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The key file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The keystore could not be decrypted (wrong password, bad file) or holds no valid key.
    #[error("keystore {path}: {reason}")]
    Keystore {
        /// The keystore file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// No key was given for a network that has no dev account to fall back on.
    #[error("no deployer key for network {network}: pass --key-file or --keystore, or set {DEPLOYER_KEY_ENV}")]
    NoKey {
        /// The network's name.
        network: String,
    },
    /// A keystore was given without a password file or `$BURSAR_KEYSTORE_PASSWORD`.
    #[error(
        "keystore {path} needs a password: pass --password-file or set {KEYSTORE_PASSWORD_ENV}"
    )]
    NoPassword {
        /// The keystore file.
        path: PathBuf,
    },
}

/// A secp256k1 signing key and its address.
#[derive(Clone)]
pub struct Key {
    /// Signed with by libsecp256k1 (see `sign_hash`).
    secret: secp256k1::SecretKey,
    address: Address,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", self.address)
    }
}

impl Key {
    /// From a k256 signing key; derives the address.
    pub fn from_signing_key(signing: SigningKey) -> Self {
        let point = signing.verifying_key().to_encoded_point(false);
        let address = Address::from_slice(&keccak256(&point.as_bytes()[1..])[12..]);
        let secret = secp256k1::SecretKey::from_byte_array(&signing.to_bytes().into())
            .expect("a k256 signing key is a valid secp256k1 secret");
        Key { secret, address }
    }

    /// From 32 raw bytes.
    pub fn from_bytes(bytes: &B256) -> Option<Self> {
        SigningKey::from_slice(bytes.as_slice())
            .ok()
            .map(Self::from_signing_key)
    }

    /// From hex (`0x` optional, surrounding whitespace ignored). `source_name` says where the
    /// text came from, for the error.
    pub fn from_hex(text: &str, source_name: &str) -> Result<Self, KeyError> {
        let malformed = || KeyError::Malformed {
            source_name: source_name.to_string(),
        };
        let text = text.trim();
        let hex = text.strip_prefix("0x").unwrap_or(text);
        let bytes: B256 = hex.parse().map_err(|_| malformed())?;
        Self::from_bytes(&bytes).ok_or_else(malformed)
    }

    /// From a file holding the hex key.
    pub fn from_key_file(path: &Path) -> Result<Self, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|e| KeyError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Self::from_hex(&text, &path.display().to_string())
    }

    /// From an encrypted JSON keystore (Web3 Secret Storage v3, as geth and foundry write).
    pub fn from_keystore(path: &Path, password: &str) -> Result<Self, KeyError> {
        let secret = eth_keystore::decrypt_key(path, password).map_err(|e| KeyError::Keystore {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let bytes = B256::try_from(secret.as_slice()).map_err(|_| KeyError::Keystore {
            path: path.to_path_buf(),
            reason: "the decrypted key is not 32 bytes".into(),
        })?;
        Self::from_bytes(&bytes).ok_or_else(|| KeyError::Keystore {
            path: path.to_path_buf(),
            reason: "the decrypted key is not a valid secp256k1 key".into(),
        })
    }

    /// The key in `$BURSAR_DEPLOYER_KEY`, if set.
    pub fn from_env() -> Result<Option<Self>, KeyError> {
        match std::env::var(DEPLOYER_KEY_ENV) {
            Ok(text) => Self::from_hex(&text, DEPLOYER_KEY_ENV).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// The Ethereum address of the key.
    pub fn address(&self) -> Address {
        self.address
    }

    /// Signs a 32-byte digest (an EIP-712 hash, a transaction's signing hash): RFC 6979, low
    /// `s`, as k256 signs, but by libsecp256k1, in a third of the time.
    pub fn sign_hash(&self, hash: &B256) -> Signature {
        let message = secp256k1::Message::from_digest(hash.0);
        let (recid, rs) = secp256k1::SECP256K1
            .sign_ecdsa_recoverable(&message, &self.secret)
            .serialize_compact();
        Signature::new(
            U256::from_be_slice(&rs[..32]),
            U256::from_be_slice(&rs[32..]),
            i32::from(recid) == 1,
        )
    }

    /// A signature as the contracts take it: `r ‖ s ‖ v` with v = 27/28.
    pub fn sign_hash_rsv(&self, hash: &B256) -> Vec<u8> {
        self.sign_hash(hash).as_bytes().to_vec()
    }

    /// Signs an EIP-1559 transaction and returns its EIP-2718 encoding and hash.
    pub fn sign_transaction(&self, tx: TxEip1559) -> (Vec<u8>, B256) {
        let sig = self.sign_hash(&tx.signature_hash());
        let envelope = TxEnvelope::from(tx.into_signed(sig));
        (envelope.encoded_2718(), *envelope.tx_hash())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The first account of the standard test mnemonic.
    const KEY0: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

    #[test]
    fn parses_hex_with_or_without_prefix_and_hides_it() {
        let key = Key::from_hex(KEY0, "test").unwrap();
        assert_eq!(
            key.address(),
            "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
                .parse::<Address>()
                .unwrap()
        );
        let again = Key::from_hex(&format!("  {}\n", &KEY0[2..]), "test").unwrap();
        assert_eq!(again.address(), key.address());
        let shown = format!("{key:?}");
        assert!(!shown.contains(&KEY0[2..]) && shown.contains("0xf39F"));
    }

    /// libsecp256k1's signatures are k256's, byte for byte, and recover to the key's address:
    /// over generated keys and digests, and the extremes (the smallest and largest keys, zero
    /// and all-ones digests). A digest at or above the group order (one in 2^128) is the one
    /// difference: RFC 6979 reduces it before deriving the nonce, libsecp256k1 does not; the
    /// signature is as valid.
    #[test]
    fn signs_as_k256_does() {
        use rand::RngCore;
        const ORDER: U256 = alloy_primitives::uint!(
            0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141_U256
        );
        let order_less_one = B256::from(ORDER - U256::from(1));
        let mut keys: Vec<B256> = vec![B256::with_last_byte(1), order_less_one];
        let mut digests = vec![B256::ZERO, B256::repeat_byte(0xff), B256::with_last_byte(1)];
        let mut rng = rand::thread_rng();
        for _ in 0..64 {
            let (mut k, mut d) = (B256::ZERO, B256::ZERO);
            rng.fill_bytes(k.as_mut_slice());
            rng.fill_bytes(d.as_mut_slice());
            keys.push(k);
            digests.push(d);
        }
        for (i, bytes) in keys.iter().enumerate() {
            let Some(key) = Key::from_bytes(bytes) else {
                continue;
            };
            let k256 = SigningKey::from_slice(bytes.as_slice()).unwrap();
            for digest in digests.iter().skip(i % 3).step_by(7) {
                let (sig, recid) = k256.sign_prehash_recoverable(digest.as_slice()).unwrap();
                let want = Signature::from_signature_and_parity(sig, recid.is_y_odd());
                let got = key.sign_hash(digest);
                if U256::from_be_bytes(digest.0) < ORDER {
                    assert_eq!(got, want, "key {bytes}, digest {digest}");
                }
                assert_eq!(
                    got.recover_address_from_prehash(digest).unwrap(),
                    key.address()
                );
            }
        }
    }

    #[test]
    fn malformed_keys_are_named_not_quoted() {
        for bad in ["", "0x1234", "zz", &"0".repeat(64)] {
            let err = Key::from_hex(bad, "BURSAR_DEPLOYER_KEY").unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.starts_with("BURSAR_DEPLOYER_KEY: not a secp256k1"),
                "{msg}"
            );
        }
        let secret = format!("{}00", &KEY0[2..]);
        let msg = Key::from_hex(&secret, "file").unwrap_err().to_string();
        assert!(!msg.contains(&KEY0[2..]));
    }

    #[test]
    fn keystore_round_trip() {
        let dir = std::env::temp_dir().join(format!("bursar-keystore-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret = B256::from_slice(&alloy_primitives::hex::decode(&KEY0[2..]).unwrap());
        let mut rng = rand::thread_rng();
        eth_keystore::encrypt_key(&dir, &mut rng, secret, "hunter2", Some("k")).expect("encrypt");
        let path = dir.join("k");
        let key = Key::from_keystore(&path, "hunter2").unwrap();
        assert_eq!(key.address(), Key::from_hex(KEY0, "t").unwrap().address());
        let err = Key::from_keystore(&path, "wrong").unwrap_err();
        assert!(matches!(err, KeyError::Keystore { .. }), "{err}");
        std::fs::remove_dir_all(dir).ok();
    }
}
