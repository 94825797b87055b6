//! The owner's approval links: what `GET /approve/{preparedId}` shows and does, and
//! `GET /approve/pending/{paymentId}` for a payment waiting for the owner. The owner reads the
//! terms from the relayer and signs in their own wallet; the host is not in between.
//!
//! A session's link is its `preparedId` (128 random bits): it works until the terms' signing
//! deadline and only while the session is still prepared (once opened, by the page or through
//! the API, it shows that and nothing more). The page's signatures open the session as
//! `POST /v1/sessions` would, except that no capability token is made: the host gets it by
//! registering the session (`POST /v1/sessions/register`), so a token never reaches a browser.
//! A pending payment's link is the relayer's payment id (also 128 random bits), usable while
//! the wallet holds the payment as pending.

use alloy_primitives::{Bytes, B256, U256};
use bursar_bindings::eip712::OpenSession;
use bursar_bindings::wallet::ISessionWallet;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kernel::session::{stored_terms, terms_of, StoredTerms};
use crate::kernel::{App, Error};
use crate::limits::{self, Counterparty, TokenInfo};
use crate::payments::{self, Decided, DecisionRequest, DecisionToSign};
use crate::sessions;
use crate::store::{OpenStatus, PaymentRow, PaymentStatus, SessionRow};

/// Whether a link can still be acted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The owner may sign.
    Usable,
    /// Past its deadline (unix seconds).
    Expired(u64),
    /// Acted on already: the session was opened or registered, the payment decided.
    Used,
    /// The session's sandbox was reported terminated before the owner signed.
    SandboxTerminated,
}

/// A prepared session as its approval page shows it.
pub struct SessionApproval {
    /// The stored session.
    pub row: SessionRow,
    /// The host that prepared it.
    pub host_name: String,
    /// The terms the owner signs (`OpenSession`).
    pub terms: OpenSession,
    /// What the wallet is handed, in order: `OpenSession`, then the token's `Permit` if any.
    pub typed_data: Vec<(&'static str, Value)>,
    /// The EIP-712 digest of the `OpenSession` typed data.
    pub digest: B256,
    /// The deposit's token.
    pub token: TokenInfo,
    /// Who the session may pay, with their labels and caps.
    pub counterparties: Vec<Counterparty>,
    /// The allowlist's id.
    pub list_id: U256,
    /// When the allowlist is pinned (unix seconds); `None`: live.
    pub pinned_at: Option<u64>,
    /// Who can change the allowlist: its owner, then its admins.
    pub editors: Vec<alloy_primitives::Address>,
    /// The chain's id.
    pub chain_id: u64,
    /// Whether it can be signed now.
    pub link: Link,
    /// The session's page in the audit explorer, when an indexer is configured.
    pub session_url: Option<String>,
}

/// A prepared session by its link, its stored terms, and whether it can be signed now: what
/// the page's `POST` needs, without the page's reads of the token and the allowlist.
async fn prepared_link(
    app: &App,
    prepared_id: &str,
) -> Result<(SessionRow, StoredTerms, Link), Error> {
    let row = app
        .store
        .session_by_prepared_id(prepared_id)
        .await?
        .ok_or(Error::NotFound)?;
    let stored = stored_terms(&row)?;
    let link = if row.status != OpenStatus::Prepared {
        Link::Used
    } else if row.sandbox_state.as_deref() == Some("terminated") {
        Link::SandboxTerminated
    } else {
        let deadline: u64 = stored.terms()?.deadline.saturating_to();
        if app.now(true).await? > deadline {
            Link::Expired(deadline)
        } else {
            Link::Usable
        }
    };
    Ok((row, stored, link))
}

/// A prepared session's approval, by its link.
pub async fn session(app: &App, prepared_id: &str) -> Result<SessionApproval, Error> {
    let (row, stored, link) = prepared_link(app, prepared_id).await?;
    let terms = stored.terms()?;
    let mut typed_data = vec![("OpenSession", stored.typed_data["openSession"].clone())];
    if !stored.typed_data["permit"].is_null() {
        typed_data.push(("Permit", stored.typed_data["permit"].clone()));
    }
    let digest = serde_json::from_value::<alloy_dyn_abi::TypedData>(typed_data[0].1.clone())
        .ok()
        .and_then(|t| t.eip712_signing_hash().ok())
        .ok_or(Error::Internal)?;
    let (list_id, pinned_at) = limits::allowlist(terms.allowlistId);
    let (token, counterparties, editors, host_name) = tokio::try_join!(
        limits::token_info(app, terms.token),
        limits::counterparties_of(app, terms.allowlistId),
        limits::editors_of(app, list_id),
        async { Ok(app.store.host_name(&row.host_id).await?.unwrap_or_default()) },
    )?;
    let counterparties = limits::show(counterparties, &token);
    Ok(SessionApproval {
        list_id,
        pinned_at,
        editors,
        session_url: session_url(app, &row.id),
        host_name,
        terms,
        typed_data,
        digest,
        token,
        counterparties,
        chain_id: app.chain_id,
        link,
        row,
    })
}

/// The session's page in the indexer's explorer, when the relayer knows an indexer.
fn session_url(app: &App, session_id: &str) -> Option<String> {
    let indexer = app.settings.indexer_url.as_deref()?;
    Some(format!(
        "{}/ui/sessions/{session_id}",
        indexer.trim_end_matches('/')
    ))
}

/// What the approval page sends: the owner's signatures of the typed data it showed.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Signatures {
    /// Of `OpenSession`.
    pub owner_signature: Bytes,
    /// Of the permit (empty without one).
    #[serde(default)]
    pub permit_signature: Bytes,
}

