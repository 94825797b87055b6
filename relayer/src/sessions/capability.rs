//! Capability tokens: what a sandbox holds instead of a key. A token is shown once, stored as
//! its SHA-256, and opens its session only while the session is live.

use sha2::{Digest, Sha256};

use crate::engine::random::random_bytes;
use crate::kernel::{App, Error};
use crate::store::SessionRow;

/// Seconds before a session's expiry from which its capability token is checked against the
/// chain's head, not the engine's last look at it.
const EXPIRY_MARGIN: u64 = 30;

/// A new capability token and its SHA-256 (what is stored).
pub(super) fn capability_token() -> (String, String) {
    let token = format!(
        "bct_{}",
        alloy_primitives::hex::encode(random_bytes::<32>())
    );
    let hash = token_hash(&token);
    (token, hash)
}

/// The stored form of a bearer token.
pub fn token_hash(token: &str) -> String {
    alloy_primitives::hex::encode(Sha256::digest(token.as_bytes()))
}

/// The session a capability token opens: live (not revoked by the host, not expired).
pub async fn authenticate(app: &App, bearer: &str) -> Result<SessionRow, Error> {
    let session = app
        .store
        .session_by_capability(&token_hash(bearer))
        .await?
        .ok_or(Error::Unauthorized)?;
    // By the later of the chain's clock and ours, as the wallet would see it expire. The
    // engine's view of the chain's clock may be a poll old, and a dev chain's runs ahead of
    // ours: close to the expiry, the head is read again.
    let expires_at = session.expires_at as u64;
    let now = app.now(false).await?;
    let mut expired = expires_at <= now;
    if !expired && expires_at <= now.saturating_add(EXPIRY_MARGIN) {
        expired = expires_at <= app.now(true).await?;
    }
    if session.capability_revoked_at.is_some() || expired {
        return Err(Error::Unauthorized);
    }
    Ok(session)
}
