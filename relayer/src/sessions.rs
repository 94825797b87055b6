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
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::{session_id, ISessionWallet, SessionStatus};
use bursar_client::sign;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::hosts::Host;
use crate::store::{now_ms, NewSession, SessionRow, SessionTx, Store, TxStatus};
use crate::submission::Call;
use crate::wire::{session_id_text, Amount, HashOrText};
use crate::{random_bytes, vault, Core};

/// Gas for calls whose cost does not depend on the caller's data (revoke, close, renew); the
/// devnet measures each under 120,000.
const SMALL_CALL_GAS: u64 = 250_000;

/// `POST /v1/sessions/prepare`: the `openSession` terms (amounts as decimal strings in base
/// units) and the sandbox they are for.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrepareRequest {
    /// Whose money: signs the terms and the permit.
    pub owner: Address,
    /// May revoke the session; defaults to the relayer signer the session is pinned to.
    pub guardian: Option<Address>,
    /// The ERC-20 token of the deposit.
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
    /// 32 bytes of the host's own (0x-hex), or text whose keccak-256 is used.
    pub metadata: Option<HashOrText>,
    /// The session key, when the sandbox holds its own and signs its payment intents itself;
    /// by default the relayer makes a custodial one.
    pub session_key: Option<Address>,
    /// The sandbox provider (`e2b`, `daytona`, `modal`…).
    pub provider: Option<String>,
    /// The provider's id of the sandbox.
    pub sandbox_id: Option<String>,
}

/// What `prepare` answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prepared {
    /// Names this preparation in `POST /v1/sessions`.
    pub prepared_id: String,
    /// The id the session will have on chain.
    pub session_id: String,
    /// The session key's address (custodial: the relayer holds the key).
    pub session_key: Address,
    /// The relayer signer that keeps the lease (and sends the session's transactions).
    pub lease_keeper: Address,
    /// `openSession` and `permit`, each as `eth_signTypedData_v4` takes it; `permit` is null
    /// when the token has no EIP-2612 permit in the expected domain (approve the wallet first
    /// and send an empty `permitSignature`).
    pub typed_data: Value,
    /// With a provider: the tags to set on the sandbox (`tags`) and the provider's field for
    /// them (`field`), so that its own records name the session. Evidence only: lifecycle
    /// events are matched by (host, provider, sandbox id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_tags: Option<Value>,
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
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenRequest {
    /// From `prepare`.
    pub prepared_id: String,
    /// The owner's signature of `typedData.openSession` (65 bytes, or an ERC-1271 signature).
    pub owner_signature: Bytes,
    /// The owner's signature of `typedData.permit` (empty when the wallet is approved).
    #[serde(default)]
    pub permit_signature: Bytes,
}

/// `POST /v1/sessions/register`: a prepared session the owner opened with their own wallet.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterRequest {
    /// From `prepare`.
    pub prepared_id: String,
}

/// What opening or registering answers: the sandbox's capability token, shown this once.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Opened {
    /// The on-chain id.
    pub session_id: String,
    /// `Authorization: Bearer <token>` for the sandbox's payments, heartbeats and provenance.
    pub capability_token: String,
    /// `open`, or `opening` when the open was not mined within the wait.
    pub status: String,
    /// The opening transaction once mined (none for a registered session).
    pub transaction_hash: Option<String>,
}

/// The terms as stored: the typed data shown to the owner, the same terms ABI-encoded, and the
/// chain's head when they were prepared (no session with their nonce can have opened before).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredTerms {
    typed_data: Value,
    abi: Bytes,
    /// Absent in rows prepared before it was kept: then from block 0.
    #[serde(default)]
    prepared_at_block: u64,
}

impl StoredTerms {
    fn terms(&self) -> Result<OpenSession, ApiError> {
        OpenSession::abi_decode(&self.abi).map_err(|e| {
            tracing::error!(error = %e, "stored terms do not decode");
            ApiError::Internal
        })
    }
}

/// The terms a session was prepared with.
pub fn terms_of(row: &SessionRow) -> Result<OpenSession, ApiError> {
    stored_terms(row)?.terms()
}

