//! x402 (v2): agents pay HTTP 402 APIs from their sessions, and the relayer is the facilitator
//! that verifies and settles those payments.
//!
//! Bursar pays under its own scheme, `bursar-session`, when offered: the payment payload is a
//! `PaymentIntent` signed by the session key (payee = `payTo`, the amount, purpose =
//! [`purpose`] of the resource and the requirements, a nonce, a deadline) and settling it is
//! the wallet's `pay`, so every rule of the session (cap, period budget, allowlist, lease,
//! expiry, co-signing) holds for it as for any payment. Otherwise it pays x402's `exact`
//! ([`pay_exact`]): the session wallet is the payer of an EIP-3009 authorization it reserved
//! under the same rules, and vouches for it (ERC-1271) when the token asks.
//!
//! * Agent side: [`pay`] (`POST /v1/x402/pay`, capability token) takes a 402 answer's
//!   `PAYMENT-REQUIRED` value and answers the `PAYMENT-SIGNATURE` value to retry with, after the
//!   contracts' rules allowed the payment now (nothing is signed otherwise).
//! * Facilitator side: [`supported`], [`verify`] (the signature and every rule, simulated at
//!   the latest block) and [`settle`] (submitted through the transaction engine, answered once
//!   mined), with x402's bodies (`GET /x402/supported`, `POST /x402/verify`,
//!   `POST /x402/settle`).

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::SolCall;
use alloy_sol_types::{SolStruct, SolValue};
use base64::Engine as _;
use bursar_bindings::eip712::{PaymentIntent, TransferWithAuthorization, SESSION_WALLET_DOMAIN};
use bursar_bindings::evm::IFiatToken;
use bursar_bindings::wallet::{authorization_nonce, ISessionWallet};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::kernel::json::{session_id_text, Amount};
use crate::kernel::session::{parse_id, signer_of};
use crate::kernel::App;
use crate::kernel::Error;
use crate::payments::{self, PayBody, SignedIntent};
use crate::store::{SessionRow, Store};

/// Bursar's x402 scheme.
pub const SCHEME: &str = "bursar-session";

/// x402's `exact` scheme, paid from a session through a reservation ([`pay_exact`]).
pub const EXACT: &str = "exact";

/// The x402 version spoken.
pub const VERSION: u32 = 2;

/// What a resource asks to be paid: one of a 402's `accepts`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirements {
    /// `bursar-session` for Bursar.
    pub scheme: String,
    /// CAIP-2: `eip155:<chain id>`.
    pub network: String,
    /// Base units, decimal.
    pub amount: String,
    /// The token.
    pub asset: String,
    /// The payee.
    pub pay_to: String,
    /// How long a payment for it stays valid.
    pub max_timeout_seconds: u64,
    /// Scheme-specific.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// The resource paid for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URL.
    pub url: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A 402 answer's `PAYMENT-REQUIRED`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequired {
    /// 2.
    pub x402_version: u32,
    /// Why the last attempt was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What is paid for.
    pub resource: Resource,
    /// The ways it may be paid.
    pub accepts: Vec<Requirements>,
    /// Extensions, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// A `PAYMENT-SIGNATURE`: the requirements chosen and the scheme's payload.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload {
    /// 2.
    pub x402_version: u32,
    /// What is paid for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Resource>,
    /// The requirements chosen, as offered.
    pub accepted: Requirements,
    /// For `bursar-session`: a [`SessionPayment`].
    pub payload: Value,
    /// Extensions, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

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

/// `POST /x402/verify` and `/x402/settle`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FacilitatorRequest {
    /// 2.
    #[serde(default)]
    pub x402_version: Option<u32>,
    /// What the client sent.
    pub payment_payload: PaymentPayload,
    /// What the resource server asks.
    pub payment_requirements: Requirements,
}

/// What `verify` answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    /// Whether settling it would pay.
    pub is_valid: bool,
    /// Why not: a stable code (a contract error's name when the wallet refuses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Why not, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_message: Option<String>,
    /// The session key that signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

/// What `settle` answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    /// Whether the payment executed on chain.
    pub success: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// Why not, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The session key that signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// The transaction's hash ("" when it did not execute).
    pub transaction: String,
    /// CAIP-2.
    pub network: String,
}

/// The chain as CAIP-2.
pub fn network(chain_id: u64) -> String {
    format!("eip155:{chain_id}")
}

/// A payment's purpose: keccak-256 of the ABI encoding of (resource URL, scheme, network,
/// asset, payTo, amount, maxTimeoutSeconds), so that the receipt on chain names what was bought
/// and on which terms. `None` when an address or the amount does not parse.
pub fn purpose(url: &str, r: &Requirements) -> Option<B256> {
    let asset: Address = r.asset.parse().ok()?;
    let pay_to: Address = r.pay_to.parse().ok()?;
    let amount = U256::from_str_radix(&r.amount, 10).ok()?;
    let encoded = (
        url.to_owned(),
        r.scheme.clone(),
        r.network.clone(),
        asset,
        pay_to,
        amount,
        U256::from(r.max_timeout_seconds),
    )
        .abi_encode_params();
    Some(keccak256(encoded))
}

