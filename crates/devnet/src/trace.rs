//! geth's `callTracer` for `debug_traceTransaction` / `debug_traceCall`: the tree of message
//! calls a transaction made — across Stylus programs, precompiles, ArbWasm and the
//! StylusDeployer — with gas, input, output and revert data per frame, so that a failing
//! payment can be explained call by call.
//!
//! The executor reports every message call (`exec::call_frame`, reached through `World::call`) to the tracer when one is
//! installed; the chain installs it only while it replays a transaction for a trace.

use alloy_primitives::{Address, Bytes, U256, U64};
use serde::Serialize;

use crate::frame::{CallKind, CallStatus, FrameResult, Message};

/// One call frame in geth's `callTracer` shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFrame {
    /// `CALL`, `STATICCALL`, `DELEGATECALL` or `CREATE`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The caller.
    pub from: Address,
    /// The callee (the new contract for a creation; absent if it failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Address>,
    /// Value sent (`CALL` and `CREATE` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<U256>,
    /// Gas given to the frame (the transaction's gas limit for the outermost one).
    pub gas: U64,
    /// Gas the frame used (the transaction's `gasUsed` for the outermost one).
    pub gas_used: U64,
    /// Calldata (initcode for a creation).
    pub input: Bytes,
    /// Return data, or revert data when the frame reverted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Bytes>,
    /// `execution reverted` or `out of gas` when the frame failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The `Error(string)` / `Panic(uint256)` message in the revert data, if that is what it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revert_reason: Option<String>,
    /// Calls this frame made, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallFrame>,
}

impl CallFrame {
    /// Records how the frame ended.
    pub(crate) fn finish(&mut self, status: CallStatus, output: Bytes, gas_used: u64) {
        self.gas_used = U64::from(gas_used);
        match status {
            CallStatus::Success => self.output = (!output.is_empty()).then_some(output),
            CallStatus::Revert => {
                self.error = Some("execution reverted".into());
                self.revert_reason = alloy_sol_types::decode_revert_reason(&output);
                self.output = (!output.is_empty()).then_some(output);
            }
            CallStatus::OutOfGas => self.error = Some("out of gas".into()),
            CallStatus::Halt(reason) => self.error = Some(reason.into()),
        }
    }
}

/// Collects the frames of one traced run (see the module docs).
#[derive(Debug, Default)]
pub struct CallTracer {
    /// Frames entered and not yet exited, outermost first.
    open: Vec<CallFrame>,
    /// Outermost frames that have exited.
    done: Vec<CallFrame>,
}

impl CallTracer {
    pub(crate) fn enter(&mut self, msg: &Message) {
        let kind = match msg.kind {
            CallKind::Call => "CALL",
            CallKind::CallCode => "CALLCODE",
            CallKind::StaticCall => "STATICCALL",
            CallKind::DelegateCall => "DELEGATECALL",
            CallKind::Create => "CREATE",
            CallKind::Create2 => "CREATE2",
        };
        self.open.push(CallFrame {
            kind,
            from: msg.caller,
            to: Some(msg.address),
            value: (!matches!(msg.kind, CallKind::StaticCall | CallKind::DelegateCall))
                .then_some(msg.value),
            gas: U64::from(msg.gas),
            gas_used: U64::ZERO,
            input: msg.input.clone(),
            output: None,
            error: None,
            revert_reason: None,
            calls: Vec::new(),
        });
    }

    pub(crate) fn exit(&mut self, result: &FrameResult) {
        let Some(mut frame) = self.open.pop() else {
            return;
        };
        let used = frame.gas.to::<u64>().saturating_sub(result.gas_left);
        frame.finish(result.status, result.output.clone(), used);
        match self.open.last_mut() {
            Some(parent) => parent.calls.push(frame),
            None => self.done.push(frame),
        }
    }

    /// The outermost frames of the run, in order.
    pub fn into_frames(self) -> Vec<CallFrame> {
        self.done
    }
}
