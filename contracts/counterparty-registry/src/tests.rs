//! Unit tests on `stylus_sdk::testing::TestVM`.
//!
//! TestVM does not roll back a call that fails; the contract checks everything before writing,
//! and the tests assert that failures leave the state (and the log) unchanged.

use alloc::vec::Vec;
use core::fmt::Debug;
use std::collections::HashMap;

use alloy_primitives::{address, Address, B256, U256};
use alloy_sol_types::SolError;
use bursar_bindings::counterparty::ICounterpartyRegistry as I;
use proptest::prelude::*;
use stylus_sdk::testing::*;

use super::*;

const OWNER: Address = address!("00000000000000000000000000000000000000a1");
const ADMIN: Address = address!("00000000000000000000000000000000000000a2");
const STRANGER: Address = address!("00000000000000000000000000000000000000a3");
const NEW_OWNER: Address = address!("00000000000000000000000000000000000000a4");
const PAYEE: Address = address!("00000000000000000000000000000000000000b1");
const PAYEE2: Address = address!("00000000000000000000000000000000000000b2");
const PAYEE3: Address = address!("00000000000000000000000000000000000000b3");

use bursar_contract_testing::{
    decode_log as decode, raw_log as event, LogCursor, MockHost, RawLog,
};
use stylus_sdk::stylus_core::AccountAccess;

/// A deployed registry, the VM it runs on and the logs the test has not read yet.
struct Env {
    vm: TestVM,
    reg: CounterpartyRegistry,
    logs: LogCursor,
}

impl Env {
    fn new() -> Self {
        let vm = TestVM::default();
        let reg = CounterpartyRegistry::from(&vm);
        Env {
            vm,
            reg,
            logs: LogCursor::default(),
        }
    }

    /// A registry with list 1 owned by `OWNER`, `ADMIN` appointed, log drained.
    fn with_list() -> Self {
        let mut env = Self::new();
        assert_eq!(env.by(OWNER).create_list().unwrap(), U256::from(1));
        env.by(OWNER).set_admin(one(), ADMIN, true).unwrap();
        env.events();
        env
    }