fn stored_terms(row: &SessionRow) -> Result<StoredTerms, ApiError> {
    serde_json::from_str(&row.terms).map_err(|e| {
        tracing::error!(session = %row.id, error = %e, "stored terms do not parse");
        ApiError::Internal
    })
}

/// Prepares a session for `host`: a fresh custodial key, the relayer's signer as lease keeper,
/// a random owner nonce (which fixes the session id), and the typed data the owner signs.
pub async fn prepare(core: &Core, host: &Host, req: PrepareRequest) -> Result<Prepared, ApiError> {
    let now = core.now(true).await?;
    if req.owner.is_zero() {
        return Err(ApiError::invalid(
            "owner",
            "owner must not be the zero address",
        ));
    }
    if req.token.is_zero() {
        return Err(ApiError::invalid(
            "token",
            "a native-currency deposit cannot be opened gaslessly: open it with the owner's \
             wallet and register it",
        ));
    }
    if req.expires_at <= now {
        return Err(ApiError::invalid("expiresAt", "expiresAt is in the past"));
    }
    let signers = core.engine.signers();
    if req.session_key.is_some_and(|k| signers.contains(&k)) {
        return Err(ApiError::invalid(
            "sessionKey",
            "the session key must not be a relayer signer: as the lease keeper it could renew \
             its own lease",
        ));
    }
    for (field, text) in [("provider", &req.provider), ("sandboxId", &req.sandbox_id)] {
        if text.as_ref().is_some_and(|t| t.is_empty() || t.len() > 128) {
            return Err(ApiError::invalid(
                field,
                format!("{field} must be 1 to 128 bytes"),
            ));
        }
    }
    let signer = signers[usize::from(random_bytes::<1>()[0]) % signers.len()];
    let prepared_at_block = core.client.block_number().await?;
    let owner_nonce = U256::from_be_bytes(random_bytes::<32>()) >> 1;
    let deadline = now + core.settings.prepare_ttl.as_secs();
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
        allowlistId: req.allowlist_id.0,
        metadata: req.metadata.map_or(B256::ZERO, |m| m.hash),
        nonce: owner_nonce,
        deadline: U256::from(deadline),
    };
    let permit = permit_typed_data(core, &terms).await?;
    let (session_key, sealed) = match req.session_key {
        Some(own) => (own, None),
        None => {
            let (key, sealed) = vault::new_sealed_key(&core.master_key, &host.id);
            (key.address(), Some(sealed))
        }
    };
    let terms = OpenSession {
        sessionKey: session_key,
        ..terms
    };
    let open_typed = sign::open_session_typed_data(&terms, core.chain_id, core.contracts.gateway);
    let typed_data = json!({ "openSession": open_typed, "permit": permit });
    let id = session_id_text(session_id(terms.owner, terms.nonce));
    let prepared_id = format!(
        "prep_{}",
        alloy_primitives::hex::encode(random_bytes::<16>())
    );
    let stored = serde_json::to_string(&StoredTerms {
        typed_data: typed_data.clone(),
        abi: terms.abi_encode().into(),
        prepared_at_block,
    })
    .map_err(|_| ApiError::Internal)?;
    core.store
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
    tracing::info!(host = %host.id, session = %id, %prepared_id, "session prepared");
    let sandbox_tags = req.provider.as_deref().map(|p| {
        json!({ "field": tag_field(p), "tags": { "bursar_session": id, "bursar_host": host.id } })
    });
    Ok(Prepared {
        prepared_id,
        session_id: id,
        session_key,
        lease_keeper: signer,
        typed_data,
        sandbox_tags,
    })
}

/// The permit of the deposit to the wallet as typed data, when the token's own
/// `DOMAIN_SEPARATOR` is the one its `name()` and version "1" give (EIP-2612 as most tokens
/// implement it); `null` otherwise, rather than typed data the token would not accept.
async fn permit_typed_data(core: &Core, terms: &OpenSession) -> Result<Value, ApiError> {
    let token = terms.token;
    let name = core.client.view(None, token, ITestToken::nameCall {}).await;
    let separator = core
        .client
        .view(None, token, ITestToken::DOMAIN_SEPARATORCall {})
        .await;
    let nonce = core
        .client
        .view(None, token, ITestToken::noncesCall { owner: terms.owner })
        .await;
    let (Ok(name), Ok(separator), Ok(nonce)) = (name, separator, nonce) else {
        return Ok(Value::Null);
    };
    let domain = alloy_sol_types::Eip712Domain::new(
        Some(name.into()),
        Some("1".into()),
        Some(U256::from(core.chain_id)),
        Some(token),
        None,
    );
    if domain.separator() != separator {
        return Ok(Value::Null);
    }
    let permit = Permit {
        owner: terms.owner,
        spender: core.contracts.wallet,
        value: terms.deposit,
        nonce,
        deadline: terms.deadline,
    };
    Ok(sign::permit_typed_data(&permit, &domain))
}

