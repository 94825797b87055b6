//! The native StylusDeployer and ArbWasm as programs and transactions reach them: every
//! contract artifact deployed, activated and constructed in one signed transaction; CREATE and
//! CREATE2 addresses; activation by code hash (a second deploy does not activate again); a
//! failing constructor undoing the creation and the activation; the deployer's own errors;
//! programs calling ArbWasm; the SDK constructor guard.

use crate::common::{addr, code, send_signed as send, CONSTRUCTOR_SELECTOR, GAS};
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{Panic, PanicKind, SolCall, SolError, SolEvent, SolValue};
use bursar_bindings::arbitrum::{
    IArbWasm, IStylusDeployer, ARBWASM_ADDRESS, STYLUS_DEPLOYER_ADDRESS,
};
use bursar_bindings::gateway::ISessionGateway;
use bursar_bindings::receipts::IReceiptRegistry;
use bursar_bindings::token::ITestToken;
use bursar_devnet::accounts::dev_accounts;
use bursar_devnet::chain::{CallRequest, MinedTx};
use bursar_devnet::{CallStatus, Chain as DevChain, ChainConfig, Executor};

const ETHER: u64 = 1_000_000_000_000_000_000;

fn initcode(name: &str) -> Vec<u8> {
    stylus_activation::deploy_initcode(&code(name))
}

fn constructor(args: &[u8]) -> Bytes {
    let mut data = CONSTRUCTOR_SELECTOR.to_vec();
    data.extend_from_slice(args);
    data.into()
}

/// The ReceiptRegistry's constructor arguments: its binder, and no ERC-8004 registries.
fn receipt_registry_args(binder: Address) -> Vec<u8> {
    (binder, Address::ZERO, Address::ZERO).abi_encode_params()
}

fn deploy_call(bytecode: Vec<u8>, init_data: Bytes, init_value: u64, salt: B256) -> Vec<u8> {
    IStylusDeployer::deployCall {
        bytecode: bytecode.into(),
        initData: init_data,
        initValue: U256::from(init_value),
        salt,
    }
    .abi_encode()
}

/// `keccak256(salt ‖ initData)`, computed here independently of the devnet.
fn expected_create2(salt: B256, init_data: &[u8], bytecode: &[u8]) -> Address {
    let salt = keccak256([salt.as_slice(), init_data].concat());
    STYLUS_DEPLOYER_ADDRESS.create2_from_code(salt, bytecode)
}

fn view<C: SolCall>(chain: &mut DevChain, to: Address, call: C) -> C::Return {
    let req = CallRequest {
        to: Some(to),
        data: call.abi_encode().into(),
        ..Default::default()
    };
    let out = chain.simulate(&req, None, |_| {});
    assert!(out.success, "{} reverted: {}", C::SIGNATURE, out.output);
    C::abi_decode_returns(&out.output).unwrap()
}

/// The address from the receipt's `ContractDeployed` log (as cargo-stylus reads it).
fn deployed(tx: &MinedTx) -> Address {
    assert!(
        tx.receipt.status,
        "deploy failed: {}",
        tx.receipt.revert_data
    );
    let logs: Vec<_> = tx
        .receipt
        .logs
        .iter()
        .filter(|l| l.log.address == STYLUS_DEPLOYER_ADDRESS)
        .collect();
    assert_eq!(logs.len(), 1);
    assert_eq!(
        logs[0].log.topics[0],
        alloy_primitives::b256!("8ffcdc15a283d706d38281f500270d8b5a656918f555de0913d7455e3e6bc1bf")
    );
    IStylusDeployer::ContractDeployed::decode_raw_log(&logs[0].log.topics, &logs[0].log.data)
        .unwrap()
        .deployedContract
}

fn activations(tx: &MinedTx) -> Vec<IArbWasm::ProgramActivated> {
    tx.receipt
        .logs
        .iter()
        .filter(|l| l.log.address == ARBWASM_ADDRESS)
        .map(|l| IArbWasm::ProgramActivated::decode_raw_log(&l.log.topics, &l.log.data).unwrap())
        .collect()
}

fn deployer_nonce(chain: &DevChain) -> u64 {
    chain.state().nonce(STYLUS_DEPLOYER_ADDRESS)
}

#[test]
fn the_deployer_exists_at_genesis() {
    let chain = DevChain::new(ChainConfig::default());
    assert!(!chain.state().code(STYLUS_DEPLOYER_ADDRESS).is_empty());
    assert_eq!(deployer_nonce(&chain), 1);
    assert!(!chain.state().code(ARBWASM_ADDRESS).is_empty());
}

