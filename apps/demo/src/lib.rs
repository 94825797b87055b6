//! Bursar's end-to-end demonstration: a scripted agent session against the deployed
//! contracts, narrated step by step and checked at every step, then the session's audit trail
//! read back from chain logs.
//!
//! * [`scenario`] — the story: vendor list, two agents' ERC-8004 passports, session with
//!   permit, payments within and against the policy, period refill, co-signed payment, receipt
//!   acknowledgement, one agent selling a dataset to the other behind HTTP 402, provenance with
//!   the purchase as lineage, both sides' paid-for ratings, guardian revocation, owner's refund.
//! * [`host`] — the sandbox host's side: the relayer in this process, the host's key and its
//!   webhook receiver.
//! * [`audit`] — the session's trail from `eth_getLogs` alone.
//! * [`passports`] — the two agents as the indexer's passports show them.
//! * [`money`] — test-token amounts.
//! * [`contracts`] — the deployed contracts the story uses, from the deployment record.
//! * [`error`] — why the story stopped.
//!
//! `bursar demo` (the README's main command) starts the devnet, deploys with
//! [`bursar_deploy`], runs the scenario and prints the trail; end-to-end tests in `e2e/`
//! run the same code.

pub mod audit;
pub mod contracts;
pub mod error;
pub mod host;
pub mod money;
pub mod passports;
pub mod scenario;

pub use scenario::{
    open_trial, prepare_trial, run, run_against, Actors, Contracts, Narrator, PreparedTrial,
    Report, RunningRelayer, ScenarioError, Transcript, Trial,
};
