//! x402's `exact` scheme on EVM through EIP-3009, the facilitator's side, for any payer: the
//! payload is a `TransferWithAuthorization` of the asset signed for `from`, and settling it is
//! the token's own `transferWithAuthorization`, sent by one of the relayer's signers.
//!
//! Checked as x402's official facilitator checks it (`@x402/evm` 2.27), with its error codes:
//! the recipient, amount and validity window against the server's requirements; the signature
//! by ECDSA when `from` has no code and by ERC-1271 `isValidSignature` when it does (a Bursar
//! session wallet vouches only for what it reserved under the session's rules); then the
//! transfer simulated at the latest block, a failure explained by the token's
//! `authorizationState` and `balanceOf`. One authorization is sent once and reported
//! settled once (see [`settle`]).

use alloy_primitives::{keccak256, Address, Bytes, Signature, B256, U256};
use alloy_sol_types::{Eip712Domain, SolCall, SolError, SolStruct};
use bursar_bindings::eip712::TransferWithAuthorization;
use bursar_bindings::erc::IERC1271;
use bursar_bindings::evm::IFiatToken;
use bursar_bindings::wallet::ERC1271_MAGIC_VALUE;
use serde::Deserialize;

use super::{network, refuse, FacilitatorRequest, Refusal, SettleResponse};
use crate::kernel::json::Amount;
use crate::kernel::App;
use crate::kernel::Error;
use crate::store::Claim;

/// The slack x402's facilitator leaves before `validBefore` (seconds): an authorization that
/// expires sooner could not be settled in time.
const SETTLE_SLACK: u64 = 6;

/// Who the settlements are kept for in the idempotency table. What is kept is the engine's
/// transaction id until a `settle` answered its outcome, then [`ANSWERED`] and its hash.
const CALLER: &str = "x402:exact";

/// Marks a kept settlement whose outcome was answered.
const ANSWERED: &str = "answered:";

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
struct Authorized {
    asset: Address,
    message: TransferWithAuthorization,
    signature: Bytes,
    /// Its EIP-712 digest under the token's domain as the requirements name it.
    digest: B256,
}

impl Authorized {
    fn from(&self) -> Address {
        self.message.from
    }

    /// The token call that settles it: a 65-byte signature through the (v, r, s) overload, as
    /// x402's facilitator sends it (USDC v2.2 checks a contract payer's ERC-1271 either way),
    /// any other through the `bytes` one.
    fn transfer(&self) -> Vec<u8> {
        let m = &self.message;
        if self.signature.len() == 65 {
            let s = &self.signature;
            IFiatToken::transferWithAuthorization_1Call {
                from: m.from,
                to: m.to,
                value: m.value,
                validAfter: m.validAfter,
                validBefore: m.validBefore,
                nonce: m.nonce,
                v: s[64],
                r: B256::from_slice(&s[..32]),
                s: B256::from_slice(&s[32..64]),
            }
            .abi_encode()
        } else {
            IFiatToken::transferWithAuthorization_0Call {
                from: m.from,
                to: m.to,
                value: m.value,
                validAfter: m.validAfter,
                validBefore: m.validBefore,
                nonce: m.nonce,
                signature: self.signature.clone(),
            }
            .abi_encode()
        }
    }
}

