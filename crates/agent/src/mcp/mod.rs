//! The MCP server of an agent's tools (the official Rust SDK, `rmcp`): `session_limits`, `pay`,
//! `fetch`, `payment_status`, `record_provenance`, `rate_counterparty`,
//! `counterparty_reputation`, `session_history`.
//!
//! It runs where the agent's MCP client wants it: over stdio in the sandbox (`bursar mcp`, the
//! token from `BURSAR_CAPABILITY_TOKEN`: the tools ask the relayer's API with it), or over
//! Streamable HTTP as the relayer's `/mcp` (the session of each request's `Authorization:
//! Bearer`: the relayer answers the tools in process, through the functions its API calls).
//! Either way a tool's every request is one [`Ask`] of a [`Backend`], so the session's rules
//! and the relayer's idempotency hold as for any other call; the token never appears in a
//! tool's answer. Each tool declares its `outputSchema` ([`output`]) and its annotations (the
//! reads `readOnlyHint`; `pay` and `fetch`, which may pay, `destructiveHint`; `fetch`
//! `openWorldHint`).
//!
//! A refusal by a session's rule is a tool error (`isError: true`) naming the rule with its
//! figures in the token's units — `WalletPeriodBudgetExceeded: 3.00 USDC left until 14:00
//! UTC (asked 5.00 USDC)` — so that the model can adapt.

mod output;
pub mod sessions;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy_primitives::U256;
use base64::Engine as _;
use bursar_egress::Policy;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Digest;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::fetch::{self, Request};
use crate::relayer::{base_units, bearer, new_key, Ask, Backend, Refusal, Relayer};
use crate::rules;

/// How long a fetched resource may take to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `pay` and `record_provenance` wait for the chain.
const WAIT_SECONDS: u64 = 30;
/// The most of a fetched body a tool answers (a model's context is not a download); no more is
/// read.
pub const MAX_BODY: usize = 64 * 1024;
/// The most fetches one session runs at once.
pub const FETCHES_PER_SESSION: usize = 4;
/// The most fetches one server runs at once, for all its sessions.
pub const FETCHES: usize = 64;

/// The tools, for one relayer.
#[derive(Clone)]
pub struct Tools {
    backend: Arc<dyn Backend>,
    /// Whether `artifactPath` may be read (only where the server runs in the sandbox).
    reads_files: bool,
    fetch: Policy,
    indexer: Option<String>,
    fetches: Arc<Fetches>,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("indexer", &self.indexer)
            .finish()
    }
}

/// The fetches running, per session and in all: a fetch holds a model's answer in memory (at
/// most [`MAX_BODY`]), so how many run at once bounds what they hold.
#[derive(Debug)]
struct Fetches {
    all: Arc<Semaphore>,
    per_session: Mutex<HashMap<[u8; 32], Arc<Semaphore>>>,
}

impl Default for Fetches {
    fn default() -> Self {
        Fetches {
            all: Arc::new(Semaphore::new(FETCHES)),
            per_session: Mutex::default(),
        }
    }
}

/// A running fetch's places; given back when dropped.
struct FetchPermit {
    _all: OwnedSemaphorePermit,
    _session: OwnedSemaphorePermit,
}

impl Fetches {
    /// A place for one more fetch of the session `who` (a digest of its credential), or why
    /// not.
    fn start(&self, who: [u8; 32]) -> Result<FetchPermit, String> {
        let session = {
            let mut sessions = self.per_session.lock().unwrap_or_else(|e| e.into_inner());
            // Forget the sessions with nothing running.
            sessions.retain(|_, s| s.available_permits() < FETCHES_PER_SESSION);
            sessions
                .entry(who)
                .or_insert_with(|| Arc::new(Semaphore::new(FETCHES_PER_SESSION)))
                .clone()
        };
        let session = session.try_acquire_owned().map_err(|_| {
            format!("this session runs {FETCHES_PER_SESSION} fetches already: wait for one to end")
        })?;
        let all = self.all.clone().try_acquire_owned().map_err(|_| {
            "the relayer runs as many fetches as it may: try again shortly".to_owned()
        })?;
        Ok(FetchPermit {
            _all: all,
            _session: session,
        })
    }
}

