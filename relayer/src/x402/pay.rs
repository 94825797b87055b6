//! The agent's side: `POST /v1/x402/pay`.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::SolStruct;
use bursar_bindings::eip712::{PaymentIntent, TransferWithAuthorization, SESSION_WALLET_DOMAIN};
use bursar_bindings::wallet::{authorization_nonce, ISessionWallet};
use serde::Deserialize;
use serde_json::{json, Value};

use super::exact::erc7710;
use super::payment::{asked, next_intent_nonce, paid, reserve, token_digest, Paid};
use super::session::SessionPayment;
use super::types::{decode_required, network, PaymentRequired, Requirements, EXACT, SCHEME};
use crate::kernel::json::Amount;
use crate::kernel::session::parse_id;
use crate::kernel::App;
use crate::kernel::Error;
use crate::store::SessionRow;

/// `POST /v1/x402/pay`: a 402 answer's payment requirements.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = X402PayRequest)]
pub struct PayRequest {
    /// The `PAYMENT-REQUIRED` header's value (base64 JSON), or the object itself.
    #[schema(value_type = Object)]
    pub payment_required: Value,
    /// The ERC-8004 agent (decimal id) meant to be paid: only options paying its
    /// `agentWallet` are paid. A 402 that names an agent (the `erc8004-agent` extension) is
    /// held to that agent's wallet anyway.
    #[serde(default)]
    pub agent_id: Option<Amount>,
}

/// How a payment of one of a 402's options is made, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    /// `bursar-session`: a `PaymentIntent` the facilitator pays with the wallet's `pay`.
    Session,
    /// `batch-settlement`: a voucher on a channel the session deposited into (no
    /// transaction per call; a deposit, reserved first, every ten calls or so).
    Channel,
    /// `exact` through ERC-7710: the same intent, redeemed through the gateway (one
    /// transaction, the facilitator's).
    Delegation,
    /// `exact` through EIP-3009: an authorization the wallet reserves first (two
    /// transactions: the reservation, then the facilitator's transfer).
    Reservation,
}

impl Method {
    /// How `r` would be paid, if this relayer can pay it at all.
    fn of(r: &Requirements) -> Option<Method> {
        let transfer = r
            .extra
            .as_ref()
            .and_then(|e| e.get("assetTransferMethod"))
            .and_then(Value::as_str);
        match (r.scheme.as_str(), transfer) {
            (SCHEME, _) => Some(Method::Session),
            (super::BATCH, None | Some("eip3009")) => Some(Method::Channel),
            (EXACT, Some(erc7710::METHOD)) => Some(Method::Delegation),
            (EXACT, None | Some("eip3009")) => Some(Method::Reservation),
            _ => None,
        }
    }
}

/// Pays a 402 answer's requirements from `session` by the cheapest method it offers on this
/// chain in the session's token, after the contracts' rules allowed it now (a refusal is the
/// wallet's error, and nothing is signed or sent).
pub async fn pay(app: &App, session: &SessionRow, req: PayRequest) -> Result<Paid, Error> {
    let mut required = decode_required(req.payment_required)?;
    super::agent::paying_the_agent(app, &mut required, req.agent_id.map(|a| a.0)).await?;
    let id = parse_id(&session.id)?;
    let token = crate::kernel::session::terms_of(session)?.token;
    let ours = network(app.chain_id);
    let chosen = required
        .accepts
        .iter()
        .filter(|r| r.network == ours && r.asset.parse::<Address>().ok() == Some(token))
        .filter_map(|r| Some((Method::of(r)?, r)))
        .min_by_key(|(method, _)| *method as u8);
    let Some((method, accepted)) = chosen else {
        let offered: Vec<String> = required
            .accepts
            .iter()
            .map(|r| format!("{} on {} in {}", r.scheme, r.network, r.asset))
            .collect();
        return Err(Error::conflict(
            "x402_no_bursar_option",
            format!("the resource accepts neither {SCHEME}, {} (EIP-3009 deposits) nor {EXACT} (EIP-3009 or ERC-7710) on {ours} in this session's token {token} (it offers: {})", super::BATCH, offered.join("; ")),
        ));
    };
    let accepted = accepted.clone();
    let payload = match method {
        Method::Reservation => {
            return pay_exact(app, session, (id, token), required, accepted).await
        }
        Method::Channel => {
            return super::channel::pay_channel(app, session, (id, token), required, accepted).await
        }
        Method::Session => {
            let (intent, signature) = signed_intent(app, session, id, &required, &accepted).await?;
            let payment = SessionPayment {
                session_id: session.id.clone(),
                to: intent.to,
                amount: Amount(intent.amount),
                purpose: intent.purpose,
                nonce: Amount(intent.nonce),
                deadline: intent.deadline.to(),
                signature,
            };
            serde_json::to_value(&payment).map_err(|_| Error::Internal)?
        }
        Method::Delegation => {
            let (intent, signature) = signed_intent(app, session, id, &required, &accepted).await?;
            let payload = erc7710::Payload {
                delegation_manager: app.contracts.gateway,
                permission_context: intent.permission_context(&signature),
                delegator: app.contracts.wallet,
            };
            serde_json::to_value(&payload).map_err(|_| Error::Internal)?
        }
    };
    let paid = paid(required, accepted, payload)?;
    tracing::info!(session = %session.id, method = ?method, "x402 payment signed");
    Ok(paid)
}

