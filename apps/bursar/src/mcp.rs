//! `bursar mcp`: agents' MCP server over stdio, for MCP clients that spawn their servers
//! (Claude Code, Cursor, an Agents SDK loop). Its tools (`session_limits`, `pay`, `fetch`,
//! `payment_status`, `record_provenance`, `session_history`) act for the session of
//! `BURSAR_CAPABILITY_TOKEN` through the relayer at `BURSAR_RELAYER_URL`; the token is never
//! in a tool's answer or a log line. Standard output carries the protocol only.

use bursar_agent::mcp::{serve_stdio, Tools};
use bursar_egress::Policy;

use crate::capability::Capability;

#[derive(clap::Args, Debug)]
pub(crate) struct McpArgs {
    #[command(flatten)]
    capability: Capability,
    /// Let the `fetch` tool reach loopback addresses (a server on this machine); link-local
    /// and private ones never (a prompt-injected agent must not reach the host's network).
    #[arg(long, env = "BURSAR_FETCH_ALLOW_LOOPBACK")]
    allow_loopback: bool,
    /// An indexer of the session's contracts, for `session_history`'s on-chain events and
    /// `counterparty_reputation`'s passports.
    #[arg(long, env = "BURSAR_INDEXER_URL")]
    indexer: Option<String>,
}

pub(crate) fn run(args: McpArgs) -> Result<(), String> {
    let policy = Policy {
        allow_loopback: args.allow_loopback,
    };
    let relayer = args.capability.relayer();
    let tools = Tools::for_session(
        relayer.base(),
        &args.capability.token(),
        policy,
        args.indexer,
    );
    crate::support::block_on(serve_stdio(tools))
}
