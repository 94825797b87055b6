//! What a message call is and how it ends — the vocabulary the executor, the hostios, the
//! native contracts (ArbWasm, StylusDeployer), creation and the tracer share — and the stack
//! guard every nested frame passes through. It imports none of them.

use alloy_primitives::{Address, Bytes, U256};

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallStatus {
    /// The call returned normally.
    Success,
    /// Reverted: explicit revert, a trap or a program failure. Unused gas is returned.
    Revert,
    /// Out of gas/ink: all gas consumed.
    OutOfGas,
    /// Any other exceptional halt of EVM code (invalid opcode, bad jump, stack error, write in
    /// a static call...), named as geth names it: all gas consumed.
    Halt(&'static str),
}

/// The kind of message call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallKind {
    Call,
    /// EVM `CALLCODE`: the callee's code on the caller's own account.
    CallCode,
    StaticCall,
    DelegateCall,
    /// The initcode frame of a CREATE (traced as one).
    Create,
    /// The initcode frame of a CREATE2.
    Create2,
}

/// A message to execute.
#[derive(Clone, Debug)]
pub(crate) struct Message {
    pub kind: CallKind,
    /// `msg.sender` seen by the callee.
    pub caller: Address,
    /// The account whose storage, balance and address the code acts on.
    pub address: Address,
    /// The account whose code runs (differs from `address` for delegate calls).
    pub code_address: Address,
    /// `msg.value` seen by the callee.
    pub value: U256,
    /// Value actually moved from `caller` to `address` (zero for delegate/static calls).
    pub transfer: U256,
    pub input: Bytes,
    pub gas: u64,
    pub is_static: bool,
    pub depth: usize,
}

/// A frame's result.
#[derive(Debug)]
pub(crate) struct FrameResult {
    pub status: CallStatus,
    pub output: Bytes,
    pub gas_left: u64,
}

impl FrameResult {
    pub(crate) fn revert(output: Bytes, gas_left: u64) -> Self {
        FrameResult {
            status: CallStatus::Revert,
            output,
            gas_left,
        }
    }
    pub(crate) fn out_of_gas() -> Self {
        FrameResult {
            status: CallStatus::OutOfGas,
            output: Bytes::new(),
            gas_left: 0,
        }
    }
}

/// The result of a creation.
#[derive(Debug)]
pub(crate) struct CreateResult {
    /// The new contract, `None` on failure.
    pub address: Option<Address>,
    /// Revert data when the initcode reverted (empty otherwise).
    pub revert_data: Bytes,
    pub gas_left: u64,
}

impl CreateResult {
    pub(crate) fn failed(revert_data: Bytes, gas_left: u64) -> Self {
        CreateResult {
            address: None,
            revert_data,
            gas_left,
        }
    }
}

/// Stack that must be left before entering a nested frame, and the size of each extra segment.
/// A nested call recurses through wasmi and the host on the native stack (hundreds of KiB per
/// level in debug builds), and the EVM allows 1024 levels; without this a deep call chain would
/// overflow a 2 MiB thread stack and abort the process.
const STACK_RED_ZONE: usize = 1 << 20;
const STACK_SEGMENT: usize = 16 << 20;

pub(crate) fn on_enough_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f)
}
