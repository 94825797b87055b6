//! Sessions: prepared for the owner's signature, opened through the gateway (gasless for the
//! owner) or registered after the owner opened it, a capability token per session for its
//! sandbox, lease heartbeats, revocation and close.
//!
//! The relayer signer a session is pinned to is its lease keeper (only it and the owner renew
//! the lease, so a sandbox that stops heart-beating lets the session lapse) and, unless the host
//! names another, its guardian (so the relayer can revoke it on the host's word).

use std::time::Duration;

use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolValue};
use bursar_bindings::eip712::{OpenSession, Permit};
use bursar_bindings::evm::IFiatToken;
use bursar_bindings::wallet::{session_id, ISessionWallet, SessionStatus};
use bursar_client::sign;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

mod capability;
mod view;

pub use capability::{authenticate, token_hash};
pub use view::{chain_state, get, list, ChainState, ChainStatus, SessionView};

use capability::capability_token;

use crate::engine::random::random_bytes;
use crate::engine::submission::Call;
use crate::engine::vault;
use crate::hosts::Host;
use crate::kernel::json::{is_invisible, schema, session_id_text, Amount, HashOrText};
use crate::kernel::session::{not_open, parse_id, send, signer_of, stored_terms, StoredTerms};
use crate::kernel::{App, Error};
use crate::store::{now_ms, NewSession, OpenStatus, SessionRow, SessionTx, Store, TxStatus};

/// `POST /v1/sessions/prepare`: the `openSession` terms (amounts as decimal strings in base
/// units) and the sandbox they are for.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrepareRequest {
    /// Whose money: signs the terms and the permit.
    #[schema(value_type = schema::Address)]
    pub owner: Address,
    /// May revoke the session; defaults to the relayer signer the session is pinned to.
    #[schema(value_type = Option<schema::Address>)]
    pub guardian: Option<Address>,
    /// The ERC-20 token of the deposit.
    #[schema(value_type = schema::Address)]
    pub token: Address,
    /// Escrowed at open.
    pub deposit: Amount,
    /// The largest single payment (0: no cap).
    #[serde(default)]
    pub per_payment_cap: Amount,
    /// What may be spent per period (0: no budget).
    #[serde(default)]
    pub period_budget: Amount,
    /// The budget's period (0: none).
    #[serde(default)]
    pub period_seconds: u64,
    /// Payments above this wait for the owner (0: none do).
    #[serde(default)]
    pub co_sign_threshold: Amount,
    /// Unix seconds before which it cannot pay (0: at once).
    #[serde(default)]
    pub valid_after: u64,
    /// Unix seconds after which it cannot pay.
    pub expires_at: u64,
    /// The lease the relayer renews while the sandbox heart-beats (0: no lease).
    #[serde(default)]
    pub lease_seconds: u64,
    /// The counterparty allowlist the session may pay (the CounterpartyRegistry's list id).
    pub allowlist_id: Amount,
    /// Pin the allowlist as it is now: counterparties its owner or admins add later (or whose
    /// cap they raise) are not payable by this session, while removals and lowered caps hold
    /// at once. Without it the list is live: the session pays whoever is on it when it pays.
    /// The owner's page says which.
    #[serde(default)]
    pub pin_allowlist: bool,
    /// 32 bytes of the host's own (0x-hex), or text whose keccak-256 is used.
    pub metadata: Option<HashOrText>,
    /// The session key, when the sandbox holds its own and signs its payment intents itself;
    /// by default the relayer makes a custodial one.
    #[schema(value_type = Option<schema::Address>)]
    pub session_key: Option<Address>,
    /// The sandbox provider (`e2b`, `daytona`, `modal`…).
    pub provider: Option<String>,
    /// The provider's id of the sandbox.
    pub sandbox_id: Option<String>,
}

/// What `prepare` answers.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Prepared {
    /// Names this preparation in `POST /v1/sessions`.
    pub prepared_id: String,
    /// The id the session will have on chain.
    pub session_id: String,
    /// The session key's address (custodial: the relayer holds the key).
    #[schema(value_type = schema::Address)]
    pub session_key: Address,
    /// The relayer signer that keeps the lease (and sends the session's transactions).
    #[schema(value_type = schema::Address)]
    pub lease_keeper: Address,
    /// `openSession` and `permit`, each as `eth_signTypedData_v4` takes it; `permit` is null
    /// when the token has no EIP-2612 permit in the expected domain (approve the wallet first
    /// and send an empty `permitSignature`).
    pub typed_data: PreparedTypedData,
    /// The owner's approval page: it shows these terms and has the owner sign them in their
    /// own wallet, then opens the session (register it afterwards for the capability token).
    /// Usable once, until `typedData.openSession.message.deadline`.
    pub approval_url: String,
    /// With a provider: the tags to set on the sandbox (`tags`) and the provider's field for
    /// them (`field`), so that its own records name the session. Evidence only: lifecycle
    /// events are matched by (host, provider, sandbox id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_tags: Option<SandboxTags>,
}

