//! The on-chain entry point: a hand-written ABI router (wasm32 only).
//!
//! `#[public]` generates a router that monomorphises alloy's decoder and encoder for every
//! argument and return tuple; for 21 functions that costs kilobytes of the 16 KiB budget. All
//! arguments here are static words except one trailing `bytes`, and all returns are static, so
//! one word reader and one word writer do. The rules are the SDK router's
//! (`stylus_sdk::abi::router_entrypoint` + `abi_decode_params_validate`); the tests below run
//! both routers on the same calls, valid and garbled, natively:
//! * empty calldata, calldata under 4 bytes and unknown selectors revert with no data;
//! * arguments: the head must be present (trailing bytes are ignored); `address`, `uint64` and
//!   `bool` words must be clean; a `bytes` offset and length must be clean `uint32`s pointing
//!   inside the calldata; any violation reverts with no data;
//! * only `openSession` and `topUp` accept value (others revert with no data), checked before
//!   decoding, as is the one-shot constructor guard;
//! * reentrancy is refused and the storage cache flushed by `#[entrypoint]`, as before.
//!
//! `#[public]` stays on the impl: native tests, `export-abi` and the ABI drift tests use it.

use alloc::vec::Vec;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::wallet::ISessionWallet::*;
use bursar_contract_common::{word, Word};
#[cfg(all(target_arch = "wasm32", feature = "entrypoint"))]
use stylus_sdk::host::VM;
#[cfg(target_arch = "wasm32")]
use stylus_sdk::prelude::*;
use stylus_sdk::{
    abi::CONSTRUCTOR_SELECTOR,
    stylus_core::{ConstructorGuard, ValueDenier},
    ArbResult,
};

use crate::SessionWallet;

// The struct is not `#[entrypoint]` on wasm32 (that would route through `#[public]`).
// SAFETY: `SessionWallet` is the contract's one top-level storage struct, rooted at slot 0,
// exactly as `#[entrypoint]` would declare it.
#[cfg(target_arch = "wasm32")]
unsafe impl stylus_sdk::stylus_core::storage::TopLevelStorage for SessionWallet {}

/// Calldata after the selector, read as ABI words.
struct Args<'a>(&'a [u8]);

/// Malformed calldata: the call reverts with no data, like the SDK router.
struct Malformed;

type Decoded<T> = Result<T, Malformed>;

impl Args<'_> {
    fn word(&self, index: usize) -> Decoded<&Word> {
        let start = index * 32;
        self.0
            .get(start..start + 32)
            .and_then(|w| w.try_into().ok())
            .ok_or(Malformed)
    }

    /// A word whose first `zeros` bytes must be zero.
    fn clean(&self, index: usize, zeros: usize) -> Decoded<&Word> {
        let w = self.word(index)?;
        w[..zeros]
            .iter()
            .all(|&b| b == 0)
            .then_some(w)
            .ok_or(Malformed)
    }

    fn u256(&self, index: usize) -> Decoded<U256> {
        Ok(U256::from_be_bytes(*self.word(index)?))
    }

    fn b256(&self, index: usize) -> Decoded<B256> {
        Ok(B256::new(*self.word(index)?))
    }

    fn address(&self, index: usize) -> Decoded<Address> {
        Ok(Address::from_slice(&self.clean(index, 12)?[12..]))
    }

    fn u64(&self, index: usize) -> Decoded<u64> {
        let w = self.clean(index, 24)?;
        Ok(u64::from_be_bytes(w[24..].try_into().unwrap_or_default()))
    }

    fn bool(&self, index: usize) -> Decoded<bool> {
        match self.clean(index, 31)?[31] {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Malformed),
        }
    }

    /// A `uint32` word (ABI offsets and lengths on a 32-bit machine, as alloy reads them).
    fn offset(&self, at: usize) -> Decoded<usize> {
        let w = self
            .0
            .get(at..at.checked_add(32).ok_or(Malformed)?)
            .ok_or(Malformed)?;
        if w[..28].iter().any(|&b| b != 0) {
            return Err(Malformed);
        }
        Ok(u32::from_be_bytes(w[28..].try_into().unwrap_or_default()) as usize)
    }

    /// A `bytes` argument whose head word is at `index`.
    fn bytes(&self, index: usize) -> Decoded<&[u8]> {
        let start = self.offset(index * 32)?;
        let len = self.offset(start)?;
        let data = start + 32;
        self.0
            .get(data..data.checked_add(len).ok_or(Malformed)?)
            .ok_or(Malformed)
    }
}

