//! Agents that sell, and buyers that check who they pay. An ERC-8004 agent is paid at its
//! `agentWallet`, which only its owner sets, with the wallet's own consent: so a 402 that sells
//! for an agent is honest when its `payTo` is that wallet.
//!
//! * A seller's session asks [`offer`] (`POST /v1/x402/offer`) for the `PAYMENT-REQUIRED` of
//!   something it made: both schemes this facilitator settles, paid to its agent's wallet, in
//!   its token, naming the agent in the [`EXTENSION`] extension.
//! * A buyer's payment ([`super::pay`]) keeps only the options that pay the agent's wallet when
//!   the 402 names an agent, or when the buyer names the agent it means to buy from
//!   ([`paying_the_agent`]): a 402 that names one agent and asks to pay another's wallet (or
//!   anyone's) is refused, nothing signed.

use alloy_primitives::{Address, U256};
use base64::Engine as _;
use bursar_bindings::erc8004::session_agent;
use bursar_bindings::evm::IFiatToken;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::types::{network, PaymentRequired, Requirements, Resource, EXACT, SCHEME, VERSION};
use crate::kernel::json::Amount;
use crate::kernel::session::terms_of;
use crate::kernel::{App, Error};
use crate::store::SessionRow;

/// The x402 extension a 402 names its seller's ERC-8004 agent in:
/// `{"info": {"agentRegistry": "eip155:<chain>:<Identity Registry>", "agentId": "<id>"}}`,
/// ERC-8004's own way of naming an agent (its registration file's `registrations`).
pub const EXTENSION: &str = "erc8004-agent";

/// How long a payment of an offer stays valid, by default.
const DEFAULT_TIMEOUT_SECONDS: u64 = 120;

/// `POST /v1/x402/offer`: what the seller's session sells.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OfferRequest {
    /// The price, in base units of the session's token.
    pub amount: Amount,
    /// Where it is served (the URL the buyer requests; its payment's purpose names it).
    pub url: String,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Its media type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// How long a payment for it stays valid (seconds; default 120).
    #[serde(default)]
    pub max_timeout_seconds: Option<u64>,
}

/// What `POST /v1/x402/offer` answers.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Offer {
    /// The `PAYMENT-REQUIRED` header of the 402 to answer with (base64 JSON).
    pub payment_required_header: String,
    /// The same, decoded (x402's `PaymentRequired`).
    #[schema(value_type = Object)]
    pub payment_required: Value,
    /// The agent paid (decimal id).
    pub agent_id: String,
    /// Its wallet: every option's `payTo`.
    pub pay_to: String,
}

/// The 402 that sells `req` for `session`'s agent, paid at its wallet in the session's token.
pub async fn offer(app: &App, session: &SessionRow, req: OfferRequest) -> Result<Offer, Error> {
    let terms = terms_of(session)?;
    let Some(agent) = session_agent(terms.metadata) else {
        return Err(Error::conflict(
            "session_has_no_agent",
            "this session runs for no agent: prepare it with agentId to sell for one",
        ));
    };
    if req.amount.0.is_zero() {
        return Err(Error::invalid("amount", "a price above zero"));
    }
    if !(req.url.starts_with("https://") || req.url.starts_with("http://")) || req.url.len() > 2048
    {
        return Err(Error::invalid(
            "url",
            "an http(s) URL of at most 2048 bytes",
        ));
    }
    let (holder, wallet) = crate::agents::holder_and_wallet(app, agent, "agentId").await?;
    if holder != session.owner {
        return Err(Error::conflict(
            "agent_not_owned",
            format!("agent #{agent} is now held by {holder}, not by this session's owner"),
        ));
    }
    if wallet.is_zero() {
        return Err(Error::conflict(
            "agent_has_no_wallet",
            format!("agent #{agent} has no agentWallet: its owner sets one (setAgentWallet, with the wallet's consent) to be paid"),
        ));
    }
    let token = terms.token;
    let eip3009 = IFiatToken::authorizationStateCall {
        authorizer: Address::ZERO,
        nonce: Default::default(),
    };
    let (name, version, authorizations) = (
        app.client.view(None, token, IFiatToken::nameCall {}).await,
        app.client
            .view(None, token, IFiatToken::versionCall {})
            .await,
        app.client.view(None, token, eip3009).await,
    );
    let option = |scheme: &str, extra: Option<Value>| Requirements {
        scheme: scheme.to_owned(),
        network: network(app.chain_id),
        amount: req.amount.0.to_string(),
        asset: token.to_checksum(None),
        pay_to: wallet.to_checksum(None),
        max_timeout_seconds: req.max_timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS),
        extra,
    };
    let mut accepts = vec![option(SCHEME, None)];
    // `exact` is EIP-3009's `transferWithAuthorization` under the token's EIP-712 name and
    // version: offered when the token has them all.
    if let (Ok(name), Ok(version), Ok(_)) = (name, version, authorizations) {
        accepts.push(option(
            EXACT,
            Some(json!({ "name": name, "version": version })),
        ));
    }
    let required = PaymentRequired {
        x402_version: VERSION,
        error: None,
        resource: Resource {
            url: req.url,
            description: req.description,
            mime_type: req.mime_type,
        },
        accepts,
        extensions: Some(json!({ EXTENSION: { "info": {
            "agentRegistry": registry_name(app).await?,
            "agentId": agent.to_string(),
        } } })),
    };
    let value = serde_json::to_value(&required).map_err(|_| Error::Internal)?;
    Ok(Offer {
        payment_required_header: base64::engine::general_purpose::STANDARD
            .encode(value.to_string()),
        payment_required: value,
        agent_id: agent.to_string(),
        pay_to: wallet.to_checksum(None),
    })
}

