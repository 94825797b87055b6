//! Sandbox hosts: API keys (shown once, stored as SHA-256), scopes, revocation, and the
//! authentication of a request's `Authorization: Bearer …`.

use alloy_primitives::hex::encode as hex;
use sha2::{Digest, Sha256};

use crate::engine::random::random_bytes;

use crate::kernel::Error;
use crate::store::{now_ms, HostKeyRow, Store, StoreError};

/// What a host key may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Prepare, open, register, revoke and close sessions.
    Sessions,
    /// Pay (on behalf of its sandboxes).
    Payments,
    /// Record provenance.
    Provenance,
    /// Read sessions, payments and records.
    Read,
    /// Manage outbound webhooks.
    Webhooks,
}

impl Scope {
    /// Every scope, in the order they are listed.
    pub const ALL: [Scope; 5] = [
        Scope::Sessions,
        Scope::Payments,
        Scope::Provenance,
        Scope::Read,
        Scope::Webhooks,
    ];

    /// The scope's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Sessions => "sessions",
            Scope::Payments => "payments",
            Scope::Provenance => "provenance",
            Scope::Read => "read",
            Scope::Webhooks => "webhooks",
        }
    }

    /// The scope named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// Why a host could not be created.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The name is taken.
    #[error("a host named {0:?} exists")]
    Exists(String),
    /// The name is empty or not printable.
    #[error("a host name must be 1 to 64 letters, digits, '-', '_' or '.'")]
    BadName,
    /// An unknown scope.
    #[error("unknown scope {0:?} (scopes: sessions, payments, provenance, read, webhooks)")]
    BadScope(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A new host and its key, which is shown this once.
pub struct CreatedHost {
    /// The host's id.
    pub id: String,
    /// The API key (`bhk_…`): the only time it is available.
    pub key: String,
}

/// An authenticated host.
#[derive(Clone, Debug)]
pub struct Host {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What its key may do.
    pub scopes: Vec<Scope>,
}

impl Host {
    /// Fails unless the key has `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), Error> {
        if self.scopes.contains(&scope) {
            Ok(())
        } else {
            Err(Error::Forbidden {
                scope: scope.as_str(),
            })
        }
    }
}

/// Creates host `name` with a key for `scopes` (comma or space separated).
pub async fn create(store: &Store, name: &str, scopes: &str) -> Result<CreatedHost, HostError> {
    let valid = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
        return Err(HostError::BadName);
    }
    let scopes = parse_scopes(scopes)?;
    if store.host_exists(name).await? {
        return Err(HostError::Exists(name.into()));
    }
    let id = format!("host_{}", hex(random_bytes::<8>()));
    let key = format!("bhk_{}", hex(random_bytes::<32>()));
    store
        .insert_host(&id, name, &hash(&key), &key[..12], &scopes, now_ms())
        .await?;
    Ok(CreatedHost { id, key })
}

/// Every key of every host.
pub async fn list(store: &Store) -> Result<Vec<HostKeyRow>, StoreError> {
    store.host_keys().await
}

/// Revokes host `name`'s keys; how many were live.
pub async fn revoke(store: &Store, name: &str) -> Result<u64, StoreError> {
    store.revoke_host(name, now_ms()).await
}

/// The host whose live key is `bearer`. Keys are looked up by their hash: the comparison is
/// the database's equality on digests, which does not leak the key through timing.
pub async fn authenticate(store: &Store, bearer: &str) -> Result<Host, Error> {
    if !bearer.starts_with("bhk_") {
        return Err(Error::Unauthorized);
    }
    let row = store
        .host_key(&hash(bearer))
        .await?
        .ok_or(Error::Unauthorized)?;
    Ok(Host {
        id: row.host_id,
        name: row.host_name,
        scopes: row.scopes.split(' ').filter_map(Scope::parse).collect(),
    })
}

fn parse_scopes(text: &str) -> Result<String, HostError> {
    let mut scopes = Vec::new();
    for name in text.split([',', ' ']).filter(|s| !s.is_empty()) {
        let scope = Scope::parse(name).ok_or_else(|| HostError::BadScope(name.into()))?;
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    if scopes.is_empty() {
        return Err(HostError::BadScope(text.into()));
    }
    Ok(scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" "))
}

fn hash(key: &str) -> String {
    hex(Sha256::digest(key.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_normalize() {
        assert_eq!(
            parse_scopes("read, payments,read").unwrap(),
            "read payments"
        );
        assert!(matches!(parse_scopes("read,admin"), Err(HostError::BadScope(s)) if s == "admin"));
        assert!(matches!(parse_scopes(" , "), Err(HostError::BadScope(_))));
    }
}
