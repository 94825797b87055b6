//! CREATE / CREATE2: the address, the checks before the initcode runs, and the deposit rules
//! after. The initcode itself is EVM code and runs in [`crate::evm`], for a transaction, an EVM
//! opcode, a Stylus `create1`/`create2` or the StylusDeployer alike.

use alloy_primitives::{Address, Bytes, B256, U256};

use crate::frame::{CallKind, CallStatus, CreateResult, FrameResult, Message};
use crate::meter::{self, CODE_DEPOSIT_GAS, MAX_CALL_DEPTH};
use crate::stylus::is_stylus_program;
use crate::world::World;

/// Creates a contract from `initcode` on behalf of `creator`, whose frame is at `depth`.
pub(crate) fn create(
    mut world: Box<World>,
    creator: Address,
    value: U256,
    initcode: Vec<u8>,
    salt: Option<B256>,
    gas: u64,
    depth: usize,
) -> (Box<World>, CreateResult) {
    // Too deep or too poor: nothing happens and the gas goes back (no nonce bump).
    if depth >= MAX_CALL_DEPTH || world.state.balance(creator) < value {
        return (world, CreateResult::failed(Bytes::new(), gas));
    }
    if world.state.nonce(creator) == u64::MAX {
        return (world, CreateResult::failed(Bytes::new(), gas));
    }
    let nonce = world.state.increment_nonce(creator);
    let address = match salt {
        Some(salt) => creator.create2_from_code(salt, &initcode),
        None => creator.create(nonce),
    };
    world.state.warm_created(address);
    let msg = Message {
        kind: if salt.is_some() {
            CallKind::Create2
        } else {
            CallKind::Create
        },
        caller: creator,
        address,
        code_address: address,
        value,
        transfer: value,
        input: initcode.into(),
        gas,
        is_static: false,
        depth: depth + 1,
    };
    if let Some(t) = world.tracer.as_mut() {
        t.enter(&msg);
    }
    let (mut world, result, trace) = run(world, msg);
    if let Some(t) = world.tracer.as_mut() {
        t.exit(&trace);
    }
    (world, result)
}

/// Runs `initcode` as a creation by `creator` at a chosen `address` (no nonce is used): how a
/// genesis places contracts at well-known addresses (see [`crate::fixtures`]).
pub(crate) fn create_at(
    mut world: Box<World>,
    creator: Address,
    address: Address,
    initcode: Vec<u8>,
    gas: u64,
) -> (Box<World>, CreateResult) {
    world.state.warm_created(address);
    let msg = Message {
        kind: CallKind::Create,
        caller: creator,
        address,
        code_address: address,
        value: U256::ZERO,
        transfer: U256::ZERO,
        input: initcode.into(),
        gas,
        is_static: false,
        depth: 1,
    };
    let (world, result, _) = run(world, msg);
    (world, result)
}

/// Everything after the address is known; also returns the frame's end for the tracer (its
/// output is the deployed code).
fn run(mut world: Box<World>, msg: Message) -> (Box<World>, CreateResult, FrameResult) {
    let address = msg.address;
    let collision = world
        .state
        .account(address)
        .is_some_and(|a| a.nonce != 0 || !a.code.is_empty())
        || world.state.storage_of(address).next().is_some();
    if collision {
        let end = FrameResult {
            status: CallStatus::Halt("contract address collision"),
            output: Bytes::new(),
            gas_left: 0,
        };
        return (world, CreateResult::failed(Bytes::new(), 0), end);
    }

    let cp = world.state.checkpoint();
    world.state.touch(address);
    world.state.mark_created(address);
    world.state.set_nonce(address, 1);
    world
        .state
        .transfer(msg.caller, address, msg.value)
        .expect("balance checked by the caller");

    let initcode = msg.input.clone();
    let (w, mut end) = crate::evm::initcode(world, &msg, initcode);
    world = w;
    let result = match end.status {
        CallStatus::Success => {
            let code = &end.output;
            let deposit = CODE_DEPOSIT_GAS * code.len() as u64;
            // EIP-3541 rejects code starting with 0xEF, except Stylus programs on Arbitrum.
            let bad_prefix = code.first() == Some(&0xEF) && !is_stylus_program(code);
            let failure = if code.len() > stylus_activation::MAX_CODE_SIZE {
                Some(CallStatus::Halt("max code size exceeded"))
            } else if bad_prefix {
                Some(CallStatus::Halt("invalid code: must not begin with 0xef"))
            } else if deposit > end.gas_left {
                Some(CallStatus::OutOfGas)
            } else {
                None
            };
            match failure {
                Some(status) => {
                    end = FrameResult {
                        status,
                        output: Bytes::new(),
                        gas_left: 0,
                    };
                    CreateResult::failed(Bytes::new(), 0)
                }
                None => {
                    end.gas_left -= deposit;
                    world.state.set_code(address, end.output.clone());
                    CreateResult {
                        address: Some(address),
                        revert_data: Bytes::new(),
                        gas_left: end.gas_left,
                    }
                }
            }
        }
        CallStatus::Revert => CreateResult::failed(end.output.clone(), end.gas_left),
        CallStatus::OutOfGas | CallStatus::Halt(_) => CreateResult::failed(Bytes::new(), 0),
    };
    if result.address.is_some() {
        world.state.commit(cp);
    } else {
        world.state.revert(cp);
    }
    (world, result, end)
}

/// Gas for hashing initcode in CREATE2 (exposed for the transaction layer).
pub fn create2_hash_gas(initcode_len: usize) -> u64 {
    meter::KECCAK_WORD_GAS * (initcode_len as u64).div_ceil(32)
}
