//! # SessionWallet's extension
//!
//! The second program of SessionWallet: the functions the wallet does not run itself, reached
//! only through the wallet's delegate call, so they run on the wallet's storage, sender and
//! value. The code is the wallet crate's (`session_wallet::router::extension_program`); this
//! crate only gives it an entry point of its own. Called directly, it reverts.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg_attr(target_arch = "wasm32", no_std)]

#[cfg(target_arch = "wasm32")]
use session_wallet::SessionWallet;
#[cfg(target_arch = "wasm32")]
use stylus_sdk::{alloy_primitives::U256, host::VM, prelude::*, ArbResult};

#[cfg(target_arch = "wasm32")]
extern crate alloc;

#[cfg(target_arch = "wasm32")]
#[entrypoint]
fn route(input: alloc::vec::Vec<u8>, host: VM) -> ArbResult {
    // SAFETY: one instance at slot 0 for the whole call, as `#[entrypoint]` creates it: the
    // wallet's own layout, since this code runs on the wallet's storage.
    let mut wallet = unsafe { <SessionWallet as StorageType>::new(U256::ZERO, 0, host) };
    session_wallet::router::extension_program(&mut wallet, &input)
}
