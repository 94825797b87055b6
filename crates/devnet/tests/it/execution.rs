//! Execution semantics with small hand-written programs (WAT → wasm → `EFF00000 || brotli`):
//! journaling across nested calls, static-context violations, exits, traps, out-of-ink,
//! activation rejections, precompiles, value transfers, CREATE/CREATE2 and the host ABI.

use crate::common::*;
use alloy_primitives::{keccak256, Address, B256, U256};
use bursar_devnet::{meter, ActivationError, CallStatus, Executor};
use stylus_activation::hostio::{WasmTy, VM_HOOKS_FNS};

/// Compiles WAT and wraps it as deployable Stylus code.
fn program(wat: &str) -> Vec<u8> {
    let wasm = wat::parse_str(wat).expect("valid wat");
    stylus_activation::contract_code(&wasm)
}

fn deploy(exec: &mut Executor, at: Address, wat: &str) {
    exec.deploy_program(at, &program(wat))
        .unwrap_or_else(|e| panic!("activation: {e}"));
}

/// Writes slot 0 := 1 through the cache, flushes, logs the value, then returns calldata[0]
/// as its status (0 = success, 1 = revert).
const WRITER: &str = r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "storage_cache_bytes32" (func $cache (param i32 i32)))
  (import "vm_hooks" "storage_flush_cache" (func $flush (param i32)))
  (import "vm_hooks" "emit_log" (func $log (param i32 i32 i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 1 1)
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (call $read_args (i32.const 128))
    (i32.store8 (i32.const 63) (i32.const 1))
    (call $cache (i32.const 0) (i32.const 32))
    (call $flush (i32.const 0))
    (call $log (i32.const 32) (i32.const 32) (i32.const 0))
    (i32.load8_u (i32.const 128))))"#;

