//! A session prepared for its owner's signature: a fresh custodial key, the relayer's signer
//! as lease keeper, a random owner nonce, and the typed data the owner signs.

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolValue;
use bursar_bindings::eip712::{OpenSession, Permit};
use bursar_bindings::erc8004::session_metadata;
use bursar_bindings::evm::IFiatToken;
use bursar_bindings::wallet::session_id;
use bursar_client::sign;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::engine::random::random_bytes;
use crate::engine::vault;
use crate::hosts::Host;
use crate::kernel::json::{is_invisible, schema, session_id_text, Amount, HashOrText};
use crate::kernel::session::StoredTerms;
use crate::kernel::{App, Error};
use crate::store::{now_ms, NewSession};

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
    /// The ERC-8004 agent the session runs for (decimal id), held by `owner`: the session's
    /// `metadata` names it (`"ERC-8004"` and the id), so the owner's signature binds the
    /// session to the agent and the indexer lists the session in the agent's passport.
    /// Instead of `metadata`.
    pub agent_id: Option<Amount>,
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

/// The metadata of a session of `owner`'s agent `agent`: refused unless `owner` holds it now
/// (the indexer checks it again at the session's opening).
async fn agent_metadata(app: &App, agent: U256, owner: Address) -> Result<B256, Error> {
    let metadata = session_metadata(agent)
        .ok_or_else(|| Error::invalid("agentId", format!("there is no agent #{agent}")))?;
    let (holder, _) = crate::agents::holder_and_wallet(app, agent, "agentId").await?;
    if holder != owner {
        return Err(Error::invalid(
            "agentId",
            format!("agent #{agent} is held by {holder}, not by the session's owner {owner}"),
        ));
    }
    Ok(metadata)
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
    let metadata = match (req.agent_id, req.metadata) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(
                "agentId",
                "agentId and metadata are exclusive: an agent's session's metadata names it",
            ))
        }
        (Some(agent), None) => agent_metadata(app, agent.0, req.owner).await?,
        (None, metadata) => metadata.map_or(B256::ZERO, |m| m.hash),
    };
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
        metadata,
        nonce: owner_nonce,
        deadline: U256::from(deadline),
    };
    let permit = permit_typed_data(app, &terms).await?;
    let (session_key, sealed) = match req.session_key {
        Some(own) => (own, None),
        None => {
            let (key, sealed) = vault::new_sealed_key(&app.custody.master_key, &host.id);
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
