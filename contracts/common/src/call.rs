//! External calls, in one place: every `unsafe` call of the contracts goes through here.

use alloc::vec::Vec;
use alloy_primitives::Address;
use stylus_sdk::{call::RawCall, stylus_core::Host};

use crate::{calldata, eip712::word};

/// A call that may change state. Returns the return data, or the revert data.
pub fn call<H: Host + ?Sized>(vm: &H, target: Address, data: &[u8]) -> Result<Vec<u8>, Vec<u8>> {
    // SAFETY: the storage cache is flushed and cleared before the call, so a callee that calls
    // back into us reads what we wrote and we re-read what it wrote. Callers write their own
    // state before calling out (checks-effects-interactions), so re-entry finds it current.
    unsafe { RawCall::new(vm).clear_storage_cache().call(target, data) }
}

/// A delegate call: `target`'s code run on the caller's storage, sender and value. Returns the
/// return data, or the revert data.
pub fn delegate<H: Host + ?Sized>(
    vm: &H,
    target: Address,
    data: &[u8],
) -> Result<Vec<u8>, Vec<u8>> {
    // SAFETY: the callee writes this contract's storage directly, so the cache is flushed and
    // cleared first: it reads what we wrote, and nothing it wrote is shadowed by a stale entry.
    unsafe {
        RawCall::new_delegate(vm)
            .clear_storage_cache()
            .call(target, data)
    }
}

/// A static call (no state can change). Returns the return data, or `None` if it reverted.
pub fn view<H: Host + ?Sized>(vm: &H, target: Address, data: &[u8]) -> Option<Vec<u8>> {
    static_call(vm, target, data).ok()
}

/// A static call. Returns the return data, or the revert data (for callers that bubble it).
pub fn static_call<H: Host + ?Sized>(
    vm: &H,
    target: Address,
    data: &[u8],
) -> Result<Vec<u8>, Vec<u8>> {
    // SAFETY: a static call cannot write state anywhere; our pending writes are flushed first so
    // that a callee reading them back sees the truth.
    unsafe {
        RawCall::new_static(vm)
            .flush_storage_cache()
            .call(target, data)
    }
}

/// Whether `wallet`'s view `selector()` (e.g. `gateway()`) answers with the calling contract's
/// address: what a contract checks before it binds itself to a wallet.
pub fn names_this_contract<H: Host + ?Sized>(vm: &H, wallet: Address, selector: [u8; 4]) -> bool {
    view(vm, wallet, &calldata::encode(selector, &[]))
        .is_some_and(|out| out[..] == word(vm.contract_address())[..])
}
