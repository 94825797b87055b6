//! Unit tests on `stylus_sdk::testing::TestVM`.
//!
//! TestVM has no precompiles: `permit`'s `ecrecover` (a static call to 0x01) is answered by
//! [`mock_ecrecover`], which computes what the precompile would return with `k256`. Two TestVM
//! quirks shape these tests (stylus-test 0.10.10, `vm.rs`):
//! * mocks are kept in a map keyed by `(to, calldata)` and never consumed;
//! * the data a call returns is whatever the *most recently registered* mock returns, matched
//!   or not — only the success flag comes from the matched mock, and a call that matches no
//!   mock "succeeds". So the ecrecover mock is registered right before each `permit`, and
//!   [`permit_calls_ecrecover_with_the_alloy_digest`] uses a failing mock as a probe to prove
//!   that the precompile input is exactly `digest ‖ v ‖ r ‖ s`.
//!
//! Failed calls are not rolled back by TestVM; the contract checks everything before writing, and
//! the tests assert that failures leave the state unchanged.

use alloc::vec::Vec;
use core::fmt::Debug;
use std::collections::HashMap;

use alloy_primitives::{address, keccak256, Address, B256, U256};
use alloy_sol_types::{SolError, SolStruct};
use bursar_bindings::{
    eip712::{Permit, TEST_TOKEN_DOMAIN},
    token::ITestToken,
};
use k256::ecdsa::{RecoveryId, Signature, SigningKey, VerifyingKey};
use proptest::prelude::*;
use stylus_sdk::testing::*;

use super::*;

const OWNER: Address = address!("00000000000000000000000000000000000000a1");
const ALICE: Address = address!("00000000000000000000000000000000000000b2");
const BOB: Address = address!("00000000000000000000000000000000000000c3");
const CAROL: Address = address!("00000000000000000000000000000000000000d4");
const ECRECOVER: Address = address!("0000000000000000000000000000000000000001");

use bursar_contract_testing::{decode_log as decode, raw_log as event, LogCursor, RawLog};

/// A deployed token, the VM it runs on and the logs the test has not read yet.
struct Env {
    vm: TestVM,
    token: TestToken,
    logs: LogCursor,
}

impl Env {
    /// Deploys with `OWNER` and checks the constructor's event.
    fn new() -> Self {
        Self::with_vm(TestVM::default())
    }

    fn with_vm(vm: TestVM) -> Self {
        let mut token = TestToken::from(&vm);
        token.constructor(OWNER).unwrap();
        let mut env = Env {
            vm,
            token,
            logs: LogCursor::default(),
        };
        env.expect_events(&[event(ITestToken::OwnershipTransferred {
            previousOwner: Address::ZERO,
            newOwner: OWNER,
        })]);
        env
    }

    /// The token, called by `sender`.
    fn by(&mut self, sender: Address) -> &mut TestToken {
        self.vm.set_sender(sender);
        &mut self.token
    }

    /// Logs emitted since the last call.
    fn events(&mut self) -> Vec<RawLog> {
        self.logs.take(&self.vm)
    }

    fn expect_events(&mut self, expected: &[RawLog]) {
        assert_eq!(self.events(), expected);
    }

    fn expect_no_events(&mut self) {
        self.expect_events(&[]);
    }

    fn mint(&mut self, to: Address, value: u64) {
        self.by(OWNER).mint(to, U256::from(value)).unwrap();
        self.events();
    }

    fn domain(&self) -> alloy_sol_types::Eip712Domain {
        TEST_TOKEN_DOMAIN.at(self.vm.chain_id(), self.vm.contract_address())
    }

    /// The digest `owner` must sign for a permit with its current nonce.
    fn permit_hash(&self, owner: Address, spender: Address, value: U256, deadline: U256) -> B256 {
        Permit {
            owner,
            spender,
            value,
            nonce: self.token.nonces(owner),
            deadline,
        }
        .eip712_signing_hash(&self.domain())
    }

    /// Submits a permit (by `CAROL`), with ecrecover answering as the precompile would for the
    /// digest alloy computes.
    fn permit(
        &mut self,
        owner: Address,
        spender: Address,
        value: U256,
        deadline: U256,
        (v, r, s): (u8, B256, B256),
    ) -> Result<()> {
        let digest = self.permit_hash(owner, spender, value, deadline);
        // The contract hands the precompile v as 27/28 (it also accepts 0/1).
        let precompile_v = if v < 2 { v + 27 } else { v };
        mock_ecrecover(&self.vm, digest, precompile_v, r, s);
        self.by(CAROL)
            .permit(owner, spender, value, deadline, v, r, s)
    }
}

#[track_caller]
fn assert_revert<T: Debug, E: SolError>(result: Result<T, TokenError>, expected: E) {
    let err = result.expect_err("call should revert");
    assert_eq!(Vec::<u8>::from(err), expected.abi_encode());
}

