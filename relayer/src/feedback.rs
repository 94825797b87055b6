//! Feedback backed by payment: a session rates the agent it paid, for that payment's receipt.
//! The session key signs the ReceiptRegistry's EIP-712 `ReceiptFeedback`, the session's relayer
//! signer sends `giveReceiptFeedback`, and the registry gives the ERC-8004 feedback as its
//! client — so it counts in `getSummary(agent, [ReceiptRegistry])` and in the indexer's
//! passport. The registry's rules are checked at the latest block before anything is stored:
//! a receipt paid to someone else than the agent, a second rating of one receipt, an agent
//! rating itself are refused with the registry's error. The payee's side (rating the payer's
//! agent) is signed by the payee's own wallet, not through a session.

use std::time::Duration;

use alloy_primitives::U256;
use alloy_sol_types::{SolCall, SolStruct};
use bursar_bindings::eip712::{ReceiptFeedback, RECEIPT_REGISTRY_DOMAIN};
use bursar_bindings::erc8004::{MAX_ABS_VALUE, MAX_VALUE_DECIMALS};
use bursar_bindings::receipts::give_receipt_feedback;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::engine::random::random_bytes;
use crate::engine::submission::Call;
use crate::kernel::json::{Amount, Failure};
use crate::kernel::{App, Error};
use crate::payments::custodial_key;
use crate::store::{
    now_ms, FeedbackOutcome, FeedbackRow, NewFeedback, SessionRow, Store, TxStatus,
};

/// The longest tag, and the longest endpoint or feedback URI, in bytes: they go on chain.
const MAX_TAG: usize = 64;
const MAX_URI: usize = 512;

/// `POST /v1/feedback`: rate the agent a payment of this session paid.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateRequest {
    /// The executed payment (`pay_…`) whose receipt backs the rating.
    pub payment_id: String,
    /// The ERC-8004 id of the agent paid (decimal): the payment went to its owner or its
    /// `agentWallet`.
    pub agent_id: Amount,
    /// The rating, a decimal number (`"90"`, `"4.5"`, `"-1"`; at most 18 decimals): ERC-8004's
    /// `value` at `valueDecimals`.
    pub value: String,
    /// ERC-8004's first tag (what is rated, e.g. `quality`).
    #[serde(default)]
    pub tag1: String,
    /// ERC-8004's second tag.
    #[serde(default)]
    pub tag2: String,
    /// The endpoint rated (the URL paid for).
    #[serde(default)]
    pub endpoint: String,
    /// An off-chain document with more (ERC-8004's `feedbackURI`).
    #[serde(default)]
    pub feedback_uri: String,
}

/// A feedback as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Feedback)]
pub struct FeedbackView {
    /// `fb_…`.
    pub id: String,
    /// Where it is.
    pub status: FeedbackStatus,
    /// The session that gave it.
    pub session_id: String,
    /// The payment whose receipt backs it.
    pub payment_id: String,
    /// The agent rated (ERC-8004 id, decimal).
    pub agent_id: String,
    /// What was submitted: the receipt's id, the value and its decimals, the tags, endpoint
    /// and URI.
    #[schema(value_type = Object)]
    pub rating: Value,
    /// Its index among the ReceiptRegistry's feedback on the agent, once given (the
    /// Reputation Registry's `feedbackIndex` for client = the ReceiptRegistry).
    pub feedback_index: Option<i64>,
    /// The transaction's hash once mined.
    pub transaction_hash: Option<String>,
    /// Its block.
    pub block_number: Option<i64>,
    /// Why it failed.
    pub error: Option<Failure>,
    /// When it was accepted (unix ms).
    pub created_at: i64,
}

/// Where a feedback is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackStatus {
    /// Signed and stored, not yet accepted by the node.
    Queued,
    /// Accepted by the node.
    Submitted,
    /// In the Reputation Registry.
    Given,
    /// Refused or reverted.
    Failed,
}

impl FeedbackView {
    fn of(f: FeedbackRow) -> Self {
        let status = match (f.outcome, f.tx_status) {
            (Some(FeedbackOutcome::Given), _) => FeedbackStatus::Given,
            (Some(FeedbackOutcome::Reverted), _) | (None, TxStatus::Failed) => {
                FeedbackStatus::Failed
            }
            (None, TxStatus::Signed) => FeedbackStatus::Queued,
            (None, _) => FeedbackStatus::Submitted,
        };
        FeedbackView {
            status,
            error: Failure::stored(f.error_code.as_ref(), f.error_details.as_deref()),
            rating: serde_json::from_str(&f.rating).unwrap_or(Value::Null),
            agent_id: f.agent_id.to_string(),
            id: f.id,
            session_id: f.session_id,
            payment_id: f.payment_id,
            feedback_index: f.feedback_index,
            transaction_hash: f.tx_hash.map(|h| h.to_string()),
            block_number: f.block_number,
            created_at: f.created_at,
        }
    }
}

/// A rating as ERC-8004 takes it: `(value, valueDecimals)` of a decimal number.
pub fn parse_value(text: &str) -> Result<(i128, u8), String> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !plain(whole) || !plain(fraction) || digits.ends_with('.') {
        return Err(format!(
            "{text:?} is not a decimal number like 90, 4.5 or -1"
        ));
    }
    if fraction.len() > usize::from(MAX_VALUE_DECIMALS) {
        return Err(format!("at most {MAX_VALUE_DECIMALS} decimals"));
    }
    let magnitude: i128 = format!("{whole}{fraction}")
        .parse()
        .ok()
        .filter(|v: &i128| *v <= MAX_ABS_VALUE)
        .ok_or_else(|| format!("{text:?} is beyond ERC-8004's ±1e38 (in units of its decimals)"))?;
    let value = if negative { -magnitude } else { magnitude };
    Ok((value, fraction.len() as u8))
}

