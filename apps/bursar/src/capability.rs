//! What a sandbox's commands (`bursar fetch`, `bursar pay`, `bursar limits`, `bursar mcp`) act
//! with: the relayer and the session's capability token, from flags or the environment.

use std::time::Duration;

use alloy_primitives::U256;
use bursar_agent::money::parse_money;
use bursar_agent::relayer::Relayer;

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
    /// The relayer, for this session.
    pub(crate) fn relayer(&self) -> Relayer {
        Relayer::new(&self.relayer, &self.capability_token)
    }

    /// The capability token.
    pub(crate) fn token(&self) -> String {
        self.capability_token.clone()
    }
}

/// `text` in base units: digits alone are base units; `1.50 USDC` or `1.50` are the session's
/// token's units (its symbol and decimals asked of the relayer).
pub(crate) async fn amount(relayer: &Relayer, text: &str) -> Result<U256, String> {
    if !text.trim().is_empty() && text.trim().bytes().all(|b| b.is_ascii_digit()) {
        return bursar_agent::money::parse_amount(text.trim());
    }
    let limits = relayer
        .get("/v1/limits", Duration::from_secs(30))
        .await
        .map_err(|e| e.to_string())?;
    let token = &limits["token"];
    let (Some(decimals), Some(symbol)) = (token["decimals"].as_u64(), token["symbol"].as_str())
    else {
        return Err("the relayer did not say the session's token".into());
    };
    parse_money(text, decimals as u8, symbol)
}