/// Return data: the ABI encoding of a tuple of static values.
fn words(values: &[Word]) -> Vec<u8> {
    values.as_flattened().to_vec()
}

/// What a call returns: encoded values, a wallet error, or a bare revert.
enum Outcome {
    Ok(Vec<u8>),
    Err(crate::WalletError),
    Revert,
}

impl From<crate::Result<Vec<u8>>> for Outcome {
    fn from(result: crate::Result<Vec<u8>>) -> Self {
        match result {
            Ok(data) => Outcome::Ok(data),
            Err(err) => Outcome::Err(err),
        }
    }
}

impl From<Malformed> for Outcome {
    fn from(_: Malformed) -> Self {
        Outcome::Revert
    }
}

/// The wallet program's entry point (the extension crate builds this crate without it).
#[cfg(all(target_arch = "wasm32", feature = "entrypoint"))]
#[entrypoint]
fn route(input: Vec<u8>, host: VM) -> ArbResult {
    // SAFETY: one instance at slot 0 for the whole call, as `#[entrypoint]` creates it.
    let mut wallet = unsafe { <SessionWallet as StorageType>::new(U256::ZERO, 0, host) };
    wallet_program(&mut wallet, &input)
}

/// The wallet program: its own functions, and every other selector delegated to the
/// extension, which runs on this wallet's storage, sender and value.
#[cfg(target_arch = "wasm32")]
pub fn wallet_program(wallet: &mut SessionWallet, input: &[u8]) -> ArbResult {
    handle(wallet, input, Program::Wallet).unwrap_or_else(|| {
        let extension = wallet.extension.get();
        bursar_contract_common::call::delegate(wallet.vm(), extension, input)
    })
}

/// The extension program: the functions the wallet delegates. Reached directly (not through
/// a wallet's delegate call) it finds no wallet in its own storage and reverts.
pub fn extension_program(wallet: &mut SessionWallet, input: &[u8]) -> ArbResult {
    if wallet.extension.get().is_zero() {
        return Err(Vec::new());
    }
    handle(wallet, input, Program::Extension).unwrap_or(Err(Vec::new()))
}

/// Which program a table belongs to. The wallet keeps what runs often or is called by other
/// contracts (open, pay, revoke, close, `sessionAuthority`; `reserve` and `isValidSignature`,
/// which every x402 `exact` payment calls once, the second from USDC); the extension has the
/// rest, so that each stays inside its size budget. A delegated call costs about 14,000 gas.
#[derive(Clone, Copy, PartialEq)]
enum Program {
    Wallet,
    Extension,
}

/// Routes one call's calldata (selector included); `None` when `program` has no such function.
fn handle(wallet: &mut SessionWallet, input: &[u8], program: Program) -> Option<ArbResult> {
    let outcome = match (input.get(..4), input.get(4..)) {
        (Some(selector), Some(args)) => {
            let selector = u32::from_be_bytes(selector.try_into().unwrap_or_default());
            dispatch(wallet, program, selector, &Args(args))?
        }
        _ => Outcome::Revert,
    };
    Some(match outcome {
        Outcome::Ok(data) => Ok(data),
        Outcome::Err(err) => Err(err.into()),
        Outcome::Revert => Err(Vec::new()),
    })
}

fn sel<C: SolCall>() -> u32 {
    u32::from_be_bytes(C::SELECTOR)
}

fn dispatch(w: &mut SessionWallet, program: Program, selector: u32, a: &Args) -> Option<Outcome> {
    let payable = selector == sel::<openSessionCall>() || selector == sel::<topUpCall>();
    if !payable && w.deny_value("").is_err() {
        return Some(Outcome::Revert);
    }
    let routed = match program {
        Program::Wallet => wallet_call(w, selector, a),
        Program::Extension => extension_call(w, selector, a),
    };
    routed.unwrap_or(Some(Outcome::Revert))
}