fn u(v: u64) -> U256 {
    U256::from(v)
}

fn key(seed: u8) -> SigningKey {
    SigningKey::from_slice(&[seed; 32]).unwrap()
}

fn address_of(key: &VerifyingKey) -> Address {
    let point = key.to_encoded_point(false);
    Address::from_slice(&keccak256(&point.as_bytes()[1..])[12..])
}

/// `(v, r, s)` of `key`'s signature of `digest`, `v` in {27, 28}, low `s` (k256 normalizes).
fn sign(key: &SigningKey, digest: B256) -> (u8, B256, B256) {
    let (sig, recid) = key.sign_prehash_recoverable(digest.as_slice()).unwrap();
    let bytes = sig.to_bytes();
    (
        27 + recid.to_byte(),
        B256::from_slice(&bytes[..32]),
        B256::from_slice(&bytes[32..]),
    )
}

/// The precompile's input: `hash ‖ v ‖ r ‖ s`, one word each.
fn ecrecover_input(digest: B256, v: u8, r: B256, s: B256) -> Vec<u8> {
    let mut input = digest.to_vec();
    input.extend_from_slice(&U256::from(v).to_be_bytes::<32>());
    input.extend_from_slice(r.as_slice());
    input.extend_from_slice(s.as_slice());
    input
}

/// What precompile 0x01 returns: the signer left-padded to 32 bytes, or nothing.
fn ecrecover(digest: B256, v: u8, r: B256, s: B256) -> Vec<u8> {
    let mut rs = [0u8; 64];
    rs[..32].copy_from_slice(r.as_slice());
    rs[32..].copy_from_slice(s.as_slice());
    let recovered = (v == 27 || v == 28)
        .then(|| Signature::from_slice(&rs).ok())
        .flatten()
        .and_then(|sig| {
            let recid = RecoveryId::from_byte(v - 27)?;
            // The precompile accepts high `s`; k256 only recovers from the low-`s` twin.
            let (sig, recid) = match sig.normalize_s() {
                Some(low) => (
                    low,
                    RecoveryId::new(!recid.is_y_odd(), recid.is_x_reduced()),
                ),
                None => (sig, recid),
            };
            VerifyingKey::recover_from_prehash(digest.as_slice(), &sig, recid).ok()
        });
    match recovered {
        Some(key) => {
            let mut out = vec![0u8; 12];
            out.extend_from_slice(address_of(&key).as_slice());
            out
        }
        None => Vec::new(),
    }
}

fn mock_ecrecover(vm: &TestVM, digest: B256, v: u8, r: B256, s: B256) {
    vm.mock_static_call(
        ECRECOVER,
        ecrecover_input(digest, v, r, s),
        Ok(ecrecover(digest, v, r, s)),
    );
}

// ---- metadata, constructor, ownership ----

#[test]
fn metadata() {
    let env = Env::new();
    assert_eq!(TestToken::name(), "Bursar Test USD");
    assert_eq!(TestToken::symbol(), "tUSD");
    assert_eq!(TestToken::decimals(), 6);
    assert_eq!(env.token.owner(), OWNER);
    assert_eq!(env.token.total_supply(), U256::ZERO);
    assert_eq!(env.token.balance_of(ALICE), U256::ZERO);
    assert_eq!(env.token.allowance(ALICE, BOB), U256::ZERO);
    assert_eq!(env.token.nonces(ALICE), U256::ZERO);
}

#[test]
fn constructor_emits_ownership_transferred() {
    let vm = TestVM::default();
    let mut token = TestToken::from(&vm);
    token.constructor(OWNER).unwrap();
    let logs = vm.get_emitted_logs();
    assert_eq!(logs.len(), 1);
    let ev: ITestToken::OwnershipTransferred = decode(&logs[0]);
    assert_eq!(ev.previousOwner, Address::ZERO);
    assert_eq!(ev.newOwner, OWNER);
}

#[test]
fn constructor_rejects_zero_owner() {
    let vm = TestVM::default();
    let mut token = TestToken::from(&vm);
    let err = token.constructor(Address::ZERO).unwrap_err();
    assert!(matches!(err, TokenError::InvalidOwner(_)));
    assert_revert(
        Err::<(), _>(err),
        ITestToken::OwnableInvalidOwner {
            owner: Address::ZERO,
        },
    );
    assert_eq!(token.owner(), Address::ZERO);
    assert!(vm.get_emitted_logs().is_empty());
}