/// An amount as a tool takes it: text in the token's units or base units, or an integer of
/// base units.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AmountArg {
    /// "1.50 USDC", "1.50", or digits alone: base units ("1500000").
    Text(String),
    /// Base units (1500000 is 1.50 USDC).
    BaseUnits(u64),
}

impl AmountArg {
    /// As text: an integer is its digits, which read as base units.
    fn text(&self) -> String {
        match self {
            AmountArg::Text(t) => t.clone(),
            AmountArg::BaseUnits(n) => n.to_string(),
        }
    }
}

/// `pay`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PayArgs {
    /// The payee's address (0x…): one of the counterparties `session_limits` lists.
    pub to: String,
    /// How much: in the token's units ("1.50 USDC", "1.50"), or base units as digits
    /// ("1500000") or an integer (1500000).
    pub amount: AmountArg,
    /// What it is for, in a few words (its keccak-256 goes on chain with the receipt).
    pub purpose: String,
}

/// `fetch`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FetchArgs {
    /// The URL (http or https; public addresses only).
    pub url: String,
    /// The method: GET by default, POST when a body is given.
    pub method: Option<String>,
    /// Request headers by name.
    pub headers: Option<BTreeMap<String, String>>,
    /// The request body (text).
    pub body: Option<String>,
    /// The most to pay if the server answers 402 Payment Required: token units ("0.05 USDC")
    /// or base units (digits or an integer); a higher price is refused and nothing is paid.
    pub max_amount: Option<AmountArg>,
    /// The ERC-8004 agent (decimal id) this is bought from: the payment goes only to its
    /// agentWallet, and a 402 asking to pay anyone else is refused.
    pub agent_id: Option<String>,
}

/// `payment_status`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PaymentArgs {
    /// The payment's id (`pay_…`), as `pay` answered it.
    pub id: String,
}

/// `record_provenance`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvenanceArgs {
    /// The artifact produced: its SHA-256 or any 32-byte digest (0x and 64 hex digits), or a
    /// name whose keccak-256 is recorded. Give this or `artifactPath`.
    pub artifact: Option<String>,
    /// A file whose SHA-256 is the artifact (read where this server runs: `bursar mcp` only).
    pub artifact_path: Option<String>,
    /// What it was made from (a digest, or text whose keccak-256 is recorded).
    pub inputs: Option<String>,
    /// The runtime: model, image, code version (a digest or text).
    pub runtime: Option<String>,
    /// Where the artifact is (text is hashed; the chain keeps 32 bytes).
    pub uri: Option<String>,
    /// Earlier records (their ids) it derives from.
    pub parents: Option<Vec<String>>,
}

/// `rate_counterparty`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateArgs {
    /// The executed payment (`pay_…`) to the agent rated: its receipt backs the rating.
    pub payment_id: String,
    /// The agent's ERC-8004 id (decimal): the payment went to its owner or its wallet.
    pub agent_id: String,
    /// The rating, a decimal number (e.g. 90 out of 100, or 4.5 out of 5).
    pub value: String,
    /// What is rated (ERC-8004 tag1, e.g. `quality`).
    pub tag: Option<String>,
    /// The endpoint rated (the URL paid for).
    pub endpoint: Option<String>,
}

/// `counterparty_reputation`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReputationArgs {
    /// The agent's ERC-8004 id (decimal).
    pub agent_id: String,
}

/// `session_history`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HistoryArgs {
    /// How many of the latest payments (and indexed events): 1 to 100, default 20.
    pub limit: Option<u32>,
}

impl Tools {
    /// Tools acting for the session of `token` at the relayer `relayer`, over its API: the
    /// server in the sandbox (`bursar mcp`).
    pub fn for_session(relayer: &str, token: &str, fetch: Policy, indexer: Option<String>) -> Self {
        Tools {
            backend: Arc::new(Relayer::new(relayer, token)),
            reads_files: true,
            fetch,
            indexer,
            fetches: Arc::default(),
        }
    }

