//! `exact` through ERC-7710 (x402's method for smart accounts with delegation): the payload
//! names a Delegation Manager, the delegator (the payer) and an opaque permission context, and
//! settling it is `redeemDelegations([context], [single call], [asset ‖ 0 ‖ transfer(payTo,
//! amount)])` on that manager — the encoding of x402's spec. As the spec says, no manager is
//! trusted: verification is the simulation, and the settlement's receipt must show the asset
//! moving from the delegator to `payTo`. Bursar's own manager is the SessionGateway (its
//! context: a session-key-signed `PaymentIntent`).

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::{SolCall, SolError};
use bursar_bindings::gateway::{transfer_execution, ISessionGateway, SINGLE_CALL};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kernel::App;
use crate::kernel::Error;
use crate::x402::types::{refuse, Asked, FacilitatorRequest, Refusal};

/// `extra.assetTransferMethod` of requirements paid this way.
pub(crate) const METHOD: &str = "erc7710";

/// x402's exact EVM payload for ERC-7710.
#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Payload {
    /// The contract that redeems the delegation.
    pub(crate) delegation_manager: Address,
    /// What it redeems (opaque to the facilitator).
    pub(crate) permission_context: Bytes,
    /// The account that pays.
    pub(crate) delegator: Address,
}

/// A delegation to redeem for the server's requirements.
pub(super) struct Delegated {
    pub(super) manager: Address,
    pub(super) delegator: Address,
    /// The `redeemDelegations` call.
    pub(super) redeem: Vec<u8>,
}

/// Whether `payload` is an ERC-7710 payload (x402's facilitators tell methods by shape).
pub(super) fn is_delegation(payload: &Value) -> bool {
    payload.get("delegationManager").is_some()
}

/// The payload's delegation, to redeem for exactly what the server asks.
pub(super) fn parse(req: &FacilitatorRequest, asked: &Asked) -> Result<Delegated, Refusal> {
    if asked.extra("assetTransferMethod").as_deref() != Some(METHOD) {
        return Err(refuse(
            "unsupported_payload_type",
            "an erc7710 payload for requirements that do not ask for erc7710",
        ));
    }
    let payload: Payload =
        serde_json::from_value(req.payment_payload.payload.clone()).map_err(|e| {
            refuse(
                "invalid_payload",
                format!("not an exact ERC-7710 payload: {e}"),
            )
        })?;
    let redeem = ISessionGateway::redeemDelegationsCall {
        permissionContexts: vec![payload.permission_context],
        modes: vec![SINGLE_CALL],
        executionCallDatas: vec![transfer_execution(asked.asset, asked.pay_to, asked.amount)],
    };
    Ok(Delegated {
        manager: payload.delegation_manager,
        delegator: payload.delegator,
        redeem: redeem.abi_encode(),
    })
}

/// The redemption simulated from `signer`; a refusal named by the manager's error (Bursar's
/// gateway's and wallet's by name), or its revert string.
pub(super) async fn check(
    app: &App,
    d: &Delegated,
    signer: Address,
) -> Result<Result<(), Refusal>, Error> {
    let simulated = app
        .client
        .call(Some(signer), d.manager, &d.redeem, U256::ZERO, None)
        .await;
    let Err(e) = simulated else {
        return Ok(Ok(()));
    };
    let Some(data) = e.revert_data().cloned() else {
        return Err(Error::from(e));
    };
    Ok(Err(match bursar_client::revert::decode_error(&data) {
        Some(named) => {
            let message = format!("the delegation manager refused: {}", named.name);
            (named.name, message)
        }
        None => {
            let said = alloy_sol_types::Revert::abi_decode(&data)
                .map(|r| r.reason)
                .unwrap_or_else(|_| format!("reverted with {data}"));
            refuse("invalid_exact_evm_transaction_simulation_failed", said)
        }
    }))
}
