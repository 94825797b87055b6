//! Sandboxes' provenance records: what an agent produced, from which inputs, on which runtime
//! under which policy — signed by the session key, checked by the registry's rules at the
//! latest block, queued with the engine.

use std::time::Duration;

use alloy_primitives::U256;
use alloy_sol_types::{SolCall, SolStruct};
use bursar_bindings::eip712::{ProvenanceRecord, RECEIPT_REGISTRY_DOMAIN};
use bursar_bindings::receipts::{receipt_commitment, IReceiptRegistry};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::engine::random::random_bytes;
use crate::engine::submission::Call;
use crate::kernel::json::{Amount, Failure, HashOrText};
use crate::kernel::session::{not_open, parse_id};
use crate::kernel::App;
use crate::kernel::Error;
use crate::store::{
    now_ms, OpenStatus, ProvenanceOutcome, ProvenanceRow, SessionRow, Store, TxStatus,
};

/// The registry refuses more parents than this.
const MAX_PARENTS: usize = 16;

/// `POST /v1/provenance`: each hash as 0x + 64 hex, or text whose keccak-256 is recorded.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordRequest {
    /// The artifact produced.
    pub artifact: HashOrText,
    /// The inputs it was produced from.
    #[serde(default = "zero")]
    pub inputs: HashOrText,
    /// The runtime (image, model, code version).
    #[serde(default = "zero")]
    pub runtime: HashOrText,
    /// The policy it ran under.
    #[serde(default = "zero")]
    pub policy: HashOrText,
    /// Where the artifact is (text is hashed; the registry keeps 32 bytes).
    #[serde(default = "zero")]
    pub uri: HashOrText,
    /// Earlier records it derives from (decimal ids).
    #[serde(default)]
    #[schema(max_items = 16)]
    pub parents: Vec<Amount>,
    /// The payment (`pay_…`) of this session that bought what it was produced from (an
    /// artifact another agent sold, a parent): `inputs` is then that payment's receipt
    /// commitment, which the ReceiptRegistry holds, so the record names its purchase on chain.
    /// Instead of `inputs`.
    #[serde(default)]
    pub purchase: Option<String>,
}

fn zero() -> HashOrText {
    HashOrText {
        hash: Default::default(),
        text: None,
    }
}

/// A provenance record as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Provenance)]
pub struct ProvenanceView {
    /// `prov_…`.
    pub id: String,
    /// Where it is.
    pub status: ProvenanceStatus,
    /// Its session.
    pub session_id: String,
    /// The registry's record id once recorded.
    pub record_id: Option<String>,
    /// What was submitted.
    #[schema(value_type = Object)]
    pub record: Value,
    /// The transaction's hash once mined.
    pub transaction_hash: Option<String>,
    /// Its block.
    pub block_number: Option<i64>,
    /// Why it failed.
    pub error: Option<Failure>,
    /// When it was accepted (unix ms).
    pub created_at: i64,
}

/// Where a provenance record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProvenanceStatus {
    /// Signed and stored, not yet accepted by the node.
    Queued,
    /// Accepted by the node.
    Submitted,
    /// In the registry.
    Recorded,
    /// Refused or reverted.
    Failed,
}

impl ProvenanceView {
    fn of(p: ProvenanceRow) -> Self {
        let status = match (p.outcome, p.tx_status) {
            (Some(ProvenanceOutcome::Recorded), _) => ProvenanceStatus::Recorded,
            (Some(ProvenanceOutcome::Reverted), _) | (None, TxStatus::Failed) => {
                ProvenanceStatus::Failed
            }
            (None, TxStatus::Signed) => ProvenanceStatus::Queued,
            (None, _) => ProvenanceStatus::Submitted,
        };
        ProvenanceView {
            status,
            error: Failure::stored(p.error_code.as_ref(), p.error_details.as_deref()),
            record: serde_json::from_str(&p.record).unwrap_or(Value::Null),
            id: p.id,
            session_id: p.session_id,
            record_id: p.record_id,
            transaction_hash: p.tx_hash.map(|h| h.to_string()),
            block_number: p.block_number,
            created_at: p.created_at,
        }
    }
}