#[test]
fn transfer_ownership_moves_minting_rights() {
    let mut env = Env::new();
    env.by(OWNER).transfer_ownership(ALICE).unwrap();
    assert_eq!(env.token.owner(), ALICE);
    env.expect_events(&[event(ITestToken::OwnershipTransferred {
        previousOwner: OWNER,
        newOwner: ALICE,
    })]);

    assert_revert(
        env.by(OWNER).mint(BOB, u(1)),
        ITestToken::OwnableUnauthorizedAccount { account: OWNER },
    );
    env.by(ALICE).mint(BOB, u(1)).unwrap();
    assert_eq!(env.token.balance_of(BOB), u(1));
}

#[test]
fn transfer_ownership_by_non_owner_reverts() {
    let mut env = Env::new();
    assert_revert(
        env.by(ALICE).transfer_ownership(ALICE),
        ITestToken::OwnableUnauthorizedAccount { account: ALICE },
    );
    assert_eq!(env.token.owner(), OWNER);
    env.expect_no_events();
}

#[test]
fn transfer_ownership_to_zero_reverts() {
    let mut env = Env::new();
    assert_revert(
        env.by(OWNER).transfer_ownership(Address::ZERO),
        ITestToken::OwnableInvalidOwner {
            owner: Address::ZERO,
        },
    );
    assert_eq!(env.token.owner(), OWNER);
    env.expect_no_events();
}

// ---- mint ----

#[test]
fn mint_credits_and_emits_transfer_from_zero() {
    let mut env = Env::new();
    env.by(OWNER).mint(ALICE, u(1_000_000)).unwrap();
    env.by(OWNER).mint(ALICE, u(500)).unwrap();
    env.by(OWNER).mint(BOB, U256::ZERO).unwrap();
    assert_eq!(env.token.balance_of(ALICE), u(1_000_500));
    assert_eq!(env.token.total_supply(), u(1_000_500));
    let logs = env.events();
    assert_eq!(
        logs,
        [
            event(ITestToken::Transfer {
                from: Address::ZERO,
                to: ALICE,
                value: u(1_000_000),
            }),
            event(ITestToken::Transfer {
                from: Address::ZERO,
                to: ALICE,
                value: u(500),
            }),
            event(ITestToken::Transfer {
                from: Address::ZERO,
                to: BOB,
                value: U256::ZERO,
            }),
        ]
    );
    let first: ITestToken::Transfer = decode(&logs[0]);
    assert_eq!(
        (first.from, first.to, first.value),
        (Address::ZERO, ALICE, u(1_000_000))
    );
}

#[test]
fn mint_by_non_owner_reverts() {
    let mut env = Env::new();
    let err = env.by(ALICE).mint(ALICE, u(1)).unwrap_err();
    assert!(matches!(err, TokenError::UnauthorizedAccount(_)));
    assert_revert(
        Err::<(), _>(err),
        ITestToken::OwnableUnauthorizedAccount { account: ALICE },
    );
    assert_eq!(env.token.total_supply(), U256::ZERO);
    env.expect_no_events();
}

#[test]
fn mint_to_zero_reverts() {
    let mut env = Env::new();
    assert_revert(
        env.by(OWNER).mint(Address::ZERO, u(1)),
        ITestToken::ERC20InvalidReceiver {
            receiver: Address::ZERO,
        },
    );
    assert_eq!(env.token.total_supply(), U256::ZERO);
    env.expect_no_events();
}

#[test]
fn mint_overflowing_total_supply_reverts() {
    let mut env = Env::new();
    env.by(OWNER).mint(ALICE, U256::MAX - u(1)).unwrap();
    env.events();
    assert_revert(
        env.by(OWNER).mint(BOB, u(2)),
        ITestToken::TokenOverflow {
            current: U256::MAX - u(1),
            increment: u(2),
        },
    );
    assert_eq!(env.token.total_supply(), U256::MAX - u(1));
    assert_eq!(env.token.balance_of(BOB), U256::ZERO);
    env.expect_no_events();
    // Up to the last unit is fine.
    env.by(OWNER).mint(BOB, u(1)).unwrap();
    assert_eq!(env.token.total_supply(), U256::MAX);
}

// ---- transfer ----

#[test]
fn transfer_moves_tokens_and_emits() {
    let mut env = Env::new();
    env.mint(ALICE, 100);
    assert!(env.by(ALICE).transfer(BOB, u(30)).unwrap());
    assert_eq!(env.token.balance_of(ALICE), u(70));
    assert_eq!(env.token.balance_of(BOB), u(30));
    assert_eq!(env.token.total_supply(), u(100));
    env.expect_events(&[event(ITestToken::Transfer {
        from: ALICE,
        to: BOB,
        value: u(30),
    })]);

    // The whole balance, zero, and to oneself.
    assert!(env.by(ALICE).transfer(BOB, u(70)).unwrap());
    assert!(env.by(ALICE).transfer(BOB, U256::ZERO).unwrap());
    assert!(env.by(BOB).transfer(BOB, u(100)).unwrap());
    assert_eq!(env.token.balance_of(ALICE), U256::ZERO);
    assert_eq!(env.token.balance_of(BOB), u(100));
    assert_eq!(env.events().len(), 3);
}

