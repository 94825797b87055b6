//! A prepared session opened: through the gateway with the owner's signatures (gasless for
//! the owner), or registered after the owner opened it themselves or on the approval page;
//! either way its sandbox gets a capability token.

use std::time::Duration;

use alloy_primitives::{Bytes, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::eip712::OpenSession;
use bursar_bindings::wallet::ISessionWallet;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::capability::capability_token;

use crate::engine::submission::Call;
use crate::hosts::Host;
use crate::kernel::json::schema;
use crate::kernel::session::{parse_id, stored_terms};
use crate::kernel::{App, Error};
use crate::store::{OpenStatus, SessionRow, Store};

/// `POST /v1/sessions`: the owner's signatures of a prepared session's typed data.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenRequest {
    /// From `prepare`.
    pub prepared_id: String,
    /// The owner's signature of `typedData.openSession` (65 bytes, or an ERC-1271 signature).
    #[schema(value_type = schema::Hex)]
    pub owner_signature: Bytes,
    /// The owner's signature of `typedData.permit` (empty when the wallet is approved).
    #[serde(default)]
    #[schema(value_type = schema::Hex)]
    pub permit_signature: Bytes,
}

/// `POST /v1/sessions/register`: a prepared session the owner opened with their own wallet.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterRequest {
    /// From `prepare`.
    pub prepared_id: String,
}

/// What opening or registering answers: the sandbox's capability token, shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Opened {
    /// The on-chain id.
    pub session_id: String,
    /// `Authorization: Bearer <token>` for the sandbox's payments, heartbeats and provenance.
    pub capability_token: String,
    /// `open`, or `opening` when the open was not mined within the wait.
    pub status: OpenStatus,
    /// The opening transaction once mined (none for a registered session).
    pub transaction_hash: Option<String>,
}

/// Opens a prepared session through the gateway with the owner's signatures, after checking
/// them (and everything else `openSessionWithSig` checks) against the current block; waits up
/// to [`crate::Settings::open_wait`] for it to be mined.
pub async fn open(app: &App, host: &Host, req: OpenRequest) -> Result<Opened, Error> {
    let row = prepared(&app.store, host, &req.prepared_id).await?;
    let (token, token_hash) = capability_token();
    let sent = open_prepared(
        app,
        &row,
        req.owner_signature,
        req.permit_signature,
        Some(&token_hash),
    )
    .await?;
    tracing::info!(host = %host.id, session = %row.id, "session opening");
    Ok(Opened {
        session_id: sent.session_id,
        capability_token: token,
        status: sent.status,
        transaction_hash: sent.transaction_hash,
    })
}

/// What sending a session's open did.
pub struct Sent {
    /// The session.
    pub session_id: String,
    /// `open`, or `opening` while the open is not mined (within the wait).
    pub status: OpenStatus,
    /// The open transaction once mined.
    pub transaction_hash: Option<String>,
}

/// Sends prepared session `row`'s `openSessionWithSig` with the owner's signatures, once the
/// gateway's own checks pass against the current block (a bad signature, an unfunded owner, a
/// passed deadline are refused with the contract's error, and nothing is sent), with the
/// capability token hashing to `token_hash` (none from the approval page: the host registers
/// for it); waits up to [`crate::Settings::open_wait`] for it to be mined.
pub async fn open_prepared(
    app: &App,
    row: &SessionRow,
    owner_signature: Bytes,
    permit_signature: Bytes,
    token_hash: Option<&str>,
) -> Result<Sent, Error> {
    let terms = stored_terms(row)?.terms()?;
    let call = terms.with_sig_call(owner_signature, permit_signature);
    let signer = row.signer;
    let data = call.abi_encode();
    let gas_limit = app.gas_for(signer, app.contracts.gateway, &data).await?;
    let call = Call {
        signer,
        to: app.contracts.gateway,
        data: data.into(),
        value: U256::ZERO,
        gas_limit,
    };
    let (mut db, tx_id) = app.queue(&call).await?;
    if !Store::set_session_opening(&mut db, &row.id, Some(tx_id), token_hash).await? {
        return Err(already_opened(row));
    }
    app.commit(db).await?;
    let status = wait_until_settled(app, &row.id, app.settings.open_wait).await?;
    let transaction_hash = app
        .store
        .transaction(tx_id)
        .await?
        .and_then(|t| t.mined_hash)
        .map(|h| h.to_string());
    Ok(Sent {
        session_id: row.id.clone(),
        status,
        transaction_hash,
    })
}

