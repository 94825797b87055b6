//! The StylusDeployer at its canonical address `0xcEcb…A990`, native (on Arbitrum it is a
//! Solidity contract; native here, it needs no compiled artifact at genesis). It follows the Solidity contract step by step, inside its own call frame, so a
//! failure anywhere (a constructor that reverts, a refund that bounces) undoes the creation and
//! the activation with everything else:
//!
//! 1. `salt ≠ 0` → CREATE2 with `keccak256(salt ‖ initData)`, else CREATE from the deployer's
//!    nonce; `bytecode` is initcode (the cargo-stylus prelude) and runs with value 0. Empty
//!    bytecode → `EmptyBytecode()`; a failed creation bubbles up its revert data, or reverts
//!    with `ContractDeploymentError(bytecode)` when there is none.
//! 2. If the new code hash is not active at the current Stylus version, `activateProgram` on
//!    ArbWasm with value `msg.value − initValue` (ArbWasm refunds what the data fee, 0 here,
//!    does not take); its revert bubbles up.
//! 3. Non-empty `initData` → call the contract with it and `initValue` (the constructor);
//!    failure → `ContractInitializationError(address, returndata)`. Empty `initData` with a
//!    non-zero `initValue` → `InitValueButNotInitData()`.
//! 4. `msg.value − dataFee − initValue` goes back to `msg.sender` (failure →
//!    `RefundExcessValueError(amount)`); underflows revert with `Panic(0x11)`, as Solidity's
//!    checked arithmetic does.
//! 5. Emit `ContractDeployed(address)`, return the address.
//!
//! `initSalt` and `requiresActivation` are answered too. Gas: creation, nested calls (63/64
//! rule, value and account-access costs), hashing and the log are priced as the EVM would;
//! the contract's own bytecode is a flat [`OVERHEAD_GAS`] plus memory for the calldata.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{Panic, PanicKind, SolCall, SolError, SolEvent};

pub use bursar_bindings::arbitrum::{IStylusDeployer, STYLUS_DEPLOYER_ADDRESS};
use IStylusDeployer::*;

use crate::arbwasm::{self, IArbWasm::activateProgramCall, ARBWASM_ADDRESS};
use crate::frame::{on_enough_stack, CallKind, CallStatus, FrameResult, Message};
use crate::world::World;

use crate::meter::{
    CALL_STIPEND, CALL_VALUE_GAS, COLD_ACCOUNT_GAS, CREATE_GAS, KECCAK_WORD_GAS, LOG_DATA_GAS,
    LOG_GAS, LOG_TOPIC_GAS, WARM_ACCESS_GAS,
};
use crate::stylus::STYLUS_VERSION;

/// What the Solidity contract spends besides its calls, creation, hashing and log: dispatch,
/// ABI decoding, the two ArbWasm version queries. An approximation.
pub const OVERHEAD_GAS: u64 = 10_000;

/// Gas for one keccak256 over `len` bytes.
const KECCAK_GAS: u64 = 30;

/// How the deployer's frame ends early.
enum Halt {
    Revert(Vec<u8>),
    /// Out of gas, or an exceptional halt (CREATE under STATICCALL): all gas consumed.
    OutOfGas,
}

fn revert<E: SolError>(e: E) -> Halt {
    Halt::Revert(e.abi_encode())
}

/// Solidity 0.8's checked-arithmetic failure.
fn underflow() -> Halt {
    revert(Panic::from(PanicKind::UnderOverflow))
}

fn words(len: usize) -> u64 {
    (len as u64).div_ceil(32)
}

/// Runs `msg` (already past the value transfer) against the StylusDeployer.
pub(crate) fn call(world: Box<World>, msg: Message) -> (Box<World>, FrameResult) {
    let mut frame = Frame {
        world: Some(world),
        gas: msg.gas,
        msg: &msg,
    };
    let outcome = frame.dispatch();
    let gas_left = frame.gas;
    let world = frame.world.take().expect("world returned by nested frames");
    let result = match outcome {
        Ok(output) => FrameResult {
            status: CallStatus::Success,
            output: output.into(),
            gas_left,
        },
        Err(Halt::Revert(data)) => FrameResult::revert(data.into(), gas_left),
        Err(Halt::OutOfGas) => FrameResult::out_of_gas(),
    };
    (world, result)
}