/// A `PaymentIntent` of `accepted` from `session`, signed by its custodial key under the
/// session's next intent nonce, once the wallet's `pay` of it would execute now (simulated
/// with a nonce no real intent uses: a refusal signs nothing).
async fn signed_intent(
    app: &App,
    session: &SessionRow,
    id: U256,
    required: &PaymentRequired,
    accepted: &Requirements,
) -> Result<(PaymentIntent, Bytes), Error> {
    let (to, amount, purpose) = asked(&required.resource.url, accepted)?;
    let key = crate::payments::custodial_key(app, session, "sign the x402 intent itself").await?;
    let ttl = accepted
        .max_timeout_seconds
        .clamp(10, app.settings.intent_ttl.as_secs());
    let mut intent = PaymentIntent {
        session: id,
        to,
        amount,
        purpose,
        nonce: crate::engine::random::probe_nonce(),
        deadline: U256::from(app.now(true).await? + ttl),
    };
    let domain = SESSION_WALLET_DOMAIN.at(app.chain_id, app.contracts.wallet);
    let sign = |intent: &PaymentIntent| -> Bytes {
        key.sign_hash_rsv(&intent.eip712_signing_hash(&domain))
            .into()
    };
    let probe = intent.clone().pay_call(sign(&intent));
    let executes = app
        .client
        .view(Some(session.signer), app.contracts.wallet, probe)
        .await?
        ._0;
    if !executes {
        return Err(Error::conflict(
            "x402_needs_approval",
            "the amount is above the session's co-sign threshold: an x402 payment cannot wait for the owner",
        ));
    }
    intent.nonce = U256::from(next_intent_nonce(app, session).await?);
    let signature = sign(&intent);
    Ok((intent, signature))
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
    // The wallet derives the authorization's nonce from its terms: a `validAfter` of its own
    // (the session's next intent nonce: long past as a time) keeps two payments of one
    // resource within the same second apart.
    let intent_nonce = next_intent_nonce(app, session).await?;
    let valid_after = U256::from(intent_nonce);
    let nonce = authorization_nonce(id, to, value, valid_after, valid_before, purpose);
    let message = TransferWithAuthorization {
        from: wallet,
        to,
        value,
        validAfter: valid_after,
        validBefore: valid_before,
        nonce,
    };
    let digest = token_digest(app, token, message.eip712_hash_struct()).await?;
    let key =
        crate::payments::custodial_key(app, session, "sign the x402 authorization itself").await?;
    let signature: Bytes = key.sign_hash_rsv(&digest).into();
    let call = ISessionWallet::reserveCall {
        sessionId: id,
        to,
        value,
        validAfter: valid_after,
        validBefore: valid_before,
        purpose,
        signature: signature.clone(),
    };
    let reserved = |r: &ISessionWallet::reserveReturn| r._0;
    reserve(
        app,
        session,
        call,
        reserved,
        (value, intent_nonce),
        valid_before,
    )
    .await?;
    let payload = json!({
        "signature": signature,
        "authorization": {
            "from": wallet,
            "to": to,
            "value": value.to_string(),
            "validAfter": valid_after.to_string(),
            "validBefore": valid_before.to_string(),
            "nonce": nonce,
        },
    });
    let paid = paid(required, accepted, payload)?;
    tracing::info!(session = %session.id, %to, %value, "x402 exact authorization reserved");
    Ok(paid)
}
