//! What an agent asks of its session's relayer ([`Ask`], one variant per request), and who
//! answers: a [`Backend`]. Over HTTP that is [`Relayer`], the relayer's API with the session's
//! capability token (`bursar mcp`, `bursar pay`, `bursar fetch`); inside the relayer (its
//! `/mcp`) the relayer itself answers, in process, through the same functions its API calls.
//!
//! The token is sent as `Authorization: Bearer` and never shown (not in `Debug`, not in
//! errors). A payment or a provenance record carries one idempotency key per operation, so a
//! `503` (the relayer's "nothing was queued, try again") is retried without paying twice.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use alloy_primitives::U256;
use serde_json::Value;

use crate::money;

/// A future answering an [`Ask`].
pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<Value, Refusal>> + Send + 'a>>;

/// What a tool asks of the session's relayer: each variant is one request of its API, and
/// answers what that request answers (its JSON).
#[derive(Clone, Debug)]
pub enum Ask {
    /// `GET /v1/limits`.
    Limits,
    /// `POST /v1/payments` with `body`, under idempotency key `key`.
    Pay {
        /// `{to, amount, purpose}`.
        body: Value,
        /// Unique per payment the agent means to make.
        key: String,
    },
    /// `GET /v1/payments/{id}?wait=…`.
    Payment {
        /// `pay_…`.
        id: String,
        /// Seconds to wait for it to settle (0: as it is).
        wait: u64,
    },
    /// `GET /v1/payments?limit=…`.
    Payments {
        /// 1 to 100.
        limit: u32,
    },
    /// `POST /v1/x402/pay` with `{paymentRequired}`.
    X402Pay {
        /// A 402's `PAYMENT-REQUIRED`, decoded.
        payment_required: Value,
        /// The ERC-8004 agent meant to be paid (decimal id), if any.
        agent_id: Option<String>,
    },
    /// `POST /v1/provenance` with `body`, under idempotency key `key`.
    RecordProvenance {
        /// `{artifact, inputs, runtime, uri, parents}`.
        body: Value,
        /// Unique per record the agent means to make.
        key: String,
    },
    /// `GET /v1/provenance/{id}?wait=…`.
    Provenance {
        /// `prov_…`.
        id: String,
        /// Seconds to wait for it to be recorded (0: as it is).
        wait: u64,
    },
    /// `POST /v1/feedback` with `body`, under idempotency key `key`.
    Rate {
        /// `{paymentId, agentId, value, tag1, tag2, endpoint, feedbackUri}`.
        body: Value,
        /// Unique per rating the agent means to give.
        key: String,
    },
    /// `GET /v1/feedback/{id}?wait=…`.
    Feedback {
        /// `fb_…`.
        id: String,
        /// Seconds to wait for it to be given (0: as it is).
        wait: u64,
    },
}

/// Who answers a session's [`Ask`]s.
pub trait Backend: Send + Sync + 'static {
    /// Answers `ask` for the session of this request: `parts` are the HTTP request the MCP
    /// call came in (`None` over stdio), where a backend serving many sessions finds whose.
    fn ask<'a>(&'a self, parts: Option<&'a http::request::Parts>, ask: Ask) -> Answer<'a>;
}

/// The bearer token of a request's `Authorization` header, however it spells the scheme and
/// the spaces around it.
pub fn bearer(parts: Option<&http::request::Parts>) -> Option<&str> {
    let value = parts?
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.trim().split_once(char::is_whitespace)?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// A fresh idempotency key (128 random bits, hex).
pub fn new_key() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A relayer and the capability token of one session.
#[derive(Clone)]
pub struct Relayer {
    base: String,
    /// `None`: each request's own bearer token (an HTTP server relaying its callers).
    token: Option<String>,
    http: reqwest::Client,
}

impl fmt::Debug for Relayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relayer").field("base", &self.base).finish()
    }
}

/// Why the relayer did not answer what was asked.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// It could not be reached, or answered something else than JSON.
    Unreachable(String),
    /// It answered an error: its status and its `{code, details, message}`.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The stable code: a contract error's name (`WalletPeriodBudgetExceeded`) or the
        /// relayer's (`unauthorized`…).
        code: String,
        /// The error's arguments.
        details: Value,
        /// In words.
        message: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Unreachable(why) => f.write_str(why),
            Refusal::Refused {
                status,
                code,
                details,
                message,
            } => write!(f, "({status}): {code} {details} — {message}"),
        }
    }
}

/// How long a request to the relayer may take (a wait of up to 60 s included).
const TIMEOUT: Duration = Duration::from_secs(90);
/// How often a `503` is tried again.
const TRIES: u32 = 4;

impl Relayer {
    /// The relayer at `base` (`http://127.0.0.1:8549`), for the session of `token`.
    pub fn new(base: &str, token: &str) -> Self {
        Relayer {
            base: base.trim_end_matches('/').to_owned(),
            token: Some(token.to_owned()),
            http: reqwest::Client::new(),
        }
    }

    /// The relayer at `base`, for the session of each request's own bearer token.
    pub fn per_request(base: &str) -> Self {
        Relayer {
            token: None,
            ..Relayer::new(base, "")
        }
    }

    /// Its API's URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// [`base_units`] with this relayer's token.
    ///
    /// # Errors
    /// As [`base_units`].
    pub async fn base_units(&self, text: &str) -> Result<U256, String> {
        base_units(self, None, text).await
    }

    /// `GET path`, waiting at most `timeout`.
    ///
    /// # Errors
    /// [`Refusal`]: unreachable, or its error answer.
    pub async fn get(&self, path: &str, timeout: Duration) -> Result<Value, Refusal> {
        let token = self.token.as_deref().unwrap_or_default();
        self.send(reqwest::Method::GET, path, None, None, token, timeout)
            .await
    }