/// The wallet's functions: decodes the arguments, calls the function and encodes what it
/// returns; `None` for a selector that is not the wallet's.
fn wallet_call(w: &mut SessionWallet, s: u32, a: &Args) -> Decoded<Option<Outcome>> {
    let one = |r: crate::Result<Word>| Outcome::from(r.map(|v| words(&[v])));
    let unit = |r: crate::Result<()>| Outcome::from(r.map(|()| Vec::new()));
    Ok(Some(if s == CONSTRUCTOR_SELECTOR {
        if w.check_constructor_slot().is_err() {
            return Ok(Some(Outcome::Revert));
        }
        let (counterparty, receipts) = (a.address(0)?, a.address(1)?);
        let (gateway, extension) = (a.address(2)?, a.address(3)?);
        unit(w.constructor(counterparty, receipts, gateway, extension))
    } else if s == sel::<openSessionCall>() {
        let r = w.open_session(
            a.address(0)?,
            a.address(1)?,
            a.address(2)?,
            a.address(3)?,
            a.u256(4)?,
            a.u256(5)?,
            a.u256(6)?,
            a.u64(7)?,
            a.u256(8)?,
            a.u64(9)?,
            a.u64(10)?,
            a.u64(11)?,
            a.address(12)?,
            a.u256(13)?,
            a.b256(14)?,
            a.u256(15)?,
        );
        one(r.map(word))
    } else if s == sel::<payCall>() {
        let r = w.pay_signed(
            a.u256(0)?,
            a.address(1)?,
            a.u256(2)?,
            a.b256(3)?,
            a.u256(4)?,
            a.u256(5)?,
            a.bytes(6)?,
        );
        Outcome::from(r.map(|(paid, id)| words(&[word(paid), word(id)])))
    } else if s == sel::<revokeCall>() {
        unit(w.revoke(a.u256(0)?))
    } else if s == sel::<closeCall>() {
        one(w.close(a.u256(0)?).map(word))
    } else if s == sel::<sessionAuthorityCall>() {
        let (owner, key, active) = w.session_authority(a.u256(0)?);
        Outcome::Ok(words(&[word(owner), word(key), word(active)]))
    } else if s == sel::<reserveCall>() {
        let r = w.reserve_signed(
            a.u256(0)?,
            a.address(1)?,
            a.u256(2)?,
            a.u256(3)?,
            a.u256(4)?,
            a.b256(5)?,
            a.bytes(6)?,
        );
        Outcome::from(r.map(|(reserved, id)| words(&[word(reserved), word(id)])))
    } else if s == sel::<isValidSignatureCall>() {
        // `bytes4` is left-aligned in its word.
        let mut answer = [0u8; 32];
        answer[..4].copy_from_slice(&w.vouches(a.b256(0)?, a.bytes(1)?));
        Outcome::Ok(words(&[answer]))
    } else {
        return Ok(None);
    }))
}

/// The channel of a session the x402 channel functions name in their first four arguments.
fn channel(a: &Args) -> Decoded<crate::channel::Terms> {
    Ok(crate::channel::Terms {
        session_id: a.u256(0)?,
        receiver: a.address(1)?,
        receiver_authorizer: a.address(2)?,
        withdraw_delay: a.u64(3)?,
    })
}

/// A deposit into that channel: the next three arguments.
fn deposit(a: &Args) -> Decoded<crate::channel::Deposit> {
    Ok(crate::channel::Deposit {
        channel: channel(a)?,
        value: a.u256(4)?,
        valid_before: a.u256(5)?,
        purpose: a.b256(6)?,
    })
}