/// This chain's Identity Registry as ERC-8004 names it: `eip155:<chain>:<address>`.
async fn registry_name(app: &App) -> Result<String, Error> {
    let registry = crate::agents::identity_registry(app).await?;
    Ok(format!("{}:{}", network(app.chain_id), registry))
}

/// The agent a 402 says it sells for, from its [`EXTENSION`] extension.
fn named_agent(required: &PaymentRequired) -> Result<Option<(String, U256)>, Error> {
    let Some(info) = required
        .extensions
        .as_ref()
        .and_then(|e| e.get(EXTENSION))
        .map(|e| &e["info"])
    else {
        return Ok(None);
    };
    let bad = || {
        Error::invalid(
            "paymentRequired.extensions",
            format!("the {EXTENSION} extension's info needs agentRegistry and a decimal agentId"),
        )
    };
    let registry = info["agentRegistry"].as_str().ok_or_else(bad)?;
    let agent = info["agentId"]
        .as_str()
        .and_then(|id| U256::from_str_radix(id, 10).ok())
        .ok_or_else(bad)?;
    Ok(Some((registry.to_owned(), agent)))
}

/// `required`'s options that pay the wallet of the agent it names and of `expected` (the agent
/// the buyer means to buy from), when either is given; a refusal when none does.
pub(super) async fn paying_the_agent(
    app: &App,
    required: &mut PaymentRequired,
    expected: Option<U256>,
) -> Result<(), Error> {
    let named = named_agent(required)?;
    if let Some((registry, _)) = &named {
        let ours = registry_name(app).await?;
        if !registry.eq_ignore_ascii_case(&ours) {
            return Err(Error::conflict(
                "x402_unknown_agent_registry",
                format!("the 402 names an agent of {registry}, not of this chain's registry {ours}: nothing paid"),
            ));
        }
    }
    if let (Some((_, named)), Some(expected)) = (&named, expected) {
        if *named != expected {
            return Err(Error::conflict(
                "x402_not_the_agent",
                format!("the 402 sells for agent #{named}, not agent #{expected}: nothing paid"),
            ));
        }
    }
    let Some(agent) = expected.or(named.map(|(_, id)| id)) else {
        return Ok(());
    };
    let (_, wallet) = crate::agents::holder_and_wallet(app, agent, "agentId").await?;
    let asked: Vec<String> = required.accepts.iter().map(|r| r.pay_to.clone()).collect();
    required
        .accepts
        .retain(|r| !wallet.is_zero() && r.pay_to.parse::<Address>().ok() == Some(wallet));
    if required.accepts.is_empty() {
        return Err(Error::conflict(
            "x402_not_the_agents_wallet",
            format!(
                "agent #{agent} is paid at {}, but the 402 asks to pay {}: nothing paid",
                if wallet.is_zero() {
                    "no wallet (none is set)".to_owned()
                } else {
                    wallet.to_string()
                },
                asked.join(", ")
            ),
        ));
    }
    Ok(())
}