    /// Tools answered by `backend` for the session of each HTTP request (the relayer's
    /// `/mcp`).
    pub fn served_by(backend: Arc<dyn Backend>, fetch: Policy, indexer: Option<String>) -> Self {
        Tools {
            backend,
            reads_files: false,
            fetch,
            indexer,
            fetches: Arc::default(),
        }
    }
}

/// One tool call: the backend, and the HTTP request it came in (`None` over stdio).
struct Call<'a> {
    backend: &'a dyn Backend,
    parts: Option<&'a http::request::Parts>,
}

impl Call<'_> {
    async fn ask(&self, ask: Ask) -> Result<Value, Refusal> {
        self.backend.ask(self.parts, ask).await
    }

    async fn base_units(&self, amount: &AmountArg) -> Result<U256, String> {
        base_units(self.backend, self.parts, &amount.text()).await
    }

    /// Who the caller is, for counting its fetches: a digest of its bearer token (however the
    /// header spells the scheme and spaces), or of nothing over stdio.
    fn who(&self) -> [u8; 32] {
        sha2::Sha256::digest(bearer(self.parts).unwrap_or_default()).into()
    }
}

impl Tools {
    fn call<'a>(&'a self, ctx: &'a RequestContext<RoleServer>) -> Call<'a> {
        Call {
            backend: &*self.backend,
            parts: ctx.extensions.get::<http::request::Parts>(),
        }
    }
}

