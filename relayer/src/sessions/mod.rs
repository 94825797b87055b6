//! Sessions: prepared for the owner's signature, opened through the gateway (gasless for the
//! owner) or registered after the owner opened it, a capability token per session for its
//! sandbox, lease heartbeats, revocation and close.
//!
//! The relayer signer a session is pinned to is its lease keeper (only it and the owner renew
//! the lease, so a sandbox that stops heart-beating lets the session lapse) and, unless the host
//! names another, its guardian (so the relayer can revoke it on the host's word).
//!
//! * [`prepare`](mod@prepare) — the terms and the typed data the owner signs;
//! * [`open`](mod@open) — opened through the gateway, or registered once opened elsewhere;
//! * [`lease`] — heartbeats and the lease renewed on chain;
//! * [`end`] — revoked and closed;
//! * [`view`] — sessions as the API shows them;
//! * [`capability`] — the sandbox's token.

mod capability;
mod end;
mod lease;
mod open;
mod prepare;
mod view;

pub use capability::{authenticate, token_hash};
pub use end::{close, revoke, Closing, ClosingStatus, Revoked, RevokedOnChain};
pub use lease::{heartbeat, renew_lease, Heartbeat};
pub use open::{open, open_prepared, register, OpenRequest, Opened, RegisterRequest, Sent};
pub use prepare::{prepare, PrepareRequest, Prepared, PreparedTypedData, SandboxTags};
pub use view::{chain_state, get, host_session, list, ChainState, ChainStatus, SessionView};