/// Registers a prepared session the owner opened: from its approval page (the page made no
/// capability token: this makes it, once), or with their own wallet (`openSession` naming
/// the prepared key: its `SessionOpened` must carry every prepared term, else nothing the
/// host relies on — its guardian's revoke, the lease, the caps — would hold); then it gets a
/// capability token.
pub async fn register(app: &App, host: &Host, req: RegisterRequest) -> Result<Opened, Error> {
    let row = prepared(&app.store, host, &req.prepared_id).await?;
    if row.open_transaction.is_some() && row.capability_hash.is_none() {
        return approved_on_page(app, host, row).await;
    }
    let stored = stored_terms(&row)?;
    let terms = stored.terms()?;
    let not_opened = || {
        Error::conflict(
            "session_not_opened",
            format!(
                "no session {} of owner {} with session key {} is open on chain: the owner \
                 must call openSession with the prepared terms first",
                row.id, terms.owner, terms.sessionKey
            ),
        )
    };
    let id = parse_id(&row.id)?;
    let on_chain = app
        .client
        .view(
            None,
            app.contracts.wallet,
            ISessionWallet::sessionTermsCall { sessionId: id },
        )
        .await?;
    if on_chain._0 != terms.owner || on_chain._1 != terms.sessionKey {
        return Err(not_opened());
    }
    let opened = session_opened(app, id, stored.prepared_at_block)
        .await?
        .ok_or_else(not_opened)?;
    if let Some((field, prepared, on_chain)) = first_difference(&terms, &opened) {
        tracing::warn!(host = %host.id, session = %row.id, field, "registered terms differ");
        return Err(Error::TermsMismatch {
            field,
            prepared,
            on_chain,
        });
    }
    let (token, token_hash) = capability_token();
    let mut db = app.store.begin().await?;
    if !Store::set_session_opening(&mut db, &row.id, None, Some(&token_hash)).await? {
        return Err(already_opened(&row));
    }
    db.commit().await.map_err(crate::store::StoreError::from)?;
    tracing::info!(host = %host.id, session = %row.id, "session registered");
    Ok(Opened {
        session_id: row.id,
        capability_token: token,
        status: OpenStatus::Open,
        transaction_hash: None,
    })
}

/// The capability token of a session the owner opened from its approval page (which made
/// none, so that no token reaches a browser): once, while its open is not known to have failed.
async fn approved_on_page(app: &App, host: &Host, row: SessionRow) -> Result<Opened, Error> {
    if row.status == OpenStatus::Failed {
        return Err(Error::conflict(
            "session_not_opened",
            format!(
                "the open of session {} from its approval page failed on chain",
                row.id
            ),
        ));
    }
    let (token, token_hash) = capability_token();
    if !app.store.issue_capability(&row.id, &token_hash).await? {
        return Err(already_opened(&row));
    }
    let transaction_hash = match row.open_transaction {
        Some(tx) => app
            .store
            .transaction(tx)
            .await?
            .and_then(|t| t.mined_hash.map(|h| h.to_string())),
        None => None,
    };
    tracing::info!(host = %host.id, session = %row.id, "session registered after its approval page");
    Ok(Opened {
        session_id: row.id,
        capability_token: token,
        status: row.status,
        transaction_hash,
    })
}

/// Session `id`'s `SessionOpened`, looked for from block `from` to the head (in the ranges
/// the node takes).
async fn session_opened(
    app: &App,
    id: U256,
    from: u64,
) -> Result<Option<ISessionWallet::SessionOpened>, Error> {
    use alloy_sol_types::SolEvent;
    let topics = [
        vec![ISessionWallet::SessionOpened::SIGNATURE_HASH],
        vec![B256::from(id)],
    ];
    let head = app.client.block_number().await?;
    let at = [app.contracts.wallet];
    let read = |blocks| app.client.logs_matching(&at, &topics, blocks);
    let (logs, _) = bursar_client::ranges::in_ranges((from, head), read, |_, _| {}).await?;
    Ok(logs.iter().find_map(|l| {
        ISessionWallet::SessionOpened::decode_raw_log(l.topics.iter().copied(), &l.data).ok()
    }))
}

/// The first term in which the session opened on chain differs from the prepared `terms`:
/// its name as in `OpenSession`, the prepared value and the chain's.
fn first_difference(
    terms: &OpenSession,
    opened: &ISessionWallet::SessionOpened,
) -> Option<(&'static str, String, String)> {
    fn text(v: impl std::fmt::Display) -> String {
        v.to_string()
    }
    let t = terms;
    let o = opened;
    let pairs = [
        ("owner", text(t.owner), text(o.owner)),
        ("sessionKey", text(t.sessionKey), text(o.sessionKey)),
        ("guardian", text(t.guardian), text(o.guardian)),
        ("token", text(t.token), text(o.token)),
        ("deposit", text(t.deposit), text(o.deposit)),
        (
            "perPaymentCap",
            text(t.perPaymentCap),
            text(o.perPaymentCap),
        ),
        ("periodBudget", text(t.periodBudget), text(o.periodBudget)),
        (
            "periodSeconds",
            text(t.periodSeconds),
            text(o.periodSeconds),
        ),
        (
            "coSignThreshold",
            text(t.coSignThreshold),
            text(o.coSignThreshold),
        ),
        ("validAfter", text(t.validAfter), text(o.validAfter)),
        ("expiresAt", text(t.expiresAt), text(o.expiresAt)),
        ("leaseSeconds", text(t.leaseSeconds), text(o.leaseSeconds)),
        ("leaseKeeper", text(t.leaseKeeper), text(o.leaseKeeper)),
        ("allowlistId", text(t.allowlistId), text(o.allowlistId)),
        ("metadata", text(t.metadata), text(o.metadata)),
    ];
    pairs.into_iter().find(|(_, p, c)| p != c)
}

