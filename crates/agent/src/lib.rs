//! An agent's side of Bursar. An agent in a sandbox holds a relayer's URL and its session's
//! capability token, never a key; with them it reads what it may still spend, pays, pays x402
//! APIs while fetching them, and records provenance — each within the rules the session's owner
//! signed, which the contracts enforce.
//!
//! * [`relayer`] — the relayer's API as a sandbox reaches it.
//! * [`fetch`] — an HTTP request that pays a `402 Payment Required` (x402 v2) and retries.
//! * [`money`] — amounts as people write and read them (`1.50 USDC`).
//! * [`rules`] — a contract rule's refusal in words (`… 3.00 USDC left until 14:00 UTC`).
//! * [`sell`] — what an agent made, sold behind HTTP 402 and paid at its ERC-8004 agent's
//!   wallet.
//! * [`mcp`] — the MCP server of these tools, over stdio (`bursar mcp`) or Streamable HTTP (the
//!   relayer's `/mcp`).
//!
//! `bursar fetch`, `bursar pay`, `bursar sell` and `bursar limits` are the same operations for a
//! shell.

pub mod fetch;
pub mod mcp;
pub mod money;
pub mod relayer;
pub mod rules;
pub mod sell;
