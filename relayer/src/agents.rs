//! ERC-8004 agents registered for owners, gasless as sessions are: the host prepares an agent
//! (its registration file, which the relayer serves, and the typed data the owner signs); the
//! owner consents in their own wallet; a relayer signer calls the Identity Registry's
//! `register(agentURI)` and, once that is mined, hands the agent's token to the owner
//! (`transferFrom`). The owner then holds the passport like any ERC-8004 agent: it sets the
//! agent's `agentWallet` itself (a transfer clears it, so the relayer cannot do it for them).
//!
//! The owner's consent is the EIP-712 `RegisterAgent` (domain "Bursar Relayer", version "1",
//! the chain, the Identity Registry): the file's URI and the keccak-256 of the file as prepared,
//! until a deadline. The relayer checks it (ECDSA, or ERC-1271 for a contract owner such as a
//! Safe) before it sends anything, and adds only `registrations` to the file it serves.

use std::time::Duration;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolError, SolStruct};
use bursar_bindings::erc::IERC1271;
use bursar_bindings::erc8004::IIdentityRegistry;
use bursar_bindings::receipts::IReceiptRegistry;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::engine::random::random_bytes;
use crate::engine::submission::Call;
use crate::hosts::Host;
use crate::kernel::json::{is_invisible, schema, Failure};
use crate::kernel::{App, Error};
use crate::store::{now_ms, AgentRow, NewAgent, Store, TxStatus};

alloy_sol_types::sol! {
    /// An owner's consent that the relayer registers an ERC-8004 agent for it: the
    /// registration file's URI, the keccak-256 of the file as prepared, until `deadline`.
    struct RegisterAgent {
        address owner;
        string agentURI;
        bytes32 registration;
        uint256 deadline;
    }
}

/// How long an owner has to consent (seconds).
const CONSENT_TTL: u64 = 3600;
/// The most services a registration file lists.
const MAX_SERVICES: usize = 8;

/// A service the agent offers, as ERC-8004's registration file lists it.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Service {
    /// `MCP`, `A2A`, `web`, `OASF`…
    pub name: String,
    /// Where (a URL).
    pub endpoint: String,
    /// The protocol's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `POST /v1/agents/prepare`: an agent for `owner`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrepareAgentRequest {
    /// Who will hold the agent (an EOA, or a contract that answers ERC-1271 such as a Safe).
    #[schema(value_type = schema::Address)]
    pub owner: Address,
    /// Its name (1 to 64 bytes).
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// An image's URL.
    #[serde(default)]
    pub image: Option<String>,
    /// Where others reach it (its MCP server, its web page…).
    #[serde(default)]
    pub services: Vec<Service>,
}

/// `POST /v1/agents`: the owner's consent to a prepared agent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterAgentRequest {
    /// `agt_…`, from prepare.
    pub agent_ref: String,
    /// The owner's signature of `typedData` (`eth_signTypedData_v4`).
    #[schema(value_type = String)]
    pub owner_signature: Bytes,
}

/// An agent as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Agent)]
pub struct AgentView {
    /// `agt_…`.
    pub agent_ref: String,
    /// Where it is.
    pub status: AgentStatus,
    /// Who holds it (once `registered`).
    #[schema(value_type = schema::Address)]
    pub owner: Address,
    /// Its ERC-8004 id (decimal), once its registration is mined.
    pub agent_id: Option<String>,
    /// Its registration file (what the relayer serves at `registrationUrl`).
    pub registration_url: String,
    /// The file as the owner consents to it.
    #[schema(value_type = Object)]
    pub registration: Value,
    /// What the owner signs (`RegisterAgent`, for `eth_signTypedData_v4`), while `prepared`.
    #[schema(value_type = Option<schema::TypedData>)]
    pub typed_data: Option<Value>,
    /// Why it failed.
    pub error: Option<Failure>,
    /// When it was prepared (unix ms).
    pub created_at: i64,
}

