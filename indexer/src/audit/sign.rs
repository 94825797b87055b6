//! The indexer's export key: made on first run into a file only its owner reads, and the
//! manifest's signature.
//!
//! The signature is EIP-191 `personal_sign` of a 32-byte message,
//! `keccak256(JSON of the manifest without its "signature" field)` — the JSON exactly as the
//! export's last line carries it (compact, fields in the order written), minus
//! `,"signature":"0x…"`. Any Ethereum library checks it offline: viem's
//! `verifyMessage({ address: signer, message: { raw: keccak256(toBytes(json)) }, signature })`,
//! eth-account's `Account.recover_message(encode_defunct(primitive=keccak(text=json)),
//! signature=…)`.

use std::path::{Path, PathBuf};

use alloy_primitives::{keccak256, Address, Signature, B256};
use bursar_client::Key;

use super::manifest::Manifest;

/// Why the key file could not be read or made. Messages name the file, never the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The file exists but holds no key.
    #[error(transparent)]
    Key(#[from] bursar_client::key::KeyError),
    /// It could not be written.
    #[error("cannot create the signing key file {path}: {reason}")]
    Create {
        /// The key file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
}

/// A new random key.
pub fn generate_key() -> Key {
    random_secret().1
}

/// A random secret and its key.
fn random_secret() -> (B256, Key) {
    loop {
        let mut secret = B256::ZERO;
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, secret.as_mut_slice());
        // Zero or above the curve's order: as likely as guessing a key; draw again.
        if let Some(key) = Key::from_bytes(&secret) {
            return (secret, key);
        }
    }
}

/// The key in `path` (hex), or on first run a new one written there with mode 0600 (the file
/// must not exist: an existing unreadable file is an error, never replaced).
pub fn load_or_create_key(path: &Path) -> Result<Key, KeyFileError> {
    if path.exists() {
        return Ok(Key::from_key_file(path)?);
    }
    let (secret, key) = random_secret();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{secret}\n").as_bytes()))
        .map_err(|e| KeyFileError::Create {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    Ok(key)
}

/// The message the manifest's signature signs (see the module's docs).
pub fn message(manifest: &Manifest) -> B256 {
    let unsigned = Manifest {
        signature: None,
        ..manifest.clone()
    };
    keccak256(serde_json::to_vec(&unsigned).expect("a manifest serializes"))
}

/// `manifest` signed by `key`: its `signer` and `signature` set.
pub fn sign(mut manifest: Manifest, key: &Key) -> Manifest {
    manifest.signer = key.address().to_checksum(None);
    let digest = alloy_primitives::eip191_hash_message(message(&manifest));
    manifest.signature = Some(key.sign_hash(&digest).as_bytes().to_vec().into());
    manifest
}

/// The address whose key made the manifest's signature (`None`: it has none, or it is not a
/// signature).
pub fn recover(manifest: &Manifest) -> Option<Address> {
    let signature = Signature::from_raw(manifest.signature.as_ref()?).ok()?;
    signature.recover_address_from_msg(message(manifest)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            session_id: "7".into(),
            chain_id: 412346,
            rows: 2,
            from_block: 10,
            to_block: 20,
            head_block_hash: B256::repeat_byte(1).to_string(),
            last_hash: B256::repeat_byte(2),
            deploy_block: 3,
            contracts: [(
                "SessionWallet".into(),
                Address::repeat_byte(0xab).to_checksum(None),
            )]
            .into(),
            signer: String::new(),
            signature: None,
        }
    }

    #[test]
    fn a_signed_manifest_recovers_its_signer_and_nothing_else() {
        let key = generate_key();
        let signed = sign(manifest(), &key);
        assert_eq!(signed.signer, key.address().to_checksum(None));
        assert_eq!(recover(&signed), Some(key.address()));
        // Any field changed, and the signature is another key's.
        let moved = Manifest {
            to_block: 21,
            ..signed.clone()
        };
        assert_ne!(recover(&moved), Some(key.address()));
        let mut damaged = signed.clone();
        let mut bytes = damaged.signature.clone().unwrap().to_vec();
        bytes[64] = 5;
        damaged.signature = Some(bytes.into());
        assert_eq!(recover(&damaged), None, "v = 5 is no signature");
        assert_eq!(recover(&manifest()), None);
    }

    #[test]
    fn the_signed_bytes_are_the_json_line_without_its_signature() {
        let signed = sign(manifest(), &generate_key());
        let line = crate::audit::manifest_line(&signed);
        let signature = format!(",\"signature\":\"{}\"", signed.signature.as_ref().unwrap());
        assert!(line.ends_with(&format!("{signature}}}}}")), "{line}");
        let unsigned = line
            .strip_prefix("{\"manifest\":")
            .and_then(|l| l.strip_suffix('}'))
            .unwrap()
            .replace(&signature, "");
        assert_eq!(message(&signed), keccak256(unsigned.as_bytes()));
        // As an auditor's library computes it: EIP-191 over the 32-byte hash.
        let digest = alloy_primitives::eip191_hash_message(keccak256(unsigned.as_bytes()));
        let sig = Signature::from_raw(signed.signature.as_ref().unwrap()).unwrap();
        let recovered = sig.recover_address_from_prehash(&digest).unwrap();
        assert_eq!(recovered.to_checksum(None), signed.signer);
    }

    #[test]
    fn the_key_file_is_made_once_and_private() {
        let dir = std::env::temp_dir().join(format!("bursar-index-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("indexer.key");
        let _ = std::fs::remove_file(&path);
        let made = load_or_create_key(&path).unwrap();
        let again = load_or_create_key(&path).unwrap();
        assert_eq!(made.address(), again.address());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "not a key").unwrap();
        let e = load_or_create_key(&path).unwrap_err().to_string();
        assert!(e.contains("not a secp256k1 private key"), "{e}");
        std::fs::remove_dir_all(dir).ok();
    }
}
