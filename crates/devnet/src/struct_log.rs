//! geth's default (opcode) tracer for `debug_traceTransaction` / `debug_traceCall`: one entry
//! per EVM instruction executed — program counter, opcode, gas before it and what it cost, call
//! depth, the stack and (if asked) memory. Stylus frames run WebAssembly, not opcodes: they
//! add no entries, but EVM frames they call do, at their depth.

use alloy_primitives::{Bytes, U256};
use revm_interpreter::bytecode::opcode::OpCode;
use revm_interpreter::interpreter::EthInterpreter;
use revm_interpreter::interpreter_types::{Jumps, LoopControl, MemoryTr};
use revm_interpreter::{GasTable, Host, InstructionTable, Interpreter, InterpreterAction};
use serde::Serialize;

/// What the caller asked the tracer to record (geth's `disableStack`, `enableMemory`).
#[derive(Clone, Copy, Debug, Default)]
pub struct StructLogConfig {
    /// Leave each entry's stack out.
    pub disable_stack: bool,
    /// Record each entry's memory, in 32-byte words.
    pub enable_memory: bool,
}

/// One executed instruction, in geth's shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StructLog {
    /// Program counter of the instruction.
    pub pc: u64,
    /// Its mnemonic (`PUSH1`, `SSTORE`...).
    pub op: &'static str,
    /// Gas left before it ran.
    pub gas: u64,
    /// Gas it cost (for a call: with the gas it forwarded).
    pub gas_cost: u64,
    /// 1 for the transaction's own frame.
    pub depth: u64,
    /// The stack before it ran, bottom first (absent with `disableStack`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<Vec<U256>>,
    /// Memory before it ran, as 32-byte hex words (only with `enableMemory`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Vec<String>>,
}

/// The whole opcode trace of a run: geth's `{gas, failed, returnValue, structLogs}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpcodeTrace {
    /// Gas the transaction (or call) used.
    pub gas: u64,
    /// Whether it failed.
    pub failed: bool,
    /// Its return (or revert) data.
    pub return_value: Bytes,
    /// The instructions, in execution order.
    pub struct_logs: Vec<StructLog>,
}

/// Records instructions while installed in the world (see [`crate::evm`]).
#[derive(Debug, Default)]
pub struct StructLogger {
    config: StructLogConfig,
    logs: Vec<StructLog>,
}

impl StructLogger {
    pub(crate) fn new(config: StructLogConfig) -> Self {
        StructLogger {
            config,
            logs: Vec::new(),
        }
    }

    /// The entries recorded so far.
    pub(crate) fn into_logs(self) -> Vec<StructLog> {
        self.logs
    }

    /// `Interpreter::run_plain`, one recorded step at a time.
    pub(crate) fn run<H: Host>(
        &mut self,
        interp: &mut Interpreter<EthInterpreter>,
        table: &InstructionTable<EthInterpreter, H>,
        gas_table: &GasTable,
        host: &mut H,
    ) -> InterpreterAction {
        loop {
            let op = interp.bytecode.opcode();
            let gas = interp.gas.remaining();
            let mut entry = StructLog {
                pc: interp.bytecode.pc() as u64,
                op: OpCode::new(op).map_or("INVALID", |o| o.as_str()),
                gas,
                gas_cost: 0,
                depth: interp.input.depth as u64 + 1,
                stack: (!self.config.disable_stack).then(|| interp.stack.data().to_vec()),
                memory: self.config.enable_memory.then(|| memory_words(interp)),
            };
            let step = interp.step(table, gas_table, host);
            entry.gas_cost = gas.saturating_sub(interp.gas.remaining());
            self.logs.push(entry);
            if let Err(e) = step {
                if interp.bytecode.action().is_none() {
                    interp.halt(e);
                }
                return interp.take_next_action();
            }
        }
    }
}

fn memory_words(interp: &Interpreter<EthInterpreter>) -> Vec<String> {
    let size = interp.memory.size();
    let bytes = interp.memory.slice(0..size);
    bytes
        .chunks(32)
        .map(alloy_primitives::hex::encode)
        .collect()
}