/// Calldata: `[static flag] ‖ target (20 bytes) ‖ [mode byte forwarded]`. Calls the target
/// (CALL or STATICCALL) with the mode byte, always succeeds, returns the callee's status as
/// 4 little-endian bytes followed by the callee's return data length.
const CALLER: &str = r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "call_contract" (func $call (param i32 i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "static_call_contract" (func $scall (param i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "write_result" (func $write (param i32 i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 1 1)
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (call $read_args (i32.const 0))
    (i32.store (i32.const 200)
      (if (result i32) (i32.load8_u (i32.const 0))
        (then (call $scall (i32.const 1) (i32.const 21) (i32.const 1) (i64.const -1) (i32.const 204)))
        (else (call $call (i32.const 1) (i32.const 21) (i32.const 1) (i32.const 64) (i64.const -1) (i32.const 204)))))
    (call $write (i32.const 200) (i32.const 8))
    (i32.const 0)))"#;

fn caller_args(is_static: bool, target: Address, mode: u8) -> Vec<u8> {
    let mut v = vec![u8::from(is_static)];
    v.extend_from_slice(target.as_slice());
    v.push(mode);
    v
}

fn status_of(data: &[u8]) -> u32 {
    u32::from_le_bytes(data[..4].try_into().unwrap())
}

#[test]
fn reverted_nested_call_undoes_its_writes_and_logs() {
    let mut exec = Executor::new();
    let (outer, inner) = (addr(0x1100), addr(0x200));
    deploy(&mut exec, outer, CALLER);
    deploy(&mut exec, inner, WRITER);

    let out = exec.call(
        addr(1),
        outer,
        U256::ZERO,
        &caller_args(false, inner, 1),
        GAS,
        false,
    );
    assert!(out.success, "{out:?}");
    assert_eq!(status_of(&out.return_data), 2, "callee reverted");
    assert_eq!(exec.state().storage(inner, B256::ZERO), B256::ZERO);
    assert!(out.logs.is_empty());

    let out = exec.call(
        addr(1),
        outer,
        U256::ZERO,
        &caller_args(false, inner, 0),
        GAS,
        false,
    );
    assert_eq!(status_of(&out.return_data), 0);
    assert_eq!(
        exec.state().storage(inner, B256::ZERO),
        B256::with_last_byte(1)
    );
    assert_eq!(out.logs.len(), 1);
    assert_eq!(out.logs[0].address, inner);
    assert_eq!(
        out.logs[0].data.as_ref(),
        B256::with_last_byte(1).as_slice()
    );
}

#[test]
fn static_context_violation_fails_the_callee() {
    let mut exec = Executor::new();
    let (outer, inner) = (addr(0x1100), addr(0x200));
    deploy(&mut exec, outer, CALLER);
    deploy(&mut exec, inner, WRITER);

    let out = exec.call(
        addr(1),
        outer,
        U256::ZERO,
        &caller_args(true, inner, 0),
        GAS,
        false,
    );
    assert!(out.success);
    assert_eq!(
        status_of(&out.return_data),
        2,
        "storage write under STATICCALL fails"
    );
    assert_eq!(
        u32::from_le_bytes(out.return_data[4..8].try_into().unwrap()),
        0,
        "empty revert data"
    );
    assert_eq!(exec.state().storage(inner, B256::ZERO), B256::ZERO);

    // The same at the top level.
    let out = exec.call(addr(1), inner, U256::ZERO, &[0], GAS, true);
    assert_eq!(out.status, CallStatus::Revert);
    assert!(out.return_data.is_empty());
    assert!(out.gas_used < GAS, "a failure returns unused gas");
}

/// calldata[0]: 0 → write "ok" and exit_early(0); 1 → exit_early(1) after writing;
/// 2 → unreachable; 3 → loop forever.
const EXITER: &str = r#"(module
          (import "vm_hooks" "read_args" (func $read_args (param i32)))
          (import "vm_hooks" "write_result" (func $write (param i32 i32)))
          (import "vm_hooks" "exit_early" (func $exit (param i32)))
          (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
          (memory (export "memory") 1 1)
          (data (i32.const 16) "ok")
          (func (export "user_entrypoint") (param $len i32) (result i32)
            (local $mode i32)
            (call $read_args (i32.const 0))
            (local.set $mode (i32.load8_u (i32.const 0)))
            (if (i32.eq (local.get $mode) (i32.const 2)) (then unreachable))
            (if (i32.eq (local.get $mode) (i32.const 3)) (then (loop $l (br $l))))
            (call $write (i32.const 16) (i32.const 2))
            (call $exit (local.get $mode))
            (i32.const 7)))"#;

#[test]
fn exit_early_trap_and_out_of_ink() {
    let mut exec = Executor::new();
    let at = addr(0x300);
    deploy(&mut exec, at, EXITER);
    let ok = exec.call(addr(1), at, U256::ZERO, &[0], GAS, false);
    assert!(ok.success);
    assert_eq!(ok.return_data.as_ref(), b"ok");

    let reverted = exec.call(addr(1), at, U256::ZERO, &[1], GAS, false);
    assert_eq!(reverted.status, CallStatus::Revert);
    assert_eq!(
        reverted.return_data.as_ref(),
        b"ok",
        "revert data from write_result"
    );

    let trapped = exec.call(addr(1), at, U256::ZERO, &[2], GAS, false);
    assert_eq!(trapped.status, CallStatus::Revert);
    assert!(trapped.return_data.is_empty());
    assert!(trapped.gas_used < 100_000);

    let spun = exec.call(addr(1), at, U256::ZERO, &[3], 200_000, false);
    assert_eq!(spun.status, CallStatus::OutOfGas);
    assert_eq!(spun.gas_used, 200_000, "out of ink consumes all gas");
}

#[test]
fn activation_rejects_what_arbitrum_rejects() {
    let mut exec = Executor::new();
    // A float instruction.
    let float = program(
        r#"(module
          (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
          (memory (export "memory") 1 1)
          (func (export "user_entrypoint") (param i32) (result i32)
            (i32.trunc_f32_s (f32.const 1.5))))"#,
    );
    assert!(matches!(
        exec.activate(&float),
        Err(ActivationError::Rules(_))
    ));
    // An import that is not a hostio.
    let bad_import = program(
        r#"(module
          (import "vm_hooks" "self_destruct" (func (param i32)))
          (memory (export "memory") 1 1)
          (func (export "user_entrypoint") (param i32) (result i32) (i32.const 0)))"#,
    );
    assert!(matches!(
        exec.activate(&bad_import),
        Err(ActivationError::Rules(_))
    ));
    // Not Stylus code at all.
    assert!(matches!(
        exec.activate(&[0x60, 0x00]),
        Err(ActivationError::NotWasm)
    ));

    // Deployed but rejected: calling it reverts with empty data.
    exec.state_mut().set_code(addr(0x400), float.into());
    let out = exec.call(addr(1), addr(0x400), U256::ZERO, &[], GAS, false);
    assert_eq!(out.status, CallStatus::Revert);
    assert!(out.return_data.is_empty());
}

#[test]
fn all_42_hostios_link_with_their_documented_types() {
    let ty = |t: &WasmTy| t.to_string();
    let imports: String = VM_HOOKS_FNS
        .iter()
        .map(|f| {
            let params: Vec<_> = f.params.iter().map(ty).collect();
            let results: Vec<_> = f.results.iter().map(ty).collect();
            format!(
                "(import \"vm_hooks\" \"{}\" (func (param {}) (result {})))\n",
                f.name,
                params.join(" "),
                results.join(" ")
            )
        })
        .collect();
    let wat = format!(
        "(module {imports} (memory (export \"memory\") 1 1)
           (func (export \"user_entrypoint\") (param i32) (result i32) (i32.const 0)))"
    );
    let mut exec = Executor::new();
    deploy(&mut exec, addr(0x500), &wat);
    // Instantiation resolves every import against the host's signatures.
    let out = exec.call(addr(1), addr(0x500), U256::ZERO, &[], GAS, false);
    assert!(out.success, "{out:?}");
    assert_eq!(VM_HOOKS_FNS.len(), 42);
}

#[test]
fn hostio_values_reach_the_program() {
    // Writes msg_sender ‖ contract_address ‖ tx_origin ‖ msg_value ‖ chainid (8 bytes LE) ‖
    // block_number ‖ block_timestamp ‖ keccak256(calldata) ‖ math_pow(2, 10).
    let wat = r#"(module
      (import "vm_hooks" "read_args" (func $read_args (param i32)))
      (import "vm_hooks" "write_result" (func $write (param i32 i32)))
      (import "vm_hooks" "msg_sender" (func $sender (param i32)))
      (import "vm_hooks" "contract_address" (func $me (param i32)))
      (import "vm_hooks" "tx_origin" (func $origin (param i32)))
      (import "vm_hooks" "msg_value" (func $value (param i32)))
      (import "vm_hooks" "chainid" (func $chainid (result i64)))
      (import "vm_hooks" "block_number" (func $number (result i64)))
      (import "vm_hooks" "block_timestamp" (func $ts (result i64)))
      (import "vm_hooks" "native_keccak256" (func $keccak (param i32 i32 i32)))
      (import "vm_hooks" "math_pow" (func $pow (param i32 i32)))
      (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
      (memory (export "memory") 1 1)
      (func (export "user_entrypoint") (param $len i32) (result i32)
        (call $read_args (i32.const 1024))
        (call $sender (i32.const 0))
        (call $me (i32.const 20))
        (call $origin (i32.const 40))
        (call $value (i32.const 60))
        (i64.store (i32.const 92) (call $chainid))
        (i64.store (i32.const 100) (call $number))
        (i64.store (i32.const 108) (call $ts))
        (call $keccak (i32.const 1024) (local.get $len) (i32.const 116))
        (i32.store8 (i32.const 179) (i32.const 2))
        (i32.store8 (i32.const 2047) (i32.const 10))
        (call $pow (i32.const 148) (i32.const 2016))
        (call $write (i32.const 0) (i32.const 180))
        (i32.const 0)))"#;
    let mut exec = Executor::new();
    let at = addr(0x600);
    deploy(&mut exec, at, wat);
    exec.block_mut().number = 77;
    exec.state_mut().set_balance(addr(1), U256::from(1_000));
    let out = exec.call(addr(1), at, U256::from(5), b"hello", GAS, false);
    assert!(out.success, "{out:?}");
    let r = &out.return_data;
    assert_eq!(&r[0..20], addr(1).as_slice());
    assert_eq!(&r[20..40], at.as_slice());
    assert_eq!(&r[40..60], addr(1).as_slice());
    assert_eq!(U256::from_be_slice(&r[60..92]), U256::from(5));
    assert_eq!(u64::from_le_bytes(r[92..100].try_into().unwrap()), 412_346);
    assert_eq!(u64::from_le_bytes(r[100..108].try_into().unwrap()), 77);
    assert_eq!(
        u64::from_le_bytes(r[108..116].try_into().unwrap()),
        exec.block().timestamp
    );
    assert_eq!(&r[116..148], keccak256(b"hello").as_slice());
    assert_eq!(U256::from_be_slice(&r[148..180]), U256::from(1024));
    // The value moved with the call.
    assert_eq!(exec.state().balance(at), U256::from(5));
    assert_eq!(exec.state().balance(addr(1)), U256::from(995));
}

#[test]
fn precompiles_and_plain_accounts() {
    let mut exec = Executor::new();
    let sha = exec.call(addr(1), addr(2), U256::ZERO, b"abc", GAS, false);
    assert!(sha.success);
    assert_eq!(
        sha.return_data.as_ref(),
        alloy_primitives::hex!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    );
    assert_eq!(sha.gas_used, 72);
    let id = exec.call(addr(1), addr(4), U256::ZERO, b"echo", GAS, false);
    assert_eq!(id.return_data.as_ref(), b"echo");
    let bad = exec.call(addr(1), addr(1), U256::ZERO, &[0u8; 128], GAS, false);
    assert!(
        bad.success && bad.return_data.is_empty(),
        "ecrecover fails softly"
    );

    // A plain account: success, empty return, the value moves; too much value fails.
    exec.state_mut().set_balance(addr(1), U256::from(10));
    let paid = exec.call(addr(1), addr(0x77), U256::from(4), &[1, 2, 3], GAS, false);
    assert!(paid.success && paid.return_data.is_empty());
    assert_eq!(exec.state().balance(addr(0x77)), U256::from(4));
    let broke = exec.call(addr(1), addr(0x77), U256::from(7), &[], GAS, false);
    assert!(!broke.success);
    assert_eq!(exec.state().balance(addr(1)), U256::from(6));
}

/// Calldata: `[0 = create1 | 1 = create2] ‖ salt (32) ‖ initcode`. Returns the new address
/// (20 bytes) followed by the revert-data length (4 bytes LE).
const CREATOR: &str = r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "write_result" (func $write (param i32 i32)))
  (import "vm_hooks" "create1" (func $create1 (param i32 i32 i32 i32 i32)))
  (import "vm_hooks" "create2" (func $create2 (param i32 i32 i32 i32 i32 i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 2 2)
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (call $read_args (i32.const 1024))
    (if (i32.load8_u (i32.const 1024))
      (then (call $create2 (i32.const 1057) (i32.sub (local.get $len) (i32.const 33))
                           (i32.const 0) (i32.const 1025) (i32.const 100) (i32.const 120)))
      (else (call $create1 (i32.const 1057) (i32.sub (local.get $len) (i32.const 33))
                           (i32.const 0) (i32.const 100) (i32.const 120))))
    (call $write (i32.const 100) (i32.const 24))
    (i32.const 0)))"#;

#[test]
fn create1_and_create2_deploy_through_the_prelude() {
    let mut exec = Executor::new();
    let creator = addr(0x700);
    deploy(&mut exec, creator, CREATOR);
    let registry_code = code("counterparty_registry");
    let initcode = stylus_activation::deploy_initcode(&registry_code);
    let salt = B256::repeat_byte(0x5a);
    let args = |kind: u8| {
        let mut v = vec![kind];
        v.extend_from_slice(salt.as_slice());
        v.extend_from_slice(&initcode);
        v
    };

    let out = exec.call(addr(1), creator, U256::ZERO, &args(0), GAS, false);
    assert!(out.success, "{out:?}");
    let created = Address::from_slice(&out.return_data[..20]);
    assert_eq!(created, creator.create(0));
    assert_eq!(
        exec.state().code(created).as_ref(),
        registry_code.as_slice()
    );
    assert_eq!(exec.state().nonce(creator), 1);

    // Deployed code still needs activation before it can run.
    use alloy_sol_types::SolCall;
    use bursar_bindings::counterparty::ICounterpartyRegistry::createListCall;
    let call = createListCall {}.abi_encode();
    assert!(
        !exec
            .call(addr(1), created, U256::ZERO, &call, GAS, false)
            .success
    );
    exec.activate_at(created).unwrap();
    assert!(
        exec.call(addr(1), created, U256::ZERO, &call, GAS, false)
            .success
    );

    let out = exec.call(addr(1), creator, U256::ZERO, &args(1), GAS, false);
    assert!(out.success, "{out:?}");
    let created2 = Address::from_slice(&out.return_data[..20]);
    assert_eq!(created2, creator.create2_from_code(salt, &initcode));
    // Same code hash: already active, callable at once.
    assert!(
        exec.call(addr(1), created2, U256::ZERO, &call, GAS, false)
            .success
    );

    // The same salt again collides: zero address.
    let out = exec.call(addr(1), creator, U256::ZERO, &args(1), GAS, false);
    assert_eq!(&out.return_data[..20], Address::ZERO.as_slice());

    // Initcode that halts (INVALID) fails cleanly.
    let mut bad = vec![0u8];
    bad.extend_from_slice(salt.as_slice());
    bad.extend_from_slice(&[0x60, 0x01, 0x60, 0x02, 0x01, 0xfe]);
    let out = exec.call(addr(1), creator, U256::ZERO, &bad, GAS, false);
    assert!(out.success);
    assert_eq!(&out.return_data[..20], Address::ZERO.as_slice());
}

#[test]
fn deep_call_chains_do_not_overflow_the_native_stack() {
    // Counts its depth in slot 0 (u32 in the last 4 bytes, big-endian) and calls itself until
    // a call fails; every level that ran succeeds.
    let wat = r#"(module
      (import "vm_hooks" "contract_address" (func $me (param i32)))
      (import "vm_hooks" "call_contract" (func $call (param i32 i32 i32 i32 i64 i32) (result i32)))
      (import "vm_hooks" "storage_load_bytes32" (func $load (param i32 i32)))
      (import "vm_hooks" "storage_cache_bytes32" (func $store (param i32 i32)))
      (import "vm_hooks" "storage_flush_cache" (func $flush (param i32)))
      (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
      (memory (export "memory") 1 1)
      (func $bswap (param $x i32) (result i32)
        (i32.or
          (i32.or (i32.shl (local.get $x) (i32.const 24))
                  (i32.shl (i32.and (local.get $x) (i32.const 0xff00)) (i32.const 8)))
          (i32.or (i32.and (i32.shr_u (local.get $x) (i32.const 8)) (i32.const 0xff00))
                  (i32.shr_u (local.get $x) (i32.const 24)))))
      (func (export "user_entrypoint") (param $len i32) (result i32)
        (call $load (i32.const 200) (i32.const 300))
        (i32.store (i32.const 328)
          (call $bswap (i32.add (call $bswap (i32.load (i32.const 328))) (i32.const 1))))
        (call $store (i32.const 200) (i32.const 300))
        (call $flush (i32.const 1))
        (call $me (i32.const 0))
        (drop (call $call (i32.const 0) (i32.const 100) (i32.const 0) (i32.const 64)
                          (i64.const -1) (i32.const 96)))
        (i32.const 0)))"#;
    let mut exec = Executor::new();
    deploy(&mut exec, addr(0x800), wat);
    let out = exec.call(addr(1), addr(0x800), U256::ZERO, &[], 1_000_000_000, false);
    assert!(out.success, "{out:?}");
    let depth = U256::from_be_bytes(exec.state().storage(addr(0x800), B256::ZERO).0);
    // Nitro's page limit ends the chain: 128 one-page frames open at once, the 129th cannot
    // get its memory (out of gas in that frame only). The native stack grows as needed.
    assert_eq!(depth, U256::from(128));
}

#[test]
fn top_level_create_deploys_the_prelude_code() {
    let mut exec = Executor::new();
    let deployer = addr(0x900);
    exec.state_mut().set_nonce(deployer, 5);
    let code = code("test_token");
    let out = exec.create(
        deployer,
        U256::ZERO,
        &stylus_activation::deploy_initcode(&code),
        GAS,
    );
    assert_eq!(out.address, Some(deployer.create(5)));
    assert_eq!(exec.state().nonce(deployer), 6);
    assert_eq!(
        exec.state().code(out.address.unwrap()).as_ref(),
        code.as_slice()
    );
    // 200 gas per deposited byte dominates.
    assert!(out.gas_used > 200 * code.len() as u64, "{}", out.gas_used);
}

#[test]
fn memory_growth_is_paid_and_limited() {
    // Grows memory by calldata[0] pages (memory.grow, as Rust allocators do) and reports
    // evm_gas_left afterwards.
    let wat = r#"(module
      (import "vm_hooks" "read_args" (func $read_args (param i32)))
      (import "vm_hooks" "write_result" (func $write (param i32 i32)))
      (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
      (memory (export "memory") 1)
      (func (export "user_entrypoint") (param $len i32) (result i32)
        (call $read_args (i32.const 0))
        (call $pay (i32.const 0))
        (if (i32.eq (memory.grow (i32.load8_u (i32.const 0))) (i32.const -1))
          (then (return (i32.const 1))))
        (i32.const 0)))"#;
    let mut exec = Executor::new();
    deploy(&mut exec, addr(0xa00), wat);
    // Each call in a block of its own, so both pay the full program init.
    exec.begin_block();
    let small = exec.call(addr(1), addr(0xa00), U256::ZERO, &[1], GAS, false);
    exec.begin_block();
    let big = exec.call(addr(1), addr(0xa00), U256::ZERO, &[101], GAS, false);
    assert!(small.success && big.success);
    // 2 pages are free; 100 more pages cost 1000 gas each (plus wasmi's own fuel for
    // zeroing the new pages, about 10 gas per page).
    let extra = big.gas_used - small.gas_used;
    assert!((100_000..=101_100).contains(&extra), "{extra}");
    // Beyond the 128-page limit memory.grow fails (returns -1): the program reverts.
    let too_big = exec.call(addr(1), addr(0xa00), U256::ZERO, &[128], GAS, false);
    assert_eq!(too_big.status, CallStatus::Revert);
}

/// A program that does nothing; `n` makes its code (and code hash) distinct.
fn idle(n: u32) -> String {
    format!(
        r#"(module
      (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
      (memory (export "memory") 1 1)
      (global i32 (i32.const {n}))
      (func (export "user_entrypoint") (param $len i32) (result i32) (i32.const 0)))"#
    )
}

#[test]
fn a_program_called_again_in_the_same_block_pays_only_the_cached_init() {
    let mut exec = Executor::new();
    for n in 0..=meter::BLOCK_CACHE_SIZE as u32 {
        deploy(&mut exec, addr(0xb00 + u64::from(n)), &idle(n));
    }
    let call = |exec: &mut Executor, n: u64| {
        let out = exec.call(addr(1), addr(0xb00 + n), U256::ZERO, &[], GAS, false);
        assert!(out.success);
        out.gas_used
    };
    exec.begin_block();
    let first = call(&mut exec, 0);
    let again = call(&mut exec, 0);
    assert_eq!(
        first - again,
        meter::PROGRAM_INIT_GAS - meter::PROGRAM_CACHED_GAS
    );
    exec.begin_block();
    assert_eq!(
        call(&mut exec, 0),
        first,
        "a new block starts with no recent programs"
    );
    // 32 other programs push program 0 out of the cache: it pays the full init again.
    for n in 1..=meter::BLOCK_CACHE_SIZE as u64 {
        assert_eq!(call(&mut exec, n), first);
    }
    assert_eq!(call(&mut exec, 0), first, "evicted as least recently used");
    assert_eq!(call(&mut exec, 0), again);
}

/// Reports `msg_sender ‖ contract_address ‖ msg_reentrant (4 bytes LE)` and writes slot 0 := 1.
/// With empty calldata it first calls itself with one byte and returns that inner report.
const REPORTER: &str = r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "write_result" (func $write (param i32 i32)))
  (import "vm_hooks" "msg_sender" (func $sender (param i32)))
  (import "vm_hooks" "contract_address" (func $me (param i32)))
  (import "vm_hooks" "msg_reentrant" (func $reentrant (result i32)))
  (import "vm_hooks" "call_contract" (func $call (param i32 i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "read_return_data" (func $rrd (param i32 i32 i32) (result i32)))
  (import "vm_hooks" "storage_cache_bytes32" (func $store (param i32 i32)))
  (import "vm_hooks" "storage_flush_cache" (func $flush (param i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 1 1)
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (i32.store8 (i32.const 543) (i32.const 1))
    (call $store (i32.const 400) (i32.const 512))
    (call $flush (i32.const 1))
    (if (i32.eqz (local.get $len))
      (then
        (call $me (i32.const 300))
        (drop (call $call (i32.const 300) (i32.const 320) (i32.const 1) (i32.const 600)
                          (i64.const -1) (i32.const 700)))
        (call $write (i32.const 0) (call $rrd (i32.const 0) (i32.const 0) (i32.const 44)))
        (return (i32.const 0))))
    (call $sender (i32.const 0))
    (call $me (i32.const 20))
    (i32.store (i32.const 40) (call $reentrant))
    (call $write (i32.const 0) (i32.const 44))
    (i32.const 0)))"#;

/// Delegate-calls the address in calldata (with one byte of input) and returns its output.
const DELEGATOR: &str = r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "write_result" (func $write (param i32 i32)))
  (import "vm_hooks" "delegate_call_contract" (func $dcall (param i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "read_return_data" (func $rrd (param i32 i32 i32) (result i32)))
  (import "vm_hooks" "return_data_size" (func $rds (result i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 1 1)
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (call $read_args (i32.const 100))
    (drop (call $dcall (i32.const 100) (i32.const 120) (i32.const 1) (i64.const -1) (i32.const 96)))
    (call $write (i32.const 200) (call $rrd (i32.const 200) (i32.const 0) (call $rds)))
    (i32.const 0)))"#;

#[test]
fn delegate_calls_and_reentrancy() {
    let mut exec = Executor::new();
    let (reporter, delegator, user) = (addr(0xb00), addr(0xb01), addr(0xb02));
    deploy(&mut exec, reporter, REPORTER);
    deploy(&mut exec, delegator, DELEGATOR);

    // Reentering the same contract is reported by msg_reentrant (the SDK's guard reads it).
    let out = exec.call(user, reporter, U256::ZERO, &[], GAS, false);
    assert!(out.success, "{out:?}");
    assert_eq!(
        &out.return_data[..20],
        reporter.as_slice(),
        "inner sender is the reporter"
    );
    assert_eq!(out.return_data[40], 1, "reentrant");
    let direct = exec.call(user, reporter, U256::ZERO, &[1], GAS, false);
    assert_eq!(direct.return_data[40], 0, "not reentrant");

    // DELEGATECALL: the reporter's code runs as the delegator, for the original sender.
    let out = exec.call(user, delegator, U256::ZERO, reporter.as_slice(), GAS, false);
    assert!(out.success, "{out:?}");
    assert_eq!(&out.return_data[..20], user.as_slice());
    assert_eq!(&out.return_data[20..40], delegator.as_slice());
    assert_eq!(
        out.return_data[40], 0,
        "delegate frames do not count as reentry"
    );
    assert_eq!(
        exec.state().storage(delegator, B256::ZERO),
        B256::with_last_byte(1)
    );
}

#[test]
fn executor_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Executor>();
}

#[test]
fn callee_out_of_ink_leaves_the_caller_its_64th() {
    let mut exec = Executor::new();
    let (outer, inner) = (addr(0x1100), addr(0x300));
    deploy(&mut exec, outer, CALLER);
    deploy(&mut exec, inner, EXITER);
    let gas = 400_000;
    let out = exec.call(
        addr(1),
        outer,
        U256::ZERO,
        &caller_args(false, inner, 3),
        gas,
        false,
    );
    assert!(out.success, "{out:?}");
    assert_eq!(status_of(&out.return_data), 2);
    // The callee burnt everything it was given (63/64 of what was left); the caller finished.
    assert!(
        out.gas_used > gas * 62 / 64 && out.gas_used < gas,
        "{}",
        out.gas_used
    );
}
