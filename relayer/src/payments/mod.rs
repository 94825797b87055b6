//! Sandboxes' payments: checked against the session's state now by the contracts' own rules
//! (a simulated `pay` at the latest block, in the request's handler), then handed to the
//! [`queue`] task, which checks them against the payments already queued for their session,
//! signs them with the custodial session key under the session's next intent nonce and stores
//! them with their transactions — a batch of payments per database transaction.
//!
//! Status: `queued → submitted → mined → confirmed`, or `pending_approval` (above the co-sign
//! threshold: the owner decides), `rejected`, `failed` (with the decoded revert) or `expired`.

mod budget;
pub(crate) mod queue;

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::eip712::PaymentIntent;
use bursar_bindings::receipts::IReceiptRegistry;
use bursar_bindings::wallet::ISessionWallet;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::{OneOfBuilder, Ref, Schema};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use crate::engine::random::{probe_nonce, random_bytes};
use crate::engine::submission::Call;
use crate::engine::vault;
use crate::kernel::inbox::{Accepted, IntentSigner};
use crate::kernel::json::{schema, Amount, Failure, HashOrText};
use crate::kernel::session::{not_open, parse_id};
use crate::kernel::{App, Error};
use crate::store::{OpenStatus, PaymentRow, PaymentStatus, SessionRow, Store};

/// `POST /v1/payments`: what to pay, for the relayer to sign with the custodial key — or, from
/// a sandbox that holds its own session key, the `PaymentIntent` it signed (a body with a
/// `signature`).
#[derive(Debug)]
pub enum PayBody {
    /// The relayer signs.
    Custodial(PayRequest),
    /// The sandbox signed.
    Signed(SignedIntent),
}

/// Either body, as one schema: `oneOf` the two (only a signed intent has a `signature`).
impl PartialSchema for PayBody {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(Ref::from_schema_name(PayRequest::name()))
            .item(Ref::from_schema_name(SignedIntent::name()))
            .into()
    }
}

impl ToSchema for PayBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((PayRequest::name().into(), PayRequest::schema()));
        schemas.push((SignedIntent::name().into(), SignedIntent::schema()));
        <PayRequest as ToSchema>::schemas(schemas);
        <SignedIntent as ToSchema>::schemas(schemas);
    }
}

impl<'de> Deserialize<'de> for PayBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let signed = v.get("signature").is_some();
        let parsed = if signed {
            SignedIntent::deserialize(v).map(PayBody::Signed)
        } else {
            PayRequest::deserialize(v).map(PayBody::Custodial)
        };
        parsed.map_err(serde::de::Error::custom)
    }
}

/// A `PaymentIntent` signed by the sandbox's own session key (EIP-712, the wallet's domain).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignedIntent {
    /// The payee.
    #[schema(value_type = schema::Address)]
    pub to: Address,
    /// Base units, decimal string.
    pub amount: Amount,
    /// 0x + 64 hex.
    #[schema(value_type = schema::Bytes32)]
    pub purpose: B256,
    /// Any nonce the session key has not used (decimal string).
    pub nonce: Amount,
    /// Unix seconds.
    pub deadline: u64,
    /// The session key's signature of the intent.
    #[schema(value_type = schema::Hex)]
    pub signature: alloy_primitives::Bytes,
}

/// What to pay, signed by the relayer with the custodial key.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PayRequest {
    /// The payee.
    #[schema(value_type = schema::Address)]
    pub to: Address,
    /// Base units, decimal string.
    pub amount: Amount,
    /// 0x + 64 hex, or text whose keccak-256 is the purpose.
    pub purpose: HashOrText,
}

/// A payment as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Payment)]
pub struct PaymentView {
    /// `pay_…`.
    pub id: String,
    /// Where it is.
    pub status: PaymentStatus,
    /// Its session.
    pub session_id: String,
    /// The payee.
    #[schema(value_type = schema::Address)]
    pub to: String,
    /// Base units.
    #[schema(value_type = Amount)]
    pub amount: String,
    /// The purpose hash.
    #[schema(value_type = schema::Bytes32)]
    pub purpose: String,
    /// The intent's nonce.
    #[schema(value_type = Amount)]
    pub nonce: String,
    /// The intent's deadline (unix seconds).
    pub deadline: i64,
    /// The transaction's hash once mined.
    pub transaction_hash: Option<String>,
    /// Its block.
    pub block_number: Option<i64>,
    /// The receipt registry's id of an executed payment.
    pub receipt_id: Option<String>,
    /// The wallet's pending id of a co-signed payment.
    pub pending_id: Option<String>,
    /// Why it failed: the contract error's name and arguments.
    pub error: Option<Failure>,
    /// When it was accepted (unix ms).
    pub created_at: i64,
    /// While it waits for the owner: the page where the owner approves or rejects it in their
    /// own wallet (send them this link).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_url: Option<String>,
}