/// Rates the agent `session`'s payment `req.payment_id` paid: refused at once with the
/// ReceiptRegistry's error, otherwise signed and queued.
pub async fn rate(
    app: &App,
    session: &SessionRow,
    req: RateRequest,
    request_key: Option<&str>,
) -> Result<FeedbackView, Error> {
    // A retry of a request whose process died after storing the feedback finds it.
    if let Some(key) = request_key {
        if let Some(f) = app.store.feedback_by_request_key(key).await? {
            return Ok(FeedbackView::of(f));
        }
    }
    let (value, decimals) = parse_value(&req.value).map_err(|e| Error::invalid("value", e))?;
    for (field, text, max) in [
        ("tag1", &req.tag1, MAX_TAG),
        ("tag2", &req.tag2, MAX_TAG),
        ("endpoint", &req.endpoint, MAX_URI),
        ("feedbackUri", &req.feedback_uri, MAX_URI),
    ] {
        if text.len() > max {
            return Err(Error::invalid(
                field,
                format!("{field} is at most {max} bytes"),
            ));
        }
    }
    let (payment, receipt) =
        crate::payments::executed(app, session, &req.payment_id, "paymentId", "backs a rating")
            .await?;
    let (receipt_id, registry) = (receipt.receiptId, app.contracts.receipts);
    let key = custodial_key(
        app,
        session,
        "sign the ReceiptRegistry's ReceiptFeedback with it and send giveReceiptFeedback",
    )
    .await?;
    let agent_id = req.agent_id.0;
    let deadline = U256::from(app.now(false).await? + app.settings.intent_ttl.as_secs());
    let signed = ReceiptFeedback {
        receiptId: receipt_id,
        byPayee: false,
        agentId: agent_id,
        value,
        valueDecimals: decimals,
        tag1: req.tag1.clone(),
        tag2: req.tag2.clone(),
        endpoint: req.endpoint.clone(),
        feedbackURI: req.feedback_uri.clone(),
        deadline,
    };
    let domain = RECEIPT_REGISTRY_DOMAIN.at(app.chain_id, registry);
    let signature = key.sign_hash_rsv(&signed.eip712_signing_hash(&domain));
    let call = give_receipt_feedback(&(&receipt).into(), signed, signature.into()).abi_encode();
    // The registry's rules now: a refusal is answered with its error, nothing stored.
    let gas_limit = app.gas_for(session.signer, registry, &call).await?;
    let rating = json!({
        "receiptId": receipt_id.to_string(),
        "value": value.to_string(),
        "valueDecimals": decimals,
        "tag1": req.tag1,
        "tag2": req.tag2,
        "endpoint": req.endpoint,
        "feedbackUri": req.feedback_uri,
    })
    .to_string();
    let id = format!("fb_{}", alloy_primitives::hex::encode(random_bytes::<16>()));
    let (mut db, transaction_id) = app
        .queue(&Call {
            signer: session.signer,
            to: registry,
            data: call.into(),
            value: U256::ZERO,
            gas_limit,
        })
        .await?;
    let new = NewFeedback {
        id: &id,
        session_id: &session.id,
        payment_id: &payment.id,
        agent_id,
        rating: &rating,
        transaction_id,
        request_key,
    };
    Store::insert_feedback(&mut db, &new, now_ms()).await?;
    app.commit(db).await?;
    tracing::info!(session = %session.id, feedback = %id, agent = %agent_id, "feedback queued");
    get(app, session, &id, Duration::ZERO).await
}

/// Feedback `id` of `session`; with `wait`, once given or failed or when `wait` passes,
/// whichever is first.
pub async fn get(
    app: &App,
    session: &SessionRow,
    id: &str,
    wait: Duration,
) -> Result<FeedbackView, Error> {
    let look = || async {
        let row = app
            .store
            .feedback(id, &session.id)
            .await?
            .ok_or(Error::NotFound)?;
        Ok(row.outcome.is_some().then_some(row))
    };
    if let Some(row) = app.wait_for(wait, look).await? {
        return Ok(FeedbackView::of(row));
    }
    app.store
        .feedback(id, &session.id)
        .await?
        .map(FeedbackView::of)
        .ok_or(Error::NotFound)
}

#[cfg(test)]
mod tests {
    use super::parse_value;

    #[test]
    fn ratings_are_read_as_erc_8004_values() {
        assert_eq!(parse_value("90"), Ok((90, 0)));
        assert_eq!(parse_value("4.50"), Ok((450, 2)));
        assert_eq!(parse_value("-1"), Ok((-1, 0)));
        assert_eq!(parse_value("0.000000000000000001"), Ok((1, 18)));
        for bad in [
            "",
            "-",
            "4.",
            ".5",
            "1e3",
            "+1",
            "4.5.1",
            " 1",
            "0.0000000000000000001",
        ] {
            assert!(parse_value(bad).is_err(), "{bad:?}");
        }
        assert!(parse_value(&"9".repeat(39)).is_err());
        assert!(parse_value(&format!("1{}", "0".repeat(38))).is_ok());
    }
}