/// Opens a prepared session through the gateway with the owner's signatures, after checking
/// them (and everything else `openSessionWithSig` checks) against the current block; waits up
/// to [`crate::Settings::open_wait`] for it to be mined.
pub async fn open(core: &Core, host: &Host, req: OpenRequest) -> Result<Opened, ApiError> {
    let row = prepared(&core.store, host, &req.prepared_id).await?;
    let terms = stored_terms(&row)?.terms()?;
    let call = terms.with_sig_call(req.owner_signature, req.permit_signature);
    let signer = signer_of(&row)?;
    let data = call.abi_encode();
    // The gateway's own checks, now: a bad signature or an unfunded owner is refused here.
    let gas_limit = core.gas_for(signer, core.contracts.gateway, &data).await?;
    let (token, token_hash) = capability_token();
    let call = Call {
        signer,
        to: core.contracts.gateway,
        data: data.into(),
        value: U256::ZERO,
        gas_limit,
    };
    let (mut db, tx_id) = core.queue(&call).await?;
    if !Store::set_session_opening(&mut db, &row.id, Some(tx_id), &token_hash).await? {
        return Err(already_opened(&row));
    }
    core.commit(db).await?;
    tracing::info!(host = %host.id, session = %row.id, "session opening");
    let status = wait_until_settled(core, &row.id, core.settings.open_wait).await?;
    let transaction_hash = core
        .store
        .transaction(tx_id)
        .await?
        .and_then(|t| t.mined_hash);
    Ok(Opened {
        session_id: row.id,
        capability_token: token,
        status,
        transaction_hash,
    })
}

/// Registers a prepared session the owner opened with their own wallet (`openSession` naming
/// the prepared key): its `SessionOpened` must carry every prepared term, else nothing the
/// host relies on (its guardian's revoke, the lease, the caps) would hold; then it gets a
/// capability token.
pub async fn register(core: &Core, host: &Host, req: RegisterRequest) -> Result<Opened, ApiError> {
    let row = prepared(&core.store, host, &req.prepared_id).await?;
    let stored = stored_terms(&row)?;
    let terms = stored.terms()?;
    let not_opened = || {
        ApiError::conflict(
            "session_not_opened",
            format!(
                "no session {} of owner {} with session key {} is open on chain: the owner \
                 must call openSession with the prepared terms first",
                row.id, terms.owner, terms.sessionKey
            ),
        )
    };
    let id = parse_id(&row.id)?;
    let on_chain = core
        .client
        .view(
            None,
            core.contracts.wallet,
            ISessionWallet::sessionTermsCall { sessionId: id },
        )
        .await?;
    if on_chain._0 != terms.owner || on_chain._1 != terms.sessionKey {
        return Err(not_opened());
    }
    let opened = session_opened(core, id, stored.prepared_at_block)
        .await?
        .ok_or_else(not_opened)?;
    if let Some((field, prepared, on_chain)) = first_difference(&terms, &opened) {
        tracing::warn!(host = %host.id, session = %row.id, field, "registered terms differ");
        return Err(ApiError::TermsMismatch {
            field,
            prepared,
            on_chain,
        });
    }
    let (token, token_hash) = capability_token();
    let mut db = core.store.begin().await?;
    if !Store::set_session_opening(&mut db, &row.id, None, &token_hash).await? {
        return Err(already_opened(&row));
    }
    db.commit().await.map_err(crate::store::StoreError::from)?;
    tracing::info!(host = %host.id, session = %row.id, "session registered");
    Ok(Opened {
        session_id: row.id,
        capability_token: token,
        status: "open".into(),
        transaction_hash: None,
    })
}