/// The tags that name a session on its sandbox, in the provider's own records.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxTags {
    /// The provider's field for user tags (`metadata` for E2B, `labels` for Daytona…).
    pub field: &'static str,
    /// `bursar_session` and `bursar_host`.
    pub tags: std::collections::BTreeMap<&'static str, String>,
}

/// What the owner signs to open a prepared session.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreparedTypedData {
    /// `OpenSession`, for `POST /v1/sessions`' `ownerSignature`.
    #[schema(value_type = schema::TypedData)]
    pub open_session: Value,
    /// The token's EIP-2612 `Permit` of the deposit, for `permitSignature`; null when the
    /// token has none.
    #[schema(value_type = Option<schema::TypedData>)]
    pub permit: Option<Value>,
}

/// The provider's field for user tags that it stores on a sandbox and echoes back.
fn tag_field(provider: &str) -> &'static str {
    match provider {
        "daytona" => "labels",
        "modal" | "vercel" => "tags",
        "browserbase" => "userMetadata",
        // e2b, runloop, and by default.
        _ => "metadata",
    }
}

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

/// Prepares a session for `host`: a fresh custodial key, the relayer's signer as lease keeper,
/// a random owner nonce (which fixes the session id), and the typed data the owner signs.
pub async fn prepare(app: &App, host: &Host, req: PrepareRequest) -> Result<Prepared, Error> {
    let now = app.now(true).await?;
    if req.owner.is_zero() {
        return Err(Error::invalid(
            "owner",
            "owner must not be the zero address",
        ));
    }
    if req.token.is_zero() {
        return Err(Error::invalid(
            "token",
            "a native-currency deposit cannot be opened gaslessly: open it with the owner's \
             wallet and register it",
        ));
    }
    if req.expires_at <= now {
        return Err(Error::invalid("expiresAt", "expiresAt is in the past"));
    }
    let signers = app.engine.signers();
    if req.session_key.is_some_and(|k| signers.contains(&k)) {
        return Err(Error::invalid(
            "sessionKey",
            "the session key must not be a relayer signer: as the lease keeper it could renew \
             its own lease",
        ));
    }
    for (field, text) in [("provider", &req.provider), ("sandboxId", &req.sandbox_id)] {
        if text.as_ref().is_some_and(|t| t.is_empty() || t.len() > 128) {
            return Err(Error::invalid(
                field,
                format!("{field} must be 1 to 128 bytes"),
            ));
        }
        // The owner reads them on the approval page.
        if text.as_ref().is_some_and(|t| t.chars().any(is_invisible)) {
            return Err(Error::invalid(
                field,
                format!(
                    "{field} holds a control, zero-width or direction-changing character \
                     (U+202E and the like), which would hide or reorder text on the owner's \
                     page"
                ),
            ));
        }
    }
    // The wallet keeps a list's id in 64 bits, and the time it is pinned at in the next 32.
    let list = req.allowlist_id.0;
    if list >> 64 != U256::ZERO {
        return Err(Error::invalid(
            "allowlistId",
            "allowlistId must be a list's id (below 2^64)",
        ));
    }
    let allowlist = match req.pin_allowlist {
        true => list + (U256::from(now) << 64),
        false => list,
    };
    let signer = signers[usize::from(random_bytes::<1>()[0]) % signers.len()];
    let prepared_at_block = app.client.block_number().await?;
    let owner_nonce = U256::from_be_bytes(random_bytes::<32>()) >> 1;
    let deadline = now + app.settings.prepare_ttl.as_secs();
    let terms = OpenSession {
        owner: req.owner,
        sessionKey: Address::ZERO,
        guardian: req.guardian.unwrap_or(signer),
        token: req.token,
        deposit: req.deposit.0,
        perPaymentCap: req.per_payment_cap.0,
        periodBudget: req.period_budget.0,
        periodSeconds: req.period_seconds,
        coSignThreshold: req.co_sign_threshold.0,
        validAfter: req.valid_after,
        expiresAt: req.expires_at,
        leaseSeconds: req.lease_seconds,
        leaseKeeper: signer,
        allowlistId: allowlist,
        metadata: req.metadata.map_or(B256::ZERO, |m| m.hash),
        nonce: owner_nonce,
        deadline: U256::from(deadline),
    };
    let permit = permit_typed_data(app, &terms).await?;
    let (session_key, sealed) = match req.session_key {
        Some(own) => (own, None),
        None => {
            let (key, sealed) = vault::new_sealed_key(&app.master_key, &host.id);
            (key.address(), Some(sealed))
        }
    };
    let terms = OpenSession {
        sessionKey: session_key,
        ..terms
    };
    let open_typed = sign::open_session_typed_data(&terms, app.chain_id, app.contracts.gateway);
    let typed_data = PreparedTypedData {
        open_session: open_typed,
        permit: (!permit.is_null()).then_some(permit),
    };
    let id = session_id_text(session_id(terms.owner, terms.nonce));
    let prepared_id = format!(
        "prep_{}",
        alloy_primitives::hex::encode(random_bytes::<16>())
    );
    let stored = serde_json::to_string(&StoredTerms {
        typed_data: serde_json::to_value(&typed_data).map_err(|_| Error::Internal)?,
        abi: terms.abi_encode().into(),
        prepared_at_block,
    })
    .map_err(|_| Error::Internal)?;
    app.store
        .insert_prepared_session(
            sealed.as_ref(),
            &NewSession {
                id: &id,
                host_id: &host.id,
                prepared_id: &prepared_id,
                owner: &format!("{:#x}", terms.owner),
                session_key: &format!("{session_key:#x}"),
                signer: &format!("{signer:#x}"),
                terms: &stored,
                provider: req.provider.as_deref(),
                sandbox_id: req.sandbox_id.as_deref(),
                expires_at: terms.expiresAt as i64,
            },
            now_ms(),
        )
        .await?;
    tracing::info!(host = %host.id, session = %id, "session prepared");
    let sandbox_tags = req.provider.as_deref().map(|p| SandboxTags {
        field: tag_field(p),
        tags: [
            ("bursar_session", id.clone()),
            ("bursar_host", host.id.clone()),
        ]
        .into(),
    });
    Ok(Prepared {
        approval_url: format!("{}/approve/{prepared_id}", app.public_url()),
        prepared_id,
        session_id: id,
        session_key,
        lease_keeper: signer,
        typed_data,
        sandbox_tags,
    })
}

