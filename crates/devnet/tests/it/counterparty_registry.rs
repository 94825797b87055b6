//! CounterpartyRegistry as compiled WASM: calls, return values, logs and custom errors.

use crate::common::*;
use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::counterparty::ICounterpartyRegistry::*;
use bursar_bindings::counterparty::ICounterpartyRegistry::{
    ICounterpartyRegistryErrors as Errors, ICounterpartyRegistryEvents as Events,
};

const REGISTRY: u64 = 0xc0_0001;

fn setup() -> (Chain, Address) {
    let mut chain = Chain::new();
    let registry = addr(REGISTRY);
    chain.deploy("counterparty_registry", registry);
    (chain, registry)
}

#[test]
fn create_set_check_and_remove_entries() {
    let (mut chain, registry) = setup();
    let owner = addr(1);
    let payee = addr(0xbeef);
    let label = B256::repeat_byte(0x11);

    let created = chain.send(owner, registry, createListCall {});
    assert!(created.outcome.success);
    let list_id = created.value.unwrap();
    assert_eq!(list_id, U256::from(1));
    let evs = events::<Events>(&created.outcome.logs, registry);
    assert!(matches!(
        &evs[..],
        [Events::ListCreated(ListCreated { listId, owner: o })] if *listId == list_id && *o == owner
    ));
    assert_eq!(
        chain.view(registry, listOwnerCall { listId: list_id }),
        owner
    );
    assert_eq!(chain.view(registry, listCountCall {}), U256::from(1));

    let set = chain.send(
        owner,
        registry,
        setEntryCall {
            listId: list_id,
            counterparty: payee,
            allowed: true,
            maxPerPayment: U256::from(500),
            label,
        },
    );
    assert!(set.outcome.success, "{:?}", set.outcome);
    match &events::<Events>(&set.outcome.logs, registry)[..] {
        [Events::EntrySet(e)] => {
            assert_eq!((e.listId, e.counterparty, e.by), (list_id, payee, owner));
            assert!(e.allowed);
            assert_eq!(e.maxPerPayment, U256::from(500));
            assert_eq!(e.label, label);
        }
        other => panic!("unexpected events {other:?}"),
    }

    let allowed = |chain: &mut Chain, amount: u64| {
        chain.view(
            registry,
            isAllowedCall {
                listId: list_id,
                counterparty: payee,
                amount: U256::from(amount),
            },
        )
    };
    assert!(allowed(&mut chain, 500));
    assert!(!allowed(&mut chain, 501), "over maxPerPayment");
    let entry = chain.view(
        registry,
        getEntryCall {
            listId: list_id,
            counterparty: payee,
        },
    );
    assert!(entry._0 && entry._1);
    assert_eq!(entry._2, U256::from(500));
    assert_eq!(entry._3, label);

    let removed = chain.send(
        owner,
        registry,
        removeEntryCall {
            listId: list_id,
            counterparty: payee,
        },
    );
    assert!(removed.outcome.success);
    assert!(matches!(
        &events::<Events>(&removed.outcome.logs, registry)[..],
        [Events::EntryRemoved(e)] if e.counterparty == payee && e.by == owner
    ));
    assert!(
        removed.outcome.gas_refund >= 4_800,
        "clearing slots set in an earlier tx earns the EIP-3529 refund"
    );
    assert!(!allowed(&mut chain, 1), "removal takes effect at once");
}

#[test]
fn failures_revert_with_custom_errors_and_change_nothing() {
    let (mut chain, registry) = setup();
    let owner = addr(1);
    let stranger = addr(2);
    let list_id = chain
        .send(owner, registry, createListCall {})
        .value
        .unwrap();

    let denied = chain.send(
        stranger,
        registry,
        setEntryCall {
            listId: list_id,
            counterparty: addr(3),
            allowed: true,
            maxPerPayment: U256::ZERO,
            label: B256::ZERO,
        },
    );
    assert!(!denied.outcome.success);
    assert!(
        denied.outcome.logs.is_empty(),
        "a reverted call emits nothing"
    );
    match revert_as::<Errors>(&denied.reverted()) {
        Errors::CounterpartyUnauthorized(e) => {
            assert_eq!((e.listId, e.caller), (list_id, stranger));
        }
        other => panic!("unexpected error {other:?}"),
    }

    let unknown = chain.send(
        owner,
        registry,
        removeEntryCall {
            listId: list_id,
            counterparty: addr(3),
        },
    );
    assert!(matches!(
        revert_as::<Errors>(&unknown.reverted()),
        Errors::CounterpartyUnknownEntry(e) if e.counterparty == addr(3)
    ));

    let no_list = chain.send(
        owner,
        registry,
        setAdminCall {
            listId: U256::from(99),
            admin: addr(4),
            enabled: true,
        },
    );
    assert!(matches!(
        revert_as::<Errors>(&no_list.reverted()),
        Errors::CounterpartyUnknownList(e) if e.listId == U256::from(99)
    ));
    assert_eq!(chain.view(registry, listCountCall {}), U256::from(1));
}

#[test]
fn gas_is_charged_and_storage_persists_between_calls() {
    let (mut chain, registry) = setup();
    let first = chain.send(addr(1), registry, createListCall {});
    let second = chain.send(addr(1), registry, createListCall {});
    assert_eq!(second.value.unwrap(), U256::from(2));
    // First call writes fresh slots (20k each); the counter slot is a reset the second time.
    assert!(
        first.outcome.gas_used > 40_000,
        "{}",
        first.outcome.gas_used
    );
    assert!(second.outcome.gas_used < first.outcome.gas_used);
    assert!(chain.exec.state().storage_of(registry).count() >= 3);
}

#[test]
fn unactivated_program_reverts_with_empty_data() {
    let mut chain = Chain::new();
    let at = addr(REGISTRY);
    chain
        .exec
        .state_mut()
        .set_code(at, code("counterparty_registry").into());
    let out = chain.send(addr(1), at, createListCall {});
    assert!(!out.outcome.success);
    assert!(out.reverted().is_empty());
    // Activation afterwards makes it callable.
    chain.exec.activate_at(at).unwrap();
    assert!(chain.send(addr(1), at, createListCall {}).outcome.success);
}

#[test]
fn call_with_too_little_gas_runs_out() {
    let (mut chain, registry) = setup();
    let out = chain.exec.call(
        addr(1),
        registry,
        U256::ZERO,
        &createListCall {}.abi_encode(),
        30_000,
        false,
    );
    assert_eq!(out.status, bursar_devnet::CallStatus::OutOfGas);
    assert_eq!(out.gas_used, 30_000);
    assert!(chain.exec.state().storage_of(registry).next().is_none());
}
