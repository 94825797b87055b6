//! Whose signature a payment carries, as tokens and x402's contracts decide it: ECDSA for an
//! account without code, ERC-1271 `isValidSignature` for a contract (a Bursar session wallet
//! vouches only for what it reserved under the session's rules).

use alloy_primitives::{Address, Signature, B256};
use bursar_bindings::erc::IERC1271;
use bursar_bindings::wallet::ERC1271_MAGIC_VALUE;

use crate::kernel::App;
use crate::kernel::Error;

/// How a signer signs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Signer {
    /// An account without code: ECDSA.
    Account,
    /// A contract: ERC-1271.
    Contract,
}

/// Whether `signature` is `who`'s over `digest` now, and how `who` signs.
pub(super) async fn signed_by(
    app: &App,
    who: Address,
    digest: B256,
    signature: &[u8],
) -> Result<(bool, Signer), Error> {
    if app.client.code(who).await?.is_empty() {
        return Ok((recovers_to(who, digest, signature), Signer::Account));
    }
    let ask = IERC1271::isValidSignatureCall {
        hash: digest,
        signature: signature.to_vec().into(),
    };
    // A revert is a "no", as it is for the token.
    let vouched =
        matches!(app.client.view(None, who, ask).await, Ok(m) if m.0 == ERC1271_MAGIC_VALUE);
    Ok((vouched, Signer::Contract))
}

/// Whether `signature` (65 bytes, `r ‖ s ‖ v`) recovers to `who` over `digest`.
pub(super) fn recovers_to(who: Address, digest: B256, signature: &[u8]) -> bool {
    signature.len() == 65
        && Signature::from_raw(signature)
            .ok()
            .and_then(|s| s.recover_address_from_prehash(&digest).ok())
            == Some(who)
}
