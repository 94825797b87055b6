//! Events emitted from words. alloy's `SolEvent` encoder costs a few hundred bytes of WASM per
//! event type; the wallet's events have only static arguments, so topics and data are words in
//! the event's order ([`emit`]); events with `string` or `bytes` data go through the one
//! hand-rolled encoder ([`emit_with`]). The contracts' tests decode every event with alloy's
//! decoder, which checks each against its `sol!` declaration.

use alloc::vec::Vec;
use alloy_primitives::B256;
use stylus_sdk::stylus_core::Host;

use crate::abi::{self, Arg};
use crate::Word;

/// Emits the event `signature` (its `SIGNATURE_HASH`) with its indexed arguments as topics and
/// its other arguments as data, each ABI-encoded as one word.
pub fn emit<H: Host + ?Sized>(vm: &H, signature: B256, indexed: &[Word], data: &[Word]) {
    let mut topics = Vec::with_capacity(1 + indexed.len());
    topics.push(signature);
    topics.extend(indexed.iter().map(|w| B256::new(*w)));
    // A log fails only in a static call, which no function that emits is.
    let _ = vm.raw_log(&topics, data.as_flattened());
}

/// Emits the event `signature` whose data has dynamic arguments (`string`, `bytes`). Apart from
/// [`emit`] on purpose: sharing a body with it cost the wallet 157 bytes compressed.
pub fn emit_with<H: Host + ?Sized>(vm: &H, signature: B256, indexed: &[Word], data: &[Arg]) {
    let mut topics = Vec::with_capacity(1 + indexed.len());
    topics.push(signature);
    topics.extend(indexed.iter().map(|w| B256::new(*w)));
    let _ = vm.raw_log(&topics, &abi::encode(data));
}
