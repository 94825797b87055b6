//! x402's `exact` scheme on EVM, the facilitator's side, for any payer (an account or a
//! contract), by either method x402 names: [`eip3009`] (the default: the token's
//! `transferWithAuthorization`) or [`erc7710`] (a Delegation Manager's `redeemDelegations`;
//! told apart by the payload's shape, as x402's facilitators do).
//!
//! Checked as x402's official facilitator checks it (`@x402/evm` 2.27), with its error codes,
//! against the server's requirements and the chain's clock, then simulated at the latest block
//! from the signer that would send it. Settled through the transaction engine by one of the
//! relayer's signers; the receipt must show the asset moving from the payer to `payTo`. One
//! payment is sent once and reported settled once ([`super::once`]).

mod eip3009;
pub(crate) mod erc7710;

use alloy_primitives::{keccak256, Address};
use alloy_sol_types::SolEvent;
use bursar_bindings::token::ITestToken::Transfer;

use super::types::{network, refuse, Asked, FacilitatorRequest, Refusal, SettleResponse};
use crate::kernel::App;
use crate::kernel::Error;
use crate::x402::once::{mined, queue, signer_for, Settlement};

/// A payment of the server's requirements, by its method.
enum Payment {
    Eip3009(eip3009::Authorized),
    Erc7710(erc7710::Delegated),
}

/// A payment ready to check on chain and to send.
struct Exact {
    asked: Asked,
    payment: Payment,
}

impl Exact {
    /// Whose asset moves.
    fn payer(&self) -> Address {
        match &self.payment {
            Payment::Eip3009(a) => a.message.from,
            Payment::Erc7710(d) => d.delegator,
        }
    }

    /// The contract the settlement calls, and the call.
    fn call(&self) -> (Address, Vec<u8>) {
        match &self.payment {
            Payment::Eip3009(a) => (self.asked.asset, a.transfer()),
            Payment::Erc7710(d) => (d.manager, d.redeem.clone()),
        }
    }

    /// What the settlement is kept under: EIP-3009's authorization (asset, from, nonce), or
    /// the redemption itself.
    fn key(&self) -> String {
        let id = match &self.payment {
            Payment::Eip3009(a) => keccak256(
                [
                    self.asked.asset.as_slice(),
                    a.message.from.as_slice(),
                    a.message.nonce.as_slice(),
                ]
                .concat(),
            ),
            Payment::Erc7710(d) => keccak256([d.manager.as_slice(), &d.redeem].concat()),
        };
        alloy_primitives::hex::encode(id)
    }

    /// Checks it against the chain now, from `signer`. The contract it calls must have code:
    /// a call to an account without any "succeeds" in simulation and moves nothing.
    async fn check(&self, app: &App, signer: Address) -> Result<Result<(), Refusal>, Error> {
        let (target, _) = self.call();
        if app.client.code(target).await?.is_empty() {
            return Ok(Err(refuse(
                "asset_not_deployed_contract",
                format!("{target} has no code"),
            )));
        }
        match &self.payment {
            Payment::Eip3009(a) => eip3009::check(app, a, self.asked.asset, signer).await,
            Payment::Erc7710(d) => erc7710::check(app, d, signer).await,
        }
    }
}

/// The payload, checked against the server's requirements (and the chain's clock).
async fn parse(app: &App, req: &FacilitatorRequest) -> Result<Result<Exact, Refusal>, Error> {
    let r = &req.payment_requirements;
    if r.network != network(app.chain_id) || req.payment_payload.accepted.network != r.network {
        return Ok(Err(refuse(
            "invalid_exact_evm_network_mismatch",
            format!("this facilitator settles on {}", network(app.chain_id)),
        )));
    }
    let Some(asked) = Asked::of(r) else {
        return Ok(Err(refuse(
            "invalid_payment_requirements",
            "asset, payTo or amount does not parse",
        )));
    };
    let payload = &req.payment_payload.payload;
    if payload.get("permit2Authorization").is_some() {
        return Ok(Err(refuse(
            "unsupported_payload_type",
            "this facilitator settles exact through EIP-3009 or ERC-7710, not Permit2",
        )));
    }
    let payment = if erc7710::is_delegation(payload) {
        erc7710::parse(req, &asked).map(Payment::Erc7710)
    } else {
        eip3009::parse(app, req, &asked)
            .await?
            .map(Payment::Eip3009)
    };
    Ok(payment.map(|payment| Exact { asked, payment }))
}

