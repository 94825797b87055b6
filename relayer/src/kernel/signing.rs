//! Standard Webhooks signatures: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under a
//! `whsec_` secret. The relayer signs its outbound webhooks with them; Daytona's deliveries
//! (through Svix) are verified with them.
//!
//! Signing is the Standard Webhooks project's own crate. Verifying is ours: that crate's
//! `verify` reads the wall clock with a fixed five-minute tolerance and only `webhook-*`
//! headers, where a receiver here is told the time (so a stale delivery is tested at the
//! moment it becomes stale) and Daytona's deliveries carry `svix-*` headers. The relayer's
//! tests check both ways against the project's JavaScript library.

use std::time::Duration;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// `v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`: the `webhook-signature` header.
pub fn sign(secret: &[u8], message_id: &str, timestamp: i64, body: &str) -> String {
    standardwebhooks::Webhook::from_bytes(secret.to_vec())
        .and_then(|w| w.sign(message_id, timestamp, body.as_bytes()))
        .expect("any key signs a UTF-8 body")
}

/// Why a received webhook is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The secret is not `whsec_<base64>`.
    #[error("the secret is not whsec_<base64>")]
    BadSecret,
    /// The timestamp is missing, malformed or outside the tolerance.
    #[error("stale or missing timestamp")]
    Stale,
    /// No signature in the header matches.
    #[error("no signature matches")]
    Mismatch,
}

/// What a receiver does with a delivery: checks the timestamp is within `tolerance` of `now`
/// (unix seconds) and that one of the header's signatures (space-separated) matches, in
/// constant time. For hosts' Rust receivers and the tests.
pub fn verify(
    secret: &str,
    message_id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: i64,
    tolerance: Duration,
) -> Result<(), VerifyError> {
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .ok_or(VerifyError::BadSecret)?;
    let ts: i64 = timestamp.parse().map_err(|_| VerifyError::Stale)?;
    if ts.abs_diff(now) > tolerance.as_secs() {
        return Err(VerifyError::Stale);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(format!("{message_id}.{timestamp}.").as_bytes());
    mac.update(body);
    for candidate in signatures.split(' ') {
        let Some(tag) = candidate
            .strip_prefix("v1,")
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        else {
            continue;
        };
        if mac.clone().verify_slice(&tag).is_ok() {
            return Ok(());
        }
    }
    Err(VerifyError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_tampering_or_staleness_is_refused() {
        // The Standard Webhooks specification's example.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let key = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(&key, id, 1614265330, std::str::from_utf8(body).unwrap());
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let tolerance = Duration::from_secs(300);
        assert_eq!(
            verify(secret, id, "1614265330", &sig, body, 1614265330, tolerance),
            Ok(())
        );
        // Several signatures in the header: any one matching is enough.
        let both = format!("v1,bm90IGl0 {sig}");
        assert_eq!(
            verify(secret, id, "1614265330", &both, body, 1614265400, tolerance),
            Ok(())
        );
        // A signature cut to its prefix, or none, matches nothing.
        for forged in [
            "v1,",
            "",
            "v1",
            "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        ] {
            assert_eq!(
                verify(
                    secret,
                    id,
                    "1614265330",
                    forged,
                    body,
                    1614265330,
                    tolerance
                ),
                Err(VerifyError::Mismatch),
                "{forged:?}"
            );
        }
        let tampered = br#"{"test": 2432232315}"#;
        assert_eq!(
            verify(
                secret,
                id,
                "1614265330",
                &sig,
                tampered,
                1614265330,
                tolerance
            ),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(
                secret,
                "msg_other",
                "1614265330",
                &sig,
                body,
                1614265330,
                tolerance
            ),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(
                secret,
                id,
                "1614265330",
                &sig,
                body,
                1614265330 + 301,
                tolerance
            ),
            Err(VerifyError::Stale)
        );
        assert_eq!(
            verify(
                "whsec_!!",
                id,
                "1614265330",
                &sig,
                body,
                1614265330,
                tolerance
            ),
            Err(VerifyError::BadSecret)
        );
    }
}