/// The deployer's frame: the world (lent to nested frames), its gas and its message.
struct Frame<'a> {
    world: Option<Box<World>>,
    gas: u64,
    msg: &'a Message,
}

impl Frame<'_> {
    fn world(&mut self) -> &mut World {
        self.world
            .as_deref_mut()
            .expect("world present outside nested frames")
    }

    fn charge(&mut self, gas: u64) -> Result<(), Halt> {
        self.gas = self.gas.checked_sub(gas).ok_or(Halt::OutOfGas)?;
        Ok(())
    }

    /// All but one 64th of the gas left, handed to a nested frame.
    fn gas_for_child(&mut self) -> u64 {
        let child = self.gas - self.gas / 64;
        self.gas -= child;
        child
    }

    fn dispatch(&mut self) -> Result<Vec<u8>, Halt> {
        let msg = self.msg;
        // The real deployer is bytecode; running it for another account is not modelled.
        if msg.kind == CallKind::DelegateCall {
            return Err(Halt::Revert(vec![]));
        }
        let input = &msg.input;
        let memory = 3 * words(input.len()) + words(input.len()).pow(2) / 512;
        self.charge(OVERHEAD_GAS + memory)?;
        let selector: Option<[u8; 4]> = input.get(..4).and_then(|s| s.try_into().ok());
        // Solidity: unknown selectors, bad arguments and value sent to a non-payable function
        // revert with empty data.
        let bad = || Halt::Revert(vec![]);
        match selector {
            Some(deployCall::SELECTOR) => {
                let call = deployCall::abi_decode(input).map_err(|_| bad())?;
                let address = self.deploy(call)?;
                Ok(deployCall::abi_encode_returns(&address))
            }
            Some(initSaltCall::SELECTOR) if msg.value.is_zero() => {
                let call = initSaltCall::abi_decode(input).map_err(|_| bad())?;
                self.charge(KECCAK_GAS + KECCAK_WORD_GAS * words(32 + call.initData.len()))?;
                Ok(initSaltCall::abi_encode_returns(&init_salt(
                    call.salt,
                    &call.initData,
                )))
            }
            Some(requiresActivationCall::SELECTOR) if msg.value.is_zero() => {
                let call = requiresActivationCall::abi_decode(input).map_err(|_| bad())?;
                Ok(requiresActivationCall::abi_encode_returns(
                    &self.requires_activation(call.addr),
                ))
            }
            _ => Err(bad()),
        }
    }

    fn requires_activation(&mut self, address: Address) -> bool {
        let state = &self.world().state;
        let code_hash = state.account(address).map(|a| a.code_hash);
        code_hash
            .and_then(|h| arbwasm::activation(state, h))
            .is_none_or(|info| info.version != STYLUS_VERSION)
    }

    fn deploy(&mut self, call: deployCall) -> Result<Address, Halt> {
        let msg = self.msg;
        let salt = if call.salt.is_zero() {
            None
        } else {
            self.charge(KECCAK_GAS + KECCAK_WORD_GAS * words(32 + call.initData.len()))?;
            Some(init_salt(call.salt, &call.initData))
        };

        // deployContract
        if call.bytecode.is_empty() {
            return Err(revert(EmptyBytecode {}));
        }
        if msg.is_static {
            return Err(Halt::OutOfGas);
        }
        let hash_gas = salt.map_or(0, |_| KECCAK_WORD_GAS * words(call.bytecode.len()));
        self.charge(CREATE_GAS + hash_gas)?;
        let child = self.gas_for_child();
        let world = self.world.take().expect("world present");
        let (world, created) = on_enough_stack(|| {
            crate::create::create(
                world,
                msg.address,
                U256::ZERO,
                call.bytecode.to_vec(),
                salt,
                child,
                msg.depth,
            )
        });
        self.world = Some(world);
        self.gas += created.gas_left;
        let address = match created.address {
            Some(address) => address,
            None if !created.revert_data.is_empty() => {
                return Err(Halt::Revert(created.revert_data.to_vec()))
            }
            None => {
                return Err(revert(ContractDeploymentError {
                    bytecode: call.bytecode,
                }))
            }
        };

        let mut data_fee = U256::ZERO;
        if self.requires_activation(address) {
            let value = msg
                .value
                .checked_sub(call.initValue)
                .ok_or_else(underflow)?;
            let input = activateProgramCall { program: address }.abi_encode();
            let r = self.call(ARBWASM_ADDRESS, value, input.into())?;
            // A high-level call: its revert bubbles up, and so would undecodable output.
            if r.status != CallStatus::Success {
                return Err(Halt::Revert(r.output.to_vec()));
            }
            data_fee = activateProgramCall::abi_decode_returns(&r.output)
                .map_err(|_| Halt::Revert(vec![]))?
                .dataFee;
        }

        if !call.initData.is_empty() {
            let r = self.call(address, call.initValue, call.initData.clone())?;
            if r.status != CallStatus::Success {
                return Err(revert(ContractInitializationError {
                    newContract: address,
                    data: r.output,
                }));
            }
        } else if !call.initValue.is_zero() {
            return Err(revert(InitValueButNotInitData {}));
        }

        let excess = msg
            .value
            .checked_sub(data_fee)
            .and_then(|v| v.checked_sub(call.initValue))
            .ok_or_else(underflow)?;
        if !excess.is_zero() {
            let r = self.call(msg.caller, excess, Bytes::new())?;
            if r.status != CallStatus::Success {
                return Err(revert(RefundExcessValueError {
                    excessValue: excess,
                }));
            }
        }

        let event = ContractDeployed {
            deployedContract: address,
        };
        let (topics, data) = event.encode_log_data().split();
        self.charge(
            LOG_GAS + LOG_TOPIC_GAS * topics.len() as u64 + LOG_DATA_GAS * data.len() as u64,
        )?;
        self.world().state.push_log(crate::state::Log {
            address: msg.address,
            topics,
            data,
        });
        Ok(address)
    }

    /// A CALL from the deployer, priced as the EVM prices it (access, value, 63/64, stipend).
    fn call(&mut self, to: Address, value: U256, input: Bytes) -> Result<FrameResult, Halt> {
        let cold = self.world().state.warm_account(to);
        let mut cost = if cold {
            COLD_ACCOUNT_GAS
        } else {
            WARM_ACCESS_GAS
        };
        if !value.is_zero() {
            cost += CALL_VALUE_GAS;
        }
        self.charge(cost)?;
        let mut gas = self.gas_for_child();
        if !value.is_zero() {
            gas += CALL_STIPEND;
        }
        let msg = Message {
            kind: CallKind::Call,
            caller: self.msg.address,
            address: to,
            code_address: to,
            value,
            transfer: value,
            input,
            gas,
            is_static: false,
            depth: self.msg.depth + 1,
        };
        let world = self.world.take().expect("world present");
        let (world, result) = world.call(msg);
        self.world = Some(world);
        // As in the EVM, what the callee left (stipend included) comes back.
        self.gas += result.gas_left;
        Ok(result)
    }
}

/// `keccak256(salt ‖ initData)`: the CREATE2 salt, binding the address to the constructor call.
pub fn init_salt(salt: B256, init_data: &[u8]) -> B256 {
    let mut buf = Vec::with_capacity(32 + init_data.len());
    buf.extend_from_slice(salt.as_slice());
    buf.extend_from_slice(init_data);
    keccak256(buf)
}