/// Where an agent is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Waiting for the owner's consent.
    Prepared,
    /// Its registration is on its way.
    Registering,
    /// Registered; its token is on its way to the owner.
    Transferring,
    /// The owner holds it.
    Registered,
    /// Refused or reverted.
    Failed,
}

fn status(a: &AgentRow) -> AgentStatus {
    let failed = |s: Option<TxStatus>| s == Some(TxStatus::Failed);
    match a {
        _ if a.error_code.is_some() || failed(a.register_status) || failed(a.transfer_status) => {
            AgentStatus::Failed
        }
        _ if a.registered_at.is_some() => AgentStatus::Registered,
        _ if a.agent_id.is_some() => AgentStatus::Transferring,
        _ if a.register_transaction.is_some() => AgentStatus::Registering,
        _ => AgentStatus::Prepared,
    }
}

/// Where the relayer serves agent `id`'s registration file.
fn registration_url(app: &App, id: &str) -> String {
    format!("{}/agents/{id}/registration.json", app.public_url())
}

/// The Identity Registry the ReceiptRegistry names (the chain's ERC-8004 registries), or
/// `agents_unavailable` where there is none.
pub async fn identity_registry(app: &App) -> Result<Address, Error> {
    let named = app
        .client
        .view(
            None,
            app.contracts.receipts,
            IReceiptRegistry::identityRegistryCall {},
        )
        .await?;
    if named.is_zero() {
        return Err(Error::conflict(
            "agents_unavailable",
            "this chain has no ERC-8004 registries (the ReceiptRegistry names none)",
        ));
    }
    Ok(named)
}

/// Who holds agent `agent_id` and where it is paid (`agentWallet`, zero when unset), read
/// together at the latest block; an unknown agent is the caller's mistake in `field`.
pub async fn holder_and_wallet(
    app: &App,
    agent_id: U256,
    field: &str,
) -> Result<(Address, Address), Error> {
    let registry = identity_registry(app).await?;
    let block = app.client.block_number().await?;
    let owner = app
        .client
        .view_at(
            None,
            registry,
            IIdentityRegistry::ownerOfCall { tokenId: agent_id },
            Some(block),
        )
        .await;
    // An unknown agent reverts with ERC-721's error, which is the caller's mistake.
    let unknown = IIdentityRegistry::ERC721NonexistentToken::SELECTOR;
    let owner = match owner {
        Err(e) if e.revert_data().is_some_and(|d| d.starts_with(&unknown)) => {
            return Err(Error::invalid(
                field,
                format!("there is no agent #{agent_id}"),
            ))
        }
        other => other?,
    };
    let wallet = app
        .client
        .view_at(
            None,
            registry,
            IIdentityRegistry::getAgentWalletCall { agentId: agent_id },
            Some(block),
        )
        .await?;
    Ok((owner, wallet))
}

/// The `RegisterAgent` typed data of `a` under the Identity Registry `registry`, and its
/// digest.
fn consent(app: &App, a: &AgentRow, registry: Address) -> (Value, B256) {
    let domain = alloy_sol_types::eip712_domain! {
        name: "Bursar Relayer",
        version: "1",
        chain_id: app.chain_id,
        verifying_contract: registry,
    };
    let message = RegisterAgent {
        owner: a.owner,
        agentURI: registration_url(app, &a.id),
        registration: keccak256(a.registration.as_bytes()),
        deadline: U256::from(a.deadline),
    };
    let digest = message.eip712_signing_hash(&domain);
    let typed = json!({
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"},
            ],
            "RegisterAgent": [
                {"name": "owner", "type": "address"},
                {"name": "agentURI", "type": "string"},
                {"name": "registration", "type": "bytes32"},
                {"name": "deadline", "type": "uint256"},
            ],
        },
        "primaryType": "RegisterAgent",
        "domain": {
            "name": "Bursar Relayer", "version": "1", "chainId": app.chain_id,
            "verifyingContract": registry,
        },
        "message": {
            "owner": message.owner, "agentURI": message.agentURI,
            "registration": message.registration, "deadline": a.deadline,
        },
    });
    (typed, digest)
}

