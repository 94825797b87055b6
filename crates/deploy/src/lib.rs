//! Deploying Bursar: the contracts built to Stylus WASM go on chain through the canonical
//! StylusDeployer (create + activate + construct in one transaction each), are wired together,
//! and are recorded in `deployments/<network>.json`. The same flow runs against the devnet and
//! any Stylus chain; re-running against a network where the same code already runs with the
//! same arguments reports it instead of deploying again.
//!
//! Chain access (JSON-RPC, keys, signed transactions, revert decoding) is `bursar_client`'s.
//!
//! * [`artifacts`] — the built contracts, checked against the Stylus rules before sending.
//! * [`contract`] — the contracts deployed, their artifacts, record keys and ABIs.
//! * [`network`] — named networks and their chain ids.
//! * [`deploy`](mod@deploy) — the deployment and its progress events.
//! * [`record`] — the deployment record.

pub mod artifacts;
pub mod contract;
pub mod deploy;
pub mod network;
pub mod record;

pub use contract::Contract;
pub use deploy::{deploy, DeployError, DeployOptions, Progress};
pub use network::Network;
pub use record::{Deployed, DeploymentRecord};
