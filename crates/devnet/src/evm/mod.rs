//! EVM bytecode, run by revm's interpreter against the devnet's own world.
//!
//! The journaled [`State`](crate::state::State) stays the one source of truth: every opcode
//! that reads or writes state goes through [`World`]'s `revm` `Host` implementation (`host`),
//! and every `CALL`/`CREATE` an EVM frame makes leaves the interpreter, goes through
//! [`World::call`] or [`create`](crate::create::create) — the same router a Stylus program's
//! calls take — and comes back as the interpreter's call outcome. So EVM and Stylus frames nest
//! in any order with one journal, one set of warm accounts and slots, one transient storage and
//! one log list per transaction.

mod host;

use std::sync::LazyLock;

use alloy_primitives::{Bytes, B256};
use revm_interpreter::bytecode::Bytecode;
use revm_interpreter::context_interface::cfg::GasParams;
use revm_interpreter::instructions::gas_table_spec;
use revm_interpreter::interpreter::{EthInterpreter, ExtBytecode};
use revm_interpreter::interpreter_types::{MemoryTr, ReturnData};
use revm_interpreter::primitives::hardfork::SpecId;
use revm_interpreter::{
    instruction_table, CallInput, CallInputs, CallScheme, CallValue, CreateInputs, CreateScheme,
    FrameInput, GasTable, InputsImpl, InstructionResult, InstructionTable, Interpreter,
    InterpreterAction, InterpreterResult, SharedMemory,
};

use crate::frame::{CallKind, CallStatus, CreateResult, FrameResult, Message};
use crate::world::World;

/// The hardfork whose opcodes and gas EVM code runs with: Prague, as ArbOS 40 and later
/// (Cancun's PUSH0, MCOPY, TLOAD/TSTORE, BLOBHASH and BLOBBASEFEE included). Arbitrum did not
/// adopt EIP-7623's calldata floor, and neither does the transaction layer here.
pub(crate) const SPEC: SpecId = SpecId::PRAGUE;

static INSTRUCTIONS: InstructionTable<EthInterpreter, World> = instruction_table();
static GAS: GasTable = gas_table_spec(SPEC);
static GAS_PARAMS: LazyLock<GasParams> = LazyLock::new(|| GasParams::new_spec(SPEC));

/// Runs the EVM code `code` (whose hash is `code_hash`) for the message call `msg`.
pub(crate) fn call(
    mut world: Box<World>,
    msg: Message,
    code_hash: B256,
    code: Bytes,
) -> (Box<World>, FrameResult) {
    let bytecode = world.evm_bytecode(code_hash, code);
    run(world, &msg, ExtBytecode::new_with_hash(bytecode, code_hash))
}

/// Runs `initcode` for the creation `msg` (whose `address` is the new contract). On success the
/// output is the code to deposit; deposit rules are the caller's ([`crate::create`]).
pub(crate) fn initcode(
    world: Box<World>,
    msg: &Message,
    initcode: Bytes,
) -> (Box<World>, FrameResult) {
    run(world, msg, ExtBytecode::new(Bytecode::new_legacy(initcode)))
}

/// The interpreter loop: runs until the frame ends, leaving it for every call and creation.
fn run(mut world: Box<World>, msg: &Message, bytecode: ExtBytecode) -> (Box<World>, FrameResult) {
    let input = InputsImpl {
        target_address: msg.address,
        bytecode_address: Some(msg.code_address),
        caller_address: msg.caller,
        input: CallInput::Bytes(msg.input.clone()),
        call_value: msg.value,
        depth: msg.depth,
    };
    let mut interp: Interpreter<EthInterpreter> = Interpreter::new(
        SharedMemory::new(),
        bytecode,
        input,
        msg.is_static,
        SPEC,
        msg.gas,
    );
    let result = loop {
        let action = match world.step_logger.take() {
            Some(mut logger) => {
                let action = logger.run(&mut interp, &INSTRUCTIONS, &GAS, &mut world);
                world.step_logger = Some(logger);
                action
            }
            None => interp.run_plain(&INSTRUCTIONS, &GAS, &mut *world),
        };
        match action {
            InterpreterAction::NewFrame(FrameInput::Call(inputs)) => {
                let child = call_message(&interp, &inputs, msg.depth + 1);
                let (w, r) = world.call(child);
                world = w;
                insert_call(&mut interp, &inputs, r);
            }
            InterpreterAction::NewFrame(FrameInput::Create(inputs)) => {
                let (w, r) = create(world, &inputs, msg.depth);
                world = w;
                insert_create(&mut interp, r);
            }
            InterpreterAction::NewFrame(FrameInput::Empty) => {
                break InterpreterResult::new_oog(msg.gas, 0);
            }
            InterpreterAction::Return(result) => break result,
        }
    };
    let end = frame_result(&mut world, result);
    (world, end)
}