/// A session `host` prepared and did not open yet, unless its sandbox was reported terminated
/// meanwhile.
async fn prepared(store: &Store, host: &Host, prepared_id: &str) -> Result<SessionRow, Error> {
    let row = store
        .prepared_session(&host.id, prepared_id)
        .await?
        .ok_or(Error::NotFound)?;
    if row.sandbox_state.as_deref() == Some("terminated") {
        return Err(Error::conflict(
            "sandbox_terminated",
            format!(
                "the sandbox of session {} was reported terminated: prepare a new session",
                row.id
            ),
        ));
    }
    Ok(row)
}

fn already_opened(row: &SessionRow) -> Error {
    Error::conflict(
        "session_already_opened",
        format!("session {} was opened or registered before", row.id),
    )
}

/// Waits until session `id` is no longer `opening`, at most `wait`; returns its status.
async fn wait_until_settled(app: &App, id: &str, wait: Duration) -> Result<OpenStatus, Error> {
    let status = || async {
        let row = app.store.session(id, None).await?.ok_or(Error::Internal)?;
        Ok((row.status != OpenStatus::Opening).then_some(row.status))
    };
    Ok(app
        .wait_for(wait, status)
        .await?
        .unwrap_or(OpenStatus::Opening))
}

#[cfg(test)]
mod tests {
    use alloy_primitives::Address;
    use bursar_bindings::wallet::session_id;

    use super::*;

    fn terms() -> OpenSession {
        OpenSession {
            owner: Address::repeat_byte(1),
            sessionKey: Address::repeat_byte(2),
            guardian: Address::repeat_byte(3),
            token: Address::repeat_byte(4),
            deposit: U256::from(100),
            perPaymentCap: U256::from(30),
            periodBudget: U256::from(40),
            periodSeconds: 3_600,
            coSignThreshold: U256::from(20),
            validAfter: 0,
            expiresAt: 2_000_000_000,
            leaseSeconds: 600,
            leaseKeeper: Address::repeat_byte(5),
            allowlistId: U256::from(7),
            metadata: B256::repeat_byte(9),
            nonce: U256::from(11),
            deadline: U256::from(12),
        }
    }

    fn opened(t: &OpenSession) -> ISessionWallet::SessionOpened {
        ISessionWallet::SessionOpened {
            sessionId: session_id(t.owner, t.nonce),
            owner: t.owner,
            sessionKey: t.sessionKey,
            guardian: t.guardian,
            token: t.token,
            deposit: t.deposit,
            perPaymentCap: t.perPaymentCap,
            periodBudget: t.periodBudget,
            periodSeconds: t.periodSeconds,
            coSignThreshold: t.coSignThreshold,
            validAfter: t.validAfter,
            expiresAt: t.expiresAt,
            leaseSeconds: t.leaseSeconds,
            leaseKeeper: t.leaseKeeper,
            allowlistId: t.allowlistId,
            metadata: t.metadata,
        }
    }

    #[test]
    fn every_term_is_compared() {
        let t = terms();
        assert_eq!(first_difference(&t, &opened(&t)), None);
        type Change = fn(&mut ISessionWallet::SessionOpened);
        let changes: [(&str, Change); 15] = [
            ("owner", |o| o.owner = Address::ZERO),
            ("sessionKey", |o| o.sessionKey = Address::ZERO),
            ("guardian", |o| o.guardian = Address::ZERO),
            ("token", |o| o.token = Address::ZERO),
            ("deposit", |o| o.deposit += U256::from(1)),
            ("perPaymentCap", |o| o.perPaymentCap = U256::ZERO),
            ("periodBudget", |o| o.periodBudget = U256::ZERO),
            ("periodSeconds", |o| o.periodSeconds = 0),
            ("coSignThreshold", |o| o.coSignThreshold = U256::ZERO),
            ("validAfter", |o| o.validAfter = 1),
            ("expiresAt", |o| o.expiresAt += 1),
            ("leaseSeconds", |o| o.leaseSeconds = 0),
            ("leaseKeeper", |o| o.leaseKeeper = Address::ZERO),
            ("allowlistId", |o| o.allowlistId = U256::ZERO),
            ("metadata", |o| o.metadata = B256::ZERO),
        ];
        for (field, change) in changes {
            let mut o = opened(&t);
            change(&mut o);
            let (named, prepared, on_chain) = first_difference(&t, &o).unwrap();
            assert_eq!(named, field);
            assert_ne!(prepared, on_chain);
        }
    }
}