/// The extension's functions, as [`wallet_call`].
fn extension_call(w: &mut SessionWallet, s: u32, a: &Args) -> Decoded<Option<Outcome>> {
    let one = |r: crate::Result<Word>| Outcome::from(r.map(|v| words(&[v])));
    let unit = |r: crate::Result<()>| Outcome::from(r.map(|()| Vec::new()));
    Ok(Some(if s == sel::<approvePendingCall>() {
        one(w.approve_pending(a.u256(0)?).map(word))
    } else if s == sel::<rejectPendingCall>() {
        unit(w.reject_pending(a.u256(0)?))
    } else if s == sel::<decidePendingForCall>() {
        let r = w.decide_pending_for(a.u256(0)?, a.bool(1)?, a.address(2)?);
        one(r.map(word))
    } else if s == sel::<topUpCall>() {
        unit(w.top_up(a.u256(0)?, a.u256(1)?))
    } else if s == sel::<renewLeaseCall>() {
        let r = w.renew_signed(a.u256(0)?, a.u256(1)?, a.u256(2)?, a.bytes(3)?);
        one(r.map(word))
    } else if s == sel::<sessionTermsCall>() {
        let t = w.session_terms(a.u256(0)?);
        Outcome::Ok(words(&[
            word(t.0),
            word(t.1),
            word(t.2),
            word(t.3),
            word(t.4),
            word(t.5),
            word(t.6),
            word(t.7),
            word(t.8),
            word(t.9),
            word(t.10),
            word(t.11),
            word(t.12),
        ]))
    } else if s == sel::<claimCall>() {
        one(w.claim(a.address(0)?, a.address(1)?).map(word))
    } else if s == sel::<claimableCall>() {
        Outcome::Ok(words(&[word(w.claimable(a.address(0)?, a.address(1)?))]))
    } else if s == sel::<sessionStateCall>() {
        let t = w.session_state(a.u256(0)?);
        Outcome::Ok(words(&[
            word(u64::from(t.0)),
            word(t.1),
            word(t.2),
            word(t.3),
            word(t.4),
            word(t.5),
            word(t.6),
        ]))
    } else if s == sel::<remainingDepositCall>() {
        Outcome::Ok(words(&[word(w.remaining_deposit(a.u256(0)?))]))
    } else if s == sel::<remainingPeriodBudgetCall>() {
        Outcome::Ok(words(&[word(w.remaining_period_budget(a.u256(0)?))]))
    } else if s == sel::<pendingPaymentCall>() {
        let t = w.pending_payment(a.u256(0)?);
        Outcome::Ok(words(&[
            word(t.0),
            word(t.1),
            word(t.2),
            word(t.3),
            word(t.4),
            word(t.5),
            word(u64::from(t.6)),
        ]))
    } else if s == sel::<isNonceUsedCall>() {
        Outcome::Ok(words(&[word(w.is_nonce_used(a.u256(0)?, a.u256(1)?))]))
    } else if s == sel::<domainSeparatorCall>() {
        Outcome::Ok(words(&[word(w.domain_separator())]))
    } else if s == sel::<counterpartyRegistryCall>() {
        Outcome::Ok(words(&[word(w.counterparty_registry())]))
    } else if s == sel::<receiptRegistryCall>() {
        Outcome::Ok(words(&[word(w.receipt_registry())]))
    } else if s == sel::<gatewayCall>() {
        Outcome::Ok(words(&[word(w.gateway())]))
    } else if s == sel::<extensionCall>() {
        Outcome::Ok(words(&[word(w.extension())]))
    } else if s == sel::<reserveDepositCall>() {
        let r = w.reserve_deposit_signed(&deposit(a)?, a.bytes(7)?);
        Outcome::from(r.map(|(reserved, id)| words(&[word(reserved), word(id)])))
    } else if s == sel::<confirmDepositCall>() {
        one(w.confirm_channel_deposit(&deposit(a)?).map(word))
    } else if s == sel::<releaseDepositCall>() {
        one(w.release_channel_deposit(&deposit(a)?).map(word))
    } else if s == sel::<creditChannelCall>() {
        one(w.credit_channel_returns(&channel(a)?).map(word))
    } else if s == sel::<withdrawChannelCall>() {
        unit(w.withdraw_from_channel(&channel(a)?))
    } else if s == sel::<channelCall>() {
        let (deposited, credited) = w.channel_totals(a.b256(0)?);
        Outcome::Ok(words(&[word(deposited), word(credited)]))
    } else if s == sel::<sessionIdCall>() {
        Outcome::Ok(words(&[word(SessionWallet::session_id(
            a.address(0)?,
            a.u256(1)?,
        ))]))
    } else if s == sel::<pendingTtlCall>() {
        Outcome::Ok(words(&[word(SessionWallet::pending_ttl())]))
    } else if s == sel::<payBatchCall>() {
        one(w.pay_packed(a.bytes(0)?).map(word))
    } else if s == sel::<releaseCall>() {
        let r = w.release_authorization(
            a.u256(0)?,
            a.address(1)?,
            a.u256(2)?,
            a.u256(3)?,
            a.u256(4)?,
            a.b256(5)?,
        );
        one(r.map(word))
    } else if s == sel::<reservationCall>() {
        let (session, amount, valid_before, receipt) = w.reservation(a.b256(0)?);
        Outcome::Ok(words(&[
            word(session),
            word(amount),
            word(valid_before),
            word(receipt),
        ]))
    } else {
        return Ok(None);
    }))
}

