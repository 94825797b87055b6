//! What every feature shares and no feature owns: the [`App`] state, the configuration, the one
//! [`Error`], stored sessions' terms and signer, hosts' policies, Standard Webhooks
//! signatures, and the JSON forms of amounts, hashes and ids. It
//! imports no feature, no job and not the API.

pub mod app;
pub mod config;
pub mod error;
pub mod inbox;
pub mod json;
pub mod policy;
pub mod session;
pub mod signing;

pub use app::App;
pub use config::{Config, Contracts, Settings};
pub use error::{Error, PassError};
