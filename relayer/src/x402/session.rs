//! Bursar's `bursar-session` scheme, the facilitator's side: the payload is a `PaymentIntent`
//! signed by the session key (payee = `payTo`, the amount, purpose = [`purpose`] of the
//! resource and the requirements, a nonce, a deadline), and settling it is the wallet's `pay`,
//! so every rule of the session (cap, period budget, allowlist, lease, expiry, co-signing)
//! holds for it as for any payment.

use alloy_primitives::{Address, Bytes, B256, U256};
use bursar_bindings::eip712::PaymentIntent;
use bursar_bindings::wallet::ISessionWallet;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::types::{network, purpose, refuse, FacilitatorRequest, Refusal, SettleResponse, SCHEME};
use crate::kernel::json::{session_id_text, Amount};
use crate::kernel::App;
use crate::kernel::Error;
use crate::payments::{self, PayBody, SignedIntent, SETTLED};
use crate::store::{PaymentStatus, SessionRow};
use crate::x402::once::{Settlement, Turn};

/// The `bursar-session` payload: a `PaymentIntent` of the session, signed by its session key.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionPayment {
    /// The session (0x + 64 hex).
    pub session_id: String,
    /// The payee: `payTo`.
    pub to: Address,
    /// Base units, decimal: `amount`.
    pub amount: Amount,
    /// [`purpose`] of the resource and the requirements.
    pub purpose: B256,
    /// The intent's nonce, decimal.
    pub nonce: Amount,
    /// Unix seconds.
    pub deadline: u64,
    /// The session key's EIP-712 signature of the intent (the wallet's domain).
    pub signature: Bytes,
}

/// A payload checked against its requirements, with the session and the intent it carries.
pub(super) struct Checked {
    session: U256,
    intent: PaymentIntent,
    signature: Bytes,
    pub(super) payer: Address,
}

/// Checks `req` without touching the chain: versions, scheme, network, the chosen
/// requirements equal the server's, the intent pays exactly them for this resource.
fn check_shape(app: &App, req: &FacilitatorRequest) -> Result<(SessionPayment, U256), Refusal> {
    let p = &req.payment_payload;
    let r = &req.payment_requirements;
    if r.network != network(app.chain_id) || p.accepted.network != r.network {
        return Err(refuse(
            "invalid_network",
            format!("this facilitator settles on {}", network(app.chain_id)),
        ));
    }
    if p.accepted != *r {
        return Err(refuse(
            "invalid_payment_requirements",
            "the payload accepted other requirements than the server's",
        ));
    }
    let payment: SessionPayment = serde_json::from_value(p.payload.clone())
        .map_err(|e| refuse("invalid_payload", format!("not a {SCHEME} payload: {e}")))?;
    let url = p
        .resource
        .as_ref()
        .map(|r| r.url.as_str())
        .ok_or_else(|| refuse("invalid_payload", "the payload names no resource"))?;
    let expected = purpose(url, r).ok_or_else(|| {
        refuse(
            "invalid_payment_requirements",
            "asset, payTo or amount does not parse",
        )
    })?;
    if payment.purpose != expected {
        return Err(refuse(
            "invalid_bursar_session_purpose",
            "the intent's purpose is not this resource's and requirements'",
        ));
    }
    if r.pay_to.parse::<Address>().ok() != Some(payment.to) {
        return Err(refuse(
            "invalid_bursar_session_recipient_mismatch",
            "the intent pays another payee than payTo",
        ));
    }
    if U256::from_str_radix(&r.amount, 10).ok() != Some(payment.amount.0) {
        return Err(refuse(
            "invalid_bursar_session_amount_mismatch",
            "the intent pays another amount than required",
        ));
    }
    let session = crate::kernel::json::parse_session_id(&payment.session_id)
        .ok_or_else(|| refuse("invalid_payload", "sessionId is not a session id"))?;
    Ok((payment, session))
}

