//! OpenZeppelin 5's `Ownable` + `UUPSUpgradeable` behind an ERC-1967 proxy, as the ERC-8004
//! registries have them: the owner upgrades by `upgradeToAndCall`, which writes the proxy's
//! implementation slot after the new implementation answered `proxiableUUID()` with that slot.
//!
//! A Stylus program has no immutables, so it cannot know its own address the way OZ's `__self`
//! does. It tells the two contexts apart by the implementation slot instead: read through the
//! proxy (a delegate call) it names an implementation; in the implementation's own storage it is
//! empty. `proxiableUUID` answers only in the latter, `upgradeToAndCall` only in the former.
//!
//! Non-generic functions are `#[inline]`, compiled only where used (see [`crate::abi`]).

use alloc::vec::Vec;
use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::{SolCall, SolError, SolEvent};
// Both registries declare the same OpenZeppelin functions, events and errors.
use bursar_bindings::erc8004::{IIdentityRegistry::*, IMPLEMENTATION_SLOT};
use stylus_sdk::stylus_core::Host;

use crate::{calldata, event, word, Word};

/// Why an owner or upgrade call reverts: the OpenZeppelin error, ABI-encoded, or a new
/// implementation's own revert data, bubbled.
pub type Revert = Vec<u8>;

/// The revert data of the custom error `E` with static arguments `args`: its selector and
/// words, without alloy's encoder for each error type.
pub fn error<E: SolError>(args: &[Word]) -> Revert {
    calldata::encode(E::SELECTOR, args)
}

/// The implementation the proxy delegates to (zero in the implementation's own storage).
pub fn implementation<H: Host + ?Sized>(vm: &H) -> Address {
    Address::from_word(vm.storage_load_bytes32(IMPLEMENTATION_SLOT.into()))
}

/// `onlyOwner`: `OwnableUnauthorizedAccount(caller)` unless the caller is `owner`.
pub fn only_owner<H: Host + ?Sized>(vm: &H, owner: Address) -> Result<(), Revert> {
    let caller = vm.msg_sender();
    if caller != owner {
        return Err(error::<OwnableUnauthorizedAccount>(&[word(caller)]));
    }
    Ok(())
}

/// `transferOwnership`'s check: the new owner may not be zero (renounce for that).
#[inline]
pub fn check_new_owner(new_owner: Address) -> Result<(), Revert> {
    if new_owner.is_zero() {
        return Err(error::<OwnableInvalidOwner>(&[word(new_owner)]));
    }
    Ok(())
}

/// Emits `OwnershipTransferred(previous, new)`.
pub fn ownership_transferred<H: Host + ?Sized>(vm: &H, previous: Address, new: Address) {
    event::emit(
        vm,
        OwnershipTransferred::SIGNATURE_HASH,
        &[word(previous), word(new)],
        &[],
    );
}

/// `reinitializer(version)`'s check: `InvalidInitialization()` unless the initialized version
/// `current` is below `version`.
#[inline]
pub fn check_initializing(current: u64, version: u64) -> Result<(), Revert> {
    if current >= version {
        return Err(error::<InvalidInitialization>(&[]));
    }
    Ok(())
}

/// Emits `Initialized(version)`, once the initializer has run.
pub fn initialized<H: Host + ?Sized>(vm: &H, version: u64) {
    event::emit(
        vm,
        Initialized::SIGNATURE_HASH,
        &[],
        &[word(U256::from(version))],
    );
}

/// `proxiableUUID()`: the implementation slot, asked of the implementation itself only.
pub fn proxiable_uuid<H: Host + ?Sized>(vm: &H) -> Result<B256, Revert> {
    if !implementation(vm).is_zero() {
        return Err(error::<UUPSUnauthorizedCallContext>(&[]));
    }
    Ok(IMPLEMENTATION_SLOT)
}

/// `upgradeToAndCall(newImplementation, data)` after `onlyOwner`: checks that it runs through
/// the proxy and that `new_implementation` is UUPS, points the proxy at it (`Upgraded`), then
/// runs `data` on it (a delegate call) or refuses value sent without data.
pub fn upgrade_to_and_call<H: Host + ?Sized>(
    vm: &H,
    new_implementation: Address,
    data: &[u8],
) -> Result<(), Revert> {
    if implementation(vm).is_zero() {
        return Err(error::<UUPSUnauthorizedCallContext>(&[]));
    }
    let selector = proxiableUUIDCall::SELECTOR;
    match crate::call::view(vm, new_implementation, &calldata::encode(selector, &[])) {
        Some(out) if out.len() == 32 => {
            let slot = B256::from_slice(&out);
            if slot != IMPLEMENTATION_SLOT {
                return Err(error::<UUPSUnsupportedProxiableUUID>(&[word(slot)]));
            }
        }
        _ => {
            return Err(error::<ERC1967InvalidImplementation>(&[word(
                new_implementation,
            )]))
        }
    }
    // SAFETY: the implementation slot is no field of any contract's `#[storage]` struct, so the
    // cached write aliases nothing; it is flushed at once, before the delegate call reads it.
    unsafe { vm.storage_cache_bytes32(IMPLEMENTATION_SLOT.into(), new_implementation.into_word()) };
    vm.flush_cache(false);
    event::emit(
        vm,
        Upgraded::SIGNATURE_HASH,
        &[word(new_implementation)],
        &[],
    );
    if !data.is_empty() {
        crate::call::delegate(vm, new_implementation, data)?;
    } else if !vm.msg_value().is_zero() {
        return Err(error::<ERC1967NonPayable>(&[]));
    }
    Ok(())
}