#[test]
fn transfer_more_than_balance_reverts() {
    let mut env = Env::new();
    env.mint(ALICE, 100);
    let err = env.by(ALICE).transfer(BOB, u(101)).unwrap_err();
    assert!(matches!(err, TokenError::InsufficientBalance(_)));
    assert_revert(
        Err::<(), _>(err),
        ITestToken::ERC20InsufficientBalance {
            sender: ALICE,
            balance: u(100),
            needed: u(101),
        },
    );
    assert_eq!(env.token.balance_of(ALICE), u(100));
    assert_eq!(env.token.balance_of(BOB), U256::ZERO);
    env.expect_no_events();
}

#[test]
fn transfer_to_zero_reverts() {
    let mut env = Env::new();
    env.mint(ALICE, 100);
    assert_revert(
        env.by(ALICE).transfer(Address::ZERO, u(1)),
        ITestToken::ERC20InvalidReceiver {
            receiver: Address::ZERO,
        },
    );
    assert_eq!(env.token.balance_of(ALICE), u(100));
    env.expect_no_events();
}

#[test]
fn transfer_from_zero_sender_reverts() {
    // Unreachable on chain (no one signs as 0x0), kept as in OpenZeppelin.
    let mut env = Env::new();
    assert_revert(
        env.by(Address::ZERO).transfer(ALICE, U256::ZERO),
        ITestToken::ERC20InvalidSender {
            sender: Address::ZERO,
        },
    );
    env.expect_no_events();
}

#[test]
fn credit_overflow_reverts() {
    // Unreachable through the ABI (balances sum to the total supply); forced through storage.
    let mut env = Env::new();
    env.mint(ALICE, 5);
    env.token.balances.setter(BOB).set(U256::MAX);
    assert_revert(
        env.by(ALICE).transfer(BOB, u(1)),
        ITestToken::TokenOverflow {
            current: U256::MAX,
            increment: u(1),
        },
    );
    env.token.balances.setter(BOB).set(U256::MAX - u(1));
    assert_revert(
        env.by(OWNER).mint(BOB, u(2)),
        ITestToken::TokenOverflow {
            current: U256::MAX - u(1),
            increment: u(2),
        },
    );
}

// ---- approve / transferFrom ----

#[test]
fn approve_sets_allowance_and_emits() {
    let mut env = Env::new();
    assert!(env.by(ALICE).approve(BOB, u(50)).unwrap());
    assert_eq!(env.token.allowance(ALICE, BOB), u(50));
    assert!(env.by(ALICE).approve(BOB, u(7)).unwrap());
    assert_eq!(env.token.allowance(ALICE, BOB), u(7));
    let logs = env.events();
    assert_eq!(
        logs,
        [
            event(ITestToken::Approval {
                owner: ALICE,
                spender: BOB,
                value: u(50),
            }),
            event(ITestToken::Approval {
                owner: ALICE,
                spender: BOB,
                value: u(7),
            }),
        ]
    );
    let last: ITestToken::Approval = decode(&logs[1]);
    assert_eq!((last.owner, last.spender, last.value), (ALICE, BOB, u(7)));
}

#[test]
fn approve_zero_spender_reverts() {
    let mut env = Env::new();
    let err = env.by(ALICE).approve(Address::ZERO, u(1)).unwrap_err();
    assert!(matches!(err, TokenError::InvalidSpender(_)));
    assert_revert(
        Err::<(), _>(err),
        ITestToken::ERC20InvalidSpender {
            spender: Address::ZERO,
        },
    );
    env.expect_no_events();
}

#[test]
fn approve_from_zero_reverts() {
    let mut env = Env::new();
    assert_revert(
        env.by(Address::ZERO).approve(BOB, u(1)),
        ITestToken::ERC20InvalidApprover {
            approver: Address::ZERO,
        },
    );
    assert_eq!(env.token.allowance(Address::ZERO, BOB), U256::ZERO);
    env.expect_no_events();
}

#[test]
fn transfer_from_spends_allowance() {
    let mut env = Env::new();
    env.mint(ALICE, 100);
    env.by(ALICE).approve(BOB, u(60)).unwrap();
    env.events();
    assert!(env.by(BOB).transfer_from(ALICE, CAROL, u(25)).unwrap());
    assert_eq!(env.token.balance_of(ALICE), u(75));
    assert_eq!(env.token.balance_of(CAROL), u(25));
    assert_eq!(env.token.allowance(ALICE, BOB), u(35));
    // Only Transfer: spending an allowance emits no Approval (OpenZeppelin 5).
    env.expect_events(&[event(ITestToken::Transfer {
        from: ALICE,
        to: CAROL,
        value: u(25),
    })]);
    assert!(env.by(BOB).transfer_from(ALICE, BOB, u(35)).unwrap());
    assert_eq!(env.token.allowance(ALICE, BOB), U256::ZERO);
    assert_eq!(env.token.balance_of(BOB), u(35));
}