/// The hand router against the `#[public]` one: same return data, revert data, storage writes
/// and logs, for valid calls (paying, pending, reverting) and garbled calldata.
#[cfg(test)]
mod tests {
    use alloy_primitives::{address, Bytes};
    use alloy_sol_types::{SolStruct, SolValue};
    use bursar_bindings::eip712::{PaymentIntent, SESSION_WALLET_DOMAIN};
    use bursar_contract_testing::{MockHost, TestKey};
    use stylus_sdk::{
        abi::Router,
        stylus_core::{AccountAccess, ChainAccess},
    };

    use super::*;

    const OWNER: Address = address!("0000000000000000000000000000000000000A11");
    const RELAYER: Address = address!("0000000000000000000000000000000000000BAD");
    const REGISTRY: Address = address!("C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0");
    const RECEIPTS: Address = address!("EEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEE");
    const GATEWAY: Address = address!("6A7E6A7E6A7E6A7E6A7E6A7E6A7E6A7E6A7E6A7E");
    const EXTENSION: Address = address!("E7E7E7E7E7E7E7E7E7E7E7E7E7E7E7E7E7E7E7E7");
    const VENDOR: Address = address!("00000000000000000000000000000000000000A1");
    const T0: u64 = 1_700_000_000;

    /// `stylus_sdk::abi::router_entrypoint` without receive/fallback (the wallet has neither).
    fn sdk(w: &mut SessionWallet, input: &[u8]) -> ArbResult {
        let Some(selector) = input.get(..4) else {
            return Err(Vec::new());
        };
        let selector = u32::from_be_bytes(selector.try_into().unwrap());
        let args = &input[4..];
        if selector == CONSTRUCTOR_SELECTOR {
            <SessionWallet as Router<SessionWallet>>::constructor(w, args)
        } else {
            <SessionWallet as Router<SessionWallet>>::route(w, selector, args)
        }
        .unwrap_or(Err(Vec::new()))
    }

    /// The two programs as one: the wallet's table, then, where the wallet would delegate, the
    /// extension's on the same storage, sender and value (what a delegate call gives it).
    fn both(w: &mut SessionWallet, input: &[u8]) -> ArbResult {
        handle(w, input, Program::Wallet).unwrap_or_else(|| extension_program(w, input))
    }

    /// A constructed wallet with one native session (id 1) whose registries say yes.
    fn world() -> (MockHost, TestKey) {
        let host = MockHost::new();
        host.vm.set_block_timestamp(T0);
        host.on_call(GATEWAY, |_| Ok(Vec::new()));
        host.on_call(REGISTRY, |_| Ok(U256::from(1).abi_encode()));
        host.on_call(RECEIPTS, |_| Ok(U256::from(42).abi_encode()));
        host.set_native_balance(OWNER, U256::from(1_000_000));
        host.set_native_balance(RELAYER, U256::from(1_000_000));
        let key = TestKey::from_seed(1);
        let mut w = SessionWallet::from(&host);
        w.constructor(REGISTRY, RECEIPTS, GATEWAY, EXTENSION)
            .unwrap();
        host.send_from(OWNER, U256::from(1000));
        let terms = (
            U256::from(100),
            U256::ZERO,
            0,
            U256::from(50),
            T0,
            T0 + 1000,
            0,
        );
        w.open_session(
            OWNER,
            key.address(),
            Address::ZERO,
            Address::ZERO,
            U256::from(1000),
            terms.0,
            terms.1,
            terms.2,
            terms.3,
            terms.4,
            terms.5,
            terms.6,
            Address::ZERO,
            U256::from(7),
            B256::ZERO,
            U256::from(1),
        )
        .unwrap();
        (host, key)
    }

    fn pay(host: &MockHost, key: &TestKey, amount: u64, nonce: u64) -> Vec<u8> {
        let (intent, signature) = signed(host, key, amount, nonce);
        intent.pay_call(signature).abi_encode()
    }

    /// A `payBatch` of one intent that pays and one the deposit cannot cover.
    fn pay_batch(host: &MockHost, key: &TestKey) -> Vec<u8> {
        let mut intents = Vec::new();
        for (amount, nonce) in [(40, 4), (101, 5)] {
            let (intent, signature) = signed(host, key, amount, nonce);
            bursar_bindings::wallet::batch::push(&mut intents, &intent, &signature);
        }
        payBatchCall {
            intents: intents.into(),
        }
        .abi_encode()
    }

