//! What a sandbox's commands (`bursar fetch`, `bursar pay`, `bursar limits`, `bursar mcp`) act
//! with: the relayer and the session's capability token, from flags or the environment.

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