#[test]
fn infinite_allowance_is_not_decreased() {
    let mut env = Env::new();
    env.mint(ALICE, 100);
    env.by(ALICE).approve(BOB, U256::MAX).unwrap();
    env.events();
    env.by(BOB).transfer_from(ALICE, CAROL, u(40)).unwrap();
    env.by(BOB).transfer_from(ALICE, CAROL, u(60)).unwrap();
    assert_eq!(env.token.allowance(ALICE, BOB), U256::MAX);
    assert_eq!(env.token.balance_of(CAROL), u(100));
    assert_eq!(env.events().len(), 2);
}

#[test]
fn transfer_from_over_allowance_reverts() {
    let mut env = Env::new();
    env.mint(ALICE, 100);
    env.by(ALICE).approve(BOB, u(10)).unwrap();
    env.events();
    let err = env.by(BOB).transfer_from(ALICE, CAROL, u(11)).unwrap_err();
    assert!(matches!(err, TokenError::InsufficientAllowance(_)));
    assert_revert(
        Err::<(), _>(err),
        ITestToken::ERC20InsufficientAllowance {
            spender: BOB,
            allowance: u(10),
            needed: u(11),
        },
    );
    // No allowance at all.
    assert_revert(
        env.by(CAROL).transfer_from(ALICE, CAROL, u(1)),
        ITestToken::ERC20InsufficientAllowance {
            spender: CAROL,
            allowance: U256::ZERO,
            needed: u(1),
        },
    );
    assert_eq!(env.token.allowance(ALICE, BOB), u(10));
    assert_eq!(env.token.balance_of(ALICE), u(100));
    env.expect_no_events();
}

#[test]
fn transfer_from_over_balance_reverts_and_keeps_allowance() {
    let mut env = Env::new();
    env.mint(ALICE, 5);
    env.by(ALICE).approve(BOB, u(10)).unwrap();
    env.events();
    assert_revert(
        env.by(BOB).transfer_from(ALICE, CAROL, u(6)),
        ITestToken::ERC20InsufficientBalance {
            sender: ALICE,
            balance: u(5),
            needed: u(6),
        },
    );
    assert_eq!(env.token.allowance(ALICE, BOB), u(10));
    assert_eq!(env.token.balance_of(ALICE), u(5));
    env.expect_no_events();
}

#[test]
fn transfer_from_zero_addresses_reverts() {
    let mut env = Env::new();
    env.mint(ALICE, 5);
    env.by(ALICE).approve(BOB, u(10)).unwrap();
    env.events();
    assert_revert(
        env.by(BOB).transfer_from(ALICE, Address::ZERO, u(1)),
        ITestToken::ERC20InvalidReceiver {
            receiver: Address::ZERO,
        },
    );
    assert_revert(
        env.by(BOB).transfer_from(Address::ZERO, CAROL, U256::ZERO),
        ITestToken::ERC20InvalidSender {
            sender: Address::ZERO,
        },
    );
    assert_eq!(env.token.allowance(ALICE, BOB), u(10));
    env.expect_no_events();
}

// ---- EIP-712 / permit ----

#[test]
fn domain_separator_matches_alloy() {
    let env = Env::new();
    assert_eq!(env.token.domain_separator(), env.domain().separator());

    // It follows the chain and the contract's address.
    let vm = TestVM::default();
    vm.set_chain_id(412_346);
    vm.set_contract_address(address!("1111111111111111111111111111111111111111"));
    let other = Env::with_vm(vm);
    assert_eq!(other.token.domain_separator(), other.domain().separator());
    assert_ne!(other.token.domain_separator(), env.token.domain_separator());
}

#[test]
fn permit_digest_matches_alloy() {
    let mut env = Env::new();
    env.token.nonces.setter(ALICE).set(u(7));
    let (value, deadline) = (u(123_456), u(1_900_000_000));
    assert_eq!(
        env.token
            .permit_digest(ALICE, BOB, value, env.token.nonces(ALICE), deadline),
        env.permit_hash(ALICE, BOB, value, deadline),
    );
}