/// `GET /x402/supported`.
pub fn supported(app: &App) -> Value {
    let signers: Vec<String> = app.engine.signers().iter().map(|a| a.to_string()).collect();
    json!({
        "kinds": [{
            "x402Version": VERSION,
            "scheme": SCHEME,
            "network": network(app.chain_id),
            "extra": { "wallet": app.contracts.wallet.to_string() },
        }],
        "extensions": [],
        "signers": { "eip155:*": signers },
    })
}

/// A refusal: (reason, message).
type Refusal = (String, String);

fn refuse(reason: &str, message: impl Into<String>) -> Refusal {
    (reason.to_owned(), message.into())
}

/// A payload checked against its requirements, with the session and the intent it carries.
struct Checked {
    session: U256,
    intent: PaymentIntent,
    signature: Bytes,
    payer: Address,
}

/// Checks `req` without touching the chain: versions, scheme, network, the chosen
/// requirements equal the server's, the intent pays exactly them for this resource.
fn check_shape(app: &App, req: &FacilitatorRequest) -> Result<(SessionPayment, U256), Refusal> {
    let p = &req.payment_payload;
    let r = &req.payment_requirements;
    if r.scheme != SCHEME || p.accepted.scheme != SCHEME {
        return Err(refuse(
            "unsupported_scheme",
            format!("this facilitator settles {SCHEME}"),
        ));
    }
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
async fn check(app: &App, req: &FacilitatorRequest) -> Result<Result<Checked, Refusal>, Error> {
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

/// A facilitator request from its JSON: an x402 version other than 2 (whose bodies have another
/// shape) is refused as x402 refuses it (`invalid_x402_version`), not as a malformed body.
fn facilitator_request(body: Value) -> Result<Result<FacilitatorRequest, Refusal>, Error> {
    let version = |v: Option<&Value>| v.and_then(|v| v.get("x402Version")).cloned();
    let versions = [version(Some(&body)), version(body.get("paymentPayload"))];
    if versions
        .iter()
        .flatten()
        .any(|v| v.as_u64() != Some(VERSION.into()))
    {
        return Ok(Err(refuse(
            "invalid_x402_version",
            "this facilitator speaks x402 version 2",
        )));
    }
    serde_path_to_error::deserialize(body).map(Ok).map_err(|e| {
        let path = e.path().to_string();
        Error::Invalid {
            message: format!("invalid JSON body at {path}: {}", e.into_inner()),
            details: json!({ "field": path }),
        }
    })
}

/// `POST /x402/verify`.
pub async fn verify(app: &App, body: Value) -> Result<VerifyResponse, Error> {
    let refused = |(reason, message): Refusal| VerifyResponse {
        is_valid: false,
        invalid_reason: Some(reason),
        invalid_message: Some(message),
        payer: None,
    };
    let req = match facilitator_request(body)? {
        Ok(req) => req,
        Err(refusal) => return Ok(refused(refusal)),
    };
    Ok(match check(app, &req).await? {
        Ok(c) => VerifyResponse {
            is_valid: true,
            invalid_reason: None,
            invalid_message: None,
            payer: Some(c.payer.to_string()),
        },
        Err(refusal) => refused(refusal),
    })
}

/// `POST /x402/settle`: verified again, then paid through the transaction engine (as the
/// session's payments are, by its pinned signer); answered once the payment settled. A payload
/// settled before is refused, never paid or reported paid twice.
pub async fn settle(app: &App, body: Value) -> Result<SettleResponse, Error> {
    let network = network(app.chain_id);
    let failed = |(reason, message): Refusal, payer: Option<String>| SettleResponse {
        success: false,
        error_reason: Some(reason),
        error_message: Some(message),
        payer,
        transaction: String::new(),
        network: network.clone(),
    };
    let req = match facilitator_request(body)? {
        Ok(req) => req,
        Err(refusal) => return Ok(failed(refusal, None)),
    };
    let c = match check(app, &req).await? {
        Ok(c) => c,
        Err(refusal) => return Ok(failed(refusal, None)),
    };
    let payer = Some(c.payer.to_string());
    let id = session_id_text(c.session);
    let Some(row) = app.store.session(&id, None).await? else {
        let why = refuse(
            "invalid_bursar_session_unknown",
            "this relayer does not keep that session",
        );
        return Ok(failed(why, payer));
    };
    let key = request_key(&id, c.intent.nonce);
    if app.store.payment_by_request_key(&key).await?.is_some() {
        let why = refuse(
            "invalid_bursar_session_already_settled",
            "this payment was settled before",
        );
        return Ok(failed(why, payer));
    }
    let body = PayBody::Signed(SignedIntent {
        to: c.intent.to,
        amount: Amount(c.intent.amount),
        purpose: c.intent.purpose,
        nonce: Amount(c.intent.nonce),
        deadline: c.intent.deadline.to(),
        signature: c.signature,
    });
    let queued = match payments::pay(app, &row, body, Some(&key)).await {
        Ok(p) => p,
        Err(Error::Contract(e)) => {
            return Ok(failed(
                (e.name.clone(), "refused by the wallet".into()),
                payer,
            ))
        }
        Err(e) => return Err(e),
    };
    let wait = app.settings.open_wait;
    let settled = payments::get(app, &row, &queued.id, wait, None).await?;
    tracing::info!(session = %id, payment = %settled.id, status = settled.status, "x402 payment settled");
    Ok(match (settled.status, settled.transaction_hash) {
        ("confirmed" | "mined", Some(hash)) => SettleResponse {
            success: true,
            error_reason: None,
            error_message: None,
            payer,
            transaction: hash,
            network,
        },
        (status, _) => {
            let reason = settled
                .error
                .as_ref()
                .and_then(|e| e["code"].as_str())
                .map_or_else(|| format!("payment_{status}"), str::to_owned);
            failed((reason, format!("the payment is {status}")), payer)
        }
    })
}

/// The idempotency key a settled x402 payment is stored under: one per session and nonce.
fn request_key(session: &str, nonce: U256) -> String {
    alloy_primitives::hex::encode(Sha256::digest(format!("x402\0{session}\0{nonce}")))
}

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

/// A `PAYMENT-REQUIRED` value: base64 JSON, or the object.
fn decode_required(value: Value) -> Result<PaymentRequired, Error> {
    let field = "paymentRequired";
    let object = match value {
        Value::String(text) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|_| Error::invalid(field, "not base64"))?;
            serde_json::from_slice(&bytes)
                .map_err(|e| Error::invalid(field, format!("not JSON: {e}")))?
        }
        object => object,
    };
    let required: PaymentRequired = serde_json::from_value(object)
        .map_err(|e| Error::invalid(field, format!("not an x402 PaymentRequired: {e}")))?;
    if required.x402_version != VERSION {
        return Err(Error::invalid(field, "x402Version must be 2"));
    }
    Ok(required)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirements() -> Requirements {
        Requirements {
            scheme: SCHEME.into(),
            network: "eip155:412346".into(),
            amount: "5000000".into(),
            asset: format!("{:#x}", Address::repeat_byte(7)),
            pay_to: format!("{:#x}", Address::repeat_byte(0xa1)),
            max_timeout_seconds: 60,
            extra: None,
        }
    }

    #[test]
    fn the_purpose_binds_the_resource_and_every_term() {
        let r = requirements();
        let p = purpose("https://api.example/data", &r).unwrap();
        assert_ne!(p, purpose("https://api.example/other", &r).unwrap());
        for changed in [
            Requirements {
                amount: "5000001".into(),
                ..r.clone()
            },
            Requirements {
                pay_to: format!("{:#x}", Address::repeat_byte(0xb2)),
                ..r.clone()
            },
            Requirements {
                network: "eip155:1".into(),
                ..r.clone()
            },
            Requirements {
                max_timeout_seconds: 61,
                ..r.clone()
            },
        ] {
            assert_ne!(p, purpose("https://api.example/data", &changed).unwrap());
        }
        // Addresses in any case are the same address.
        let upper = Requirements {
            pay_to: r.pay_to.to_uppercase().replace("0X", "0x"),
            ..r.clone()
        };
        assert_eq!(p, purpose("https://api.example/data", &upper).unwrap());
        assert!(purpose(
            "u",
            &Requirements {
                amount: "-1".into(),
                ..r
            }
        )
        .is_none());
    }

    #[test]
    fn payment_required_is_read_from_the_header_or_the_object() {
        let required = json!({ "x402Version": 2, "resource": { "url": "https://api.example/data" }, "accepts": [requirements()] });
        let header = base64::engine::general_purpose::STANDARD.encode(required.to_string());
        assert_eq!(
            decode_required(Value::String(header)).unwrap().accepts[0],
            requirements()
        );
        assert_eq!(
            decode_required(required.clone()).unwrap().resource.url,
            "https://api.example/data"
        );
        let mut v1 = required;
        v1["x402Version"] = json!(1);
        assert_eq!(decode_required(v1).unwrap_err().code(), "invalid_request");
        assert_eq!(
            decode_required(json!("%%%")).unwrap_err().code(),
            "invalid_request"
        );
    }
}