async fn view(app: &App, a: AgentRow) -> Result<AgentView, Error> {
    let status = status(&a);
    let typed_data = match status {
        AgentStatus::Prepared => Some(consent(app, &a, identity_registry(app).await?).0),
        _ => None,
    };
    Ok(AgentView {
        status,
        registration_url: registration_url(app, &a.id),
        registration: serde_json::from_str(&a.registration).unwrap_or(Value::Null),
        typed_data,
        error: Failure::stored(a.error_code.as_ref(), a.error_details.as_deref()),
        owner: a.owner,
        agent_id: a.agent_id.map(|i| i.to_string()),
        agent_ref: a.id,
        created_at: a.created_at,
    })
}

/// Checks a text field people read: bounded, and nothing that hides or reorders text.
fn text(field: &str, value: &str, max: usize) -> Result<(), Error> {
    if value.len() > max {
        return Err(Error::invalid(
            field,
            format!("{field} is at most {max} bytes"),
        ));
    }
    if value.chars().any(is_invisible) {
        return Err(Error::invalid(
            field,
            format!("{field} holds a control, zero-width or direction-changing character"),
        ));
    }
    Ok(())
}

/// Prepares an agent for `host`: its registration file and the typed data its owner signs.
pub async fn prepare(app: &App, host: &Host, req: PrepareAgentRequest) -> Result<AgentView, Error> {
    identity_registry(app).await?;
    if req.owner.is_zero() {
        return Err(Error::invalid(
            "owner",
            "owner must not be the zero address",
        ));
    }
    if req.name.is_empty() {
        return Err(Error::invalid("name", "name must not be empty"));
    }
    text("name", &req.name, 64)?;
    text("description", &req.description, 1024)?;
    text("image", req.image.as_deref().unwrap_or_default(), 512)?;
    if req.services.len() > MAX_SERVICES {
        return Err(Error::invalid(
            "services",
            format!("at most {MAX_SERVICES} services"),
        ));
    }
    for s in &req.services {
        text("services.name", &s.name, 32)?;
        text(
            "services.version",
            s.version.as_deref().unwrap_or_default(),
            32,
        )?;
        text("services.endpoint", &s.endpoint, 512)?;
        let url = reqwest::Url::parse(&s.endpoint)
            .map_err(|e| Error::invalid("services.endpoint", format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "https" | "http") {
            return Err(Error::invalid("services.endpoint", "an http(s) URL"));
        }
    }
    // ERC-8004's registration file; `registrations` is added when served, once known.
    let mut file = json!({
        "type": "https://eips.ethereum.org/EIPS/eip-8004#registration-v1",
        "name": req.name,
        "description": req.description,
        "services": req.services,
        "x402Support": true,
        "active": true,
        "supportedTrust": ["reputation"],
    });
    if let Some(image) = req.image.filter(|i| !i.is_empty()) {
        file["image"] = json!(image);
    }
    let id = format!(
        "agt_{}",
        alloy_primitives::hex::encode(random_bytes::<16>())
    );
    let deadline = app.now(false).await? + CONSENT_TTL;
    let new = NewAgent {
        id: &id,
        host_id: &host.id,
        owner: req.owner,
        registration: &file.to_string(),
        deadline: deadline as i64,
    };
    app.store.insert_agent(&new, now_ms()).await?;
    get(app, host, &id, Duration::ZERO).await
}

/// With the owner's consent, registers the prepared agent `req.agent_ref` (a relayer signer
/// sends `register`; the settlement hands the token over once it is mined).
pub async fn register(
    app: &App,
    host: &Host,
    req: RegisterAgentRequest,
) -> Result<AgentView, Error> {
    let a = app
        .store
        .agent(&req.agent_ref, Some(&host.id))
        .await?
        .ok_or(Error::NotFound)?;
    if status(&a) != AgentStatus::Prepared {
        return view(app, a).await;
    }
    if app.now(false).await? > a.deadline as u64 {
        return Err(Error::conflict(
            "consent_expired",
            "the owner's consent window has passed: prepare the agent again",
        ));
    }
    let registry = identity_registry(app).await?;
    let (_, digest) = consent(app, &a, registry);
    if !signed_by(app, a.owner, digest, &req.owner_signature).await? {
        return Err(Error::invalid(
            "ownerSignature",
            "not the owner's signature of the RegisterAgent typed data",
        ));
    }
    let signers = app.engine.signers();
    let signer = signers[usize::from(random_bytes::<1>()[0]) % signers.len()];
    let data = IIdentityRegistry::register_1Call {
        agentURI: registration_url(app, &a.id),
    }
    .abi_encode();
    let gas_limit = app.gas_for(signer, registry, &data).await?;
    let (mut db, tx) = app
        .queue(&Call {
            signer,
            to: registry,
            data: data.into(),
            value: U256::ZERO,
            gas_limit,
        })
        .await?;
    // Two requests at once with the same consent: one registers, the other's transaction is
    // never stored.
    if !Store::set_agent_registering(&mut db, &a.id, signer, tx).await? {
        drop(db);
        return get(app, host, &a.id, Duration::ZERO).await;
    }
    app.commit(db).await?;
    tracing::info!(agent = %a.id, owner = %a.owner, "agent registration queued");
    get(app, host, &a.id, Duration::ZERO).await
}

/// Whether `signature` is `owner`'s of `digest`: ECDSA for an account, ERC-1271 for a
/// contract.
async fn signed_by(
    app: &App,
    owner: Address,
    digest: B256,
    signature: &[u8],
) -> Result<bool, Error> {
    if app.client.code(owner).await?.is_empty() {
        let recovered = alloy_primitives::Signature::try_from(signature)
            .ok()
            .and_then(|s| s.recover_address_from_prehash(&digest).ok());
        return Ok(recovered == Some(owner));
    }
    let ask = IERC1271::isValidSignatureCall {
        hash: digest,
        signature: Bytes::copy_from_slice(signature),
    };
    Ok(app
        .client
        .view(None, owner, ask)
        .await
        .is_ok_and(|magic| magic.0 == IERC1271::isValidSignatureCall::SELECTOR))
}

/// Agent `id` of `host`; with `wait`, once the owner holds it or it failed, or when `wait`
/// passes, whichever is first.
pub async fn get(app: &App, host: &Host, id: &str, wait: Duration) -> Result<AgentView, Error> {
    let look = || async {
        let a = app
            .store
            .agent(id, Some(&host.id))
            .await?
            .ok_or(Error::NotFound)?;
        let settled = matches!(status(&a), AgentStatus::Registered | AgentStatus::Failed);
        Ok(settled.then_some(a))
    };
    if let Some(a) = app.wait_for(wait, look).await? {
        return view(app, a).await;
    }
    let a = app
        .store
        .agent(id, Some(&host.id))
        .await?
        .ok_or(Error::NotFound)?;
    view(app, a).await
}

/// Agent `id`'s registration file, as anyone reads it: the file the owner consented to, with
/// its `registrations` once the agent has an id.
pub async fn registration_file(app: &App, id: &str) -> Result<Value, Error> {
    let a = app.store.agent(id, None).await?.ok_or(Error::NotFound)?;
    if status(&a) == AgentStatus::Prepared {
        return Err(Error::NotFound);
    }
    let mut file: Value = serde_json::from_str(&a.registration).map_err(|_| Error::Internal)?;
    if let Some(agent_id) = a.agent_id {
        let registry = identity_registry(app).await?;
        file["registrations"] = json!([{
            "agentId": agent_id.saturating_to::<u64>(),
            "agentRegistry": format!("eip155:{}:{}", app.chain_id, registry),
        }]);
    }
    Ok(file)
}

/// Hands registered agent `a` (id `agent_id`) to its owner: queues `transferFrom`.
pub(crate) async fn hand_over(app: &App, a: &AgentRow, agent_id: U256) -> Result<(), Error> {
    let registry = identity_registry(app).await?;
    let signer = a.signer.ok_or(Error::Internal)?;
    let data = IIdentityRegistry::transferFromCall {
        from: signer,
        to: a.owner,
        tokenId: agent_id,
    }
    .abi_encode();
    let gas_limit = app.gas_for(signer, registry, &data).await?;
    let (mut db, tx) = app
        .queue(&Call {
            signer,
            to: registry,
            data: data.into(),
            value: U256::ZERO,
            gas_limit,
        })
        .await?;
    Store::set_agent_handover(&mut db, &a.id, agent_id, tx).await?;
    app.commit(db).await
}

/// The most hand-overs sent for one agent.
pub(crate) const MAX_HANDOVERS: i64 = 3;

/// What becomes of an agent whose hand-over did not land, by who holds it now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AfterHandOver {
    /// Its owner: an earlier hand-over landed after all.
    Held,
    /// The relayer's signer still: send it again.
    Again,
    /// Not again: why.
    Stuck(String),
}

