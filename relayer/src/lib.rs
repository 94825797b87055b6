//! # Bursar relayer
//!
//! The HTTP API sandbox hosts and agents use to open sessions and pay without holding keys or
//! ETH, on a transaction engine that never loses or duplicates a transaction.
//!
//! * [`submission`] — the transaction engine: nonces, persistence before broadcast,
//!   resubmission, replacement, confirmation.
//! * [`store`] — the only place with SQL (SQLite or PostgreSQL).

pub mod store;
pub mod submission;