#[test]
fn deploys_every_contract_in_one_transaction() {
    let mut chain = DevChain::new(ChainConfig::default());
    let owner = dev_accounts()[0].address;

    // The gateway, from the deployer's nonce 1, constructed with its binder.
    let expected = STYLUS_DEPLOYER_ADDRESS.create(deployer_nonce(&chain));
    let tx = send(
        &mut chain,
        0,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        deploy_call(
            initcode("session_gateway"),
            constructor(&owner.abi_encode()),
            0,
            B256::ZERO,
        ),
    );
    let gateway = deployed(&tx);
    assert_eq!(gateway, expected);
    assert_eq!(
        chain.state().code(gateway).as_ref(),
        code("session_gateway")
    );
    let [activated] = &activations(&tx)[..] else {
        panic!("one activation")
    };
    assert_eq!(activated.program, gateway);
    assert_eq!(activated.codehash, keccak256(code("session_gateway")));
    assert_eq!(
        chain
            .executor()
            .program_info(activated.codehash)
            .unwrap()
            .version,
        2
    );

    // Constructors with `(address owner)` (the ReceiptRegistry's also names the chain's ERC-8004
    // registries: none here); value beyond initValue comes back (data fee 0).
    let mut built = vec![];
    for name in ["test_token", "receipt_registry", "counterparty_registry"] {
        let init = match name {
            "receipt_registry" => constructor(&receipt_registry_args(owner)),
            _ => constructor(&owner.abi_encode()),
        };
        let expected = STYLUS_DEPLOYER_ADDRESS.create(deployer_nonce(&chain));
        let before = chain.state().balance(owner);
        let tx = send(
            &mut chain,
            0,
            STYLUS_DEPLOYER_ADDRESS,
            U256::from(ETHER),
            deploy_call(initcode(name), init, 0, B256::ZERO),
        );
        assert_eq!(deployed(&tx), expected, "{name}");
        assert_eq!(activations(&tx).len(), 1, "{name}");
        let fee = U256::from(tx.receipt.gas_used) * U256::from(tx.receipt.effective_gas_price);
        assert_eq!(
            chain.state().balance(owner),
            before - fee,
            "{name}: excess refunded"
        );
        assert_eq!(chain.state().balance(STYLUS_DEPLOYER_ADDRESS), U256::ZERO);
        built.push(expected);
    }
    let [token, receipts, counterparties] = built[..] else {
        unreachable!()
    };
    assert_eq!(view(&mut chain, token, ITestToken::ownerCall {}), owner);
    assert_eq!(
        view(&mut chain, receipts, IReceiptRegistry::walletCall {}),
        Address::ZERO,
        "bound only once the wallet exists"
    );

    // The wallet's extension, which has no constructor: no init call.
    let tx = send(
        &mut chain,
        0,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        deploy_call(
            initcode("session_wallet_extension"),
            Bytes::new(),
            0,
            B256::ZERO,
        ),
    );
    let extension = deployed(&tx);
    assert_eq!(activations(&tx).len(), 1, "the extension activated");

    // The wallet, by CREATE2, naming the four; then the binder binds the gateway to it.
    let salt = B256::repeat_byte(0x5a);
    let init = constructor(&(counterparties, receipts, gateway, extension).abi_encode_params());
    let bytecode = initcode("session_wallet");
    let expected = expected_create2(salt, &init, &bytecode);
    let nonce = deployer_nonce(&chain);
    let tx = send(
        &mut chain,
        1,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        deploy_call(bytecode, init, 0, salt),
    );
    let wallet = deployed(&tx);
    assert_eq!(wallet, expected);
    assert_eq!(
        deployer_nonce(&chain),
        nonce + 1,
        "CREATE2 bumps the nonce too"
    );
    let bind = send(
        &mut chain,
        0,
        gateway,
        U256::ZERO,
        ISessionGateway::bindCall { wallet }.abi_encode(),
    );
    assert!(bind.receipt.status);
    assert_eq!(
        view(&mut chain, gateway, ISessionGateway::walletCall {}),
        wallet
    );
    let bound = bind.receipt.logs.iter().any(|l| {
        l.log.address == gateway && l.log.topics[0] == ISessionGateway::GatewayBound::SIGNATURE_HASH
    });
    assert!(bound, "bind() logged");
}