#[tool_router]
impl Tools {
    /// What the session may still spend.
    #[tool(
        description = "What this session may still spend and whom it may pay: remaining deposit, this period's remaining budget and when it refills, per-payment cap, co-sign threshold, allowlisted counterparties (address, label, cap), expiry and lease; amounts in token units and base units.",
        output_schema = output::limits(),
        annotations(title = "Session limits", read_only_hint = true, open_world_hint = false)
    )]
    async fn session_limits(
        &self,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = self.call(&ctx);
        Ok(match call.ask(Ask::Limits).await {
            Ok(limits) => CallToolResult::structured(limits),
            Err(e) => refused(&call, e).await,
        })
    }

    /// Pays.
    #[tool(
        description = "Pay a counterparty from the session, within its on-chain rules; answers {payment, next}: the payment (status confirmed once on chain, or pending_approval above the co-sign threshold, with next saying what the owner must do). A refusal names the rule and what is left.",
        output_schema = output::paid(),
        annotations(title = "Pay", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn pay(
        &self,
        Parameters(args): Parameters<PayArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = self.call(&ctx);
        let amount = match call.base_units(&args.amount).await {
            Ok(amount) => amount,
            Err(e) => return Ok(tool_error(e)),
        };
        let body = json!({ "to": args.to, "amount": amount.to_string(), "purpose": args.purpose });
        // One key for this payment: however often the request is tried, it pays once.
        let queued = match call
            .ask(Ask::Pay {
                body,
                key: new_key(),
            })
            .await
        {
            Ok(queued) => queued,
            Err(e) => return Ok(refused(&call, e).await),
        };
        let id = queued["id"].as_str().unwrap_or_default().to_owned();
        let payment = match call
            .ask(Ask::Payment {
                id,
                wait: WAIT_SECONDS,
            })
            .await
        {
            Ok(payment) => payment,
            Err(e) => return Ok(refused(&call, e).await),
        };
        Ok(match payment["status"].as_str() {
            Some("failed" | "rejected" | "expired") => {
                let error = &payment["error"];
                let code = error["code"].as_str().unwrap_or("failed");
                let text = rule(&call, code, &error["details"]).await;
                CallToolResult::structured_error(json!({ "payment": payment, "error": text }))
            }
            Some("pending_approval") => {
                let next = match payment["approvalUrl"].as_str() {
                    Some(url) => format!(
                        "above the session's co-sign threshold: the owner must approve it in \
                         their own wallet on {url}; check it later with payment_status"
                    ),
                    None => "above the session's co-sign threshold: the owner must approve it \
                             in their own wallet; check it later with payment_status"
                        .to_owned(),
                };
                CallToolResult::structured(json!({ "payment": payment, "next": next }))
            }
            _ => CallToolResult::structured(json!({ "payment": payment })),
        })
    }

    /// Fetches, paying a 402.
    #[tool(
        description = "An HTTP request that, if the server answers 402 Payment Required (x402), pays it from the session (at most maxAmount) and retries; answers status, headers, body (the first 64 KiB: truncated says when there was more) and the payment's settlement. Public addresses only; a few at once per session.",
        output_schema = output::fetched(),
        annotations(title = "Fetch (pays a 402)", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true)
    )]
    async fn fetch(
        &self,
        Parameters(args): Parameters<FetchArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = self.call(&ctx);
        let _running = match self.fetches.start(call.who()) {
            Ok(permit) => permit,
            Err(e) => return Ok(tool_error(e)),
        };
        let method = match (&args.method, &args.body) {
            (Some(m), _) => match m.to_uppercase().parse() {
                Ok(m) => m,
                Err(_) => return Ok(tool_error(format!("{m:?} is not an HTTP method"))),
            },
            (None, Some(_)) => reqwest::Method::POST,
            (None, None) => reqwest::Method::GET,
        };
        let max = match &args.max_amount {
            Some(m) => match call.base_units(m).await {
                Ok(max) => Some(max),
                Err(e) => return Ok(tool_error(format!("maxAmount: {e}"))),
            },
            None => None,
        };
        let agent = match args
            .agent_id
            .as_deref()
            .map(|id| U256::from_str_radix(id, 10))
        {
            Some(Ok(id)) => Some(id),
            Some(Err(_)) => return Ok(tool_error("agentId: a decimal id")),
            None => None,
        };
        let request = Request {
            method,
            url: args.url.clone(),
            headers: args.headers.unwrap_or_default().into_iter().collect(),
            body: args.body.map(String::into_bytes),
        };
        let options = fetch::Options {
            max,
            policy: self.fetch,
            timeout: FETCH_TIMEOUT,
            max_body: Some(MAX_BODY),
            agent,
        };
        let answer = match fetch::fetch(call.backend, call.parts, &request, &options).await {
            Ok(answer) => answer,
            Err(e) => return Ok(tool_error(e)),
        };
        let headers: BTreeMap<&str, &str> = answer
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))
            .collect();
        let mut out = json!({
            "status": answer.status.as_u16(),
            "headers": headers,
            "truncated": answer.truncated,
            "payment": answer.settlement,
        });
        match std::str::from_utf8(&answer.body) {
            Ok(text) => out["body"] = json!(text),
            Err(_) => {
                out["bodyBase64"] =
                    json!(base64::engine::general_purpose::STANDARD.encode(&answer.body))
            }
        }
        Ok(CallToolResult::structured(out))
    }

    /// A payment's status.
    #[tool(
        description = "A payment's status by its id (pay_…): queued, submitted, mined, confirmed, pending_approval, rejected, failed or expired, with its transaction and receipt.",
        output_schema = output::payment_status(),
        annotations(title = "Payment status", read_only_hint = true, open_world_hint = false)
    )]
    async fn payment_status(
        &self,
        Parameters(args): Parameters<PaymentArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = self.call(&ctx);
        if !args
            .id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Ok(tool_error(format!("{:?} is not a payment id", args.id)));
        }
        let ask = Ask::Payment {
            id: args.id,
            wait: 0,
        };
        Ok(match call.ask(ask).await {
            Ok(payment) => CallToolResult::structured(payment),
            Err(e) => refused(&call, e).await,
        })
    }

    /// Records provenance.
    #[tool(
        description = "Record on chain, signed by the session, what the agent produced (artifact digest or file), from what (inputs, parents: earlier record ids), with what runtime, and where it is (uri); answers the record once on chain.",
        output_schema = output::provenance(),
        annotations(title = "Record provenance", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn record_provenance(
        &self,
        Parameters(args): Parameters<ProvenanceArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = self.call(&ctx);
        let artifact = match (&args.artifact, &args.artifact_path) {
            (Some(a), None) => a.clone(),
            (None, Some(path)) if self.reads_files => match tokio::fs::read(path).await {
                Ok(bytes) => format!("0x{}", hex(&sha2::Sha256::digest(&bytes))),
                Err(e) => return Ok(tool_error(format!("reading {path}: {e}"))),
            },
            (None, Some(_)) => {
                return Ok(tool_error(
                    "artifactPath is read only where the server runs in the sandbox (bursar \
                     mcp); give the artifact's digest instead",
                ))
            }
            _ => return Ok(tool_error("give either artifact or artifactPath")),
        };
        let mut body = json!({ "artifact": artifact });
        for (name, value) in [
            ("inputs", args.inputs),
            ("runtime", args.runtime),
            ("uri", args.uri),
        ] {
            if let Some(value) = value {
                body[name] = json!(value);
            }
        }
        if let Some(parents) = args.parents {
            body["parents"] = json!(parents);
        }
        let ask = Ask::RecordProvenance {
            body,
            key: new_key(),
        };
        Ok(until_on_chain(&call, ask, |id, wait| Ask::Provenance { id, wait }).await)
    }

    /// Rates an agent the session paid.
    #[tool(
        description = "Rate an agent this session paid (ERC-8004 feedback given through Bursar's receipt registry, backed by the payment's receipt: only an executed payment to that agent's owner or wallet can back it, once); answers the feedback once on chain.",
        output_schema = output::feedback(),
        annotations(title = "Rate a counterparty", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn rate_counterparty(
        &self,
        Parameters(args): Parameters<RateArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = self.call(&ctx);
        let body = json!({
            "paymentId": args.payment_id,
            "agentId": args.agent_id,
            "value": args.value,
            "tag1": args.tag.unwrap_or_default(),
            "endpoint": args.endpoint.unwrap_or_default(),
        });
        let ask = Ask::Rate {
            body,
            key: new_key(),
        };
        Ok(until_on_chain(&call, ask, |id, wait| Ask::Feedback { id, wait }).await)
    }

    /// An agent's passport, before paying it.
    #[tool(
        description = "An agent's ERC-8004 passport from the indexer, to check before paying it: owner, wallet it is paid at, registration file, and its reputation counted only over feedback a real payment backs (count, mean value), with the feedback that does not count listed apart.",
        output_schema = output::passport(),
        annotations(title = "Counterparty reputation", read_only_hint = true, open_world_hint = true)
    )]
    async fn counterparty_reputation(
        &self,
        Parameters(args): Parameters<ReputationArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(indexer) = &self.indexer else {
            return Ok(tool_error(
                "no indexer is configured (bursar mcp --indexer, or the relayer's indexer URL)",
            ));
        };
        if args.agent_id.is_empty() || !args.agent_id.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(tool_error(
                "agentId is an ERC-8004 agent id: decimal digits",
            ));
        }
        let url = format!(
            "{}/v1/agents/{}",
            indexer.trim_end_matches('/'),
            args.agent_id
        );
        let answer = reqwest::Client::new()
            .get(&url)
            .timeout(FETCH_TIMEOUT)
            .send()
            .await;
        Ok(match answer {
            Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => tool_error(format!(
                "agent {} is not registered (as of the indexer's latest block)",
                args.agent_id
            )),
            Ok(r) => match r.json::<Value>().await {
                Ok(passport) => CallToolResult::structured(passport),
                Err(e) => tool_error(format!("the indexer's answer: {e}")),
            },
            Err(e) => tool_error(format!("the indexer at {indexer}: {e}")),
        })
    }

    /// Recent payments and events.
    #[tool(
        description = "The session's latest payments (newest first), and its on-chain events in chain order from its opening (payments, receipts, provenance) when an indexer is configured.",
        output_schema = output::history(),
        annotations(title = "Session history", read_only_hint = true, open_world_hint = false)
    )]
    async fn session_history(
        &self,
        Parameters(args): Parameters<HistoryArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = self.call(&ctx);
        let limit = args.limit.unwrap_or(20).clamp(1, 100);
        let payments = match call.ask(Ask::Payments { limit }).await {
            Ok(page) => page["payments"].clone(),
            Err(e) => return Ok(refused(&call, e).await),
        };
        let mut out = json!({ "payments": payments });
        if let Some(indexer) = &self.indexer {
            out["events"] = match events(&call, indexer, limit).await {
                Ok(events) => events,
                Err(e) => json!({ "error": e }),
            };
        }
        Ok(CallToolResult::structured(out))
    }
}