/// The permit of the deposit to the wallet as typed data, when the token's own
/// `DOMAIN_SEPARATOR` is the one its `name()` and version give (EIP-2612 as most tokens
/// implement it): the version its `version()` answers (USDC's "2"), else "1"; `null`
/// otherwise, rather than typed data the token would not accept.
async fn permit_typed_data(app: &App, terms: &OpenSession) -> Result<Value, Error> {
    let token = terms.token;
    let name = app.client.view(None, token, IFiatToken::nameCall {}).await;
    let separator = app
        .client
        .view(None, token, IFiatToken::DOMAIN_SEPARATORCall {})
        .await;
    let nonce = app
        .client
        .view(None, token, IFiatToken::noncesCall { owner: terms.owner })
        .await;
    let (Ok(name), Ok(separator), Ok(nonce)) = (name, separator, nonce) else {
        return Ok(Value::Null);
    };
    let stated = app
        .client
        .view(None, token, IFiatToken::versionCall {})
        .await;
    let domain = stated
        .into_iter()
        .chain(["1".to_string()])
        .map(|version| {
            alloy_sol_types::Eip712Domain::new(
                Some(name.clone().into()),
                Some(version.into()),
                Some(U256::from(app.chain_id)),
                Some(token),
                None,
            )
        })
        .find(|domain| domain.separator() == separator);
    let Some(domain) = domain else {
        return Ok(Value::Null);
    };
    let permit = Permit {
        owner: terms.owner,
        spender: app.contracts.wallet,
        value: terms.deposit,
        nonce,
        deadline: terms.deadline,
    };
    Ok(sign::permit_typed_data(&permit, &domain))
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
pub(crate) async fn open_prepared(
    app: &App,
    row: &SessionRow,
    owner_signature: Bytes,
    permit_signature: Bytes,
    token_hash: Option<&str>,
) -> Result<Sent, Error> {
    let terms = stored_terms(row)?.terms()?;
    let call = terms.with_sig_call(owner_signature, permit_signature);
    let signer = signer_of(row)?;
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
        .and_then(|t| t.mined_hash);
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
        Some(tx) => app.store.transaction(tx).await?.and_then(|t| t.mined_hash),
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

/// The wallet's `sessionState` of session `id` at the latest block.
async fn session_state(
    app: &App,
    id: U256,
) -> Result<<ISessionWallet::sessionStateCall as alloy_sol_types::SolCall>::Return, Error> {
    let call = ISessionWallet::sessionStateCall { sessionId: id };
    Ok(app.client.view(None, app.contracts.wallet, call).await?)
}

/// Session `id` if `host` prepared it (another host's id is not found).
pub async fn host_session(store: &Store, host: &Host, id: &str) -> Result<SessionRow, Error> {
    let id = crate::kernel::json::parse_session_id(id).ok_or(Error::NotFound)?;
    store
        .session(&session_id_text(id), Some(&host.id))
        .await?
        .ok_or(Error::NotFound)
}

/// What revoking did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    /// The session.
    pub session_id: String,
    /// The capability token is dead (at once).
    pub capability_revoked: bool,
    /// What happened on chain.
    pub on_chain: RevokedOnChain,
    /// The relayer's `revoke` transaction once mined.
    pub transaction_hash: Option<String>,
}

/// What revoking did on chain.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RevokedOnChain {
    /// The relayer's `revoke` is mined.
    Revoked,
    /// Sent, not mined within the wait.
    Submitted,
    /// Revoked or closed on chain already.
    Already,
    /// Never opened on chain.
    NotOpen,
    /// The host named another guardian, who must revoke on chain.
    NotGuardian,
}