#[test]
fn permit_sets_allowance_and_bumps_nonce() {
    let mut env = Env::new();
    let owner_key = key(0x11);
    let owner = address_of(owner_key.verifying_key());
    env.mint(owner, 1_000);
    let deadline = u(env.vm.block_timestamp() + 3600);
    let digest = env.permit_hash(owner, BOB, u(400), deadline);
    let sig = sign(&owner_key, digest);

    env.permit(owner, BOB, u(400), deadline, sig).unwrap();
    assert_eq!(env.token.allowance(owner, BOB), u(400));
    assert_eq!(env.token.nonces(owner), u(1));
    let logs = env.events();
    assert_eq!(
        logs,
        [event(ITestToken::Approval {
            owner,
            spender: BOB,
            value: u(400),
        })]
    );

    // The spender can use it.
    env.by(BOB).transfer_from(owner, CAROL, u(400)).unwrap();
    assert_eq!(env.token.balance_of(CAROL), u(400));

    // A second permit signs nonce 1; v may be given as 0/1 too.
    let digest = env.permit_hash(owner, BOB, U256::MAX, deadline);
    let (v, r, s) = sign(&owner_key, digest);
    env.permit(owner, BOB, U256::MAX, deadline, (v - 27, r, s))
        .unwrap();
    assert_eq!(env.token.allowance(owner, BOB), U256::MAX);
    assert_eq!(env.token.nonces(owner), u(2));
}

#[test]
fn permit_at_the_deadline_is_accepted() {
    let mut env = Env::new();
    env.vm.set_block_timestamp(1_000);
    let owner_key = key(0x12);
    let owner = address_of(owner_key.verifying_key());
    let digest = env.permit_hash(owner, BOB, u(1), u(1_000));
    let sig = sign(&owner_key, digest);
    env.permit(owner, BOB, u(1), u(1_000), sig).unwrap();
    assert_eq!(env.token.allowance(owner, BOB), u(1));
}

#[test]
fn permit_calls_ecrecover_with_the_alloy_digest() {
    // Probe: the only mock fails, and its (shared) return data names the owner. A call that
    // matches it fails (-> no signer); a call with any other input "succeeds" with the owner.
    let owner_key = key(0x13);
    let owner = address_of(owner_key.verifying_key());
    let deadline = u(10_000);
    let mut owner_word = vec![0u8; 12];
    owner_word.extend_from_slice(owner.as_slice());

    let mut env = Env::new();
    let digest = env.permit_hash(owner, BOB, u(5), deadline);
    let (v, r, s) = sign(&owner_key, digest);
    env.vm.mock_static_call(
        ECRECOVER,
        ecrecover_input(digest, v, r, s),
        Err(owner_word.clone()),
    );
    assert_revert(
        env.by(CAROL).permit(owner, BOB, u(5), deadline, v, r, s),
        ITestToken::ERC2612InvalidSigner {
            signer: Address::ZERO,
            owner,
        },
    );

    // The probe discriminates: keyed on another digest, the call misses it and passes.
    let mut env = Env::new();
    let other = env.permit_hash(owner, BOB, u(6), deadline);
    env.vm
        .mock_static_call(ECRECOVER, ecrecover_input(other, v, r, s), Err(owner_word));
    env.by(CAROL)
        .permit(owner, BOB, u(5), deadline, v, r, s)
        .unwrap();
}

#[test]
fn permit_after_deadline_reverts() {
    let mut env = Env::new();
    env.vm.set_block_timestamp(1_001);
    let owner_key = key(0x14);
    let owner = address_of(owner_key.verifying_key());
    let digest = env.permit_hash(owner, BOB, u(1), u(1_000));
    let sig = sign(&owner_key, digest);
    let err = env.permit(owner, BOB, u(1), u(1_000), sig).unwrap_err();
    assert!(matches!(err, TokenError::ExpiredSignature(_)));
    assert_revert(
        Err::<(), _>(err),
        ITestToken::ERC2612ExpiredSignature { deadline: u(1_000) },
    );
    assert_eq!(env.token.allowance(owner, BOB), U256::ZERO);
    assert_eq!(env.token.nonces(owner), U256::ZERO);
    env.expect_no_events();
}

#[test]
fn permit_signed_by_another_key_reverts() {
    let mut env = Env::new();
    let owner = address_of(key(0x15).verifying_key());
    let mallory_key = key(0x16);
    let mallory = address_of(mallory_key.verifying_key());
    let deadline = u(10_000);
    let digest = env.permit_hash(owner, BOB, u(1), deadline);
    let sig = sign(&mallory_key, digest);
    let err = env.permit(owner, BOB, u(1), deadline, sig).unwrap_err();
    assert!(matches!(err, TokenError::InvalidSigner(_)));
    assert_revert(
        Err::<(), _>(err),
        ITestToken::ERC2612InvalidSigner {
            signer: mallory,
            owner,
        },
    );
    assert_eq!(env.token.allowance(owner, BOB), U256::ZERO);
    assert_eq!(env.token.nonces(owner), U256::ZERO);
    env.expect_no_events();
}