/// The pure rule after a hand-over of `a` (sent `attempts` times) did not land.
pub(crate) fn after_failed_hand_over(a: &AgentRow, holder: Address) -> AfterHandOver {
    let signer = a.signer.unwrap_or_default();
    match holder {
        h if h == a.owner => AfterHandOver::Held,
        h if h == signer && a.handover_attempts < MAX_HANDOVERS => AfterHandOver::Again,
        h if h == signer => AfterHandOver::Stuck(format!(
            "the relayer's signer {signer} still holds it after {} hand-overs",
            a.handover_attempts
        )),
        h => AfterHandOver::Stuck(format!(
            "{h} holds it: neither its owner nor the relayer's signer"
        )),
    }
}

/// Who holds agent `agent_id` now.
pub(crate) async fn holder(app: &App, agent_id: U256) -> Result<Address, Error> {
    Ok(holder_and_wallet(app, agent_id, "agentId").await?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(attempts: i64) -> AgentRow {
        AgentRow {
            id: "agt_1".into(),
            host_id: "host_1".into(),
            owner: Address::repeat_byte(0x0a),
            registration: "{}".into(),
            deadline: 0,
            signer: Some(Address::repeat_byte(0x5e)),
            register_transaction: Some(1),
            register_status: None,
            agent_id: Some(U256::from(7)),
            transfer_transaction: Some(2),
            transfer_status: None,
            handover_attempts: attempts,
            registered_at: None,
            error_code: None,
            error_details: None,
            created_at: 0,
        }
    }

    #[test]
    fn a_hand_over_that_did_not_land_is_sent_again_while_the_signer_holds_the_agent() {
        let (owner, signer) = (Address::repeat_byte(0x0a), Address::repeat_byte(0x5e));
        assert_eq!(
            after_failed_hand_over(&agent(1), owner),
            AfterHandOver::Held
        );
        assert_eq!(
            after_failed_hand_over(&agent(1), signer),
            AfterHandOver::Again
        );
        assert_eq!(
            after_failed_hand_over(&agent(MAX_HANDOVERS - 1), signer),
            AfterHandOver::Again
        );
        let AfterHandOver::Stuck(why) = after_failed_hand_over(&agent(MAX_HANDOVERS), signer)
        else {
            panic!("sent again past the limit");
        };
        assert!(why.contains("still holds it after 3 hand-overs"), "{why}");
        let stranger = Address::repeat_byte(0x77);
        let AfterHandOver::Stuck(why) = after_failed_hand_over(&agent(1), stranger) else {
            panic!("sent again while a stranger holds it");
        };
        assert!(
            why.contains("neither its owner nor the relayer's signer"),
            "{why}"
        );
    }
}
