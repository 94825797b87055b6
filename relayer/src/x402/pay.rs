//! The agent's side: `POST /v1/x402/pay`.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolStruct};
use base64::Engine as _;
use bursar_bindings::eip712::{PaymentIntent, TransferWithAuthorization, SESSION_WALLET_DOMAIN};
use bursar_bindings::evm::IFiatToken;
use bursar_bindings::wallet::{authorization_nonce, ISessionWallet};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{
    decode_required, network, purpose, PaymentPayload, PaymentRequired, Requirements,
    SessionPayment, EXACT, SCHEME, VERSION,
};
use crate::kernel::json::Amount;
use crate::kernel::session::{parse_id, signer_of};
use crate::kernel::App;
use crate::kernel::Error;
use crate::store::{SessionRow, Store};

/// `POST /v1/x402/pay`: a 402 answer's payment requirements.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PayRequest {
    /// The `PAYMENT-REQUIRED` header's value (base64 JSON), or the object itself.
    pub payment_required: Value,
}

/// What `POST /v1/x402/pay` answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Paid {
    /// The `PAYMENT-SIGNATURE` header to retry the request with.
    pub payment_signature: String,
    /// The same, decoded.
    pub payment_payload: PaymentPayload,
}

/// Signs a payment of a 402 answer's `bursar-session` requirements from `session`, after the
/// contracts' rules allowed it now (a refusal is the wallet's error, and nothing is signed).
pub async fn pay(app: &App, session: &SessionRow, req: PayRequest) -> Result<Paid, Error> {
    let required = decode_required(req.payment_required)?;
    let id = parse_id(&session.id)?;
    let token = crate::kernel::session::terms_of(session)?.token;
    let ours = network(app.chain_id);
    let offered = |scheme: &str| {
        required.accepts.iter().find(|r| {
            r.scheme == scheme
                && r.network == ours
                && r.asset.parse::<Address>().ok() == Some(token)
        })
    };
    // Bursar's own scheme when offered (one transaction); else `exact` through a reservation.
    let accepted = match (offered(SCHEME), offered(EXACT)) {
        (Some(r), _) => r.clone(),
        (None, Some(r)) => {
            let r = r.clone();
            return pay_exact(app, session, (id, token), required, r).await;
        }
        (None, None) => {
            let offered: Vec<String> = required
                .accepts
                .iter()
                .map(|r| format!("{} on {} in {}", r.scheme, r.network, r.asset))
                .collect();
            return Err(Error::conflict(
                "x402_no_bursar_option",
                format!("the resource accepts neither {SCHEME} nor {EXACT} on {ours} in this session's token {token} (it offers: {})", offered.join("; ")),
            ));
        }
    };
    let (to, amount, purpose) = asked(&required.resource.url, &accepted)?;
    let key = crate::payments::custodial_key(app, session, "sign the x402 intent itself").await?;
    let ttl = accepted
        .max_timeout_seconds
        .clamp(10, app.settings.intent_ttl.as_secs());
    let mut intent = PaymentIntent {
        session: id,
        to,
        amount,
        purpose,
        nonce: crate::random::probe_nonce(),
        deadline: U256::from(app.now(true).await? + ttl),
    };
    // The wallet's rules now, with a nonce no real intent uses: a refusal signs nothing.
    let domain = SESSION_WALLET_DOMAIN.at(app.chain_id, app.contracts.wallet);
    let sign = |intent: &PaymentIntent| -> Bytes {
        key.sign_hash_rsv(&intent.eip712_signing_hash(&domain))
            .into()
    };
    let probe = intent.clone().pay_call(sign(&intent));
    let executes = app
        .client
        .view(Some(signer_of(session)?), app.contracts.wallet, probe)
        .await?
        ._0;
    if !executes {
        return Err(Error::conflict(
            "x402_needs_approval",
            "the amount is above the session's co-sign threshold: an x402 payment cannot wait for the owner",
        ));
    }
    let mut db = app.store.begin().await?;
    let nonce = Store::take_intent_nonces(&mut db, &[session.id.as_str()]).await?[0];
    db.commit().await.map_err(crate::store::StoreError::from)?;
    intent.nonce = U256::from(nonce);
    let payment = SessionPayment {
        session_id: session.id.clone(),
        to,
        amount: Amount(amount),
        purpose,
        nonce: Amount(intent.nonce),
        deadline: intent.deadline.to(),
        signature: sign(&intent),
    };
    let payload = PaymentPayload {
        x402_version: VERSION,
        resource: Some(required.resource),
        accepted,
        payload: serde_json::to_value(&payment).map_err(|_| Error::Internal)?,
        extensions: required.extensions,
    };
    let header = base64::engine::general_purpose::STANDARD
        .encode(serde_json::to_vec(&payload).map_err(|_| Error::Internal)?);
    tracing::info!(session = %session.id, %to, %amount, "x402 payment signed");
    Ok(Paid {
        payment_signature: header,
        payment_payload: payload,
    })
}