    /// `POST path` with the JSON `body`, waiting at most `timeout`.
    ///
    /// # Errors
    /// [`Refusal`]: unreachable, or its error answer.
    pub async fn post(
        &self,
        path: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, Refusal> {
        let token = self.token.as_deref().unwrap_or_default();
        self.send(
            reqwest::Method::POST,
            path,
            Some(body),
            None,
            token,
            timeout,
        )
        .await
    }

    /// `method path` with the JSON `body` if any (a host's calls: `PUT`, `DELETE`…), trying
    /// a `503` again as [`Backend::ask`] does.
    ///
    /// # Errors
    /// [`Refusal`]: unreachable, or its error answer.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, Refusal> {
        let token = self.token.as_deref().unwrap_or_default();
        self.send(method, path, body, None, token, TIMEOUT).await
    }

    /// The token a request acts with: this relayer's, or the request's bearer.
    fn token<'a>(&'a self, parts: Option<&'a http::request::Parts>) -> Result<&'a str, Refusal> {
        if let Some(token) = &self.token {
            return Ok(token);
        }
        bearer(parts).ok_or_else(|| Refusal::Refused {
            status: 401,
            code: "unauthorized".into(),
            details: Value::Null,
            message: "a session's capability token is needed".into(),
        })
    }

    /// Sends one request, trying a `503` again after its `Retry-After` (at most [`TRIES`]
    /// times, with the same idempotency key).
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        key: Option<&str>,
        token: &str,
        timeout: Duration,
    ) -> Result<Value, Refusal> {
        let mut tries = 0;
        loop {
            tries += 1;
            let mut req = self
                .http
                .request(method.clone(), format!("{}{path}", self.base))
                .bearer_auth(token)
                .timeout(timeout);
            if let Some(body) = body {
                req = req.json(body);
            }
            if let Some(key) = key {
                req = req.header("Idempotency-Key", key);
            }
            let r = req
                .send()
                .await
                .map_err(|e| Refusal::Unreachable(format!("the relayer at {}: {e}", self.base)))?;
            let status = r.status();
            if status == reqwest::StatusCode::SERVICE_UNAVAILABLE && tries < TRIES {
                let wait = r
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                    .unwrap_or(1)
                    .min(5);
                tokio::time::sleep(Duration::from_secs(wait)).await;
                continue;
            }
            let body: Value = r
                .json()
                .await
                .map_err(|e| Refusal::Unreachable(format!("the relayer's answer: {e}")))?;
            if !status.is_success() {
                let text = |v: &Value| v.as_str().unwrap_or("?").to_owned();
                return Err(Refusal::Refused {
                    status: status.as_u16(),
                    code: text(&body["code"]),
                    details: body["details"].clone(),
                    message: text(&body["message"]),
                });
            }
            return Ok(body);
        }
    }
}

impl Backend for Relayer {
    fn ask<'a>(&'a self, parts: Option<&'a http::request::Parts>, ask: Ask) -> Answer<'a> {
        Box::pin(async move {
            use reqwest::Method;
            let token = self.token(parts)?;
            let (method, path, body, key) = match ask {
                Ask::Limits => (Method::GET, "/v1/limits".to_owned(), None, None),
                Ask::Pay { body, key } => {
                    (Method::POST, "/v1/payments".into(), Some(body), Some(key))
                }
                Ask::Payment { id, wait } => (
                    Method::GET,
                    format!("/v1/payments/{id}?wait={wait}"),
                    None,
                    None,
                ),
                Ask::Payments { limit } => (
                    Method::GET,
                    format!("/v1/payments?limit={limit}"),
                    None,
                    None,
                ),
                Ask::X402Pay {
                    payment_required,
                    agent_id,
                } => {
                    let body = serde_json::json!({
                        "paymentRequired": payment_required,
                        "agentId": agent_id,
                    });
                    (Method::POST, "/v1/x402/pay".into(), Some(body), None)
                }
                Ask::RecordProvenance { body, key } => {
                    (Method::POST, "/v1/provenance".into(), Some(body), Some(key))
                }
                Ask::Provenance { id, wait } => (
                    Method::GET,
                    format!("/v1/provenance/{id}?wait={wait}"),
                    None,
                    None,
                ),
                Ask::Rate { body, key } => {
                    (Method::POST, "/v1/feedback".into(), Some(body), Some(key))
                }
                Ask::Feedback { id, wait } => (
                    Method::GET,
                    format!("/v1/feedback/{id}?wait={wait}"),
                    None,
                    None,
                ),
            };
            self.send(method, &path, body.as_ref(), key.as_deref(), token, TIMEOUT)
                .await
        })
    }
}

/// `text` in base units: digits alone are base units; `1.50 USDC` or `1.50` are the session's
/// token's units (its symbol and decimals from its limits, asked of `backend`).
///
/// # Errors
/// In words: not an amount, another token, more decimals than it has, the relayer's refusal.
pub async fn base_units(
    backend: &dyn Backend,
    parts: Option<&http::request::Parts>,
    text: &str,
) -> Result<U256, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return money::parse_amount(text);
    }
    let limits = backend
        .ask(parts, Ask::Limits)
        .await
        .map_err(|e| e.to_string())?;
    let token = &limits["token"];
    let (Some(decimals), Some(symbol)) = (token["decimals"].as_u64(), token["symbol"].as_str())
    else {
        return Err("the relayer did not say the session's token".into());
    };
    money::parse_money(text, decimals as u8, symbol)
}