#[test]
fn a_second_deploy_of_the_same_code_does_not_activate_again() {
    let mut chain = DevChain::new(ChainConfig::default());
    let owner = dev_accounts()[2].address;
    let init = constructor(&owner.abi_encode());
    let first = send(
        &mut chain,
        2,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        deploy_call(initcode("test_token"), init.clone(), 0, B256::ZERO),
    );
    assert_eq!(activations(&first).len(), 1);
    let first = deployed(&first);

    let salt = B256::with_last_byte(1);
    let second = send(
        &mut chain,
        2,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        deploy_call(initcode("test_token"), init.clone(), 0, salt),
    );
    assert!(
        activations(&second).is_empty(),
        "already active by code hash"
    );
    let second = deployed(&second);
    assert_eq!(
        second,
        expected_create2(salt, &init, &initcode("test_token"))
    );
    assert_ne!(first, second);
    assert_eq!(view(&mut chain, second, ITestToken::ownerCall {}), owner);
    assert!(!view(
        &mut chain,
        STYLUS_DEPLOYER_ADDRESS,
        IStylusDeployer::requiresActivationCall { addr: second }
    ));

    // The same salt and init data again: the CREATE2 address is taken, nothing to bubble up.
    let again = send(
        &mut chain,
        2,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        deploy_call(initcode("test_token"), init, 0, salt),
    );
    assert!(!again.receipt.status);
    let err = IStylusDeployer::ContractDeploymentError::abi_decode(&again.receipt.revert_data)
        .expect("ContractDeploymentError");
    assert_eq!(err.bytecode.as_ref(), initcode("test_token"));
}

#[test]
fn a_failing_constructor_leaves_no_code_and_no_activation() {
    let mut chain = DevChain::new(ChainConfig::default());
    let owner = dev_accounts()[3].address;
    let deploy = |chain: &mut DevChain, name: &str, init: Bytes| {
        let tx = send(
            chain,
            3,
            STYLUS_DEPLOYER_ADDRESS,
            U256::ZERO,
            deploy_call(initcode(name), init, 0, B256::ZERO),
        );
        deployed(&tx)
    };
    let counterparties = deploy(
        &mut chain,
        "counterparty_registry",
        constructor(&owner.abi_encode()),
    );
    let receipts = deploy(
        &mut chain,
        "receipt_registry",
        constructor(&receipt_registry_args(owner)),
    );
    // A zero gateway: the wallet's constructor refuses it.
    let wallet_hash = keccak256(code("session_wallet"));
    let nonce = deployer_nonce(&chain);
    let expected = STYLUS_DEPLOYER_ADDRESS.create(nonce);
    let init =
        constructor(&(counterparties, receipts, Address::ZERO, receipts).abi_encode_params());
    let value = U256::from(ETHER);
    let before = chain.state().balance(owner);
    let tx = send(
        &mut chain,
        3,
        STYLUS_DEPLOYER_ADDRESS,
        value,
        deploy_call(initcode("session_wallet"), init, 0, B256::ZERO),
    );
    assert!(!tx.receipt.status);
    assert!(tx.receipt.logs.is_empty());
    let err = IStylusDeployer::ContractInitializationError::abi_decode(&tx.receipt.revert_data)
        .expect("ContractInitializationError");
    assert_eq!(err.newContract, expected);
    assert!(!err.data.is_empty(), "the constructor's revert data");
    // Everything in the deployer's frame is gone: code, activation, nonce bump, value.
    assert!(chain.state().code(expected).is_empty());
    assert!(chain.executor().program_info(wallet_hash).is_none());
    assert_eq!(deployer_nonce(&chain), nonce);
    let fee = U256::from(tx.receipt.gas_used) * U256::from(tx.receipt.effective_gas_price);
    assert_eq!(chain.state().balance(owner), before - fee);
    let req = CallRequest {
        to: Some(ARBWASM_ADDRESS),
        data: IArbWasm::codehashVersionCall {
            codehash: wallet_hash,
        }
        .abi_encode()
        .into(),
        ..Default::default()
    };
    let out = chain.simulate(&req, None, |_| {});
    assert!(!out.success);
    assert_eq!(
        out.output.as_ref(),
        IArbWasm::ProgramNotActivated {}.abi_encode()
    );
}

