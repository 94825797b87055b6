//! Custodial session keys, sealed at rest under the relayer's master key.
//!
//! A sandbox never holds its session key: the relayer makes one per session, seals it with
//! XChaCha20-Poly1305 under the master key (a fresh 24-byte nonce each time; the key's address
//! as associated data, so a sealed key moved to another row does not open) and opens it only to
//! sign. Rotating the master key re-seals every key in one database transaction.

use std::fmt;
use std::path::Path;

use alloy_primitives::hex::encode as hex;
use alloy_primitives::B256;
use bursar_client::Key;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

use crate::engine::random::random_bytes;
use crate::store::{now_ms, SealedKeyRow, Store, StoreError};

/// Why a master key or a sealed key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The master key is not 32 bytes of hex (the text itself is never quoted).
    #[error("{source_name}: the master key must be 32 bytes of hex")]
    BadMasterKey {
        /// Where it came from (a file path or a variable name).
        source_name: String,
    },
    /// The master key file could not be read or written.
    #[error("master key file {path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A sealed secret does not open under this master key (another key sealed it, or it was
    /// tampered with).
    #[error("the secret of {address} does not open under master key {master_key_id}")]
    Sealed {
        /// What it belongs to (a session key's address, a webhook endpoint's id).
        address: String,
        /// The master key tried.
        master_key_id: String,
    },
    /// No session key has this address.
    #[error("no session key {0}")]
    Unknown(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The relayer's master key. `Debug` shows its id only.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MasterKey({})", self.id())
    }
}

impl MasterKey {
    /// From 64 hex digits (`0x` optional); `source_name` names where the text came from.
    pub fn from_hex(text: &str, source_name: &str) -> Result<Self, VaultError> {
        let bad = || VaultError::BadMasterKey {
            source_name: source_name.into(),
        };
        let text = text.trim();
        let b: B256 = text
            .strip_prefix("0x")
            .unwrap_or(text)
            .parse()
            .map_err(|_| bad())?;
        Ok(MasterKey(b.0))
    }

    /// The key in `path`; with `create`, a new random key is written there (mode 0600) when
    /// the file does not exist (the devnet's default).
    pub fn from_file(path: &Path, create: bool) -> Result<Self, VaultError> {
        let file_err = |e: std::io::Error| VaultError::File {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        if create && !path.exists() {
            let key = MasterKey(random_bytes());
            write_private(path, &format!("{}\n", hex(key.0))).map_err(file_err)?;
            return Ok(key);
        }
        let text = std::fs::read_to_string(path).map_err(file_err)?;
        Self::from_hex(&text, &path.display().to_string())
    }

    /// A short public fingerprint: the first 8 bytes of the key's SHA-256, hex.
    pub fn id(&self) -> String {
        hex(&Sha256::digest(self.0)[..8])
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.0.into())
    }

    /// Seals `secret` for `aad` (what it belongs to: a key's address, an endpoint's id):
    /// `hex(nonce ‖ ciphertext ‖ tag)`.
    pub(crate) fn seal(&self, aad: &str, secret: &[u8]) -> String {
        let nonce: [u8; 24] = random_bytes();
        let sealed = self
            .cipher()
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: secret,
                    aad: aad.as_bytes(),
                },
            )
            .expect("sealing a short secret cannot fail");
        hex([nonce.as_slice(), &sealed].concat())
    }

    fn open(&self, row: &SealedKeyRow) -> Result<[u8; 32], VaultError> {
        self.open_sealed(&row.address, &row.sealed)?
            .try_into()
            .map_err(|_| VaultError::Sealed {
                address: row.address.clone(),
                master_key_id: self.id(),
            })
    }

    /// Opens what [`MasterKey::seal`] sealed for `aad`.
    pub(crate) fn open_sealed(&self, aad: &str, sealed: &str) -> Result<Vec<u8>, VaultError> {
        let refused = || VaultError::Sealed {
            address: aad.to_owned(),
            master_key_id: self.id(),
        };
        let bytes = alloy_primitives::hex::decode(sealed).map_err(|_| refused())?;
        if bytes.len() < 24 {
            return Err(refused());
        }
        let (nonce, sealed) = bytes.split_at(24);
        self.cipher()
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| refused())
    }
}

