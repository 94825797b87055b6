//! What a sandbox's commands (`bursar fetch`, `bursar pay`) act with: the relayer and the
//! session's capability token, from the environment, and how they ask the relayer.

use std::time::Duration;

use serde_json::Value;

/// The relayer and the session's capability token (never printed).
#[derive(clap::Args, Debug)]
pub(crate) struct Capability {
    /// The relayer's API.
    #[arg(
        long,
        env = "BURSAR_RELAYER_URL",
        default_value = "http://127.0.0.1:8549"
    )]
    relayer: String,
    /// The session's capability token.
    #[arg(long, env = "BURSAR_CAPABILITY_TOKEN", hide_env_values = true)]
    capability_token: String,
}

impl Capability {
    /// The relayer's URL of `path` (`/v1/payments`).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.relayer.trim_end_matches('/'))
    }

    /// Sends `r` with the capability token, waiting at most `timeout`: its JSON answer, or
    /// `(status): code {details} — message` (the relayer's refusal: for a session's rule, the
    /// wallet's error and its figures).
    pub(crate) async fn ask(
        &self,
        r: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<Value, String> {
        let r = r
            .bearer_auth(&self.capability_token)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| format!("the relayer at {}: {e}", self.relayer))?;
        let status = r.status();
        let body: Value = r
            .json()
            .await
            .map_err(|e| format!("the relayer's answer: {e}"))?;
        if !status.is_success() {
            return Err(format!(
                "({status}): {} {} — {}",
                body["code"].as_str().unwrap_or("?"),
                body["details"],
                body["message"].as_str().unwrap_or("")
            ));
        }
        Ok(body)
    }
}