/// What closing did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Closing {
    /// The session.
    pub session_id: String,
    /// What goes back to the owner.
    pub refund: Amount,
    /// `closed` once the close is mined, `closing` while it is not (within the wait).
    pub status: ClosingStatus,
    /// The close transaction once mined.
    pub transaction_hash: Option<String>,
}

/// Where a close is.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClosingStatus {
    /// Mined: the refund is paid.
    Closed,
    /// Sent, not yet mined.
    Closing,
}

/// Revokes a session: its capability token at once, and on chain when the relayer is its
/// guardian (waiting, as long as an open does, for that to be mined).
pub async fn revoke(app: &App, host: &Host, id: &str) -> Result<Revoked, Error> {
    let row = host_session(&app.store, host, id).await?;
    app.store.revoke_capability(&row.id, now_ms()).await?;
    let session = parse_id(&row.id)?;
    let terms = stored_terms(&row)?.terms()?;
    let state = session_state(app, session).await?;
    let mut transaction_hash = None;
    let on_chain = if state._0 == SessionStatus::None as u8 {
        RevokedOnChain::NotOpen
    } else if state._0 != SessionStatus::Active as u8 {
        RevokedOnChain::Already
    } else if terms.guardian != signer_of(&row)? {
        RevokedOnChain::NotGuardian
    } else {
        let call = ISessionWallet::revokeCall { sessionId: session };
        let tx = send(
            app,
            &row,
            app.contracts.wallet,
            call.abi_encode(),
            SessionTx::Revoke,
        )
        .await?;
        transaction_hash = mined(app, tx).await?;
        if transaction_hash.is_some() {
            RevokedOnChain::Revoked
        } else {
            RevokedOnChain::Submitted
        }
    };
    tracing::info!(host = %host.id, session = %row.id, ?on_chain, "session revoked");
    Ok(Revoked {
        session_id: row.id,
        capability_revoked: true,
        on_chain,
        transaction_hash,
    })
}

/// Closes a session on chain (the refund goes to the owner): possible once it is revoked,
/// expired or its lease has lapsed; refused with the wallet's error otherwise. Waits (as long
/// as an open does) for the close to be mined.
pub async fn close(app: &App, host: &Host, id: &str) -> Result<Closing, Error> {
    let row = host_session(&app.store, host, id).await?;
    let call = ISessionWallet::closeCall {
        sessionId: parse_id(&row.id)?,
    };
    let refund = app
        .client
        .view(Some(signer_of(&row)?), app.contracts.wallet, call.clone())
        .await?;
    app.store.revoke_capability(&row.id, now_ms()).await?;
    let tx = send(
        app,
        &row,
        app.contracts.wallet,
        call.abi_encode(),
        SessionTx::Close,
    )
    .await?;
    tracing::info!(host = %host.id, session = %row.id, "session closing");
    let transaction_hash = mined(app, tx).await?;
    Ok(Closing {
        session_id: row.id,
        refund: Amount(refund),
        status: if transaction_hash.is_some() {
            ClosingStatus::Closed
        } else {
            ClosingStatus::Closing
        },
        transaction_hash,
    })
}