/// Session `id`'s `SessionOpened`, looked for from block `from` to the head (in the ranges
/// the node takes).
async fn session_opened(
    core: &Core,
    id: U256,
    from: u64,
) -> Result<Option<ISessionWallet::SessionOpened>, ApiError> {
    use alloy_sol_types::SolEvent;
    let topics = [
        vec![ISessionWallet::SessionOpened::SIGNATURE_HASH],
        vec![B256::from(id)],
    ];
    let head = core.client.block_number().await?;
    let at = [core.contracts.wallet];
    let read = |blocks| core.client.logs_matching(&at, &topics, blocks);
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
async fn prepared(store: &Store, host: &Host, prepared_id: &str) -> Result<SessionRow, ApiError> {
    let row = store
        .prepared_session(&host.id, prepared_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    if row.sandbox_state.as_deref() == Some("terminated") {
        return Err(ApiError::conflict(
            "sandbox_terminated",
            format!(
                "the sandbox of session {} was reported terminated: prepare a new session",
                row.id
            ),
        ));
    }
    Ok(row)
}

fn already_opened(row: &SessionRow) -> ApiError {
    ApiError::conflict(
        "session_already_opened",
        format!("session {} was opened or registered before", row.id),
    )
}

/// Waits until session `id` is no longer `opening`, at most `wait`; returns its status.
async fn wait_until_settled(core: &Core, id: &str, wait: Duration) -> Result<String, ApiError> {
    let status = || async {
        let row = core
            .store
            .session(id, None)
            .await?
            .ok_or(ApiError::Internal)?;
        Ok((row.status != "opening").then_some(row.status))
    };
    Ok(core
        .wait_for(wait, status)
        .await?
        .unwrap_or_else(|| "opening".into()))
}

/// Seconds before a session's expiry from which its capability token is checked against the
/// chain's head, not the engine's last look at it.
const EXPIRY_MARGIN: u64 = 30;

/// A new capability token and its SHA-256 (what is stored).
fn capability_token() -> (String, String) {
    let token = format!(
        "bct_{}",
        alloy_primitives::hex::encode(random_bytes::<32>())
    );
    let hash = token_hash(&token);
    (token, hash)
}

/// The stored form of a bearer token.
pub fn token_hash(token: &str) -> String {
    alloy_primitives::hex::encode(Sha256::digest(token.as_bytes()))
}

/// The session a capability token opens: live (not revoked by the host, not expired).
pub async fn authenticate(core: &Core, bearer: &str) -> Result<SessionRow, ApiError> {
    let session = core
        .store
        .session_by_capability(&token_hash(bearer))
        .await?
        .ok_or(ApiError::Unauthorized)?;
    // By the later of the chain's clock and ours, as the wallet would see it expire. The
    // engine's view of the chain's clock may be a poll old, and a dev chain's runs ahead of
    // ours: close to the expiry, the head is read again.
    let expires_at = session.expires_at as u64;
    let now = core.now(false).await?;
    let mut expired = expires_at <= now;
    if !expired && expires_at <= now.saturating_add(EXPIRY_MARGIN) {
        expired = expires_at <= core.now(true).await?;
    }
    if session.capability_revoked_at.is_some() || expired {
        return Err(ApiError::Unauthorized);
    }
    Ok(session)
}

/// A session as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// The on-chain id.
    pub session_id: String,
    /// The relayer's view: `prepared`, `opening`, `open` or `failed`.
    pub status: String,
    /// The owner.
    pub owner: String,
    /// The custodial session key.
    pub session_key: String,
    /// The relayer signer pinned to it.
    pub lease_keeper: String,
    /// The provider named at prepare.
    pub provider: Option<String>,
    /// The sandbox named at prepare.
    pub sandbox_id: Option<String>,
    /// The terms, as the owner signed them.
    pub terms: Value,
    /// Whether the host revoked the capability token.
    pub capability_revoked: bool,
    /// The sandbox's last heartbeat (unix ms).
    pub last_heartbeat_at: Option<i64>,
    /// When it was prepared (unix ms).
    pub created_at: i64,
    /// `running`, `paused` or `terminated`, as the sandbox's lifecycle events reported it.
    pub sandbox_state: Option<String>,
    /// Whether the relayer is revoking and closing it (its sandbox terminated).
    pub winding_down: bool,
    /// The contracts' state now (only on `GET /v1/sessions/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainState>,
    /// The sandbox's lifecycle events and what each did, newest first (only on
    /// `GET /v1/sessions/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Vec<Value>>,
    /// The usage charged at the host's rates, oldest first (only on `GET /v1/sessions/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metering: Option<Vec<Value>>,
}

/// A session's on-chain state, as the wallet reports it at the latest block.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainState {
    /// `unknown`, `active`, `revoked` or `closed`.
    pub status: &'static str,
    /// Whether it can pay now (active, started, unexpired, lease current).
    pub can_pay: bool,
    /// Escrowed.
    pub deposit: String,
    /// Paid out.
    pub spent: String,
    /// Held by pending payments.
    pub reserved: String,
    /// What may still be paid from the deposit.
    pub remaining_deposit: String,
    /// What may still be paid this period (2^256-1 without a budget).
    pub remaining_period_budget: String,
    /// Spent in the current period.
    pub period_spent: String,
    /// The current period's start (unix seconds).
    pub period_start: u64,
    /// The lease's expiry (unix seconds; 0 without a lease).
    pub lease_expires_at: u64,
}

