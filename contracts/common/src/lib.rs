//! Building blocks shared by the Bursar Stylus contracts.
//!
//! Everything here is written for size: preimages are assembled in fixed buffers of 32-byte
//! words instead of going through `abi_encode`, and external calls are encoded by hand from the
//! selectors of the one `sol!` definition in `bursar-bindings`.
#![no_std]

extern crate alloc;

pub mod abi;
pub mod call;
pub mod calldata;
pub mod eip712;
pub mod event;
pub mod failure;
pub mod nonce;
pub mod signature;
pub mod token;
pub mod upgrade;

pub use eip712::{word, Word};