impl PaymentView {
    /// The view of a stored payment.
    pub fn of(app: &App, p: PaymentRow) -> Self {
        let status = p.status();
        PaymentView {
            approval_url: (status == PaymentStatus::PendingApproval)
                .then(|| format!("{}/approve/pending/{}", app.public_url(), p.id)),
            status,
            error: Failure::stored(p.error_code.as_ref(), p.error_details.as_deref()),
            id: p.id,
            session_id: p.session_id,
            to: p.to.to_checksum(None),
            amount: p.amount.to_string(),
            purpose: p.purpose.to_string(),
            nonce: p.intent_nonce.to_string(),
            deadline: p.deadline,
            transaction_hash: p.tx_hash.map(|h| h.to_string()),
            block_number: p.block_number,
            receipt_id: p.receipt_id.map(|r| r.to_string()),
            pending_id: p.pending_id.map(|p| p.to_string()),
            created_at: p.created_at,
        }
    }
}

/// Accepts a payment from `session`'s sandbox: refused at once with the contract error a rule
/// gives, otherwise signed (unless the sandbox signed it) and queued ([`queue`]).
pub async fn pay(
    app: &App,
    session: &SessionRow,
    body: PayBody,
    request_key: Option<&str>,
) -> Result<PaymentView, Error> {
    // A retry of a request whose process died after storing the payment finds it.
    if let Some(key) = request_key {
        if let Some(p) = app.store.payment_by_request_key(key).await? {
            return Ok(PaymentView::of(app, p));
        }
    }
    if session.status != OpenStatus::Open {
        return Err(not_open(session));
    }
    let id = parse_id(&session.id)?;
    let (intent, signer) = match body {
        PayBody::Custodial(req) => {
            let key = custodial_key(app, session, "post signed intents").await?;
            let intent = PaymentIntent {
                session: id,
                to: req.to,
                amount: req.amount.0,
                purpose: req.purpose.hash,
                nonce: U256::ZERO,
                deadline: U256::from(app.now(false).await? + app.settings.intent_ttl.as_secs()),
            };
            (intent, IntentSigner::Custodial(key))
        }
        PayBody::Signed(req) => {
            let intent = PaymentIntent {
                session: id,
                to: req.to,
                amount: req.amount.0,
                purpose: req.purpose,
                nonce: req.nonce.0,
                deadline: U256::from(req.deadline),
            };
            (intent, IntentSigner::Sandbox(req.signature))
        }
    };
    let mut payment = Accepted {
        session: session.clone(),
        intent,
        signer,
        executes: false,
        sender: session.signer,
        gas: 0,
        request_key: request_key.map(str::to_owned),
    };
    // The contracts' rules now; a custodial probe uses a nonce no real intent uses (the top
    // bit set).
    let nonce = match payment.signer {
        IntentSigner::Custodial(_) => probe_nonce(),
        IntentSigner::Sandbox(_) => payment.intent.nonce,
    };
    let probe = payment.pay_call(nonce, app.contracts.wallet, app.chain_id);
    payment.executes = app
        .client
        .view(Some(payment.sender), app.contracts.wallet, probe.clone())
        .await?
        ._0;
    payment.gas = pay_gas(app, session, payment.sender, &probe.abi_encode()).await?;
    app.process
        .payments
        .push(payment)
        .await
        .map(|p| PaymentView::of(app, p))
}

/// The relayer's custodial copy of `session`'s key; when the sandbox holds its own, the
/// conflict `session_key_not_custodial`, saying what to do `instead`.
pub(crate) async fn custodial_key(
    app: &App,
    session: &SessionRow,
    instead: &str,
) -> Result<bursar_client::Key, Error> {
    app.session_key(session.session_key)
        .await
        .map_err(|e| match e {
            vault::VaultError::Unknown(_) => Error::conflict(
                "session_key_not_custodial",
                format!("this session's key is the sandbox's own: {instead}"),
            ),
            e => e.into(),
        })
}