impl SessionView {
    fn of(row: SessionRow) -> Result<Self, ApiError> {
        let terms = stored_terms(&row)?.typed_data["openSession"]["message"].clone();
        Ok(SessionView {
            session_id: row.id,
            status: row.status,
            owner: crate::wire::eip55(&row.owner),
            session_key: crate::wire::eip55(&row.session_key),
            lease_keeper: crate::wire::eip55(&row.signer),
            provider: row.provider,
            sandbox_id: row.sandbox_id,
            terms,
            capability_revoked: row.capability_revoked_at.is_some(),
            last_heartbeat_at: row.last_heartbeat_at,
            created_at: row.created_at,
            sandbox_state: row.sandbox_state,
            winding_down: row.winding_down != crate::store::WindDown::No,
            chain: None,
            lifecycle: None,
            metering: None,
        })
    }
}

/// `host`'s sessions, newest first (filters: provider, sandbox; paging by `before`).
pub async fn list(
    core: &Core,
    host: &Host,
    provider: Option<&str>,
    sandbox_id: Option<&str>,
    before: Option<i64>,
    limit: Option<i64>,
) -> Result<Vec<SessionView>, ApiError> {
    let limit = limit.unwrap_or(100).clamp(1, 1000);
    let rows = core
        .store
        .sessions(
            &host.id,
            provider,
            sandbox_id,
            before.unwrap_or(i64::MAX),
            limit,
        )
        .await?;
    rows.into_iter().map(SessionView::of).collect()
}

/// One of `host`'s sessions with its on-chain state.
pub async fn get(core: &Core, host: &Host, id: &str) -> Result<SessionView, ApiError> {
    let row = host_session(&core.store, host, id).await?;
    let chain = chain_state(core, parse_id(&row.id)?).await?;
    let lifecycle = crate::lifecycle::history(core, &row.id).await?;
    let mut view = SessionView::of(row)?;
    view.chain = Some(chain);
    view.lifecycle = Some(lifecycle);
    view.metering = Some(crate::metering::charges(core, &view.session_id).await?);
    Ok(view)
}

/// The wallet's view of session `id` now.
pub async fn chain_state(core: &Core, id: U256) -> Result<ChainState, ApiError> {
    let wallet = core.contracts.wallet;
    let (state, authority, deposit_left, period_left) = tokio::try_join!(
        core.client.view(
            None,
            wallet,
            ISessionWallet::sessionStateCall { sessionId: id }
        ),
        core.client.view(
            None,
            wallet,
            ISessionWallet::sessionAuthorityCall { sessionId: id }
        ),
        core.client.view(
            None,
            wallet,
            ISessionWallet::remainingDepositCall { sessionId: id }
        ),
        core.client.view(
            None,
            wallet,
            ISessionWallet::remainingPeriodBudgetCall { sessionId: id }
        ),
    )?;
    Ok(ChainState {
        status: match state._0 {
            s if s == SessionStatus::Active as u8 => "active",
            s if s == SessionStatus::Revoked as u8 => "revoked",
            s if s == SessionStatus::Closed as u8 => "closed",
            _ => "unknown",
        },
        can_pay: authority._2,
        deposit: state._1.to_string(),
        spent: state._2.to_string(),
        reserved: state._3.to_string(),
        remaining_deposit: deposit_left.to_string(),
        remaining_period_budget: period_left.to_string(),
        period_spent: state._4.to_string(),
        period_start: state._5,
        lease_expires_at: state._6,
    })
}