/// Checks the payload against the server's requirements and the chain's clock.
async fn authorized(
    app: &App,
    req: &FacilitatorRequest,
) -> Result<Result<Authorized, Refusal>, Error> {
    let r = &req.payment_requirements;
    let p = &req.payment_payload;
    if r.network != network(app.chain_id) || p.accepted.network != r.network {
        return Ok(Err(refuse(
            "invalid_exact_evm_network_mismatch",
            format!("this facilitator settles on {}", network(app.chain_id)),
        )));
    }
    let text = |key: &str| {
        r.extra
            .as_ref()
            .and_then(|e| e.get(key))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let (Some(name), Some(version)) = (text("name"), text("version")) else {
        return Ok(Err(refuse(
            "invalid_exact_evm_missing_eip712_domain",
            "the requirements' extra must name the token's EIP-712 domain (name, version)",
        )));
    };
    let (Ok(asset), Ok(pay_to), Ok(amount)) = (
        r.asset.parse::<Address>(),
        r.pay_to.parse::<Address>(),
        U256::from_str_radix(&r.amount, 10),
    ) else {
        return Ok(Err(refuse(
            "invalid_payment_requirements",
            "asset, payTo or amount does not parse",
        )));
    };
    if p.payload.get("permit2Authorization").is_some() {
        return Ok(Err(refuse(
            "unsupported_payload_type",
            "this facilitator settles exact through EIP-3009, not Permit2",
        )));
    }
    let payload: Payload = match serde_json::from_value(p.payload.clone()) {
        Ok(payload) => payload,
        Err(e) => {
            return Ok(Err(refuse(
                "invalid_payload",
                format!("not an exact EIP-3009 payload: {e}"),
            )))
        }
    };
    let a = payload.authorization;
    if a.to != pay_to {
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
    if a.value.0 != amount {
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
        Some(asset),
        None,
    );
    let digest = message.eip712_signing_hash(&domain);
    Ok(Ok(Authorized {
        asset,
        message,
        signature: payload.signature,
        digest,
    }))
}

/// Checks what [`authorized`] passed against the chain: the payer's signature (ECDSA, or
/// ERC-1271 for a contract) and the transfer, simulated from `signer`.
async fn on_chain(
    app: &App,
    a: &Authorized,
    signer: Address,
) -> Result<Result<(), Refusal>, Error> {
    let from = a.from();
    let code = app.client.code(from).await?;
    let signed = if code.is_empty() {
        a.signature.len() == 65
            && Signature::from_raw(&a.signature)
                .ok()
                .and_then(|s| s.recover_address_from_prehash(&a.digest).ok())
                == Some(from)
    } else {
        let ask = IERC1271::isValidSignatureCall {
            hash: a.digest,
            signature: a.signature.clone(),
        };
        // A revert is a "no", as it is for the token.
        matches!(app.client.view(None, from, ask).await, Ok(m) if m.0 == ERC1271_MAGIC_VALUE)
    };
    if !signed {
        return Ok(Err(refuse(
            "invalid_exact_evm_signature",
            if code.is_empty() {
                "the signature is not the payer's"
            } else {
                "the payer contract does not vouch for this authorization (ERC-1271)"
            },
        )));
    }
    let simulated = app
        .client
        .call(Some(signer), a.asset, &a.transfer(), U256::ZERO, None)
        .await;
    let Err(e) = simulated else {
        return Ok(Ok(()));
    };
    let Some(data) = e.revert_data().cloned() else {
        return Err(Error::from(e));
    };
    Ok(Err(diagnose(app, a, &data).await?))
}

/// Why the token refused the transfer, as x402's facilitator names it.
async fn diagnose(app: &App, a: &Authorized, revert: &[u8]) -> Result<Refusal, Error> {
    let m = &a.message;
    let used = IFiatToken::authorizationStateCall {
        authorizer: m.from,
        nonce: m.nonce,
    };
    let said = alloy_sol_types::Revert::abi_decode(revert)
        .map(|r| r.reason)
        .unwrap_or_else(|_| format!("reverted with 0x{}", alloy_primitives::hex::encode(revert)));
    Ok(match app.client.view(None, a.asset, used).await {
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
                .view(None, a.asset, IFiatToken::balanceOfCall { account: m.from })
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

/// The signer a payer's settlements go out from: the same one for the same payer, so its
/// authorizations are settled in order.
fn signer_for(app: &App, from: Address) -> Address {
    let signers = app.engine.signers();
    signers[usize::from(from[19]) % signers.len()]
}

/// `POST /x402/verify` for `exact`: the payer when the payment would settle now.
pub(super) async fn verify(
    app: &App,
    req: &FacilitatorRequest,
) -> Result<Result<Address, Refusal>, Error> {
    let a = match authorized(app, req).await? {
        Ok(a) => a,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let signer = signer_for(app, a.from());
    Ok(on_chain(app, &a, signer).await?.map(|()| a.from()))
}

/// `POST /x402/settle` for `exact`: checked again, sent through the transaction engine and
/// answered once mined. The engine's transaction is kept per authorization (asset, from,
/// nonce), so it is sent once: a `settle` repeated before its outcome was answered (after
/// `settlement_pending`) waits for it; one repeated after, as after x402's facilitator, hears
/// `invalid_exact_evm_nonce_already_used`.
pub(super) async fn settle(app: &App, req: &FacilitatorRequest) -> Result<SettleResponse, Error> {
    let a = match authorized(app, req).await? {
        Ok(a) => a,
        Err(refusal) => return Ok(SettleResponse::failed(app, refusal, None)),
    };
    let from = a.from();
    let key = alloy_primitives::hex::encode(keccak256(
        [
            a.asset.as_slice(),
            from.as_slice(),
            a.message.nonce.as_slice(),
        ]
        .concat(),
    ));
    let data = a.transfer();
    let hash = alloy_primitives::hex::encode(keccak256(&data));
    let now = crate::store::now_ms();
    let dead_before = now - app.settings.instance_timeout.as_millis() as i64;
    let claim = app
        .store
        .claim_idempotency_key(CALLER, &key, &hash, &app.instance, now, dead_before)
        .await?;
    let tx = match claim {
        Claim::New => match send(app, &a, data).await {
            Ok(Ok(tx)) => {
                let kept = tx.to_string();
                app.store
                    .complete_idempotency_key(CALLER, &key, 200, &kept)
                    .await?;
                tx
            }
            // Nothing was sent: a later `settle` checks afresh.
            Ok(Err(refusal)) => {
                app.store.release_idempotency_key(CALLER, &key).await?;
                return Ok(SettleResponse::failed(app, refusal, Some(from)));
            }
            Err(e) => {
                app.store.release_idempotency_key(CALLER, &key).await?;
                return Err(e);
            }
        },
        Claim::Replay { response, .. } => match response.strip_prefix(ANSWERED) {
            // A resource server serves once per successful settlement: the second hears no.
            Some(hash) => {
                let why = refuse(
                    "invalid_exact_evm_nonce_already_used",
                    format!("this authorization was settled in transaction {hash}"),
                );
                return Ok(SettleResponse::failed(app, why, Some(from)));
            }
            None => response.parse().map_err(|_| Error::Internal)?,
        },
        Claim::Running => {
            let why = refuse("settlement_pending", "this authorization is being settled");
            return Ok(SettleResponse::failed(app, why, Some(from)));
        }
        Claim::Mismatch => {
            let why = refuse(
                "invalid_exact_evm_nonce_already_used",
                "this authorization's nonce was settled with another signature",
            );
            return Ok(SettleResponse::failed(app, why, Some(from)));
        }
    };
    let answer = outcome(app, tx, from).await?;
    if !answer.transaction.is_empty() {
        let answered = format!("{ANSWERED}{}", answer.transaction);
        app.store
            .complete_idempotency_key(CALLER, &key, 200, &answered)
            .await?;
    }
    Ok(answer)
}

/// Checks `a` on chain, then queues its transfer: the engine's transaction id.
async fn send(app: &App, a: &Authorized, data: Vec<u8>) -> Result<Result<i64, Refusal>, Error> {
    let signer = signer_for(app, a.from());
    if let Err(refusal) = on_chain(app, a, signer).await? {
        return Ok(Err(refusal));
    }
    let call = crate::submission::Call {
        signer,
        to: a.asset,
        gas_limit: app.gas_for(signer, a.asset, &data).await?,
        data: data.into(),
        value: U256::ZERO,
    };
    let (db, tx) = app.queue(&call).await?;
    app.commit(db).await?;
    tracing::info!(payer = %a.from(), to = %a.message.to, value = %a.message.value, transaction = tx, "x402 exact payment queued");
    Ok(Ok(tx))
}

/// What engine transaction `tx` (a settlement paid by `from`) came to, once mined.
async fn outcome(app: &App, tx: i64, from: Address) -> Result<SettleResponse, Error> {
    let mined = app
        .wait_for(app.settings.open_wait, || async {
            let row = app.store.transaction(tx).await?;
            Ok(row.filter(|t| t.receipt_status.is_some()))
        })
        .await?;
    let Some(mined) = mined else {
        let why = refuse(
            "settlement_pending",
            format!("the transfer (transaction {tx}) is not mined yet: settle again to hear"),
        );
        return Ok(SettleResponse::failed(app, why, Some(from)));
    };
    let hash = mined.mined_hash.unwrap_or_default();
    Ok(if mined.receipt_status == Some(1) {
        SettleResponse::settled(app, from, hash)
    } else {
        let why = refuse(
            "invalid_exact_evm_transaction_failed",
            "the transfer was mined but reverted",
        );
        SettleResponse {
            transaction: hash,
            ..SettleResponse::failed(app, why, Some(from))
        }
    })
}