/// The gas limit of the session's payments: estimated on its first (which costs the most: it
/// creates the session's spend and nonce slots) with a quarter on top, then reused.
async fn pay_gas(
    app: &App,
    session: &SessionRow,
    signer: Address,
    data: &[u8],
) -> Result<u64, Error> {
    if let Some(gas) = app
        .process
        .pay_gas
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&session.id)
    {
        return Ok(*gas);
    }
    let gas = app.gas_for(signer, app.contracts.wallet, data).await?;
    app.process
        .pay_gas
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(session.id.clone(), gas);
    Ok(gas)
}

/// The statuses a payment stays in until something outside the relayer happens.
pub const SETTLED: [PaymentStatus; 5] = [
    PaymentStatus::Confirmed,
    PaymentStatus::PendingApproval,
    PaymentStatus::Rejected,
    PaymentStatus::Failed,
    PaymentStatus::Expired,
];

/// Payment `id` of `session`; with `wait`, once its status is one of `until` (default:
/// [`SETTLED`]) or final, or when `wait` passes, whichever is first.
pub async fn get(
    app: &App,
    session: &SessionRow,
    id: &str,
    wait: Duration,
    until: Option<&[PaymentStatus]>,
) -> Result<PaymentView, Error> {
    let until = until.unwrap_or(&SETTLED);
    let done = |row: &PaymentRow| until.contains(&row.status()) || row.status().is_final();
    let look = || async {
        app.store
            .payment(id, Some(&session.id))
            .await?
            .ok_or(Error::NotFound)
    };
    let row = app.wait_for_payment(wait, id, look, done).await?;
    Ok(PaymentView::of(app, row))
}

/// `host`'s payments, newest first, of one status if `status` says.
pub async fn host_list(
    app: &App,
    host: &crate::hosts::Host,
    status: Option<PaymentStatus>,
    limit: Option<i64>,
) -> Result<Vec<PaymentView>, Error> {
    let rows = app
        .store
        .host_payments(&host.id, limit.unwrap_or(100).clamp(1, 1000))
        .await?;
    Ok(rows
        .into_iter()
        .filter(|p| status.is_none_or(|s| p.status() == s))
        .map(|p| PaymentView::of(app, p))
        .collect())
}

/// `session`'s payments, newest first.
pub async fn list(
    app: &App,
    session: &SessionRow,
    limit: Option<i64>,
) -> Result<Vec<PaymentView>, Error> {
    let rows = app
        .store
        .session_payments(&session.id, limit.unwrap_or(100).clamp(1, 1000))
        .await?;
    Ok(rows.into_iter().map(|p| PaymentView::of(app, p)).collect())
}

/// What the owner signs to decide a pending payment, and the values to send back with it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionToSign {
    /// The wallet's pending id.
    pub pending_id: String,
    /// Approve (true) or reject (false).
    pub approve: bool,
    /// The gateway nonce the signature uses (send it back).
    #[schema(value_type = Amount)]
    pub nonce: String,
    /// Unix seconds after which the signature is void (send it back).
    pub deadline: u64,
    /// `PendingDecision` as `eth_signTypedData_v4` takes it.
    #[schema(value_type = schema::TypedData)]
    pub typed_data: Value,
    /// The payment waiting, as the wallet holds it.
    #[schema(value_type = Object)]
    pub payment: Value,
}

/// `POST …/decision`: the owner's signed decision.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionRequest {
    /// Approve (true) or reject (false).
    pub approve: bool,
    /// From the typed data.
    pub nonce: Amount,
    /// From the typed data.
    pub deadline: u64,
    /// The owner's signature of the typed data.
    #[schema(value_type = schema::Hex)]
    pub signature: alloy_primitives::Bytes,
}

/// What sending a decision did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decided {
    /// The wallet's pending id.
    pub pending_id: String,
    /// Approved (true) or rejected (false).
    pub approve: bool,
    /// The relayer's payment, when it is one of ours.
    pub payment_id: Option<String>,
}