/// The frame's end in the devnet's terms; a successful frame's refunds join the transaction's
/// journaled counter (undone if an outer frame reverts).
fn frame_result(world: &mut World, result: InterpreterResult) -> FrameResult {
    let r = result.result;
    if r.is_ok() {
        world.state.add_refund(result.gas.refunded());
        FrameResult {
            status: CallStatus::Success,
            output: result.output,
            gas_left: result.gas.remaining(),
        }
    } else if r.is_revert() {
        FrameResult::revert(result.output, result.gas.remaining())
    } else {
        FrameResult {
            status: halt(r),
            output: Bytes::new(),
            gas_left: 0,
        }
    }
}

/// An exceptional halt, as geth's callTracer names it.
fn halt(r: InstructionResult) -> CallStatus {
    use InstructionResult as R;
    CallStatus::Halt(match r {
        R::OutOfGas
        | R::MemoryOOG
        | R::MemoryLimitOOG
        | R::PrecompileOOG
        | R::InvalidOperandOOG
        | R::ReentrancySentryOOG => return CallStatus::OutOfGas,
        R::OpcodeNotFound | R::InvalidFEOpcode | R::NotActivated => "invalid opcode",
        R::InvalidJump => "invalid jump destination",
        R::StackUnderflow => "stack underflow",
        R::StackOverflow => "stack limit reached 1024 (1023)",
        R::CallNotAllowedInsideStatic | R::StateChangeDuringStaticCall => "write protection",
        R::OutOfOffset => "return data out of bounds",
        R::CreateCollision => "contract address collision",
        R::CreateContractSizeLimit => "max code size exceeded",
        R::CreateContractStartingWithEF => "invalid code: must not begin with 0xef",
        R::CreateInitCodeSizeLimit => "max initcode size exceeded",
        R::NonceOverflow => "nonce uint64 overflow",
        _ => "execution halted",
    })
}

/// The message a `CALL`-family opcode asks for.
fn call_message(
    interp: &Interpreter<EthInterpreter>,
    inputs: &CallInputs,
    depth: usize,
) -> Message {
    let input = match &inputs.input {
        CallInput::Bytes(bytes) => bytes.clone(),
        // An empty range is `usize::MAX..usize::MAX`: memory was not touched.
        CallInput::SharedBuffer(range) if range.is_empty() => Bytes::new(),
        CallInput::SharedBuffer(range) => {
            Bytes::copy_from_slice(&interp.memory.global_slice(range.clone()))
        }
    };
    let kind = match inputs.scheme {
        CallScheme::Call => CallKind::Call,
        CallScheme::CallCode => CallKind::CallCode,
        CallScheme::DelegateCall => CallKind::DelegateCall,
        CallScheme::StaticCall => CallKind::StaticCall,
    };
    let (value, transfer) = match inputs.value {
        CallValue::Transfer(v) => (v, v),
        CallValue::Apparent(v) => (v, Default::default()),
    };
    Message {
        kind,
        caller: inputs.caller,
        address: inputs.target_address,
        code_address: inputs.bytecode_address,
        value,
        transfer,
        input,
        gas: inputs.gas_limit,
        is_static: inputs.is_static,
        depth,
    }
}

/// Hands a finished call back to the interpreter that made it: success flag on the stack,
/// return data (and its prefix into the output range), unused gas returned.
fn insert_call(interp: &mut Interpreter<EthInterpreter>, inputs: &CallInputs, r: FrameResult) {
    let ok_or_revert = matches!(r.status, CallStatus::Success | CallStatus::Revert);
    if ok_or_revert {
        interp.gas.erase_cost(r.gas_left);
        let out = &inputs.return_memory_offset;
        let n = out.len().min(r.output.len());
        if n > 0 {
            interp.memory.set(out.start, &r.output[..n]);
        }
    }
    interp.return_data.set_buffer(r.output);
    // The opcode popped its arguments, so there is room for the result.
    let _ = interp.stack.push(alloy_primitives::U256::from(
        r.status == CallStatus::Success,
    ));
}

/// Runs a `CREATE`/`CREATE2` an EVM frame at `depth` asked for.
fn create(world: Box<World>, inputs: &CreateInputs, depth: usize) -> (Box<World>, CreateResult) {
    let salt = match inputs.scheme() {
        CreateScheme::Create2 { salt } => Some(B256::from(salt)),
        _ => None,
    };
    world.create(
        inputs.caller(),
        inputs.value(),
        inputs.init_code().to_vec(),
        salt,
        inputs.gas_limit(),
        depth,
    )
}

/// Hands a finished creation back: the new address (or zero) on the stack, revert data as
/// return data, unused gas returned.
fn insert_create(interp: &mut Interpreter<EthInterpreter>, r: CreateResult) {
    interp.gas.erase_cost(r.gas_left);
    interp.return_data.set_buffer(r.revert_data);
    let word = r.address.map_or(B256::ZERO, |a| a.into_word());
    let _ = interp.stack.push(word.into());
}

impl World {
    /// The analysed bytecode of `code` (jump destinations found once per code hash).
    pub(crate) fn evm_bytecode(&mut self, code_hash: B256, code: Bytes) -> Bytecode {
        self.evm_code
            .entry(code_hash)
            .or_insert_with(|| Bytecode::new_legacy(code))
            .clone()
    }
}
