//! The relayer's API as a sandbox reaches it: its URL and the session's capability token, sent
//! as `Authorization: Bearer` and never shown (not in `Debug`, not in errors).

use std::fmt;
use std::time::Duration;

use alloy_primitives::U256;
use serde_json::Value;

use crate::money;

/// A relayer and the capability token of one session.
#[derive(Clone)]
pub struct Relayer {
    base: String,
    token: String,
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

impl Relayer {
    /// The relayer at `base` (`http://127.0.0.1:8549`), for the session of `token`.
    pub fn new(base: &str, token: &str) -> Self {
        Relayer {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// Its API's URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET path`, waiting at most `timeout`.
    ///
    /// # Errors
    /// [`Refusal`]: unreachable, or its error answer.
    pub async fn get(&self, path: &str, timeout: Duration) -> Result<Value, Refusal> {
        self.ask(self.http.get(self.url(path)), timeout).await
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
        self.ask(self.http.post(self.url(path)).json(body), timeout)
            .await
    }

    /// `text` in base units: digits alone are base units; `1.50 USDC` or `1.50` are the
    /// session's token's units (its symbol and decimals asked of `GET /v1/limits`).
    ///
    /// # Errors
    /// In words: not an amount, another token, more decimals than it has, the relayer's refusal.
    pub async fn base_units(&self, text: &str) -> Result<U256, String> {
        let text = text.trim();
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return money::parse_amount(text);
        }
        let limits = self
            .get("/v1/limits", Duration::from_secs(30))
            .await
            .map_err(|e| e.to_string())?;
        let token = &limits["token"];
        let (Some(decimals), Some(symbol)) = (token["decimals"].as_u64(), token["symbol"].as_str())
        else {
            return Err("the relayer did not say the session's token".into());
        };
        money::parse_money(text, decimals as u8, symbol)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn ask(&self, r: reqwest::RequestBuilder, timeout: Duration) -> Result<Value, Refusal> {
        let r = r
            .bearer_auth(&self.token)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| Refusal::Unreachable(format!("the relayer at {}: {e}", self.base)))?;
        let status = r.status();
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
        Ok(body)
    }
}