/// The pending payment `pending_id` of `session`, as the wallet holds it; not found unless it
/// belongs to this session and still waits.
async fn waiting(
    app: &App,
    session: &SessionRow,
    pending_id: &str,
) -> Result<(U256, Value), Error> {
    let id = crate::kernel::json::parse_amount(pending_id).map_err(|_| Error::NotFound)?;
    let p = app
        .client
        .view(
            None,
            app.contracts.wallet,
            ISessionWallet::pendingPaymentCall { pendingId: id },
        )
        .await?;
    if crate::kernel::json::session_id_text(p._0) != session.id {
        return Err(Error::NotFound);
    }
    if p._6 != bursar_bindings::wallet::PendingStatus::Pending as u8 {
        return Err(Error::conflict(
            "pending_resolved",
            format!("pending payment {id} was already decided"),
        ));
    }
    let payment = serde_json::json!({
        "to": p._1.to_checksum(None),
        "amount": p._2.to_string(),
        "purpose": p._3.to_string(),
        "expiresAt": p._5,
    });
    Ok((id, payment))
}

/// The typed data the owner signs to approve (or reject) pending payment `pending_id`.
pub async fn decision_to_sign(
    app: &App,
    session: &SessionRow,
    pending_id: &str,
    approve: bool,
) -> Result<DecisionToSign, Error> {
    let (id, payment) = waiting(app, session, pending_id).await?;
    let nonce = U256::from_be_bytes(random_bytes::<32>()) >> 1;
    let deadline = app.now(true).await? + app.settings.prepare_ttl.as_secs();
    let decision = bursar_bindings::eip712::PendingDecision {
        pendingId: id,
        approve,
        nonce,
        deadline: U256::from(deadline),
    };
    Ok(DecisionToSign {
        pending_id: id.to_string(),
        approve,
        nonce: nonce.to_string(),
        deadline,
        typed_data: bursar_client::sign::pending_decision_typed_data(
            &decision,
            app.chain_id,
            app.contracts.gateway,
        ),
        payment,
    })
}

/// Sends the owner's signed decision on pending payment `pending_id` through the gateway,
/// after the gateway's own checks at the latest block.
pub async fn decide(
    app: &App,
    session: &SessionRow,
    pending_id: &str,
    req: DecisionRequest,
) -> Result<Decided, Error> {
    let (id, _) = waiting(app, session, pending_id).await?;
    let call = bursar_bindings::gateway::ISessionGateway::decidePendingWithSigCall {
        pendingId: id,
        approve: req.approve,
        nonce: req.nonce.0,
        deadline: U256::from(req.deadline),
        signature: req.signature,
    };
    let signer = session.signer;
    let data = call.abi_encode();
    let gas_limit = app.gas_for(signer, app.contracts.gateway, &data).await?;
    let ours = app
        .store
        .payment_by_pending(&session.id, &id.to_string())
        .await?;
    let call = Call {
        signer,
        to: app.contracts.gateway,
        data: data.into(),
        value: U256::ZERO,
        gas_limit,
    };
    let (mut db, tx_id) = app.queue(&call).await?;
    if let Some(p) = &ours {
        // Dropping `db` unsends the transaction: one decision goes out, however often posted.
        if !Store::claim_payment_decision(&mut db, &p.id, tx_id).await? {
            return Err(Error::conflict(
                "decision_pending",
                format!("a decision on pending payment {id} was sent and is not mined yet"),
            ));
        }
    }
    app.commit(db).await?;
    tracing::info!(session = %session.id, pending = %id, approve = req.approve, "decision queued");
    Ok(Decided {
        pending_id: id.to_string(),
        approve: req.approve,
        payment_id: ours.map(|p| p.id),
    })
}

/// Payment `id` of `session` and the receipt it was executed with (as `ReceiptRecorded`
/// announced it, read from its transaction): refused, naming `field`, when the session has no
/// such payment or it has no receipt (not executed) — it is what `what` needs.
pub async fn executed(
    app: &App,
    session: &SessionRow,
    id: &str,
    field: &str,
    what: &str,
) -> Result<(PaymentRow, IReceiptRegistry::ReceiptRecorded), Error> {
    let payment = app
        .store
        .payment(id, Some(&session.id))
        .await?
        .ok_or_else(|| Error::invalid(field, format!("this session has no payment {id}")))?;
    let (Some(receipt_id), Some(hash)) = (payment.receipt_id, payment.tx_hash) else {
        return Err(Error::conflict(
            "payment_not_executed",
            format!("payment {id} has no receipt: only an executed payment {what}"),
        ));
    };
    let mined = app.client.receipt(hash).await?.ok_or(Error::Unavailable)?;
    let receipt = mined
        .events::<IReceiptRegistry::ReceiptRecorded>(app.contracts.receipts)
        .into_iter()
        .find(|e| e.receiptId == receipt_id)
        .ok_or(Error::Internal)?;
    Ok((payment, receipt))
}
