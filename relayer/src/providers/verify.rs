//! A provider's webhook delivery, verified by that provider's scheme and read.

use http::HeaderMap;

use super::{daytona, e2b, vercel, within_limit, Provider, ProviderError, Report};

/// Verifies a delivery of `provider`'s webhook signed with `secret` at unix second `now` and
/// reads it: `None` for an event that is not about a sandbox's lifecycle.
///
/// # Errors
/// [`ProviderError`]: too large, unsigned, badly signed, stale or malformed; a polled provider
/// has no webhooks ([`ProviderError::NotConfigured`]).
pub fn verify(
    provider: Provider,
    secret: &[u8],
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Option<Report>, ProviderError> {
    within_limit(body)?;
    match provider {
        Provider::E2b => e2b::verify(secret, headers, body, now).map(Some),
        Provider::Daytona => {
            let secret = std::str::from_utf8(secret).map_err(|_| ProviderError::BadSecret)?;
            daytona::verify(secret, headers, body, now)
        }
        Provider::Vercel => vercel::verify(secret, headers, body, now),
        Provider::Runloop | Provider::Browserbase => Err(ProviderError::NotConfigured),
    }
}
