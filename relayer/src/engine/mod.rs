//! The engine floor: what every feature runs on and nothing above it owns.
//!
//! * [`submission`] — the transaction engine: nonces per signer, broadcast, resubmission,
//!   replacement and confirmation, never losing or duplicating a transaction.
//! * [`tasks`] — every long-running task supervised: one that ends or panics is noticed,
//!   counted and restarted.
//! * [`vault`] — custodial keys and secrets sealed under the master key.
//! * [`metrics`] — the Prometheus registry's counters and histograms.
//! * [`random`] — the operating system's randomness, for ids, tokens and keys.

pub mod metrics;
pub mod random;
pub mod submission;
pub mod tasks;
pub mod vault;
