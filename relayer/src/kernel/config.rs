//! What a relayer runs with: its node, database, keys, contracts, and timeouts and limits with
//! safe defaults.

use std::net::SocketAddr;
use std::time::Duration;

use alloy_primitives::Address;
use bursar_client::Key;

use crate::engine::submission::EngineConfig;
use crate::engine::vault::MasterKey;
use bursar_egress as egress;

/// Runloop's API, polled for its devboxes' states.
pub const RUNLOOP_URL: &str = "https://api.runloop.ai";
/// Browserbase's API, polled for its sessions' states.
pub const BROWSERBASE_URL: &str = "https://api.browserbase.com";

/// What a relayer runs with.
pub struct Config {
    /// The chain's JSON-RPC endpoint.
    pub rpc: String,
    /// `sqlite://FILE` or `postgres://…`.
    pub db: String,
    /// Where the API listens (port 0: any free port).
    pub listen: SocketAddr,
    /// The relayer's own keys, which send its transactions and pay their gas.
    pub signers: Vec<Key>,
    /// How the engine paces itself.
    pub engine: EngineConfig,
    /// The deployed contracts.
    pub contracts: Contracts,
    /// Seals custodial session keys at rest.
    pub master_key: MasterKey,
    /// Timeouts and lifetimes.
    pub settings: Settings,
}

/// The deployed Bursar contracts the relayer drives (from a deployment record).
#[derive(Clone, Copy, Debug)]
pub struct Contracts {
    /// The SessionWallet.
    pub wallet: Address,
    /// The SessionGateway (gasless opens and decisions).
    pub gateway: Address,
    /// The ReceiptRegistry (provenance).
    pub receipts: Address,
    /// The CounterpartyRegistry (allowlists).
    pub counterparties: Address,
    /// The block the CounterpartyRegistry was deployed in: allowlists' entries are found from
    /// its events since then.
    pub counterparties_since: u64,
}

/// Timeouts and lifetimes, with safe defaults.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How long `POST /v1/sessions` waits for the open to be mined before answering `opening`.
    pub open_wait: Duration,
    /// How long a signed payment intent or provenance record stays valid (its `deadline`).
    pub intent_ttl: Duration,
    /// How long an owner's `OpenSession` signature stays valid after `prepare`.
    pub prepare_ttl: Duration,
    /// Failed webhook attempts before a delivery is dead-lettered.
    pub webhook_attempts: u32,
    /// The wait after a failed webhook attempt, doubled with each further failure (at most
    /// an hour).
    pub webhook_backoff: Duration,
    /// Requests per second per host or session (bursts of twice that); `None`: no limit.
    pub rate_limit: Option<f64>,
    /// Requests per second per client address without credentials (provider webhooks, the
    /// x402 facilitator, health); `None`: no limit. Behind a proxy every client shares the
    /// proxy's address: raise it there.
    pub client_rate_limit: Option<f64>,
    /// Failed authentications per second per client address; over it, further credentials
    /// from the address are refused without being looked up. `None`: no limit.
    pub auth_failure_limit: Option<f64>,
    /// A relayer process that has not beaten for this long is taken for dead: a retry takes
    /// over the idempotency keys of its unanswered requests. It beats four times as often.
    pub instance_timeout: Duration,
    /// How often providers without webhooks (Runloop, Browserbase) are polled.
    pub poll_interval: Duration,
    /// Runloop's API.
    pub runloop_url: String,
    /// Browserbase's API.
    pub browserbase_url: String,
    /// Where hosts' webhook endpoints may point (public addresses; loopback only when allowed,
    /// for a devnet and the tests).
    pub webhook_egress: egress::Policy,
    /// Where the `fetch` tool of agents' MCP server (`/mcp`) may reach: public addresses;
    /// loopback only when allowed (a devnet), never the rest.
    pub fetch_egress: egress::Policy,
    /// How many sessions agents' MCP server (`/mcp`) keeps per token and in all, and how long
    /// an idle one lives.
    pub mcp_sessions: bursar_agent::mcp::sessions::Bounds,
    /// An indexer of the same contracts (`http://…`), for the `session_history` tool and the
    /// approval pages' links to a session's page in its explorer.
    pub indexer_url: Option<String>,
    /// Where people reach this relayer (`https://bursar.example.com`), for the approval links
    /// it hands out; by default the address it listens on.
    pub public_url: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            open_wait: Duration::from_secs(30),
            intent_ttl: Duration::from_secs(600),
            prepare_ttl: Duration::from_secs(3_600),
            webhook_attempts: 8,
            webhook_backoff: Duration::from_secs(5),
            rate_limit: Some(1_000.0),
            client_rate_limit: Some(200.0),
            auth_failure_limit: Some(5.0),
            instance_timeout: Duration::from_secs(10),
            poll_interval: Duration::from_secs(15),
            runloop_url: RUNLOOP_URL.into(),
            browserbase_url: BROWSERBASE_URL.into(),
            webhook_egress: egress::Policy::default(),
            fetch_egress: egress::Policy::default(),
            mcp_sessions: Default::default(),
            indexer_url: None,
            public_url: None,
        }
    }
}