#[test]
fn permit_replay_reverts() {
    let mut env = Env::new();
    let owner_key = key(0x17);
    let owner = address_of(owner_key.verifying_key());
    let deadline = u(10_000);
    let digest = env.permit_hash(owner, BOB, u(9), deadline);
    let (v, r, s) = sign(&owner_key, digest);
    env.permit(owner, BOB, u(9), deadline, (v, r, s)).unwrap();
    env.by(OWNER).mint(owner, u(9)).unwrap();
    env.by(BOB).transfer_from(owner, BOB, u(9)).unwrap();
    env.events();

    // Same signature again: it now covers the wrong nonce and recovers to some other address.
    let digest_now = env.permit_hash(owner, BOB, u(9), deadline);
    let mut recovered = ecrecover(digest_now, v, r, s);
    assert_eq!(recovered.len(), 32);
    let signer = Address::from_slice(&recovered.split_off(12));
    assert_ne!(signer, owner);
    assert_revert(
        env.permit(owner, BOB, u(9), deadline, (v, r, s)),
        ITestToken::ERC2612InvalidSigner { signer, owner },
    );
    assert_eq!(env.token.allowance(owner, BOB), U256::ZERO);
    assert_eq!(env.token.nonces(owner), u(1));
    env.expect_no_events();
}

#[test]
fn permit_with_malformed_signature_reverts_with_zero_signer() {
    let mut env = Env::new();
    let owner_key = key(0x18);
    let owner = address_of(owner_key.verifying_key());
    let deadline = u(10_000);
    let digest = env.permit_hash(owner, BOB, u(1), deadline);
    let (v, r, s) = sign(&owner_key, digest);
    let invalid = ITestToken::ERC2612InvalidSigner {
        signer: Address::ZERO,
        owner,
    };

    // v outside {0, 1, 27, 28}.
    assert_revert(
        env.permit(owner, BOB, u(1), deadline, (29, r, s)),
        invalid.clone(),
    );
    // The malleable twin (n - s, other parity): rejected before the precompile.
    let n = alloy_primitives::uint!(
        0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141_U256
    );
    let high_s = B256::from(n - U256::from_be_bytes(s.0));
    let flipped = if v == 27 { 28 } else { 27 };
    assert_eq!(
        ecrecover(digest, flipped, r, high_s)[12..],
        *owner.as_slice()
    );
    assert_revert(
        env.permit(owner, BOB, u(1), deadline, (flipped, r, high_s)),
        invalid.clone(),
    );
    // r = 0: the precompile returns nothing.
    assert_revert(
        env.permit(owner, BOB, u(1), deadline, (v, B256::ZERO, s)),
        invalid.clone(),
    );
    assert_eq!(env.token.nonces(owner), U256::ZERO);
    env.expect_no_events();

    // Owner zero never passes, even though "no signer" is the zero address.
    let mut fresh = Env::new();
    assert_revert(
        fresh
            .by(CAROL)
            .permit(Address::ZERO, BOB, u(1), deadline, v, r, s),
        ITestToken::ERC2612InvalidSigner {
            signer: Address::ZERO,
            owner: Address::ZERO,
        },
    );
    assert_eq!(fresh.token.allowance(Address::ZERO, BOB), U256::ZERO);
}

#[test]
fn permit_for_zero_spender_reverts() {
    let mut env = Env::new();
    let owner_key = key(0x19);
    let owner = address_of(owner_key.verifying_key());
    let deadline = u(10_000);
    let digest = env.permit_hash(owner, Address::ZERO, u(1), deadline);
    let sig = sign(&owner_key, digest);
    assert_revert(
        env.permit(owner, Address::ZERO, u(1), deadline, sig),
        ITestToken::ERC20InvalidSpender {
            spender: Address::ZERO,
        },
    );
    assert_eq!(env.token.nonces(owner), U256::ZERO);
    env.expect_no_events();
}

#[test]
fn permit_with_exhausted_nonce_reverts() {
    // Unreachable through the ABI (2^256 - 1 permits); forced through storage.
    let mut env = Env::new();
    let owner_key = key(0x1a);
    let owner = address_of(owner_key.verifying_key());
    env.token.nonces.setter(owner).set(U256::MAX);
    let deadline = u(10_000);
    let digest = env.permit_hash(owner, BOB, u(1), deadline);
    let sig = sign(&owner_key, digest);
    assert_revert(
        env.permit(owner, BOB, u(1), deadline, sig),
        ITestToken::TokenOverflow {
            current: U256::MAX,
            increment: u(1),
        },
    );
    assert_eq!(env.token.allowance(owner, BOB), U256::ZERO);
    env.expect_no_events();
}

// ---- property: supply == Σ balances, and the contract agrees with a model ----

