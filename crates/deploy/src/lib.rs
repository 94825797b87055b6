//! Deploying Bursar: the contracts built to Stylus WASM go on chain through the canonical
//! StylusDeployer (create + activate + construct in one transaction each), are wired together,
//! and are recorded in `deployments/<network>.json`. The same flow runs against the devnet and
//! any Stylus chain; re-running against a network where the same code already runs with the
//! same arguments reports it instead of deploying again.
//!
//! * [`rpc`] — a small JSON-RPC client with typed errors (URLs with API keys are redacted).
//! * [`key`] — private keys from hex, a key file, a keystore or `$BURSAR_DEPLOYER_KEY`.
//! * [`sender`] — signed EIP-1559 transactions from one key: nonces, fees, gas, reverts.
//! * [`artifacts`] — the built contracts, checked against the Stylus rules before sending.
//! * [`network`] — named networks and their chain ids.
//! * [`deploy`](mod@deploy) — the deployment and its progress events.
//! * [`record`] — the deployment record.
//! * [`revert`] — revert data decoded against every error the system defines.

pub mod artifacts;
pub mod deploy;
pub mod key;
pub mod network;
pub mod record;
pub mod revert;
pub mod rpc;
pub mod sender;

pub use deploy::{deploy, Contract, DeployError, DeployOptions, Progress};
pub use key::Key;
pub use network::Network;
pub use record::DeploymentRecord;
pub use rpc::Client;
pub use sender::Sender;