    /// The registry, called by `sender`.
    fn by(&mut self, sender: Address) -> &mut CounterpartyRegistry {
        self.vm.set_sender(sender);
        &mut self.reg
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
}

#[track_caller]
fn assert_revert<T: Debug, E: SolError>(result: Result<T, RegistryError>, expected: E) {
    let err = result.expect_err("call should revert");
    assert_eq!(Vec::<u8>::from(err), expected.abi_encode());
}

fn u(v: u64) -> U256 {
    U256::from(v)
}

fn one() -> U256 {
    U256::from(1)
}

fn label(s: &str) -> B256 {
    let mut b = [0u8; 32];
    b[..s.len()].copy_from_slice(s.as_bytes());
    B256::from(b)
}

fn entry_set(by: Address, counterparty: Address, allowed: bool, max: u64, l: &str) -> RawLog {
    event(I::EntrySet {
        listId: one(),
        counterparty,
        by,
        allowed,
        maxPerPayment: u(max),
        label: label(l),
    })
}

fn unknown_list(id: U256) -> I::CounterpartyUnknownList {
    I::CounterpartyUnknownList { listId: id }
}

fn unauthorized(caller: Address) -> I::CounterpartyUnauthorized {
    I::CounterpartyUnauthorized {
        listId: one(),
        caller,
    }
}

fn zero_address() -> I::CounterpartyInvalidAddress {
    I::CounterpartyInvalidAddress {
        account: Address::ZERO,
    }
}

// ---- lists and ownership ----

#[test]
fn create_list_numbers_from_one() {
    let mut env = Env::new();
    assert_eq!(env.reg.list_count(), U256::ZERO);
    assert_eq!(env.by(OWNER).create_list().unwrap(), u(1));
    assert_eq!(env.by(STRANGER).create_list().unwrap(), u(2));
    assert_eq!(env.reg.list_count(), u(2));
    assert_eq!(env.reg.list_owner(u(1)), OWNER);
    assert_eq!(env.reg.list_owner(u(2)), STRANGER);
    let logs = env.events();
    assert_eq!(
        logs,
        [
            event(I::ListCreated {
                listId: u(1),
                owner: OWNER,
            }),
            event(I::ListCreated {
                listId: u(2),
                owner: STRANGER,
            }),
        ]
    );
    let created: I::ListCreated = decode(&logs[1]);
    assert_eq!((created.listId, created.owner), (u(2), STRANGER));
}

#[test]
fn create_list_without_ids_left_reverts() {
    // Unreachable through the ABI (2^256 - 1 lists); forced through storage.
    let mut env = Env::new();
    env.reg.list_count.set(U256::MAX);
    let err = env.by(OWNER).create_list().unwrap_err();
    assert!(matches!(err, RegistryError::UnknownList(_)));
    assert_revert(Err::<(), _>(err), unknown_list(U256::ZERO));
    assert_eq!(env.reg.list_count(), U256::MAX);
    env.expect_no_events();
}

#[test]
fn unknown_lists_read_as_empty() {
    let mut env = Env::with_list();
    for id in [U256::ZERO, u(2), U256::MAX] {
        assert_eq!(env.reg.list_owner(id), Address::ZERO);
        assert!(!env.reg.is_admin(id, ADMIN));
        assert!(!env.reg.is_allowed(id, PAYEE, U256::ZERO));
        assert_eq!(
            env.reg.get_entry(id, PAYEE),
            (false, false, U256::ZERO, B256::ZERO)
        );
    }
    env.expect_no_events();
}

#[test]
fn transfer_list_ownership_hands_over_control() {
    let mut env = Env::with_list();
    env.by(OWNER)
        .transfer_list_ownership(one(), NEW_OWNER)
        .unwrap();
    assert_eq!(env.reg.list_owner(one()), NEW_OWNER);
    let logs = env.events();
    assert_eq!(
        logs,
        [event(I::ListOwnershipTransferred {
            listId: one(),
            previousOwner: OWNER,
            newOwner: NEW_OWNER,
        })]
    );
    let ev: I::ListOwnershipTransferred = decode(&logs[0]);
    assert_eq!((ev.previousOwner, ev.newOwner), (OWNER, NEW_OWNER));

    // The old owner is out; the new one is in; admins stay.
    assert_revert(
        env.by(OWNER)
            .set_entry(one(), PAYEE, true, U256::ZERO, B256::ZERO),
        unauthorized(OWNER),
    );
    assert_revert(
        env.by(OWNER).set_admin(one(), STRANGER, true),
        unauthorized(OWNER),
    );
    env.by(NEW_OWNER).set_admin(one(), STRANGER, true).unwrap();
    env.by(ADMIN)
        .set_entry(one(), PAYEE, true, U256::ZERO, B256::ZERO)
        .unwrap();
    assert!(env.reg.is_admin(one(), ADMIN));
}

#[test]
fn transfer_list_ownership_errors() {
    let mut env = Env::with_list();
    assert_revert(
        env.by(ADMIN).transfer_list_ownership(one(), ADMIN),
        unauthorized(ADMIN),
    );
    assert_revert(
        env.by(STRANGER).transfer_list_ownership(one(), STRANGER),
        unauthorized(STRANGER),
    );
    let err = env
        .by(OWNER)
        .transfer_list_ownership(one(), Address::ZERO)
        .unwrap_err();
    assert!(matches!(err, RegistryError::InvalidAddress(_)));
    assert_revert(Err::<(), _>(err), zero_address());
    for id in [U256::ZERO, u(2)] {
        assert_revert(
            env.by(OWNER).transfer_list_ownership(id, NEW_OWNER),
            unknown_list(id),
        );
    }
    assert_eq!(env.reg.list_owner(one()), OWNER);
    env.expect_no_events();
}

// ---- admins ----

#[test]
fn set_admin_appoints_and_dismisses() {
    let mut env = Env::with_list();
    assert!(env.reg.is_admin(one(), ADMIN));
    assert!(!env.reg.is_admin(one(), OWNER));
    env.by(OWNER).set_admin(one(), STRANGER, true).unwrap();
    env.by(OWNER).set_admin(one(), ADMIN, false).unwrap();
    assert!(env.reg.is_admin(one(), STRANGER));
    assert!(!env.reg.is_admin(one(), ADMIN));
    let logs = env.events();
    assert_eq!(
        logs,
        [
            event(I::ListAdminSet {
                listId: one(),
                admin: STRANGER,
                enabled: true,
            }),
            event(I::ListAdminSet {
                listId: one(),
                admin: ADMIN,
                enabled: false,
            }),
        ]
    );
    let ev: I::ListAdminSet = decode(&logs[1]);
    assert_eq!((ev.admin, ev.enabled), (ADMIN, false));

    // A dismissed admin can no longer edit; a new one can.
    assert_revert(
        env.by(ADMIN)
            .set_entry(one(), PAYEE, true, U256::ZERO, B256::ZERO),
        unauthorized(ADMIN),
    );
    env.by(STRANGER)
        .set_entry(one(), PAYEE, true, U256::ZERO, B256::ZERO)
        .unwrap();
}

#[test]
fn set_admin_errors() {
    let mut env = Env::with_list();
    // Admins cannot appoint admins.
    let err = env.by(ADMIN).set_admin(one(), STRANGER, true).unwrap_err();
    assert!(matches!(err, RegistryError::Unauthorized(_)));
    assert_revert(Err::<(), _>(err), unauthorized(ADMIN));
    assert_revert(
        env.by(STRANGER).set_admin(one(), STRANGER, true),
        unauthorized(STRANGER),
    );
    assert_revert(
        env.by(OWNER).set_admin(one(), Address::ZERO, true),
        zero_address(),
    );
    for id in [U256::ZERO, u(2)] {
        assert_revert(
            env.by(OWNER).set_admin(id, STRANGER, true),
            unknown_list(id),
        );
    }
    assert!(!env.reg.is_admin(one(), STRANGER));
    env.expect_no_events();
}

// ---- entries ----

#[test]
fn set_entry_by_owner_and_admin() {
    let mut env = Env::with_list();
    env.by(OWNER)
        .set_entry(one(), PAYEE, true, u(500), label("compute"))
        .unwrap();
    env.by(ADMIN)
        .set_entry(one(), PAYEE2, false, U256::ZERO, label("blocked"))
        .unwrap();
    assert_eq!(
        env.reg.get_entry(one(), PAYEE),
        (true, true, u(500), label("compute"))
    );
    assert_eq!(
        env.reg.get_entry(one(), PAYEE2),
        (true, false, U256::ZERO, label("blocked"))
    );
    let logs = env.events();
    assert_eq!(
        logs,
        [
            entry_set(OWNER, PAYEE, true, 500, "compute"),
            entry_set(ADMIN, PAYEE2, false, 0, "blocked"),
        ]
    );
    let ev: I::EntrySet = decode(&logs[1]);
    assert_eq!((ev.counterparty, ev.by, ev.allowed), (PAYEE2, ADMIN, false));

    // Replacing an entry overwrites every field.
    env.by(ADMIN)
        .set_entry(one(), PAYEE, false, u(7), label("paused"))
        .unwrap();
    assert_eq!(
        env.reg.get_entry(one(), PAYEE),
        (true, false, u(7), label("paused"))
    );
    env.expect_events(&[entry_set(ADMIN, PAYEE, false, 7, "paused")]);
}

#[test]
fn set_entry_errors() {
    let mut env = Env::with_list();
    let err = env
        .by(STRANGER)
        .set_entry(one(), PAYEE, true, U256::ZERO, B256::ZERO)
        .unwrap_err();
    assert!(matches!(err, RegistryError::Unauthorized(_)));
    assert_revert(Err::<(), _>(err), unauthorized(STRANGER));
    assert_revert(
        env.by(OWNER)
            .set_entry(one(), Address::ZERO, true, U256::ZERO, B256::ZERO),
        zero_address(),
    );
    for id in [U256::ZERO, u(2)] {
        let err = env
            .by(OWNER)
            .set_entry(id, PAYEE, true, U256::ZERO, B256::ZERO)
            .unwrap_err();
        assert!(matches!(err, RegistryError::UnknownList(_)));
        assert_revert(Err::<(), _>(err), unknown_list(id));
    }
    assert_eq!(
        env.reg.get_entry(one(), PAYEE),
        (false, false, U256::ZERO, B256::ZERO)
    );
    env.expect_no_events();
}

#[test]
fn set_entries_writes_in_order() {
    let mut env = Env::with_list();
    env.by(ADMIN)
        .set_entries(
            one(),
            vec![PAYEE, PAYEE2, PAYEE3, PAYEE],
            vec![true, false, true, true],
            vec![u(10), u(20), U256::ZERO, u(11)],
            vec![label("a"), label("b"), label("c"), label("d")],
        )
        .unwrap();
    env.expect_events(&[
        entry_set(ADMIN, PAYEE, true, 10, "a"),
        entry_set(ADMIN, PAYEE2, false, 20, "b"),
        entry_set(ADMIN, PAYEE3, true, 0, "c"),
        entry_set(ADMIN, PAYEE, true, 11, "d"),
    ]);
    // The later duplicate wins.
    assert_eq!(
        env.reg.get_entry(one(), PAYEE),
        (true, true, u(11), label("d"))
    );
    assert_eq!(
        env.reg.get_entry(one(), PAYEE2),
        (true, false, u(20), label("b"))
    );
    assert_eq!(
        env.reg.get_entry(one(), PAYEE3),
        (true, true, U256::ZERO, label("c"))
    );

    // An empty batch is a no-op.
    env.by(OWNER)
        .set_entries(one(), vec![], vec![], vec![], vec![])
        .unwrap();
    env.expect_no_events();
}

#[test]
fn set_entries_length_mismatch_reverts() {
    let mut env = Env::with_list();
    let cps = || vec![PAYEE, PAYEE2];
    let mismatch = |other: u64| I::CounterpartyLengthMismatch {
        counterparties: u(2),
        other: u(other),
    };
    let err = env
        .by(OWNER)
        .set_entries(one(), cps(), vec![true], vec![u(1); 2], vec![B256::ZERO; 2])
        .unwrap_err();
    assert!(matches!(err, RegistryError::LengthMismatch(_)));
    assert_revert(Err::<(), _>(err), mismatch(1));
    assert_revert(
        env.by(OWNER).set_entries(
            one(),
            cps(),
            vec![true; 2],
            vec![u(1); 3],
            vec![B256::ZERO; 2],
        ),
        mismatch(3),
    );
    assert_revert(
        env.by(OWNER)
            .set_entries(one(), cps(), vec![true; 2], vec![u(1); 2], vec![]),
        mismatch(0),
    );
    // The first mismatching array is reported.
    assert_revert(
        env.by(OWNER).set_entries(
            one(),
            cps(),
            vec![true; 5],
            vec![u(1); 4],
            vec![B256::ZERO; 3],
        ),
        mismatch(5),
    );
    assert!(!env.reg.get_entry(one(), PAYEE).0);
    env.expect_no_events();
}

#[test]
fn set_entries_other_errors_write_nothing() {
    let mut env = Env::with_list();
    let batch = |cps: Vec<Address>| {
        let n = cps.len();
        (cps, vec![true; n], vec![u(5); n], vec![label("x"); n])
    };

    let (c, a, m, l) = batch(vec![PAYEE, Address::ZERO, PAYEE2]);
    let err = env.by(OWNER).set_entries(one(), c, a, m, l).unwrap_err();
    assert!(matches!(err, RegistryError::InvalidAddress(_)));
    assert_revert(Err::<(), _>(err), zero_address());
    assert!(!env.reg.get_entry(one(), PAYEE).0);

    let (c, a, m, l) = batch(vec![PAYEE]);
    assert_revert(
        env.by(STRANGER).set_entries(one(), c, a, m, l),
        unauthorized(STRANGER),
    );
    for id in [U256::ZERO, u(2)] {
        let (c, a, m, l) = batch(vec![PAYEE]);
        assert_revert(env.by(OWNER).set_entries(id, c, a, m, l), unknown_list(id));
    }
    assert!(!env.reg.is_allowed(one(), PAYEE, U256::ZERO));
    env.expect_no_events();
}

#[test]
fn remove_entry_takes_effect_at_once() {
    let mut env = Env::with_list();
    env.by(OWNER)
        .set_entry(one(), PAYEE, true, U256::ZERO, label("a"))
        .unwrap();
    env.by(OWNER)
        .set_entry(one(), PAYEE2, false, u(3), label("b"))
        .unwrap();
    env.events();
    assert!(env.reg.is_allowed(one(), PAYEE, u(1)));

    env.by(ADMIN).remove_entry(one(), PAYEE).unwrap();
    assert!(!env.reg.is_allowed(one(), PAYEE, u(1)));
    assert_eq!(
        env.reg.get_entry(one(), PAYEE),
        (false, false, U256::ZERO, B256::ZERO)
    );
    // An explicit denial can be removed too.
    env.by(OWNER).remove_entry(one(), PAYEE2).unwrap();
    assert_eq!(
        env.reg.get_entry(one(), PAYEE2),
        (false, false, U256::ZERO, B256::ZERO)
    );
    let logs = env.events();
    assert_eq!(
        logs,
        [
            event(I::EntryRemoved {
                listId: one(),
                counterparty: PAYEE,
                by: ADMIN,
            }),
            event(I::EntryRemoved {
                listId: one(),
                counterparty: PAYEE2,
                by: OWNER,
            }),
        ]
    );
    let ev: I::EntryRemoved = decode(&logs[0]);
    assert_eq!((ev.counterparty, ev.by), (PAYEE, ADMIN));

    // It can be added again.
    env.by(OWNER)
        .set_entry(one(), PAYEE, true, u(9), label("again"))
        .unwrap();
    assert!(env.reg.is_allowed(one(), PAYEE, u(9)));
}

#[test]
fn remove_entry_errors() {
    let mut env = Env::with_list();
    env.by(OWNER)
        .set_entry(one(), PAYEE, true, U256::ZERO, B256::ZERO)
        .unwrap();
    env.events();
    let err = env.by(OWNER).remove_entry(one(), PAYEE2).unwrap_err();
    assert!(matches!(err, RegistryError::UnknownEntry(_)));
    assert_revert(
        Err::<(), _>(err),
        I::CounterpartyUnknownEntry {
            listId: one(),
            counterparty: PAYEE2,
        },
    );
    assert_revert(
        env.by(STRANGER).remove_entry(one(), PAYEE),
        unauthorized(STRANGER),
    );
    for id in [U256::ZERO, u(2)] {
        assert_revert(env.by(OWNER).remove_entry(id, PAYEE), unknown_list(id));
    }
    assert!(env.reg.is_allowed(one(), PAYEE, u(1)));
    env.expect_no_events();

    // Removing twice: the second time the entry is unknown.
    env.by(OWNER).remove_entry(one(), PAYEE).unwrap();
    assert_revert(
        env.by(OWNER).remove_entry(one(), PAYEE),
        I::CounterpartyUnknownEntry {
            listId: one(),
            counterparty: PAYEE,
        },
    );
}

#[test]
fn is_allowed_rules() {
    let mut env = Env::with_list();
    env.by(OWNER)
        .set_entry(one(), PAYEE, true, u(100), B256::ZERO)
        .unwrap();
    env.by(OWNER)
        .set_entry(one(), PAYEE2, true, U256::ZERO, B256::ZERO)
        .unwrap();
    env.by(OWNER)
        .set_entry(one(), PAYEE3, false, U256::ZERO, B256::ZERO)
        .unwrap();

    // Capped.
    assert!(env.reg.is_allowed(one(), PAYEE, U256::ZERO));
    assert!(env.reg.is_allowed(one(), PAYEE, u(100)));
    assert!(!env.reg.is_allowed(one(), PAYEE, u(101)));
    assert!(!env.reg.is_allowed(one(), PAYEE, U256::MAX));
    // Uncapped.
    assert!(env.reg.is_allowed(one(), PAYEE2, U256::MAX));
    // Explicitly denied, unknown counterparty, unknown lists.
    assert!(!env.reg.is_allowed(one(), PAYEE3, u(1)));
    assert!(!env.reg.is_allowed(one(), STRANGER, u(1)));
    assert!(!env.reg.is_allowed(U256::ZERO, PAYEE, u(1)));
    assert!(!env.reg.is_allowed(u(2), PAYEE, u(1)));

    // Lists are independent.
    assert_eq!(env.by(STRANGER).create_list().unwrap(), u(2));
    assert!(!env.reg.is_allowed(u(2), PAYEE, u(1)));
    env.by(STRANGER)
        .set_entry(u(2), PAYEE3, true, U256::ZERO, B256::ZERO)
        .unwrap();
    assert!(env.reg.is_allowed(u(2), PAYEE3, u(1)));
    assert!(!env.reg.is_allowed(one(), PAYEE3, u(1)));
    // ...and so are their admins.
    assert!(!env.reg.is_admin(u(2), ADMIN));
    assert_revert(
        env.by(ADMIN)
            .set_entry(u(2), PAYEE, true, U256::ZERO, B256::ZERO),
        I::CounterpartyUnauthorized {
            listId: u(2),
            caller: ADMIN,
        },
    );
}

// ---- property: isAllowed always agrees with a model of the entries ----

const EDITORS: [Address; 3] = [OWNER, ADMIN, STRANGER];
const PAYEES: [Address; 4] = [PAYEE, PAYEE2, PAYEE3, Address::ZERO];
const LISTS: u64 = 3; // 1 and 2 exist; 3 does not.

#[derive(Clone, Debug)]
enum Op {
    Set {
        by: usize,
        list: u64,
        payee: usize,
        allowed: bool,
        max: u64,
    },
    SetMany {
        by: usize,
        list: u64,
        entries: Vec<(usize, bool, u64)>,
    },
    Remove {
        by: usize,
        list: u64,
        payee: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let by = 0..EDITORS.len();
    let list = 1..=LISTS;
    let payee = 0..PAYEES.len();
    let max = prop_oneof![Just(0u64), 1u64..200];
    prop_oneof![
        4 => (by.clone(), list.clone(), payee.clone(), any::<bool>(), max.clone()).prop_map(
            |(by, list, payee, allowed, max)| Op::Set { by, list, payee, allowed, max }
        ),
        1 => (
            by.clone(),
            list.clone(),
            prop::collection::vec((payee.clone(), any::<bool>(), max), 0..4)
        )
            .prop_map(|(by, list, entries)| Op::SetMany { by, list, entries }),
        3 => (by, list, payee).prop_map(|(by, list, payee)| Op::Remove { by, list, payee }),
    ]
}

/// `(list, payee) -> (allowed, max)`; lists 1 and 2 exist, `OWNER` and `ADMIN` may edit.
#[derive(Default)]
struct Model(HashMap<(u64, Address), (bool, u64)>);

impl Model {
    fn may_edit(by: usize, list: u64) -> bool {
        list <= 2 && EDITORS[by] != STRANGER
    }