/// Records provenance for `session`'s sandbox: refused at once with the registry's error
/// (unknown or revoked parent, inactive session…), otherwise signed and queued.
pub async fn record(
    app: &App,
    session: &SessionRow,
    req: RecordRequest,
    request_key: Option<&str>,
) -> Result<ProvenanceView, Error> {
    // A retry of a request whose process died after storing the record finds it.
    if let Some(key) = request_key {
        if let Some(p) = app.store.provenance_by_request_key(key).await? {
            return Ok(ProvenanceView::of(p));
        }
    }
    if session.status != OpenStatus::Open {
        return Err(not_open(session));
    }
    if req.parents.len() > MAX_PARENTS {
        return Err(Error::invalid(
            "parents",
            format!("at most {MAX_PARENTS} parents"),
        ));
    }
    let mut req = req;
    let mut bought = None;
    if let Some(payment) = &req.purchase {
        if req.inputs.text.is_some() || !req.inputs.hash.is_zero() {
            return Err(Error::invalid(
                "purchase",
                "purchase and inputs are exclusive: a bought input is named by its receipt",
            ));
        }
        let (_, receipt) =
            crate::payments::executed(app, session, payment, "purchase", "names a purchase")
                .await?;
        req.inputs.hash = receipt_commitment(&(&receipt).into());
        bought = Some(receipt.receiptId);
    }
    let id = parse_id(&session.id)?;
    let signer = session.signer;
    let key = app.session_key(session.session_key).await?;
    let registry = app.contracts.receipts;
    let domain = RECEIPT_REGISTRY_DOMAIN.at(app.chain_id, registry);
    let deadline = U256::from(app.now(false).await? + app.settings.intent_ttl.as_secs());
    let parents: Vec<U256> = req.parents.iter().map(|p| p.0).collect();
    let signed = |nonce: U256| {
        let record = ProvenanceRecord {
            session: id,
            subject: req.artifact.hash,
            inputs: req.inputs.hash,
            runtime: req.runtime.hash,
            policy: req.policy.hash,
            uri: req.uri.hash,
            parents: parents.clone(),
            nonce,
            deadline,
        };
        let signature = key.sign_hash_rsv(&record.eip712_signing_hash(&domain));
        IReceiptRegistry::recordProvenanceCall {
            sessionId: id,
            subject: record.subject,
            inputs: record.inputs,
            runtime: record.runtime,
            policy: record.policy,
            uri: record.uri,
            parents: record.parents,
            nonce,
            deadline,
            signature: signature.into(),
        }
    };
    let probe = signed(crate::engine::random::probe_nonce());
    let gas_limit = app.gas_for(signer, registry, &probe.abi_encode()).await?;
    let text = |h: &HashOrText| {
        h.text
            .clone()
            .map_or(Value::String(h.hash.to_string()), Value::String)
    };
    let stored = json!({
        "artifact": text(&req.artifact),
        "inputs": text(&req.inputs),
        "runtime": text(&req.runtime),
        "policy": text(&req.policy),
        "uri": text(&req.uri),
        "parents": parents.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "purchase": req.purchase.as_ref().map(|p| json!({
            "paymentId": p,
            "receiptId": bought.map(|r| r.to_string()),
        })),
    })
    .to_string();
    let fees = app.engine.fees().await?;
    let record_id = format!(
        "prov_{}",
        alloy_primitives::hex::encode(random_bytes::<16>())
    );
    let mut db = app.store.begin().await?;
    let nonce = Store::take_intent_nonces(&mut db, &[&session.id]).await?[0];
    let call = signed(U256::from(nonce));
    let tx_id = app
        .engine
        .submit_in(
            &mut db,
            &Call {
                signer,
                to: registry,
                data: call.abi_encode().into(),
                value: U256::ZERO,
                gas_limit,
            },
            fees,
        )
        .await?;
    Store::insert_provenance(
        &mut db,
        &record_id,
        &session.id,
        &stored,
        tx_id,
        request_key,
        now_ms(),
    )
    .await?;
    app.commit(db).await?;
    tracing::info!(session = %session.id, record = %record_id, "provenance queued");
    get(app, session, &record_id, Duration::ZERO).await
}

/// Provenance record `id` of `session`; with `wait`, once recorded or failed or when `wait`
/// passes, whichever is first.
pub async fn get(
    app: &App,
    session: &SessionRow,
    id: &str,
    wait: Duration,
) -> Result<ProvenanceView, Error> {
    let look = || async {
        let row = app
            .store
            .provenance(id, Some(&session.id))
            .await?
            .ok_or(Error::NotFound)?;
        Ok(row.outcome.is_some().then_some(row))
    };
    if let Some(row) = app.wait_for(wait, look).await? {
        return Ok(ProvenanceView::of(row));
    }
    app.store
        .provenance(id, Some(&session.id))
        .await?
        .map(ProvenanceView::of)
        .ok_or(Error::NotFound)
}