/// Sends `ask` (it queues something the chain records: a provenance record, a feedback), then
/// waits up to [`WAIT_SECONDS`] for it with `status(id, wait)`: the record once on chain, an
/// error result when it failed.
async fn until_on_chain(
    call: &Call<'_>,
    ask: Ask,
    status: impl FnOnce(String, u64) -> Ask,
) -> CallToolResult {
    let queued = match call.ask(ask).await {
        Ok(queued) => queued,
        Err(e) => return refused(call, e).await,
    };
    let id = queued["id"].as_str().unwrap_or_default().to_owned();
    match call.ask(status(id, WAIT_SECONDS)).await {
        Ok(record) if record["status"] == "failed" => CallToolResult::structured_error(record),
        Ok(record) => CallToolResult::structured(record),
        Err(e) => refused(call, e).await,
    }
}

/// The session's latest `limit` events, from the indexer (newest last).
async fn events(call: &Call<'_>, indexer: &str, limit: u32) -> Result<Value, String> {
    let limits = call.ask(Ask::Limits).await.map_err(|e| e.to_string())?;
    let session = limits["sessionId"].as_str().unwrap_or_default();
    let url = format!(
        "{}/v1/sessions/{session}/timeline?limit={limit}",
        indexer.trim_end_matches('/')
    );
    let page: Value = reqwest::Client::new()
        .get(&url)
        .timeout(FETCH_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("the indexer at {indexer}: {e}"))?
        .json()
        .await
        .map_err(|e| format!("the indexer's answer: {e}"))?;
    Ok(page["events"].clone())
}