/// Checks `req` against the chain at the latest block: the session's token is the asset, the
/// deadline leaves time to settle, and the wallet's `pay` of it (signature, nonce, every rule of
/// the session) would execute now.
pub(super) async fn check(
    app: &App,
    req: &FacilitatorRequest,
) -> Result<Result<Checked, Refusal>, Error> {
    let (payment, session) = match check_shape(app, req) {
        Ok(ok) => ok,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let wallet = app.contracts.wallet;
    let terms = app
        .client
        .view(
            None,
            wallet,
            ISessionWallet::sessionTermsCall { sessionId: session },
        )
        .await?;
    if terms._0.is_zero() {
        return Ok(Err(refuse(
            "invalid_bursar_session_unknown",
            "no such session",
        )));
    }
    if req.payment_requirements.asset.parse::<Address>().ok() != Some(terms._3) {
        return Ok(Err(refuse(
            "invalid_bursar_session_asset_mismatch",
            "the session holds another token than the asset",
        )));
    }
    let now = app.now(true).await?;
    if payment.deadline < now + 6 {
        return Ok(Err(refuse(
            "invalid_bursar_session_deadline",
            "the intent's deadline leaves no time to settle",
        )));
    }
    let intent = PaymentIntent {
        session,
        to: payment.to,
        amount: payment.amount.0,
        purpose: payment.purpose,
        nonce: payment.nonce.0,
        deadline: U256::from(payment.deadline),
    };
    let call = intent.clone().pay_call(payment.signature.clone());
    let from = app.engine.signers()[0];
    match app.client.view(Some(from), wallet, call).await {
        Ok(r) if r._0 => {}
        Ok(_) => {
            return Ok(Err(refuse(
                "invalid_bursar_session_needs_approval",
                "above the session's co-sign threshold: the owner would have to approve it",
            )))
        }
        Err(e) => {
            return match Error::from(e) {
                Error::Contract(c) => Ok(Err((
                    c.name.clone(),
                    format!("refused by the wallet: {}", c.name),
                ))),
                other => Err(other),
            }
        }
    }
    Ok(Ok(Checked {
        session,
        intent,
        signature: payment.signature,
        payer: terms._1,
    }))
}

/// Settles a `bursar-session` payment: verified again, then paid through the transaction engine (as the
/// session's payments are, by its pinned signer); answered once the payment settled. A payload
/// settled before is refused, never paid or reported paid twice ([`super::once`]).
pub(super) async fn settle(app: &App, req: &FacilitatorRequest) -> Result<SettleResponse, Error> {
    let failed = |refusal, payer| Ok(SettleResponse::failed(app, refusal, payer));
    let c = match check(app, req).await? {
        Ok(c) => c,
        Err(refusal) => return failed(refusal, None),
    };
    let payer = Some(c.payer);
    let id = session_id_text(c.session);
    let Some(row) = app.store.session(&id, None).await? else {
        let why = refuse(
            "invalid_bursar_session_unknown",
            "this relayer does not keep that session",
        );
        return failed(why, payer);
    };
    let key = request_key(&id, c.intent.nonce);
    let request_hash = alloy_primitives::hex::encode(Sha256::digest(&c.signature));
    let settlement = Settlement {
        key: &key,
        request_hash: &request_hash,
        used: "invalid_bursar_session_already_settled",
        payer: c.payer,
    };
    let payment = match settlement.take(app).await? {
        Err(answer) => return Ok(answer),
        Ok(Turn::Wait(payment)) => payment,
        Ok(Turn::Send) => match send(app, &row, &key, &c, &settlement).await {
            Ok(Ok(payment)) => payment,
            Ok(Err(refusal)) => {
                settlement.forget(app).await?;
                return failed(refusal, payer);
            }
            Err(e) => {
                settlement.forget(app).await?;
                return Err(e);
            }
        },
    };
    let settled = match payments::get(app, &row, &payment, app.settings.open_wait, None).await {
        Ok(settled) => settled,
        Err(e) => {
            app.store
                .leave_settlement(&key, &app.process.instance)
                .await?;
            return Err(e);
        }
    };
    let status = settled.status.as_str();
    tracing::info!(session = %id, payment = %settled.id, status, "x402 payment settled");
    let answer = match (settled.status, settled.transaction_hash) {
        (PaymentStatus::Confirmed | PaymentStatus::Mined, Some(hash)) => {
            SettleResponse::settled(app, c.payer, hash)
        }
        (status, _) if !status.is_final() && !SETTLED.contains(&status) => {
            let why = refuse(
                "settlement_pending",
                format!("the payment is {}: settle again to hear", status.as_str()),
            );
            SettleResponse::failed(app, why, payer)
        }
        _ => {
            let reason = settled
                .error
                .map_or_else(|| format!("payment_{status}"), |e| e.code);
            SettleResponse::failed(app, (reason, format!("the payment is {status}")), payer)
        }
    };
    settlement.answer(app, answer).await
}

/// Pays `c` from session `row` under idempotency key `key`, recorded as `settlement`'s: the
/// relayer's payment id, or the wallet's refusal.
async fn send(
    app: &App,
    row: &SessionRow,
    key: &str,
    c: &Checked,
    settlement: &Settlement<'_>,
) -> Result<Result<String, Refusal>, Error> {
    let body = PayBody::Signed(SignedIntent {
        to: c.intent.to,
        amount: Amount(c.intent.amount),
        purpose: c.intent.purpose,
        nonce: Amount(c.intent.nonce),
        deadline: c.intent.deadline.to(),
        signature: c.signature.clone(),
    });
    let queued = match payments::pay(app, row, body, Some(key)).await {
        Ok(p) => p,
        Err(Error::Contract(e)) => {
            return Ok(Err((e.name.clone(), "refused by the wallet".into())))
        }
        Err(e) => return Err(e),
    };
    // Stored already under `key`: a taker after a crash here finds it by `pay`'s key.
    let mut db = app.store.begin().await?;
    settlement.sent(&mut db, &queued.id).await?;
    db.commit().await.map_err(crate::store::StoreError::from)?;
    Ok(Ok(queued.id))
}

/// The idempotency key a settled x402 payment is stored under: one per session and nonce.
fn request_key(session: &str, nonce: U256) -> String {
    alloy_primitives::hex::encode(Sha256::digest(format!("x402\0{session}\0{nonce}")))
}