/// What opening from the page answers (no capability token: the host registers for it).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageOpened {
    /// The session.
    pub session_id: String,
    /// `open`, or `opening` while its transaction is not mined.
    pub status: OpenStatus,
    /// The opening transaction once mined.
    pub transaction_hash: Option<String>,
    /// The session's page in the audit explorer.
    pub session_url: Option<String>,
}

/// Opens the session of link `prepared_id` with the owner's signatures, when the link is
/// usable; the gateway's own checks run first, so a wrong signer or an unfunded owner is
/// refused with the contract's error and nothing is sent.
pub async fn open(app: &App, prepared_id: &str, sigs: Signatures) -> Result<PageOpened, Error> {
    let (row, _, link) = prepared_link(app, prepared_id).await?;
    refuse_unless_usable(link)?;
    let opened =
        sessions::open_prepared(app, &row, sigs.owner_signature, sigs.permit_signature, None)
            .await?;
    tracing::info!(session = %opened.session_id, "session opened from its approval page");
    Ok(PageOpened {
        session_url: session_url(app, &opened.session_id),
        session_id: opened.session_id,
        status: opened.status,
        transaction_hash: opened.transaction_hash,
    })
}

fn refuse_unless_usable(link: Link) -> Result<(), Error> {
    match link {
        Link::Usable => Ok(()),
        Link::Expired(at) => Err(Error::conflict(
            "approval_expired",
            format!("this approval link expired at {at} (unix seconds): ask for a new one"),
        )),
        Link::Used => Err(Error::conflict(
            "approval_used",
            "this approval link was used already",
        )),
        Link::SandboxTerminated => Err(Error::conflict(
            "sandbox_terminated",
            "the session's sandbox was reported terminated: ask for a new session",
        )),
    }
}