    /// Applies `op` and says whether it should succeed.
    fn apply(&mut self, op: &Op) -> bool {
        match op {
            &Op::Set {
                by,
                list,
                payee,
                allowed,
                max,
            } => {
                if !Self::may_edit(by, list) || PAYEES[payee].is_zero() {
                    return false;
                }
                self.0.insert((list, PAYEES[payee]), (allowed, max));
                true
            }
            Op::SetMany { by, list, entries } => {
                if !Self::may_edit(*by, *list) || entries.iter().any(|e| PAYEES[e.0].is_zero()) {
                    return false;
                }
                for &(payee, allowed, max) in entries {
                    self.0.insert((*list, PAYEES[payee]), (allowed, max));
                }
                true
            }
            &Op::Remove { by, list, payee } => {
                Self::may_edit(by, list) && self.0.remove(&(list, PAYEES[payee])).is_some()
            }
        }
    }

    fn is_allowed(&self, list: u64, payee: Address, amount: u64) -> bool {
        matches!(self.0.get(&(list, payee)), Some(&(true, max)) if max == 0 || amount <= max)
    }
}

proptest! {
    // Debug-build keccak makes every storage access slow: 64 cases of up to 40 operations.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn is_allowed_matches_model(ops in prop::collection::vec(op(), 1..40)) {
        let mut env = Env::with_list();
        env.by(OWNER).create_list().unwrap();
        env.by(OWNER).set_admin(u(2), ADMIN, true).unwrap();
        env.events();
        let mut model = Model::default();
        for op in &ops {
            let expected = model.apply(op);
            let (result, writes) = match op {
                &Op::Set { by, list, payee, allowed, max } => (
                    env.by(EDITORS[by])
                        .set_entry(u(list), PAYEES[payee], allowed, u(max), B256::ZERO),
                    1,
                ),
                Op::SetMany { by, list, entries } => (
                    env.by(EDITORS[*by]).set_entries(
                        u(*list),
                        entries.iter().map(|e| PAYEES[e.0]).collect(),
                        entries.iter().map(|e| e.1).collect(),
                        entries.iter().map(|e| u(e.2)).collect(),
                        vec![B256::ZERO; entries.len()],
                    ),
                    entries.len(),
                ),
                &Op::Remove { by, list, payee } => {
                    (env.by(EDITORS[by]).remove_entry(u(list), PAYEES[payee]), 1)
                }
            };
            prop_assert_eq!(result.is_ok(), expected, "{:?}", op);
            prop_assert_eq!(env.events().len(), if expected { writes } else { 0 });

            for list in 0..=LISTS {
                for payee in PAYEES {
                    let modelled = model.0.get(&(list, payee));
                    // Both sides of the entry's cap, and far beyond it (caps are below 200).
                    let cap = modelled.map_or(0, |e| e.1);
                    for amount in [cap, cap + 1, 1_000] {
                        prop_assert_eq!(
                            env.reg.is_allowed(u(list), payee, u(amount)),
                            model.is_allowed(list, payee, amount),
                            "list {} payee {} amount {}", list, payee, amount
                        );
                    }
                    let (exists, allowed, max, _) = env.reg.get_entry(u(list), payee);
                    prop_assert_eq!(exists, modelled.is_some());
                    prop_assert_eq!(
                        (allowed, max),
                        modelled.map_or((false, U256::ZERO), |&(a, m)| (a, u(m)))
                    );
                }
            }
        }
    }
}

// ---- binding: the wallet, its gateway and registries are never counterparties -------------

const BINDER: Address = address!("00000000000000000000000000000000000000c1");
const WALLET: Address = address!("00000000000000000000000000000000000000c2");
const GATEWAY: Address = address!("00000000000000000000000000000000000000c3");
const RECEIPTS: Address = address!("00000000000000000000000000000000000000c4");

/// A registry on a [`MockHost`] (TestVM's static-call mocks all return the last mocked
/// data) whose `WALLET` names `names` as its counterparty registry, list 1 owned by `OWNER`.
fn bound_env(names: Option<Address>) -> (MockHost, CounterpartyRegistry) {
    use alloy_sol_types::{SolCall, SolValue};
    use bursar_bindings::wallet::ISessionWallet as W;
    let host = MockHost::new();
    let this = host.contract_address();
    host.on_call(WALLET, move |call| {
        let answer = if W::counterpartyRegistryCall::abi_decode(&call.data).is_ok() {
            names.unwrap_or(this)
        } else if W::gatewayCall::abi_decode(&call.data).is_ok() {
            GATEWAY
        } else {
            RECEIPTS
        };
        Ok(answer.abi_encode())
    });
    let mut reg = CounterpartyRegistry::from(&host);
    reg.constructor(BINDER).unwrap();
    host.send_from(OWNER, U256::ZERO);
    reg.create_list().unwrap();
    host.send_from(BINDER, U256::ZERO);
    (host, reg)
}

#[test]
fn only_the_binder_binds_once_to_a_wallet_that_names_this_registry() {
    assert_revert(
        CounterpartyRegistry::from(&TestVM::default()).constructor(Address::ZERO),
        I::CounterpartyNotBinder {
            caller: Address::ZERO,
        },
    );
    let (_host, mut reg) = bound_env(Some(Address::repeat_byte(0x77)));
    assert_revert(
        reg.bind(WALLET),
        I::CounterpartyWalletMismatch { wallet: WALLET },
    );
    let (host2, mut reg) = bound_env(None);
    host2.send_from(STRANGER, U256::ZERO);
    assert_revert(
        reg.bind(WALLET),
        I::CounterpartyNotBinder { caller: STRANGER },
    );
    host2.send_from(BINDER, U256::ZERO);
    reg.bind(WALLET).unwrap();
    assert_eq!(reg.wallet(), WALLET);
    let logs = host2.vm.get_emitted_logs();
    assert_eq!(
        logs.last().cloned().map(|(t, d)| (t, d.to_vec())),
        Some(event(I::WalletBound { wallet: WALLET })).map(|l| (l.0, l.1.to_vec()))
    );
    assert_revert(
        reg.bind(STRANGER),
        I::CounterpartyAlreadyBound { wallet: WALLET },
    );
}

#[test]
fn the_wallet_its_gateway_and_registries_cannot_be_listed() {
    let (host, mut reg) = bound_env(None);
    let this = host.contract_address();
    host.send_from(OWNER, U256::ZERO);
    // Even before binding, the registry itself is refused.
    assert_revert(
        reg.set_entry(one(), this, true, U256::ZERO, B256::ZERO),
        I::CounterpartyInvalidAddress { account: this },
    );
    host.send_from(BINDER, U256::ZERO);
    reg.bind(WALLET).unwrap();
    host.send_from(OWNER, U256::ZERO);
    let logged = host.vm.get_emitted_logs().len();
    for forbidden in [WALLET, GATEWAY, RECEIPTS, this] {
        assert_revert(
            reg.set_entry(one(), forbidden, true, U256::ZERO, B256::ZERO),
            I::CounterpartyInvalidAddress { account: forbidden },
        );
        assert_revert(
            reg.set_entries(
                one(),
                vec![PAYEE, forbidden],
                vec![true, true],
                vec![U256::ZERO, U256::ZERO],
                vec![B256::ZERO, B256::ZERO],
            ),
            I::CounterpartyInvalidAddress { account: forbidden },
        );
        assert!(!reg.is_allowed(one(), forbidden, one()));
    }
    // Nothing was written; ordinary payees still are.
    assert_eq!(host.vm.get_emitted_logs().len(), logged);
    reg.set_entry(one(), PAYEE, true, U256::ZERO, B256::ZERO)
        .unwrap();
    assert!(reg.is_allowed(one(), PAYEE, one()));
}

/// The reference of list 1 pinned at `t`.
fn pinned(t: u64) -> U256 {
    one() + (U256::from(t) << 64)
}

#[test]
fn a_pinned_reference_counts_only_what_was_allowed_by_its_time() {
    let mut env = Env::with_list();
    env.vm.set_block_timestamp(1_000);
    env.by(OWNER)
        .set_entry(one(), PAYEE, true, u(10), label("a"))
        .unwrap();
    env.by(OWNER)
        .set_entry(one(), PAYEE3, true, u(10), label("c"))
        .unwrap();
    let at = pinned(1_000);
    assert!(env.reg.is_allowed(at, PAYEE, u(10)));
    // Added after the pin: allowed live, not pinned.
    env.vm.set_block_timestamp(1_001);
    env.by(ADMIN)
        .set_entry(one(), PAYEE2, true, U256::ZERO, label("b"))
        .unwrap();
    assert!(env.reg.is_allowed(one(), PAYEE2, u(1)));
    assert!(!env.reg.is_allowed(at, PAYEE2, u(1)));
    assert!(env.reg.is_allowed(pinned(1_001), PAYEE2, u(1)));
    // A lowered cap and a new label hold at once and keep the entry pinned.
    env.by(ADMIN)
        .set_entry(one(), PAYEE, true, u(5), label("a2"))
        .unwrap();
    assert!(env.reg.is_allowed(at, PAYEE, u(5)));
    assert!(!env.reg.is_allowed(at, PAYEE, u(6)));
    // A raised cap is a widening: the pinned reference stops counting the entry.
    env.by(ADMIN)
        .set_entry(one(), PAYEE, true, u(50), label("a2"))
        .unwrap();
    assert!(env.reg.is_allowed(one(), PAYEE, u(50)));
    assert!(!env.reg.is_allowed(at, PAYEE, u(1)));
    // So is a cap removed; a removal holds at once; re-adding is new.
    env.by(ADMIN)
        .set_entry(one(), PAYEE3, true, U256::ZERO, label("c"))
        .unwrap();
    assert!(!env.reg.is_allowed(at, PAYEE3, u(1)));
    env.by(ADMIN).remove_entry(one(), PAYEE2).unwrap();
    assert!(!env.reg.is_allowed(pinned(1_001), PAYEE2, u(1)));
    // Bits above the pin's 32 name no list.
    assert!(!env
        .reg
        .is_allowed(one() + (U256::from(1) << 96), PAYEE, u(1)));
}

proptest! {
    /// Whatever edits follow a pin, a pinned reference never allows more than the live list,
    /// and never allows what the list did not allow at the pin's time.
    #[test]
    fn a_pin_never_widens(edits in proptest::collection::vec((0u8..3, any::<bool>(), 0u64..4), 0..12)) {
        let mut env = Env::with_list();
        let payees = [PAYEE, PAYEE2, PAYEE3];
        env.vm.set_block_timestamp(100);
        env.by(OWNER).set_entry(one(), PAYEE, true, u(2), label("a")).unwrap();
        let at = pinned(100);
        let before: Vec<Vec<bool>> = payees.iter()
            .map(|p| (0..5).map(|a| env.reg.is_allowed(one(), *p, u(a))).collect())
            .collect();
        for (i, (who, allowed, cap)) in edits.into_iter().enumerate() {
            env.vm.set_block_timestamp(101 + i as u64);
            let p = payees[who as usize];
            if cap == 3 && allowed {
                let _ = env.by(ADMIN).remove_entry(one(), p);
            } else {
                env.by(ADMIN).set_entry(one(), p, allowed, u(cap), label("x")).unwrap();
            }
            for (j, p) in payees.iter().enumerate() {
                for a in 0..5u64 {
                    let pinned_ok = env.reg.is_allowed(at, *p, u(a));
                    prop_assert!(!pinned_ok || env.reg.is_allowed(one(), *p, u(a)));
                    prop_assert!(!pinned_ok || before[j][a as usize]);
                }
            }
        }
    }
}