/// The wallet's `sessionState` of session `id` at the latest block.
async fn session_state(
    core: &Core,
    id: U256,
) -> Result<<ISessionWallet::sessionStateCall as alloy_sol_types::SolCall>::Return, ApiError> {
    let call = ISessionWallet::sessionStateCall { sessionId: id };
    Ok(core.client.view(None, core.contracts.wallet, call).await?)
}

/// Session `id` if `host` prepared it (another host's id is not found).
pub async fn host_session(store: &Store, host: &Host, id: &str) -> Result<SessionRow, ApiError> {
    let id = crate::wire::parse_session_id(id).ok_or(ApiError::NotFound)?;
    store
        .session(&session_id_text(id), Some(&host.id))
        .await?
        .ok_or(ApiError::NotFound)
}

/// What revoking did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    /// The session.
    pub session_id: String,
    /// The capability token is dead (at once).
    pub capability_revoked: bool,
    /// `revoked` (the relayer's `revoke` is mined), `submitted` (sent, not mined within the
    /// wait), `already` (revoked or closed on chain), `not_open` (never opened on chain) or
    /// `not_guardian` (the host named another guardian, who must revoke on chain).
    pub on_chain: &'static str,
    /// The relayer's `revoke` transaction once mined.
    pub transaction_hash: Option<String>,
}

/// Revokes a session: its capability token at once, and on chain when the relayer is its
/// guardian (waiting, as long as an open does, for that to be mined).
pub async fn revoke(core: &Core, host: &Host, id: &str) -> Result<Revoked, ApiError> {
    let row = host_session(&core.store, host, id).await?;
    core.store.revoke_capability(&row.id, now_ms()).await?;
    let session = parse_id(&row.id)?;
    let terms = stored_terms(&row)?.terms()?;
    let state = session_state(core, session).await?;
    let mut transaction_hash = None;
    let on_chain = if state._0 == SessionStatus::None as u8 {
        "not_open"
    } else if state._0 != SessionStatus::Active as u8 {
        "already"
    } else if terms.guardian != signer_of(&row)? {
        "not_guardian"
    } else {
        let call = ISessionWallet::revokeCall { sessionId: session };
        let tx = send(
            core,
            &row,
            core.contracts.wallet,
            call.abi_encode(),
            SessionTx::Revoke,
        )
        .await?;
        transaction_hash = mined(core, tx).await?;
        if transaction_hash.is_some() {
            "revoked"
        } else {
            "submitted"
        }
    };
    tracing::info!(host = %host.id, session = %row.id, on_chain, "session revoked");
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
pub async fn close(core: &Core, host: &Host, id: &str) -> Result<Value, ApiError> {
    let row = host_session(&core.store, host, id).await?;
    let call = ISessionWallet::closeCall {
        sessionId: parse_id(&row.id)?,
    };
    let refund = core
        .client
        .view(Some(signer_of(&row)?), core.contracts.wallet, call.clone())
        .await?;
    core.store.revoke_capability(&row.id, now_ms()).await?;
    let tx = send(
        core,
        &row,
        core.contracts.wallet,
        call.abi_encode(),
        SessionTx::Close,
    )
    .await?;
    tracing::info!(host = %host.id, session = %row.id, "session closing");
    let transaction_hash = mined(core, tx).await?;
    Ok(json!({
        "sessionId": row.id,
        "refund": refund.to_string(),
        "status": if transaction_hash.is_some() { "closed" } else { "closing" },
        "transactionHash": transaction_hash,
    }))
}

/// The hash of transaction `tx` once mined, waiting at most [`crate::Settings::open_wait`].
async fn mined(core: &Core, tx: i64) -> Result<Option<String>, ApiError> {
    let look = || async {
        let row = core
            .store
            .transaction(tx)
            .await?
            .ok_or(ApiError::Internal)?;
        Ok(row.mined_hash.filter(|_| row.receipt_status == Some(1)))
    };
    core.wait_for(core.settings.open_wait, look).await
}

/// What a heartbeat did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    /// The session.
    pub session_id: String,
    /// The lease's expiry on chain now (unix seconds; 0 without a lease).
    pub lease_expires_at: u64,
    /// Whether a renewal was sent (the lease was past half its length).
    pub renewal_submitted: bool,
    /// The sandbox's state as lifecycle events reported it: while it is `paused` or
    /// `terminated` the lease is not renewed.
    pub sandbox_state: Option<String>,
}