/// Makes a session key for `host_id`, seals it and stores it; returns it.
pub async fn new_session_key(
    store: &Store,
    master: &MasterKey,
    host_id: &str,
) -> Result<Key, VaultError> {
    let (key, row) = new_sealed_key(master, host_id);
    store.insert_session_key(&row, now_ms()).await?;
    Ok(key)
}

/// Makes a session key for `host_id` and seals it, for the caller to store with its session.
pub fn new_sealed_key(master: &MasterKey, host_id: &str) -> (Key, SealedKeyRow) {
    let (secret, key) = loop {
        let secret: [u8; 32] = random_bytes();
        // Out of range for secp256k1 with probability ~2^-128; draw again then.
        if let Some(key) = Key::from_bytes(&B256::from(secret)) {
            break (secret, key);
        }
    };
    let address = format!("{:#x}", key.address());
    let row = SealedKeyRow {
        sealed: master.seal(&address, &secret),
        address,
        host_id: host_id.into(),
        master_key_id: master.id(),
    };
    (key, row)
}

/// The session key with this address, opened.
pub async fn session_key(
    store: &Store,
    master: &MasterKey,
    address: &str,
) -> Result<Key, VaultError> {
    let row = store
        .session_key(address)
        .await?
        .ok_or_else(|| VaultError::Unknown(address.into()))?;
    let secret = master.open(&row)?;
    Key::from_bytes(&B256::from(secret)).ok_or(VaultError::Sealed {
        address: row.address,
        master_key_id: master.id(),
    })
}

/// The relayer's own key for `purpose`, made and sealed the first time any relayer process on
/// this database asks (every later ask, from any process, opens that one).
pub async fn relayer_key(
    store: &Store,
    master: &MasterKey,
    purpose: &str,
) -> Result<Key, VaultError> {
    let (_, mine) = new_sealed_key(master, purpose);
    let row = store.relayer_key(purpose, &mine, now_ms()).await?;
    let secret = master.open(&row)?;
    Key::from_bytes(&B256::from(secret)).ok_or(VaultError::Sealed {
        address: row.address,
        master_key_id: master.id(),
    })
}

/// Re-seals every session key, relayer key, webhook secret and provider secret under `new` (each must open under `old`); all
/// or nothing.
pub async fn rotate(store: &Store, old: &MasterKey, new: &MasterKey) -> Result<usize, VaultError> {
    let mut failure = None;
    let result = store
        .reseal_all(&new.id(), |aad, sealed| {
            match old.open_sealed(aad, sealed) {
                Ok(secret) => Ok(new.seal(aad, &secret)),
                Err(e) => {
                    let note = e.to_string();
                    failure = Some(e);
                    Err(StoreError::Corrupt(note))
                }
            }
        })
        .await;
    match (result, failure) {
        (_, Some(e)) => Err(e),
        (Ok(n), None) => Ok(n),
        (Err(e), None) => Err(e.into()),
    }
}

/// Writes `text` to a new file readable by its owner only.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(address: &str, sealed: String, master: &MasterKey) -> SealedKeyRow {
        SealedKeyRow {
            address: address.into(),
            host_id: "h".into(),
            sealed,
            master_key_id: master.id(),
        }
    }

    #[test]
    fn a_sealed_key_opens_only_under_its_master_key_and_for_its_address() {
        let master = MasterKey(random_bytes());
        let secret: [u8; 32] = random_bytes();
        let sealed = master.seal("0xaa", &secret);
        assert_eq!(
            master.open(&row("0xaa", sealed.clone(), &master)).unwrap(),
            secret
        );
        // Fresh nonces: sealing twice never gives the same text.
        assert_ne!(master.seal("0xaa", &secret), sealed);
        let other = MasterKey(random_bytes());
        assert!(other.open(&row("0xaa", sealed.clone(), &other)).is_err());
        assert!(master.open(&row("0xbb", sealed.clone(), &master)).is_err());
        let mut tampered = sealed.into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(master.open(&row("0xaa", tampered, &master)).is_err());
    }

    #[test]
    fn master_keys_parse_without_quoting_their_input() {
        let text = "11".repeat(32);
        let key = MasterKey::from_hex(&format!("0x{text}\n"), "BURSAR_MASTER_KEY").unwrap();
        assert_eq!(key.0, [0x11; 32]);
        assert!(!format!("{key:?}").contains("1111"));
        let err = MasterKey::from_hex("0xsecretsecret", "BURSAR_MASTER_KEY").unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}
