//! What every way of paying a 402 shares: the requirements' payee, amount and purpose, the
//! session's intent nonces, a reservation waited for, the `PAYMENT-SIGNATURE` answer.

use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_sol_types::SolCall;
use base64::Engine as _;
use bursar_bindings::evm::IFiatToken;
use serde::Serialize;
use serde_json::Value;

use super::types::{purpose, PaymentPayload, PaymentRequired, Requirements, VERSION};
use crate::engine::submission::Call;
use crate::kernel::App;
use crate::kernel::Error;
use crate::store::{SessionRow, Store};

/// What `POST /v1/x402/pay` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = X402Paid)]
pub struct Paid {
    /// The `PAYMENT-SIGNATURE` header to retry the request with.
    pub payment_signature: String,
    /// The same, decoded (x402's `PaymentPayload`).
    #[schema(value_type = Object)]
    pub payment_payload: PaymentPayload,
}

/// The `PAYMENT-SIGNATURE` answer of `payload` for `accepted` of `required`.
pub(super) fn paid(
    required: PaymentRequired,
    accepted: Requirements,
    payload: Value,
) -> Result<Paid, Error> {
    let payload = PaymentPayload {
        x402_version: VERSION,
        resource: Some(required.resource),
        accepted,
        payload,
        extensions: required.extensions,
    };
    let header = base64::engine::general_purpose::STANDARD
        .encode(serde_json::to_vec(&payload).map_err(|_| Error::Internal)?);
    Ok(Paid {
        payment_signature: header,
        payment_payload: payload,
    })
}

/// The payee, amount and [`purpose`] of `accepted`.
pub(super) fn asked(url: &str, accepted: &Requirements) -> Result<(Address, U256, B256), Error> {
    let invalid = |field: &str, what: &str| Error::invalid(field, what.to_owned());
    let to: Address = accepted
        .pay_to
        .parse()
        .map_err(|_| invalid("paymentRequired.accepts.payTo", "payTo is not an address"))?;
    let amount = U256::from_str_radix(&accepted.amount, 10).map_err(|_| {
        invalid(
            "paymentRequired.accepts.amount",
            "amount is not a decimal integer",
        )
    })?;
    let purpose = purpose(url, accepted).ok_or_else(|| {
        invalid(
            "paymentRequired.accepts",
            "asset, payTo or amount does not parse",
        )
    })?;
    Ok((to, amount, purpose))
}

/// Sends `call`, a reservation from `session` (`reserve` or `reserveDeposit`) of `amount`
/// under the session's intent nonce `intent_nonce`, good until `valid_before`: simulated first
/// with the wallet's rules (a refusal is the wallet's error and nothing is sent; `reserved`
/// tells a reservation from a payment held for the owner, which an x402 payment cannot wait
/// for), queued after the session's payments, and answered once mined.
pub(super) async fn reserve<C: SolCall>(
    app: &App,
    session: &SessionRow,
    call: C,
    reserved: impl Fn(&C::Return) -> bool,
    (amount, intent_nonce): (U256, u64),
    valid_before: U256,
) -> Result<(), Error> {
    let (signer, wallet) = (session.signer, app.contracts.wallet);
    let data = call.abi_encode();
    if !reserved(&app.client.view(Some(signer), wallet, call).await?) {
        return Err(Error::conflict(
            "x402_needs_approval",
            "the amount is above the session's co-sign threshold: an x402 payment cannot wait for the owner",
        ));
    }
    let call = Call {
        signer,
        to: wallet,
        gas_limit: app.gas_for(signer, wallet, &data).await?,
        data: data.into(),
        value: U256::ZERO,
    };
    // Sent after the session's payments already queued: refused now if they leave too little.
    let tx = crate::payments::queue::queue_reservation(app, session, &call, amount, intent_nonce)
        .await?;
    let mined = app
        .wait_for(app.settings.open_wait, || async {
            let row = app.store.transaction(tx).await?;
            Ok(row.filter(|t| t.receipt_status.is_some()))
        })
        .await?;
    match mined.and_then(|t| t.receipt_status) {
        Some(1) => Ok(()),
        Some(_) => Err(Error::conflict(
            "x402_reservation_failed",
            "the reservation was mined but reverted: the session changed meanwhile",
        )),
        // Not a 503: a retry would reserve (and spend) again. The queued reservation still
        // lands; unused, anyone may release it after `validBefore`.
        None => Err(Error::conflict(
            "x402_reservation_pending",
            format!("the reservation (transaction {tx}) is not mined yet; it stays reserved until {valid_before}, then can be released"),
        )),
    }
}

/// `session`'s next intent nonce, taken (never given twice).
pub(super) async fn next_intent_nonce(app: &App, session: &SessionRow) -> Result<u64, Error> {
    let mut db = app.store.begin().await?;
    let nonce = Store::take_intent_nonces(&mut db, &[session.id.as_str()]).await?[0];
    db.commit().await.map_err(crate::store::StoreError::from)?;
    Ok(nonce)
}

/// The EIP-712 digest of a struct (its `hashStruct`) under `token`'s own domain, as the token
/// computes it (its `DOMAIN_SEPARATOR()`): what an EIP-3009 authorization from the session
/// wallet is signed over.
pub(super) async fn token_digest(
    app: &App,
    token: Address,
    hash_struct: B256,
) -> Result<B256, Error> {
    let separator = app
        .client
        .view(None, token, IFiatToken::DOMAIN_SEPARATORCall {})
        .await?;
    Ok(keccak256(
        [
            &[0x19, 0x01][..],
            separator.as_slice(),
            hash_struct.as_slice(),
        ]
        .concat(),
    ))
}