#[derive(Clone, Debug)]
enum Op {
    Mint {
        by: usize,
        to: usize,
        value: U256,
    },
    Transfer {
        from: usize,
        to: usize,
        value: U256,
    },
    Approve {
        owner: usize,
        spender: usize,
        value: U256,
    },
    TransferFrom {
        spender: usize,
        from: usize,
        to: usize,
        value: U256,
    },
}

const ACCOUNTS: [Address; 4] = [OWNER, ALICE, BOB, CAROL];

fn amount() -> impl Strategy<Value = U256> {
    prop_oneof![
        6 => (0u64..2_000).prop_map(U256::from),
        1 => Just(U256::MAX),
        1 => any::<[u8; 32]>().prop_map(U256::from_be_bytes),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let who = || 0..ACCOUNTS.len();
    prop_oneof![
        (who(), who(), amount()).prop_map(|(by, to, value)| Op::Mint { by, to, value }),
        (who(), who(), amount()).prop_map(|(from, to, value)| Op::Transfer { from, to, value }),
        (who(), who(), amount()).prop_map(|(owner, spender, value)| Op::Approve {
            owner,
            spender,
            value
        }),
        (who(), who(), who(), amount()).prop_map(|(spender, from, to, value)| {
            Op::TransferFrom {
                spender,
                from,
                to,
                value,
            }
        }),
    ]
}

#[derive(Default)]
struct Model {
    supply: U256,
    balances: HashMap<Address, U256>,
    allowances: HashMap<(Address, Address), U256>,
}

impl Model {
    fn balance(&self, a: Address) -> U256 {
        self.balances.get(&a).copied().unwrap_or_default()
    }

    fn allowance(&self, owner: Address, spender: Address) -> U256 {
        self.allowances
            .get(&(owner, spender))
            .copied()
            .unwrap_or_default()
    }

    /// Applies `op` and says whether it should succeed.
    fn apply(&mut self, op: &Op) -> bool {
        match *op {
            Op::Mint { by, to, value } => {
                let Some(supply) = self.supply.checked_add(value) else {
                    return false;
                };
                if ACCOUNTS[by] != OWNER {
                    return false;
                }
                self.supply = supply;
                *self.balances.entry(ACCOUNTS[to]).or_default() += value;
                true
            }
            Op::Transfer { from, to, value } => self.transfer(ACCOUNTS[from], ACCOUNTS[to], value),
            Op::Approve {
                owner,
                spender,
                value,
            } => {
                self.allowances
                    .insert((ACCOUNTS[owner], ACCOUNTS[spender]), value);
                true
            }
            Op::TransferFrom {
                spender,
                from,
                to,
                value,
            } => {
                let (spender, from) = (ACCOUNTS[spender], ACCOUNTS[from]);
                let allowance = self.allowance(from, spender);
                if allowance < value || !self.transfer(from, ACCOUNTS[to], value) {
                    return false;
                }
                if allowance != U256::MAX {
                    self.allowances.insert((from, spender), allowance - value);
                }
                true
            }
        }
    }

    fn transfer(&mut self, from: Address, to: Address, value: U256) -> bool {
        if self.balance(from) < value {
            return false;
        }
        *self.balances.entry(from).or_default() -= value;
        *self.balances.entry(to).or_default() += value;
        true
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn supply_equals_sum_of_balances(ops in prop::collection::vec(op(), 1..40)) {
        let mut env = Env::new();
        let mut model = Model::default();
        for op in &ops {
            let expected = model.apply(op);
            let result = match *op {
                Op::Mint { by, to, value } => env.by(ACCOUNTS[by]).mint(ACCOUNTS[to], value),
                Op::Transfer { from, to, value } => {
                    env.by(ACCOUNTS[from]).transfer(ACCOUNTS[to], value).map(|_| ())
                }
                Op::Approve { owner, spender, value } => {
                    env.by(ACCOUNTS[owner]).approve(ACCOUNTS[spender], value).map(|_| ())
                }
                Op::TransferFrom { spender, from, to, value } => env
                    .by(ACCOUNTS[spender])
                    .transfer_from(ACCOUNTS[from], ACCOUNTS[to], value)
                    .map(|_| ()),
            };
            prop_assert_eq!(result.is_ok(), expected, "{:?}", op);
            prop_assert_eq!(env.events().len(), usize::from(expected));

            let mut sum = U256::ZERO;
            for a in ACCOUNTS {
                let balance = env.token.balance_of(a);
                prop_assert_eq!(balance, model.balance(a));
                sum = sum.checked_add(balance).expect("balances overflow");
                for s in ACCOUNTS {
                    prop_assert_eq!(env.token.allowance(a, s), model.allowance(a, s));
                }
            }
            prop_assert_eq!(env.token.total_supply(), model.supply);
            prop_assert_eq!(sum, env.token.total_supply());
        }
    }
}