/// The payee, amount and [`purpose`] of `accepted`.
fn asked(url: &str, accepted: &Requirements) -> Result<(Address, U256, B256), Error> {
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

/// Pays x402's `exact` requirements from `session`: the session wallet is the payer (`from`)
/// of an EIP-3009 authorization of the session's token, which it `reserve`s under the
/// session's rules (simulated first: a refusal is the wallet's error and nothing is sent),
/// signed by the session key over the token's own digest; once the reservation is mined, the
/// resource server's facilitator settles it with the token's `transferWithAuthorization`, and
/// the token asks the wallet (ERC-1271) to vouch for it. Answers x402's exact EVM payload.
async fn pay_exact(
    app: &App,
    session: &SessionRow,
    (id, token): (U256, Address),
    required: PaymentRequired,
    accepted: Requirements,
) -> Result<Paid, Error> {
    let (to, value, purpose) = asked(&required.resource.url, &accepted)?;
    let wallet = app.contracts.wallet;
    let ttl = accepted
        .max_timeout_seconds
        .clamp(10, app.settings.intent_ttl.as_secs());
    let valid_before = U256::from(app.now(true).await? + ttl);
    let nonce = authorization_nonce(id, to, value, U256::ZERO, valid_before, purpose);
    let message = TransferWithAuthorization {
        from: wallet,
        to,
        value,
        validAfter: U256::ZERO,
        validBefore: valid_before,
        nonce,
    };
    let separator = app
        .client
        .view(None, token, IFiatToken::DOMAIN_SEPARATORCall {})
        .await?;
    let digest = keccak256(
        [
            &[0x19, 0x01][..],
            separator.as_slice(),
            message.eip712_hash_struct().as_slice(),
        ]
        .concat(),
    );
    let key =
        crate::payments::custodial_key(app, session, "sign the x402 authorization itself").await?;
    let signature: Bytes = key.sign_hash_rsv(&digest).into();
    let reserve = ISessionWallet::reserveCall {
        sessionId: id,
        to,
        value,
        validAfter: U256::ZERO,
        validBefore: valid_before,
        purpose,
        signature: signature.clone(),
    };
    let signer = signer_of(session)?;
    // The wallet's rules now: a refusal signs and sends nothing.
    let reserved = app
        .client
        .view(Some(signer), wallet, reserve.clone())
        .await?
        ._0;
    if !reserved {
        return Err(Error::conflict(
            "x402_needs_approval",
            "the amount is above the session's co-sign threshold: an x402 payment cannot wait for the owner",
        ));
    }
    // Sent after the session's payments already queued: refused now if they leave too little.
    crate::payments::queue::check_room(app, session, value).await?;
    let data = reserve.abi_encode();
    let call = crate::submission::Call {
        signer,
        to: wallet,
        gas_limit: app.gas_for(signer, wallet, &data).await?,
        data: data.into(),
        value: U256::ZERO,
    };
    let (db, tx) = app.queue(&call).await?;
    app.commit(db).await?;
    let mined = app
        .wait_for(app.settings.open_wait, || async {
            let row = app.store.transaction(tx).await?;
            Ok(row.filter(|t| t.receipt_status.is_some()))
        })
        .await?;
    match mined.and_then(|t| t.receipt_status) {
        Some(1) => {}
        Some(_) => {
            return Err(Error::conflict(
                "x402_reservation_failed",
                "the reservation was mined but reverted: the session changed meanwhile",
            ))
        }
        // Not a 503: a retry would reserve (and spend) again. The queued reservation still
        // lands; unused, anyone may release it after `validBefore`.
        None => {
            return Err(Error::conflict(
                "x402_reservation_pending",
                format!("the reservation (transaction {tx}) is not mined yet; it stays reserved until {valid_before}, then can be released"),
            ))
        }
    }
    let payload = json!({
        "signature": signature,
        "authorization": {
            "from": wallet,
            "to": to,
            "value": value.to_string(),
            "validAfter": "0",
            "validBefore": valid_before.to_string(),
            "nonce": nonce,
        },
    });
    let payload = PaymentPayload {
        x402_version: VERSION,
        resource: Some(required.resource),
        accepted,
        payload,
        extensions: required.extensions,
    };
    let header = base64::engine::general_purpose::STANDARD
        .encode(serde_json::to_vec(&payload).map_err(|_| Error::Internal)?);
    tracing::info!(session = %session.id, %to, %value, "x402 exact authorization reserved");
    Ok(Paid {
        payment_signature: header,
        payment_payload: payload,
    })
}