/// Records the sandbox's heartbeat and, once less than half the lease is left, renews the lease
/// on chain (one renewal in flight at a time) — unless the sandbox is reported paused or
/// terminated.
pub async fn heartbeat(core: &Core, row: &SessionRow) -> Result<Heartbeat, ApiError> {
    if row.status != "open" {
        return Err(not_open(row));
    }
    core.store.heartbeat(&row.id, now_ms()).await?;
    let held = matches!(row.sandbox_state.as_deref(), Some("paused" | "terminated"));
    let (lease_expires_at, renewal_submitted) = if held {
        let state = session_state(core, parse_id(&row.id)?).await?;
        (state._6, false)
    } else {
        renew_lease(core, row).await?
    };
    Ok(Heartbeat {
        session_id: row.id.clone(),
        lease_expires_at,
        renewal_submitted,
        sandbox_state: row.sandbox_state.clone(),
    })
}

/// Renews session `row`'s lease on chain once less than half of it is left, or it has lapsed
/// (the keeper may revive it), unless a renewal is in flight. Answers the lease's expiry
/// before the renewal and whether one was sent; the wallet's refusal is the error.
pub(crate) async fn renew_lease(core: &Core, row: &SessionRow) -> Result<(u64, bool), ApiError> {
    let session = parse_id(&row.id)?;
    let terms = stored_terms(row)?.terms()?;
    let state = session_state(core, session).await?;
    let lease_expires_at = state._6;
    // The chain's clock, not ours: it is the one the wallet checks the lease against.
    let chain_now: u64 = core.client.latest_block().await?.timestamp.to();
    let left = lease_expires_at.saturating_sub(chain_now);
    let due = terms.leaseSeconds > 0 && left < terms.leaseSeconds / 2;
    let in_flight = match row.lease_transaction {
        Some(tx) => core
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
    core.client
        .view(Some(signer_of(row)?), core.contracts.wallet, call.clone())
        .await?;
    send(
        core,
        row,
        core.contracts.wallet,
        call.abi_encode(),
        SessionTx::Lease,
    )
    .await?;
    Ok((lease_expires_at, true))
}

/// Queues `data` to `to` from the session's signer and records it in the session's `which`
/// column, together; returns the transaction's id.
pub(crate) async fn send(
    core: &Core,
    row: &SessionRow,
    to: Address,
    data: Vec<u8>,
    which: SessionTx,
) -> Result<i64, ApiError> {
    let call = Call {
        signer: signer_of(row)?,
        to,
        data: data.into(),
        value: U256::ZERO,
        gas_limit: SMALL_CALL_GAS,
    };
    let (mut db, tx_id) = core.queue(&call).await?;
    Store::set_session_transaction(&mut db, &row.id, which, tx_id).await?;
    core.commit(db).await?;
    Ok(tx_id)
}

/// The conflict of acting on a session that is not open.
pub fn not_open(row: &SessionRow) -> ApiError {
    ApiError::conflict(
        "session_not_open",
        format!("session {} is {}, not open", row.id, row.status),
    )
}

/// The relayer signer a session is pinned to.
pub fn signer_of(row: &SessionRow) -> Result<Address, ApiError> {
    row.signer.parse().map_err(|_| ApiError::Internal)
}

/// A stored session id as a number.
pub fn parse_id(id: &str) -> Result<U256, ApiError> {
    crate::wire::parse_session_id(id).ok_or(ApiError::Internal)
}

#[cfg(test)]
mod tests {
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