/// The hash of transaction `tx` once mined, waiting at most [`crate::Settings::open_wait`].
async fn mined(app: &App, tx: i64) -> Result<Option<String>, Error> {
    let look = || async {
        let row = app.store.transaction(tx).await?.ok_or(Error::Internal)?;
        Ok(row.mined_hash.filter(|_| row.receipt_status == Some(1)))
    };
    app.wait_for(app.settings.open_wait, look).await
}

/// What a heartbeat did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    /// The session.
    pub session_id: String,
    /// The lease's expiry on chain now (unix seconds; 0 without a lease).
    pub lease_expires_at: u64,
    /// Whether a renewal was sent (half the lease or more was gone).
    pub renewal_submitted: bool,
    /// The sandbox's state as lifecycle events reported it: while it is `paused` or
    /// `terminated` the lease is not renewed.
    pub sandbox_state: Option<String>,
}

/// Records the sandbox's heartbeat and, once half the lease or less is left, renews the lease
/// on chain (one renewal in flight at a time) — unless the sandbox is reported paused or
/// terminated.
pub async fn heartbeat(app: &App, row: &SessionRow) -> Result<Heartbeat, Error> {
    if row.status != OpenStatus::Open {
        return Err(not_open(row));
    }
    app.store.heartbeat(&row.id, now_ms()).await?;
    let held = matches!(row.sandbox_state.as_deref(), Some("paused" | "terminated"));
    let (lease_expires_at, renewal_submitted) = if held {
        let state = session_state(app, parse_id(&row.id)?).await?;
        (state._6, false)
    } else {
        renew_lease(app, row).await?
    };
    Ok(Heartbeat {
        session_id: row.id.clone(),
        lease_expires_at,
        renewal_submitted,
        sandbox_state: row.sandbox_state.clone(),
    })
}

/// Whether a lease of `lease_seconds` with `left` seconds to run is due for renewal: once half
/// of it or less is left (half exactly too: blocks share seconds on Arbitrum's clock, so a
/// heartbeat within the second after an hour's jump finds exactly half of a two-hour lease
/// left). A session without a lease never is.
fn renewal_due(lease_seconds: u64, left: u64) -> bool {
    lease_seconds > 0 && left <= lease_seconds / 2
}

/// Renews session `row`'s lease on chain once half of it or less is left, or it has lapsed
/// (the keeper may revive it), unless a renewal is in flight. Answers the lease's expiry
/// before the renewal and whether one was sent; the wallet's refusal is the error.
pub(crate) async fn renew_lease(app: &App, row: &SessionRow) -> Result<(u64, bool), Error> {
    let session = parse_id(&row.id)?;
    let terms = stored_terms(row)?.terms()?;
    let state = session_state(app, session).await?;
    let lease_expires_at = state._6;
    // The chain's clock, not ours: it is the one the wallet checks the lease against.
    let chain_now: u64 = app.client.latest_block().await?.timestamp.to();
    let left = lease_expires_at.saturating_sub(chain_now);
    let due = renewal_due(terms.leaseSeconds, left);
    let in_flight = match row.lease_transaction {
        Some(tx) => app
            .store
            .transaction(tx)
            .await?
            .is_some_and(|t| matches!(t.status, TxStatus::Signed | TxStatus::Submitted)),
        None => false,
    };
    if !due || in_flight {
        return Ok((lease_expires_at, false));
    }
    let call = ISessionWallet::renewLeaseCall {
        sessionId: session,
        nonce: U256::ZERO,
        deadline: U256::ZERO,
        signature: Bytes::new(),
    };
    // As the keeper the signer renews directly; a refusal (revoked, expired) is the answer.
    app.client
        .view(Some(signer_of(row)?), app.contracts.wallet, call.clone())
        .await?;
    send(
        app,
        row,
        app.contracts.wallet,
        call.abi_encode(),
        SessionTx::Lease,
    )
    .await?;
    Ok((lease_expires_at, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_renewed_once_half_of_it_is_gone() {
        let two_hours = 7_200;
        assert!(!renewal_due(two_hours, 7_200), "just renewed");
        assert!(!renewal_due(two_hours, 3_601));
        assert!(renewal_due(two_hours, 3_600), "exactly half left");
        assert!(
            renewal_due(two_hours, 0),
            "lapsed: the keeper may revive it"
        );
        assert!(!renewal_due(0, 0), "no lease, nothing to renew");
        assert!(renewal_due(1, 0));
        assert!(!renewal_due(u64::MAX, u64::MAX));
    }

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
