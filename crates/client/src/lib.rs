//! The one chain client of Bursar's tools and services (deploy, demo, relayer, indexer).
//!
//! * [`rpc`] — [`Client`]: the JSON-RPC methods Bursar calls, over ethers-providers, with
//!   alloy types and typed errors (URLs with API keys are redacted).
//! * [`key`] — private keys from hex, a key file, a keystore or an environment variable.
//! * [`fees`] — EIP-1559 fee caps and the bump a replacement transaction needs.
//! * [`sender`] — signed EIP-1559 transactions from one key: nonces, fees, gas, reverts.
//! * [`sign`] — what owners and agents sign: payment intents, `OpenSession` with its permit.
//! * [`heads`] — [`Heads`]: new-block notifications over WebSocket, a wake-up signal for
//!   services that otherwise poll.
//! * [`ranges`] — `eth_getLogs` over a block range in the pieces the node takes.
//! * [`revert`] — revert data decoded against every error the system defines.

pub mod fees;
pub mod heads;
pub mod ids;
pub mod key;
pub mod ranges;
pub mod revert;
pub mod rpc;
pub mod sender;
pub mod sign;

pub use fees::Fees;
pub use heads::Heads;
pub use key::Key;
pub use rpc::Client;
pub use sender::Sender;
