//! An agent's side of Bursar. An agent in a sandbox holds a relayer's URL and its session's
//! capability token, never a key; with them it reads what it may still spend, pays, pays x402
//! APIs while fetching them, and records provenance — each within the rules the session's owner
//! signed, which the contracts enforce.
//!
//! * [`relayer`] — the relayer's API as a sandbox reaches it.
//! * [`fetch`] — an HTTP request that pays a `402 Payment Required` (x402 v2) and retries.
//! * [`money`] — amounts as people write and read them (`1.50 USDC`).
//! * [`rules`] — a contract rule's refusal in words (`… 3.00 USDC left until 14:00 UTC`).
//! * [`mcp`] — the MCP server of these tools, over stdio (`bursar mcp`) or Streamable HTTP (the
//!   relayer's `/mcp`).
//!
//! `bursar fetch`, `bursar pay` and `bursar limits` are the same operations for a shell.

pub mod fetch;
pub mod mcp;
pub mod money;
pub mod relayer;
pub mod rules;