    fn signed(host: &MockHost, key: &TestKey, amount: u64, nonce: u64) -> (PaymentIntent, Bytes) {
        let intent = PaymentIntent {
            session: bursar_bindings::wallet::session_id(OWNER, U256::from(1)),
            to: VENDOR,
            amount: U256::from(amount),
            purpose: B256::repeat_byte(0x11),
            nonce: U256::from(nonce),
            deadline: U256::from(T0 + 600),
        };
        let domain = SESSION_WALLET_DOMAIN.at(host.vm.chain_id(), host.vm.contract_address());
        let signature: Bytes = key.sign(intent.eip712_signing_hash(&domain)).into();
        (intent, signature)
    }

    /// Valid calldata for every function (and the constructor).
    fn calls(host: &MockHost, key: &TestKey) -> Vec<Vec<u8>> {
        // The session opens with nonce 1; pending ids count from 1.
        let session = bursar_bindings::wallet::session_id(OWNER, U256::from(1));
        let id = U256::from(1);
        let a = Address::repeat_byte(0x42);
        let mut constructor = CONSTRUCTOR_SELECTOR.to_be_bytes().to_vec();
        constructor.extend((REGISTRY, RECEIPTS, GATEWAY, EXTENSION).abi_encode_params());
        vec![
            constructor,
            openSessionCall {
                owner: OWNER,
                sessionKey: a,
                guardian: a,
                token: Address::ZERO,
                deposit: U256::from(5),
                perPaymentCap: U256::ZERO,
                periodBudget: U256::from(3),
                periodSeconds: 60,
                coSignThreshold: U256::ZERO,
                validAfter: T0,
                expiresAt: T0 + 10,
                leaseSeconds: 5,
                leaseKeeper: a,
                allowlistId: U256::from(7),
                metadata: B256::repeat_byte(1),
                nonce: U256::from(1),
            }
            .abi_encode(),
            pay(host, key, 40, 1),
            pay(host, key, 60, 2),
            pay(host, key, 101, 3),
            pay_batch(host, key),
            approvePendingCall { pendingId: id }.abi_encode(),
            rejectPendingCall { pendingId: id }.abi_encode(),
            decidePendingForCall {
                pendingId: id,
                approve: true,
                owner: OWNER,
            }
            .abi_encode(),
            topUpCall {
                sessionId: session,
                amount: U256::from(5),
            }
            .abi_encode(),
            revokeCall { sessionId: session }.abi_encode(),
            closeCall { sessionId: session }.abi_encode(),
            claimCall {
                token: Address::ZERO,
                to: a,
            }
            .abi_encode(),
            claimableCall {
                owner: OWNER,
                token: Address::ZERO,
            }
            .abi_encode(),
            renewLeaseCall {
                sessionId: session,
                nonce: U256::from(9),
                deadline: U256::from(T0 + 5),
                signature: Bytes::from(vec![7; 65]),
            }
            .abi_encode(),
            sessionTermsCall { sessionId: session }.abi_encode(),
            sessionStateCall { sessionId: session }.abi_encode(),
            sessionAuthorityCall { sessionId: session }.abi_encode(),
            remainingDepositCall { sessionId: session }.abi_encode(),
            remainingPeriodBudgetCall { sessionId: session }.abi_encode(),
            pendingPaymentCall { pendingId: id }.abi_encode(),
            isNonceUsedCall {
                sessionId: session,
                nonce: U256::from(1),
            }
            .abi_encode(),
            domainSeparatorCall {}.abi_encode(),
            counterpartyRegistryCall {}.abi_encode(),
            receiptRegistryCall {}.abi_encode(),
            gatewayCall {}.abi_encode(),
            extensionCall {}.abi_encode(),
            sessionIdCall {
                owner: OWNER,
                nonce: U256::from(1),
            }
            .abi_encode(),
            pendingTtlCall {}.abi_encode(),
            reserveCall {
                sessionId: session,
                to: VENDOR,
                value: U256::from(30),
                validAfter: U256::ZERO,
                validBefore: U256::from(T0 + 600),
                purpose: B256::repeat_byte(3),
                signature: Bytes::from(vec![7; 65]),
            }
            .abi_encode(),
            releaseCall {
                sessionId: session,
                to: VENDOR,
                value: U256::from(30),
                validAfter: U256::ZERO,
                validBefore: U256::from(T0 + 600),
                purpose: B256::repeat_byte(3),
            }
            .abi_encode(),
            isValidSignatureCall {
                hash: B256::repeat_byte(4),
                signature: Bytes::from(vec![7; 65]),
            }
            .abi_encode(),
            reservationCall {
                digest: B256::repeat_byte(4),
            }
            .abi_encode(),
            reserveDepositCall {
                sessionId: session,
                receiver: VENDOR,
                receiverAuthorizer: a,
                withdrawDelay: 900,
                value: U256::from(30),
                validBefore: U256::from(T0 + 600),
                purpose: B256::repeat_byte(3),
                signature: Bytes::from(vec![7; 65]),
            }
            .abi_encode(),
            confirmDepositCall {
                sessionId: session,
                receiver: VENDOR,
                receiverAuthorizer: a,
                withdrawDelay: 900,
                value: U256::from(30),
                validBefore: U256::from(T0 + 600),
                purpose: B256::repeat_byte(3),
            }
            .abi_encode(),
            releaseDepositCall {
                sessionId: session,
                receiver: VENDOR,
                receiverAuthorizer: a,
                withdrawDelay: 900,
                value: U256::from(30),
                validBefore: U256::from(T0 + 600),
                purpose: B256::repeat_byte(3),
            }
            .abi_encode(),
            creditChannelCall {
                sessionId: session,
                receiver: VENDOR,
                receiverAuthorizer: a,
                withdrawDelay: 900,
            }
            .abi_encode(),
            withdrawChannelCall {
                sessionId: session,
                receiver: VENDOR,
                receiverAuthorizer: a,
                withdrawDelay: 900,
            }
            .abi_encode(),
            channelCall {
                channelId: B256::repeat_byte(5),
            }
            .abi_encode(),
        ]
    }