/// A payment waiting for the owner, as its approval page shows it.
pub struct PaymentApproval {
    /// The relayer's payment id.
    pub payment_id: String,
    /// Its session.
    pub session: SessionRow,
    /// The session's terms.
    pub terms: OpenSession,
    /// The host of the session.
    pub host_name: String,
    /// The wallet's pending id.
    pub pending_id: String,
    /// The payee, with its label and cap on the allowlist when it has one there.
    pub payee: Counterparty,
    /// Base units.
    pub amount: U256,
    /// The purpose hash.
    pub purpose: String,
    /// When the wallet drops it unless decided (unix seconds).
    pub expires_at: u64,
    /// The deposit's token.
    pub token: TokenInfo,
    /// Whether it can be decided now.
    pub link: Link,
    /// The chain's id.
    pub chain_id: u64,
}

/// What the wallet holds of a pending payment (`pendingPayment`).
type Held = <ISessionWallet::pendingPaymentCall as alloy_sol_types::SolCall>::Return;

/// Payment `payment_id` waiting for the owner: its row, its session, its pending id, what
/// the wallet holds of it, and whether it can be decided now.
async fn pending_link(
    app: &App,
    payment_id: &str,
) -> Result<(PaymentRow, SessionRow, String, Held, Link), Error> {
    let p = app
        .store
        .payment(payment_id, None)
        .await?
        .ok_or(Error::NotFound)?;
    let id = p.pending_id.ok_or(Error::NotFound)?;
    let session = app
        .store
        .session(&p.session_id, None)
        .await?
        .ok_or(Error::NotFound)?;
    let call = ISessionWallet::pendingPaymentCall { pendingId: id };
    let (held, now) = tokio::try_join!(
        async { Ok(app.client.view(None, app.contracts.wallet, call).await?) },
        app.now(true),
    )?;
    let link = if p.status() != PaymentStatus::PendingApproval
        || held._6 != bursar_bindings::wallet::PendingStatus::Pending as u8
    {
        Link::Used
    } else if now > held._5 {
        Link::Expired(held._5)
    } else {
        Link::Usable
    };
    Ok((p, session, id.to_string(), held, link))
}

/// The pending payment `payment_id` as its page shows it.
pub async fn payment(app: &App, payment_id: &str) -> Result<PaymentApproval, Error> {
    let (p, session, pending_id, held, link) = pending_link(app, payment_id).await?;
    let terms = terms_of(&session)?;
    let (token, counterparties, host_name) = tokio::try_join!(
        limits::token_info(app, terms.token),
        limits::counterparties_of(app, terms.allowlistId),
        async {
            Ok(app
                .store
                .host_name(&session.host_id)
                .await?
                .unwrap_or_default())
        },
    )?;
    let payee = limits::show(counterparties, &token)
        .into_iter()
        .find(|c| c.address.eq_ignore_ascii_case(&held._1.to_checksum(None)))
        .unwrap_or_else(|| Counterparty {
            address: held._1.to_checksum(None),
            label: None,
            max_per_payment: None,
        });
    Ok(PaymentApproval {
        payment_id: p.id,
        session,
        terms,
        host_name,
        pending_id,
        payee,
        amount: held._2,
        purpose: held._3.to_string(),
        expires_at: held._5,
        token,
        link,
        chain_id: app.chain_id,
    })
}

/// The typed data the owner signs to decide payment `payment_id`.
pub async fn decision_to_sign(
    app: &App,
    payment_id: &str,
    approve: bool,
) -> Result<DecisionToSign, Error> {
    let (_, session, pending_id, _, link) = pending_link(app, payment_id).await?;
    refuse_unless_usable(link)?;
    payments::decision_to_sign(app, &session, &pending_id, approve).await
}

/// Sends the owner's signed decision on payment `payment_id`.
pub async fn decide(app: &App, payment_id: &str, req: DecisionRequest) -> Result<Decided, Error> {
    let (_, session, pending_id, _, link) = pending_link(app, payment_id).await?;
    refuse_unless_usable(link)?;
    let decided = payments::decide(app, &session, &pending_id, req).await?;
    tracing::info!(payment = %payment_id, approve = decided.approve, "pending payment decided from its approval page");
    Ok(decided)
}