/// `POST /x402/verify` for `exact`: the payer when the payment would settle now.
pub(super) async fn verify(
    app: &App,
    req: &FacilitatorRequest,
) -> Result<Result<Address, Refusal>, Error> {
    let e = match parse(app, req).await? {
        Ok(e) => e,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let payer = e.payer();
    Ok(e.check(app, signer_for(app, payer)).await?.map(|()| payer))
}

/// `POST /x402/settle` for `exact`: checked again, sent through the transaction engine and
/// answered once mined. Sent once and answered `success` once ([`Settlement`]): a `settle`
/// while another holds the payment hears `settlement_pending`; one after a `success`, as after
/// x402's facilitator, `invalid_exact_evm_nonce_already_used`.
pub(super) async fn settle(app: &App, req: &FacilitatorRequest) -> Result<SettleResponse, Error> {
    let e = match parse(app, req).await? {
        Ok(e) => e,
        Err(refusal) => return Ok(SettleResponse::failed(app, refusal, None)),
    };
    let key = format!("exact:{}", e.key());
    let request_hash = alloy_primitives::hex::encode(keccak256(e.call().1));
    let settlement = Settlement {
        key: &key,
        request_hash: &request_hash,
        used: "invalid_exact_evm_nonce_already_used",
        payer: e.payer(),
    };
    settlement
        .run(app, send(app, &e, &settlement), |tx| outcome(app, tx, &e))
        .await
}

/// Checks `e` on chain, then queues its settlement, recorded as `settlement`'s in the same
/// database transaction: the engine's transaction id.
async fn send(
    app: &App,
    e: &Exact,
    settlement: &Settlement<'_>,
) -> Result<Result<i64, Refusal>, Error> {
    let signer = signer_for(app, e.payer());
    if let Err(refusal) = e.check(app, signer).await? {
        return Ok(Err(refusal));
    }
    let (to, data) = e.call();
    let tx = queue(app, settlement, signer, to, data).await?;
    tracing::info!(payer = %e.payer(), to = %e.asked.pay_to, amount = %e.asked.amount, transaction = tx, "x402 exact payment queued");
    Ok(Ok(tx))
}

/// What engine transaction `tx` (settling `e`) came to, once mined: settled only if it
/// succeeded and moved the asset from the payer to `payTo`.
async fn outcome(app: &App, tx: i64, e: &Exact) -> Result<SettleResponse, Error> {
    let from = e.payer();
    let (hash, succeeded) = match mined(app, tx, Some(from)).await? {
        Ok(mined) => mined,
        Err(pending) => return Ok(pending),
    };
    let failed = |reason: &str, message: &str| SettleResponse {
        transaction: hash.to_string(),
        ..SettleResponse::failed(app, refuse(reason, message), Some(from))
    };
    if !succeeded {
        return Ok(failed(
            "invalid_exact_evm_transaction_failed",
            "the settlement was mined but reverted",
        ));
    }
    let receipt = app.client.receipt(hash).await?;
    let moved = receipt.is_some_and(|r| {
        r.logs.iter().any(|l| {
            l.address == e.asked.asset
                && Transfer::decode_raw_log(l.topics.iter().copied(), &l.data).is_ok_and(|t| {
                    (t.from, t.to, t.value) == (from, e.asked.pay_to, e.asked.amount)
                })
        })
    });
    Ok(match moved {
        true => SettleResponse::settled(app, from, hash.to_string()),
        false => failed(
            "invalid_exact_evm_transfer_event_mismatch",
            "the settlement did not move the amount from the payer to payTo",
        ),
    })
}