    /// Each call as is, cut short, extended, and with each byte of its arguments' heads (and of
    /// the `bytes` tails) set to a value that breaks a narrower type.
    fn variants(call: &[u8]) -> Vec<Vec<u8>> {
        let mut out = vec![call.to_vec(), call[..call.len() - 1].to_vec()];
        let mut longer = call.to_vec();
        longer.extend([0xAB; 33]);
        out.push(longer);
        // A batch's records are the wallet's to judge, not the router's: its first will do.
        let end = if call[..4] == payBatchCall::SELECTOR {
            4 + 64 + bursar_bindings::wallet::batch::RECORD_BYTES
        } else {
            call.len()
        };
        for at in 4..end {
            for value in [0xFF, 0x02] {
                if call[at] != value {
                    let mut bad = call.to_vec();
                    bad[at] = value;
                    out.push(bad);
                }
            }
        }
        out
    }

    #[test]
    fn hand_router_matches_public_router() {
        let (host, key) = world();
        let mut inputs = vec![Vec::new(), vec![1, 2, 3], vec![0xde, 0xad, 0xbe, 0xef]];
        let calls = calls(&host, &key);
        // A function added to the ABI must get a router arm and a case here.
        let mut tested: Vec<[u8; 4]> = calls[1..]
            .iter()
            .map(|c| c[..4].try_into().unwrap())
            .collect();
        tested.sort();
        tested.dedup();
        let mut abi = ISessionWalletCalls::SELECTORS.to_vec();
        abi.sort();
        assert_eq!(tested, abi, "functions without a test case");
        for call in &calls {
            inputs.extend(variants(call));
        }
        let (mut checked, mut paid) = (0, 0);
        for input in &inputs {
            for (sender, value) in [(OWNER, 0u64), (RELAYER, 0), (OWNER, 5), (OWNER, 1000)] {
                let run = |route: fn(&mut SessionWallet, &[u8]) -> ArbResult| {
                    let before = host.checkpoint();
                    host.send_from(sender, U256::from(value));
                    let result = route(&mut SessionWallet::from(&host), input);
                    let state = host.vm.snapshot();
                    host.revert_to(before);
                    (result, state.storage, state.emitted_logs)
                };
                let (expected, mine) = (run(sdk), run(both));
                assert_eq!(mine, expected, "input {input:02x?}, value {value}");
                checked += 1;
                paid += usize::from(*input == calls[2] && expected.0.is_ok());
            }
        }
        assert!(
            checked > 10_000 && paid == 2,
            "{checked} calls, {paid} paid"
        );
    }
}
