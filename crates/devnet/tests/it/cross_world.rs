//! Calls across the two worlds, nested both ways with one journal: the Solidity `Suite`
//! (`tests/evm/Suite.sol`) and small Stylus programs (WAT) calling each other — re-entrancy,
//! revert data bubbling, static calls that write, delegate calls that keep the caller's storage
//! and value, value transfers, transient storage per transaction, and one call tree.

use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolError};
use bursar_devnet::{CallStatus, Executor};

use crate::common::{addr, solc, GAS};
use crate::evm_anvil::*;

/// Calldata `kind ‖ target (20 bytes) ‖ payload`: calls `target` with `payload` (kind 0 CALL,
/// forwarding its own `msg.value`; 1 STATICCALL; 2 DELEGATECALL) and returns the callee's
/// return data, reverting with it if the call failed.
const FORWARDER: &str = r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "write_result" (func $write (param i32 i32)))
  (import "vm_hooks" "msg_value" (func $value (param i32)))
  (import "vm_hooks" "call_contract" (func $call (param i32 i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "static_call_contract" (func $scall (param i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "delegate_call_contract" (func $dcall (param i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "read_return_data" (func $rrd (param i32 i32 i32) (result i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 2 2)
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (local $kind i32) (local $n i32) (local $status i32)
    (call $read_args (i32.const 1024))
    (call $value (i32.const 0))
    (local.set $kind (i32.load8_u (i32.const 1024)))
    (local.set $n (i32.sub (local.get $len) (i32.const 21)))
    (local.set $status
      (if (result i32) (i32.eq (local.get $kind) (i32.const 1))
        (then (call $scall (i32.const 1025) (i32.const 1045) (local.get $n) (i64.const -1) (i32.const 64)))
        (else (if (result i32) (i32.eq (local.get $kind) (i32.const 2))
          (then (call $dcall (i32.const 1025) (i32.const 1045) (local.get $n) (i64.const -1) (i32.const 64)))
          (else (call $call (i32.const 1025) (i32.const 1045) (local.get $n) (i32.const 0) (i64.const -1) (i32.const 64)))))))
    (call $write (i32.const 65536)
      (call $rrd (i32.const 65536) (i32.const 0) (i32.load (i32.const 64))))
    (i32.ne (local.get $status) (i32.const 0))))"#;

/// Writes storage slot 0 := 1 and returns nothing.
const WRITER: &str = r#"(module
  (import "vm_hooks" "storage_cache_bytes32" (func $cache (param i32 i32)))
  (import "vm_hooks" "storage_flush_cache" (func $flush (param i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 1 1)
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (i32.store8 (i32.const 63) (i32.const 1))
    (call $cache (i32.const 0) (i32.const 32))
    (call $flush (i32.const 0))
    (i32.const 0)))"#;

const USER: Address = Address::repeat_byte(0xa1);

struct Worlds {
    exec: Executor,
    suite: Address,
    forwarder: Address,
    writer: Address,
}

fn worlds() -> Worlds {
    let mut exec = Executor::new();
    exec.state_mut()
        .set_balance(USER, U256::from(10u64).pow(U256::from(20)));
    let initcode = solc::contracts("Suite.sol")
        .remove("Suite")
        .unwrap()
        .initcode;
    let created = exec.create(USER, U256::ZERO, &initcode, GAS);
    let suite = created.address.expect("Suite deploys");
    let (forwarder, writer) = (addr(0x5100), addr(0x5200));
    for (at, wat) in [(forwarder, FORWARDER), (writer, WRITER)] {
        let code = stylus_activation::contract_code(&wat::parse_str(wat).unwrap());
        exec.deploy_program(at, &code).unwrap();
    }
    Worlds {
        exec,
        suite,
        forwarder,
        writer,
    }
}

/// Forwarder calldata.
fn via(kind: u8, target: Address, payload: Vec<u8>) -> Vec<u8> {
    [vec![kind], target.to_vec(), payload].concat()
}

fn slot0(exec: &Executor, at: Address) -> U256 {
    exec.state().storage(at, B256::ZERO).into()
}

#[test]
fn evm_calls_a_program_that_reenters_the_evm_caller() {
    let mut w = worlds();
    w.exec.start_trace();
    let inner = via(0, w.suite, callbackCall {}.abi_encode());
    let input = forwardCall {
        target: w.forwarder,
        data: inner.into(),
    }
    .abi_encode();
    let out = w.exec.call(USER, w.suite, U256::ZERO, &input, GAS, false);
    assert!(out.success, "{out:?}");
    let returned = forwardCall::abi_decode_returns(&out.return_data).unwrap();
    assert_eq!(U256::from_be_slice(&returned), U256::from(1));
    assert_eq!(slot_entered(&mut w), U256::from(1));

    // One call tree: Suite (EVM) → forwarder (Stylus) → Suite (EVM) again.
    let root = w.exec.take_trace().remove(0);
    assert_eq!((root.kind, root.to), ("CALL", Some(w.suite)));
    let program = &root.calls[0];
    assert_eq!((program.kind, program.to), ("CALL", Some(w.forwarder)));
    let reentry = &program.calls[0];
    assert_eq!(
        (reentry.kind, reentry.to, reentry.from),
        ("CALL", Some(w.suite), w.forwarder)
    );
    assert!(
        reentry.gas < program.gas && program.gas < root.gas,
        "63/64 of what is left each time"
    );
}

fn slot_entered(w: &mut Worlds) -> U256 {
    let out = w.exec.call(
        USER,
        w.suite,
        U256::ZERO,
        &enteredCall {}.abi_encode(),
        GAS,
        true,
    );
    enteredCall::abi_decode_returns(&out.return_data).unwrap()
}

#[test]
fn a_program_calls_evm_code_that_reenters_the_program() {
    let mut w = worlds();
    // forwarder → Suite.forward → forwarder → Suite.callback: four frames, two of each world.
    let innermost = via(0, w.suite, callbackCall {}.abi_encode());
    let middle = forwardCall {
        target: w.forwarder,
        data: innermost.into(),
    }
    .abi_encode();
    let out = w.exec.call(
        USER,
        w.forwarder,
        U256::ZERO,
        &via(0, w.suite, middle),
        GAS,
        false,
    );
    assert!(out.success, "{out:?}");
    assert_eq!(slot_entered(&mut w), U256::from(1));
}

#[test]
fn reverts_bubble_across_worlds_with_their_data() {
    let mut w = worlds();
    let custom = Custom {
        code: U256::from(7),
        why: "custom".into(),
    }
    .abi_encode();
    // EVM → Stylus → EVM revert: the Solidity error reaches the top unchanged.
    let inner = via(
        0,
        w.suite,
        revertCustomCall { c: U256::from(7) }.abi_encode(),
    );
    let input = forwardCall {
        target: w.forwarder,
        data: inner.clone().into(),
    }
    .abi_encode();
    let out = w.exec.call(USER, w.suite, U256::ZERO, &input, GAS, false);
    assert_eq!(out.status, CallStatus::Revert);
    assert_eq!(out.return_data.as_ref(), custom);
    // Stylus at the top: the same data.
    let out = w
        .exec
        .call(USER, w.forwarder, U256::ZERO, &inner, GAS, false);
    assert_eq!(out.status, CallStatus::Revert);
    assert_eq!(out.return_data.as_ref(), custom);
    assert_eq!(slot_entered(&mut w), U256::ZERO, "nothing was written");
}

#[test]
fn static_calls_refuse_writes_in_either_world() {
    let mut w = worlds();
    // EVM STATICCALL → program → EVM write: the write fails, the static call reports failure.
    let input = forwardStaticCall {
        target: w.forwarder,
        data: via(0, w.suite, callbackCall {}.abi_encode()).into(),
    }
    .abi_encode();
    let out = w.exec.call(USER, w.suite, U256::ZERO, &input, GAS, false);
    assert!(out.success);
    assert!(
        !forwardStaticCall::abi_decode_returns(&out.return_data)
            .unwrap()
            .ok
    );
    // EVM STATICCALL → a program that writes storage.
    let input = forwardStaticCall {
        target: w.writer,
        data: Bytes::new(),
    }
    .abi_encode();
    let out = w.exec.call(USER, w.suite, U256::ZERO, &input, GAS, false);
    assert!(
        !forwardStaticCall::abi_decode_returns(&out.return_data)
            .unwrap()
            .ok
    );
    assert_eq!(slot0(&w.exec, w.writer), U256::ZERO);
    // Stylus STATICCALL → EVM write.
    let out = w.exec.call(
        USER,
        w.forwarder,
        U256::ZERO,
        &via(1, w.suite, callbackCall {}.abi_encode()),
        GAS,
        false,
    );
    assert_eq!(out.status, CallStatus::Revert);
    assert_eq!(slot_entered(&mut w), U256::ZERO);
}

#[test]
fn delegate_calls_keep_the_callers_storage_sender_and_value() {
    let mut w = worlds();
    // Stylus DELEGATECALL → EVM: Solidity runs on the program's storage, for the program's
    // caller and value.
    let out = w.exec.call(
        USER,
        w.forwarder,
        U256::from(5),
        &via(2, w.suite, whoamiCall {}.abi_encode()),
        GAS,
        false,
    );
    assert!(out.success, "{out:?}");
    let seen = whoamiCall::abi_decode_returns(&out.return_data).unwrap();
    assert_eq!(
        (seen.sender, seen.this, seen.value),
        (USER, w.forwarder, U256::from(5))
    );
    assert_eq!(
        slot0(&w.exec, w.forwarder),
        U256::from(1),
        "the program's slot 0"
    );
    assert_eq!(slot0(&w.exec, w.suite), U256::ZERO);

    // EVM DELEGATECALL → Stylus: the program writes the Suite's slot 0 (its `counter`).
    let input = forwardDelegateCall {
        target: w.writer,
        data: Bytes::new(),
    }
    .abi_encode();
    let out = w.exec.call(USER, w.suite, U256::ZERO, &input, GAS, false);
    assert!(
        forwardDelegateCall::abi_decode_returns(&out.return_data)
            .unwrap()
            .ok
    );
    assert_eq!(slot0(&w.exec, w.suite), U256::from(1));
    assert_eq!(slot0(&w.exec, w.writer), U256::ZERO);
}

#[test]
fn value_moves_through_both_worlds() {
    let mut w = worlds();
    // 10 wei: user → Suite.forward → forwarder (Stylus, forwards its msg.value) → Suite.whoami.
    let input = forwardCall {
        target: w.forwarder,
        data: via(0, w.suite, whoamiCall {}.abi_encode()).into(),
    }
    .abi_encode();
    let out = w
        .exec
        .call(USER, w.suite, U256::from(10), &input, GAS, false);
    assert!(out.success, "{out:?}");
    let inner = forwardCall::abi_decode_returns(&out.return_data).unwrap();
    let seen = whoamiCall::abi_decode_returns(&inner).unwrap();
    assert_eq!((seen.sender, seen.value), (w.forwarder, U256::from(10)));
    assert_eq!(w.exec.state().balance(w.suite), U256::from(10));
    assert_eq!(w.exec.state().balance(w.forwarder), U256::ZERO);
}

#[test]
fn transient_storage_lives_for_one_transaction() {
    let mut w = worlds();
    let out = w.exec.call(
        USER,
        w.forwarder,
        U256::ZERO,
        &via(
            0,
            w.suite,
            tsetThenGetCall { v: U256::from(9) }.abi_encode(),
        ),
        GAS,
        false,
    );
    assert!(out.success, "{out:?}");
    assert_eq!(U256::from_be_slice(&out.return_data), U256::from(9));
    let out = w.exec.call(
        USER,
        w.suite,
        U256::ZERO,
        &tgetCall {}.abi_encode(),
        GAS,
        true,
    );
    assert_eq!(U256::from_be_slice(&out.return_data), U256::ZERO);
}