#[test]
fn deployer_errors() {
    let mut exec = Executor::new();
    let from = addr(0xf00);
    exec.state_mut().set_balance(from, U256::from(ETHER));
    let deploy = |exec: &mut Executor, value: u64, data: Vec<u8>| {
        exec.call(
            from,
            STYLUS_DEPLOYER_ADDRESS,
            U256::from(value),
            &data,
            GAS,
            false,
        )
    };

    let out = deploy(
        &mut exec,
        0,
        deploy_call(vec![], Bytes::new(), 0, B256::ZERO),
    );
    assert_eq!(
        out.return_data.as_ref(),
        IStylusDeployer::EmptyBytecode {}.abi_encode()
    );

    // Initcode that halts (INVALID): the creation fails without revert data.
    let bad = vec![0x60, 1, 0x60, 2, 0x01, 0xfe];
    let out = deploy(
        &mut exec,
        0,
        deploy_call(bad.clone(), Bytes::new(), 0, B256::ZERO),
    );
    let err = IStylusDeployer::ContractDeploymentError::abi_decode(&out.return_data).unwrap();
    assert_eq!(err.bytecode.as_ref(), bad);

    // Initcode that reverts with data: bubbled up as is (PUSH1 0xab PUSH1 0 MSTORE8... is not
    // supported; a 1-byte revert of zeroed memory is: PUSH1 1 PUSH1 0 REVERT).
    let out = deploy(
        &mut exec,
        0,
        deploy_call(vec![0x60, 1, 0x60, 0, 0xfd], Bytes::new(), 0, B256::ZERO),
    );
    assert_eq!(out.status, CallStatus::Revert);
    assert_eq!(out.return_data.as_ref(), [0u8]);

    let out = deploy(
        &mut exec,
        1,
        deploy_call(initcode("session_gateway"), Bytes::new(), 1, B256::ZERO),
    );
    assert_eq!(
        out.return_data.as_ref(),
        IStylusDeployer::InitValueButNotInitData {}.abi_encode()
    );

    // initValue above msg.value: the activation value underflows (Solidity checked math).
    let init = constructor(&from.abi_encode());
    let out = deploy(
        &mut exec,
        0,
        deploy_call(initcode("test_token"), init.clone(), 5, B256::ZERO),
    );
    assert_eq!(
        out.return_data.as_ref(),
        Panic::from(PanicKind::UnderOverflow).abi_encode()
    );

    // A STATICCALL cannot create.
    let out = exec.call(
        from,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        &deploy_call(initcode("test_token"), init, 0, B256::ZERO),
        GAS,
        true,
    );
    assert!(!out.success);
    assert!(exec.program_info(keccak256(code("test_token"))).is_none());
    assert_eq!(exec.state().nonce(STYLUS_DEPLOYER_ADDRESS), 1);

    // The helper views.
    let salt = B256::repeat_byte(3);
    let out = deploy(
        &mut exec,
        0,
        IStylusDeployer::initSaltCall {
            salt,
            initData: Bytes::from_static(b"abc"),
        }
        .abi_encode(),
    );
    assert_eq!(
        B256::from_slice(&out.return_data),
        keccak256([salt.as_slice(), b"abc"].concat())
    );
}

#[test]
fn the_sdk_constructor_guard_refuses_a_second_call() {
    let mut exec = Executor::new();
    let from = addr(0xf01);
    let owner = addr(0xabc);
    let out = exec.call(
        from,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        &deploy_call(
            initcode("test_token"),
            constructor(&owner.abi_encode()),
            0,
            B256::ZERO,
        ),
        GAS,
        false,
    );
    assert!(out.success, "{out:?}");
    let token = Address::abi_decode(&out.return_data).unwrap();
    // Again, from anyone (the deployer included): the guard slot is set.
    for caller in [from, STYLUS_DEPLOYER_ADDRESS] {
        let again = exec.call(
            caller,
            token,
            U256::ZERO,
            &constructor(&addr(0xbad).abi_encode()),
            GAS,
            false,
        );
        assert_eq!(again.status, CallStatus::Revert);
    }
    let owner_now = exec.call(
        from,
        token,
        U256::ZERO,
        &ITestToken::ownerCall {}.abi_encode(),
        GAS,
        true,
    );
    assert_eq!(Address::abi_decode(&owner_now.return_data).unwrap(), owner);
}