#[tool_handler]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bursar", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Bursar pays from a bounded session whose rules the owner signed and the chain \
                 enforces. Check session_limits before paying; pay only listed counterparties; \
                 use fetch for APIs that may answer 402 Payment Required; record_provenance for \
                 what you produce.",
            )
    }
}

/// Serves `tools` over stdio until the client leaves.
///
/// # Errors
/// The transport's failure, in words.
pub async fn serve_stdio(tools: Tools) -> Result<(), String> {
    let running = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("starting MCP over stdio: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("MCP over stdio: {e}"))
}

/// The session manager of the HTTP service (see [`sessions::manager`]).
pub type Sessions = LocalSessionManager;

/// The MCP server over Streamable HTTP.
pub type HttpService = StreamableHttpService<Tools, LocalSessionManager>;

/// The Streamable HTTP service of `tools` (made by [`Tools::served_by`]), with its sessions in
/// `sessions` (see [`sessions`] for how many, and how long idle). Its callers are
/// authenticated by their token, so it takes any `Host` (the DNS-rebinding guard protects
/// servers that trust their network instead).
pub fn http_service(tools: Tools, sessions: Arc<LocalSessionManager>) -> HttpService {
    StreamableHttpService::new(
        move || Ok(tools.clone()),
        sessions,
        StreamableHttpServerConfig::default().disable_allowed_hosts(),
    )
}

fn tool_error(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// The relayer's refusal as a tool error the model can act on.
async fn refused(call: &Call<'_>, refusal: Refusal) -> CallToolResult {
    let text = match &refusal {
        Refusal::Refused {
            status: 401, code, ..
        } => format!("{code}: the session's capability token is unknown, revoked or expired"),
        Refusal::Refused {
            status: 422,
            code,
            details,
            ..
        } => rule(call, code, details).await,
        other => other.to_string(),
    };
    tool_error(text)
}

/// A contract rule's refusal in words ([`rules::explain`]), with the session's limits.
async fn rule(call: &Call<'_>, code: &str, details: &Value) -> String {
    let limits = call.ask(Ask::Limits).await.ok();
    rules::explain(code, details, limits.as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
