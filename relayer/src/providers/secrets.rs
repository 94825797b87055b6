//! Hosts' signing secrets for their providers' webhooks, sealed under the master key.

use super::Provider;
use crate::engine::vault::{MasterKey, VaultError};
use crate::kernel::{Error, PassError};
use crate::store::{now_ms, provider_secret_aad, Store, StoreError};

/// Why a provider secret cannot be set or read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// No provider of that name: `e2b`, `daytona` and `vercel` send webhooks, `runloop` and
    /// `browserbase` are polled.
    #[error("unknown provider {0:?} (e2b, daytona, vercel, runloop or browserbase)")]
    UnknownProvider(String),
    /// No host of that name.
    #[error("no host named {0:?}")]
    UnknownHost(String),
    /// The secret is not in the provider's format: empty, over 1 KiB, or (Daytona) not
    /// `whsec_<base64>`.
    #[error("not a {provider} signing secret: {why}")]
    BadSecret {
        /// The provider.
        provider: &'static str,
        /// What is wrong with it (never the secret itself).
        why: &'static str,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored secret does not open under the master key.
    #[error(transparent)]
    Vault(#[from] VaultError),
}

impl From<SecretError> for PassError {
    fn from(e: SecretError) -> PassError {
        match e {
            SecretError::Store(e) => PassError::Store(e),
            SecretError::Vault(e) => PassError::Vault(e),
            // Only setting a secret meets the others.
            other => {
                tracing::error!(error = %other, "provider secret");
                PassError::Step(Error::Internal)
            }
        }
    }
}

/// Sets host `host_name`'s signing secret for `provider`'s webhooks, sealed under `master`
/// (whitespace around it, such as a secret file's last newline, is dropped); replaces one set
/// before. Answers the host's id.
///
/// # Errors
/// [`SecretError::BadSecret`], [`SecretError::UnknownHost`], [`SecretError::Store`].
pub async fn set_secret(
    store: &Store,
    master: &MasterKey,
    host_name: &str,
    provider: Provider,
    secret: &str,
) -> Result<String, SecretError> {
    let secret = secret.trim();
    let bad = |why| SecretError::BadSecret {
        provider: provider.name(),
        why,
    };
    if secret.is_empty() {
        return Err(bad("empty"));
    }
    if secret.len() > 1024 {
        return Err(bad("over 1 KiB"));
    }
    if provider == Provider::Daytona {
        use base64::Engine;
        let key = secret
            .strip_prefix("whsec_")
            .map(|b| base64::engine::general_purpose::STANDARD.decode(b));
        if !matches!(key, Some(Ok(_))) {
            return Err(bad("Svix secrets are whsec_ and base64"));
        }
    }
    let host_id = store
        .host_id(host_name)
        .await?
        .ok_or_else(|| SecretError::UnknownHost(host_name.to_owned()))?;
    let sealed = master.seal(
        &provider_secret_aad(&host_id, provider.name()),
        secret.as_bytes(),
    );
    store
        .set_provider_secret(&host_id, provider.name(), &sealed, &master.id(), now_ms())
        .await?;
    tracing::info!(host = %host_id, provider = provider.name(), "provider secret set");
    Ok(host_id)
}

/// Host `host_id`'s signing secret for `provider`, opened; `None` when none is set.
///
/// # Errors
/// [`SecretError::Store`], and [`SecretError::Vault`] when it does not open.
pub async fn secret(
    store: &Store,
    master: &MasterKey,
    host_id: &str,
    provider: Provider,
) -> Result<Option<Vec<u8>>, SecretError> {
    let Some(sealed) = store.provider_secret(host_id, provider.name()).await? else {
        return Ok(None);
    };
    Ok(Some(master.open_sealed(
        &provider_secret_aad(host_id, provider.name()),
        &sealed,
    )?))
}