/// Calldata: `[static flag] ‖ target (20) ‖ value (32) ‖ payload`. Calls the target with the
/// payload (CALL with the value, or STATICCALL) and returns `status (4 LE) ‖ return data`.
const PROXY: &str = r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "call_contract" (func $call (param i32 i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "static_call_contract" (func $scall (param i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "read_return_data" (func $rrd (param i32 i32 i32) (result i32)))
  (import "vm_hooks" "write_result" (func $write (param i32 i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 1 1)
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (call $read_args (i32.const 0))
    (i32.store (i32.const 4096)
      (if (result i32) (i32.load8_u (i32.const 0))
        (then (call $scall (i32.const 1) (i32.const 53) (i32.sub (local.get $len) (i32.const 53))
                           (i64.const -1) (i32.const 4092)))
        (else (call $call (i32.const 1) (i32.const 53) (i32.sub (local.get $len) (i32.const 53))
                          (i32.const 21) (i64.const -1) (i32.const 4092)))))
    (call $write (i32.const 4096)
      (i32.add (i32.const 4)
        (call $rrd (i32.const 4100) (i32.const 0) (i32.load (i32.const 4092)))))
    (i32.const 0)))"#;

fn proxy_args(is_static: bool, target: Address, value: u64, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![u8::from(is_static)];
    v.extend_from_slice(target.as_slice());
    v.extend_from_slice(&U256::from(value).to_be_bytes::<32>());
    v.extend_from_slice(payload);
    v
}

/// `(status, return data)` of the proxied call.
fn proxied(out: &bursar_devnet::CallOutcome) -> (u32, &[u8]) {
    assert!(out.success, "{out:?}");
    let status = u32::from_le_bytes(out.return_data[..4].try_into().unwrap());
    (status, &out.return_data[4..])
}

#[test]
fn programs_call_arbwasm() {
    let mut exec = Executor::new();
    let proxy = addr(0x7000);
    let wasm = wat::parse_str(PROXY).unwrap();
    exec.deploy_program(proxy, &stylus_activation::contract_code(&wasm))
        .unwrap();
    exec.state_mut().set_balance(proxy, U256::from(1_000u64));
    let registry = addr(0x7001);
    let registry_code = code("counterparty_registry");
    exec.state_mut()
        .set_code(registry, registry_code.clone().into());
    let call = |exec: &mut Executor, args: Vec<u8>| {
        exec.call(addr(1), proxy, U256::ZERO, &args, GAS, false)
    };

    let version = IArbWasm::stylusVersionCall {}.abi_encode();
    let out = call(&mut exec, proxy_args(true, ARBWASM_ADDRESS, 0, &version));
    assert_eq!(proxied(&out), (0, &U256::from(2).to_be_bytes::<32>()[..]));

    // activateProgram writes state: refused under STATICCALL.
    let activate = IArbWasm::activateProgramCall { program: registry }.abi_encode();
    let out = call(&mut exec, proxy_args(true, ARBWASM_ADDRESS, 0, &activate));
    assert_ne!(proxied(&out).0, 0);
    assert!(exec.program_info(keccak256(&registry_code)).is_none());

    // A CALL with value activates; the value (no data fee here) comes back to the program.
    let out = call(
        &mut exec,
        proxy_args(false, ARBWASM_ADDRESS, 300, &activate),
    );
    let (status, ret) = proxied(&out);
    assert_eq!(status, 0);
    let ret = IArbWasm::activateProgramCall::abi_decode_returns(ret).unwrap();
    assert_eq!((ret.version, ret.dataFee), (2, U256::ZERO));
    assert_eq!(exec.state().balance(proxy), U256::from(1_000u64));
    assert_eq!(exec.state().balance(ARBWASM_ADDRESS), U256::ZERO);
    let [log] = &out.logs[..] else {
        panic!("one ProgramActivated log: {:?}", out.logs)
    };
    assert_eq!(log.address, ARBWASM_ADDRESS);
    let info = exec
        .program_info(keccak256(&registry_code))
        .expect("activated");
    assert_eq!(info.version, 2);
    // The record lives in ArbWasm's storage.
    assert!(!exec
        .state()
        .storage(ARBWASM_ADDRESS, info.code_hash)
        .is_zero());

    // Again: ProgramUpToDate().
    let out = call(&mut exec, proxy_args(false, ARBWASM_ADDRESS, 0, &activate));
    assert_eq!(
        proxied(&out),
        (2, &IArbWasm::ProgramUpToDate {}.abi_encode()[..])
    );
    // Queries are not payable.
    let out = call(&mut exec, proxy_args(false, ARBWASM_ADDRESS, 1, &version));
    assert_ne!(proxied(&out).0, 0);
}
