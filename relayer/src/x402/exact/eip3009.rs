//! `exact` through EIP-3009 (x402's default method): the payload is a
//! `TransferWithAuthorization` of the asset signed for `from`, settled by the token's own
//! `transferWithAuthorization`. The signature is checked by ECDSA when `from` has no code and
//! by ERC-1271 `isValidSignature` when it has (a Bursar session wallet vouches only for what it
//! reserved under the session's rules); a failed simulation is explained by the token's
//! `authorizationState` and `balanceOf`, with x402's codes.

use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_sol_types::{Eip712Domain, SolError, SolStruct};
use bursar_bindings::eip712::TransferWithAuthorization;
use bursar_bindings::evm::IFiatToken;
use serde::Deserialize;

use crate::kernel::json::Amount;
use crate::kernel::App;
use crate::kernel::Error;
use crate::x402::signature::{signed_by, Signer};
use crate::x402::types::{refuse, Asked, FacilitatorRequest, Refusal};

/// The slack x402's facilitator leaves before `validBefore` (seconds): an authorization that
/// expires sooner could not be settled in time.
const SETTLE_SLACK: u64 = 6;

/// x402's exact EVM payload for EIP-3009.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Payload {
    signature: Bytes,
    authorization: Authorization,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Authorization {
    from: Address,
    to: Address,
    value: Amount,
    valid_after: Amount,
    valid_before: Amount,
    nonce: B256,
}

/// An authorization that matches the server's requirements, ready to check on chain.
pub(super) struct Authorized {
    pub(super) message: TransferWithAuthorization,
    signature: Bytes,
    /// Its EIP-712 digest under the token's domain as the requirements name it.
    digest: B256,
}

impl Authorized {
    /// The token call that settles it: a 65-byte signature through the (v, r, s) overload, as
    /// x402's facilitator sends it (USDC v2.2 checks a contract payer's ERC-1271 either way),
    /// any other through the `bytes` one.
    pub(super) fn transfer(&self) -> Vec<u8> {
        self.message.transfer_call(&self.signature, true)
    }
}

/// The payload's authorization, checked against what the server asks and the chain's clock.
pub(super) async fn parse(
    app: &App,
    req: &FacilitatorRequest,
    asked: &Asked,
) -> Result<Result<Authorized, Refusal>, Error> {
    let (Some(name), Some(version)) = (asked.extra("name"), asked.extra("version")) else {
        return Ok(Err(refuse(
            "invalid_exact_evm_missing_eip712_domain",
            "the requirements' extra must name the token's EIP-712 domain (name, version)",
        )));
    };
    let payload: Payload = match serde_json::from_value(req.payment_payload.payload.clone()) {
        Ok(payload) => payload,
        Err(e) => {
            return Ok(Err(refuse(
                "invalid_payload",
                format!("not an exact EIP-3009 payload: {e}"),
            )))
        }
    };
    let a = payload.authorization;
    if a.to != asked.pay_to {
        return Ok(Err(refuse(
            "invalid_exact_evm_recipient_mismatch",
            "the authorization pays another address than payTo",
        )));
    }
    let now = app.now(true).await?;
    if a.valid_before.0 < U256::from(now + SETTLE_SLACK) {
        return Ok(Err(refuse(
            "invalid_exact_evm_payload_authorization_valid_before",
            "the authorization expires before it could be settled",
        )));
    }
    if a.valid_after.0 > U256::from(now) {
        return Ok(Err(refuse(
            "invalid_exact_evm_payload_authorization_valid_after",
            "the authorization is not valid yet",
        )));
    }
    if a.value.0 != asked.amount {
        return Ok(Err(refuse(
            "invalid_exact_evm_payload_authorization_value_mismatch",
            "the authorization pays another amount than required",
        )));
    }
    let message = TransferWithAuthorization {
        from: a.from,
        to: a.to,
        value: a.value.0,
        validAfter: a.valid_after.0,
        validBefore: a.valid_before.0,
        nonce: a.nonce,
    };
    let domain = Eip712Domain::new(
        Some(name.into()),
        Some(version.into()),
        Some(U256::from(app.chain_id)),
        Some(asked.asset),
        None,
    );
    let digest = message.eip712_signing_hash(&domain);
    Ok(Ok(Authorized {
        message,
        signature: payload.signature,
        digest,
    }))
}

/// The payer's signature (ECDSA, or ERC-1271 for a contract), then the transfer simulated
/// from `signer`.
pub(super) async fn check(
    app: &App,
    a: &Authorized,
    asset: Address,
    signer: Address,
) -> Result<Result<(), Refusal>, Error> {
    let (signed, by) = signed_by(app, a.message.from, a.digest, &a.signature).await?;
    if !signed {
        return Ok(Err(refuse(
            "invalid_exact_evm_signature",
            match by {
                Signer::Account => "the signature is not the payer's",
                Signer::Contract => {
                    "the payer contract does not vouch for this authorization (ERC-1271)"
                }
            },
        )));
    }
    let simulated = app
        .client
        .call(Some(signer), asset, &a.transfer(), U256::ZERO, None)
        .await;
    let Err(e) = simulated else {
        return Ok(Ok(()));
    };
    let Some(data) = e.revert_data().cloned() else {
        return Err(Error::from(e));
    };
    Ok(Err(diagnose(app, a, asset, &data).await?))
}

/// Why the token refused the transfer, as x402's facilitator names it.
async fn diagnose(
    app: &App,
    a: &Authorized,
    asset: Address,
    revert: &[u8],
) -> Result<Refusal, Error> {
    let m = &a.message;
    let used = IFiatToken::authorizationStateCall {
        authorizer: m.from,
        nonce: m.nonce,
    };
    let said = alloy_sol_types::Revert::abi_decode(revert)
        .map(|r| r.reason)
        .unwrap_or_else(|_| format!("reverted with 0x{}", alloy_primitives::hex::encode(revert)));
    Ok(match app.client.view(None, asset, used).await {
        Err(_) => refuse(
            "invalid_exact_evm_eip3009_not_supported",
            "the asset has no EIP-3009 authorizationState",
        ),
        Ok(true) => refuse(
            "invalid_exact_evm_nonce_already_used",
            "this authorization was used or canceled",
        ),
        Ok(false) => {
            let balance = app
                .client
                .view(None, asset, IFiatToken::balanceOfCall { account: m.from })
                .await?;
            if balance < m.value {
                refuse(
                    "invalid_exact_evm_insufficient_balance",
                    "the payer holds less than the amount",
                )
            } else {
                refuse("invalid_exact_evm_transaction_simulation_failed", said)
            }
        }
    })
}
