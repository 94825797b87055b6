//! ArbWasm (0x…71), native, reached like any other account from a call frame: transactions,
//! `eth_call`s, programs and the StylusDeployer all call it the same way.
//!
//! Activation records are world state, as in ArbOS: one storage slot of the ArbWasm account per
//! activated code hash (slot = code hash, value = [`ProgramInfo`] packed by [`pack`]). So an
//! activation in a frame that reverts is undone with it, and snapshots, per-block history,
//! reorgs and state files carry activations without any separate bookkeeping. The compiled
//! module is only a cache ([`crate::stylus::Programs`]).
//!
//! Implemented: `activateProgram` (payable; the data fee is 0, so any value sent is refunded to
//! the caller, as ArbOS refunds the excess), `stylusVersion`, `codehashVersion`,
//! `programVersion`. Other methods (keepalive, params, init gas...) revert with empty data;
//! programs never expire.

use alloy_primitives::{keccak256, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolError, SolEvent};

pub use bursar_bindings::arbitrum::{IArbWasm, ARBWASM_ADDRESS};
use IArbWasm::*;

use crate::frame::{CallKind, CallStatus, FrameResult, Message};
use crate::state::{Log, State, KECCAK_EMPTY};
use crate::stylus::{is_stylus_program, ActivationError, ProgramInfo, STYLUS_VERSION};
use crate::world::World;

/// Fixed gas `activateProgram` burns on Arbitrum (reference §3); compile costs are not modelled.
pub const ACTIVATION_GAS: u64 = 1_659_168;

/// Queries cost a flat, small amount (the precompile's storage reads on Arbitrum).
const QUERY_GAS: u64 = 2_100;

/// The activation record of `code_hash` in `state`, if the code hash is activated.
pub fn activation(state: &State, code_hash: B256) -> Option<ProgramInfo> {
    let word = state.storage(ARBWASM_ADDRESS, code_hash);
    (!word.is_zero()).then(|| unpack(code_hash, word))
}

/// The record as a storage word: `version (2) ‖ footprint (2) ‖ wasm size (4) ‖ activation
/// time (8)`, big-endian, zero-padded. Never zero (versions start at 1), so a zero slot means
/// "not activated".
pub fn pack(info: &ProgramInfo) -> B256 {
    let mut word = B256::ZERO;
    word[0..2].copy_from_slice(&info.version.to_be_bytes());
    word[2..4].copy_from_slice(&info.footprint.to_be_bytes());
    word[4..8].copy_from_slice(&info.wasm_size.to_be_bytes());
    word[8..16].copy_from_slice(&info.activated_at.to_be_bytes());
    word
}

fn unpack(code_hash: B256, word: B256) -> ProgramInfo {
    let be = |range: std::ops::Range<usize>| {
        word[range]
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    };
    ProgramInfo {
        code_hash,
        version: be(0..2) as u16,
        footprint: be(2..4) as u16,
        wasm_size: be(4..8) as u32,
        activated_at: be(8..16),
    }
}

/// Activates `code`: validates and compiles it (caching the module) and writes its record
/// (journaled, so a reverting frame undoes it). Already activated code returns its record
/// (the `ProgramUpToDate` revert is `activateProgram`'s business).
pub(crate) fn activate(world: &mut World, code: &[u8]) -> Result<ProgramInfo, ActivationError> {
    let code_hash = keccak256(code);
    if let Some(info) = activation(&world.state, code_hash) {
        return Ok(info);
    }
    let compiled = world.programs.compile(code_hash, code)?;
    let info = ProgramInfo {
        code_hash,
        version: STYLUS_VERSION,
        footprint: compiled.footprint,
        wasm_size: compiled.wasm_size,
        activated_at: world.block.timestamp,
    };
    world
        .state
        .set_storage(ARBWASM_ADDRESS, code_hash, pack(&info));
    Ok(info)
}

fn spend(msg: &Message, gas: u64, status: CallStatus, output: Vec<u8>) -> FrameResult {
    if gas > msg.gas {
        return FrameResult::out_of_gas();
    }
    FrameResult {
        status,
        output: output.into(),
        gas_left: msg.gas - gas,
    }
}

fn ok(msg: &Message, output: Vec<u8>) -> FrameResult {
    spend(msg, QUERY_GAS, CallStatus::Success, output)
}

fn fail<E: SolError>(msg: &Message, error: E) -> FrameResult {
    spend(msg, QUERY_GAS, CallStatus::Revert, error.abi_encode())
}

fn version_of(
    msg: &Message,
    record: Option<ProgramInfo>,
    encode: fn(&u16) -> Vec<u8>,
) -> FrameResult {
    match record {
        Some(info) => ok(msg, encode(&info.version)),
        None => fail(msg, ProgramNotActivated {}),
    }
}

/// Runs `msg` (already past the value transfer) against ArbWasm.
pub(crate) fn call(world: &mut World, msg: &Message) -> FrameResult {
    // A precompile acts on its own storage only; running it for another account is refused.
    if msg.kind == CallKind::DelegateCall {
        return FrameResult::revert(Bytes::new(), msg.gas);
    }
    let Some(selector) = msg.input.get(..4) else {
        return spend(msg, QUERY_GAS, CallStatus::Revert, vec![]);
    };
    let selector = <[u8; 4]>::try_from(selector).expect("4 bytes");
    if selector == activateProgramCall::SELECTOR {
        return activate_program(world, msg);
    }
    // Everything else is non-payable.
    if !msg.value.is_zero() {
        return spend(msg, QUERY_GAS, CallStatus::Revert, vec![]);
    }
    match selector {
        stylusVersionCall::SELECTOR => {
            ok(msg, stylusVersionCall::abi_encode_returns(&STYLUS_VERSION))
        }
        codehashVersionCall::SELECTOR => match codehashVersionCall::abi_decode(&msg.input) {
            Ok(c) => version_of(msg, activation(&world.state, c.codehash), |v| {
                codehashVersionCall::abi_encode_returns(v)
            }),
            Err(_) => spend(msg, QUERY_GAS, CallStatus::Revert, vec![]),
        },
        programVersionCall::SELECTOR => match programVersionCall::abi_decode(&msg.input) {
            Ok(c) => {
                let hash = world
                    .state
                    .account(c.program)
                    .map_or(KECCAK_EMPTY, |a| a.code_hash);
                version_of(msg, activation(&world.state, hash), |v| {
                    programVersionCall::abi_encode_returns(v)
                })
            }
            Err(_) => spend(msg, QUERY_GAS, CallStatus::Revert, vec![]),
        },
        _ => spend(msg, QUERY_GAS, CallStatus::Revert, vec![]),
    }
}

fn activate_program(world: &mut World, msg: &Message) -> FrameResult {
    // A state write under STATICCALL: write protection, all gas consumed (as in the EVM).
    if msg.is_static {
        return FrameResult::revert(Bytes::new(), 0);
    }
    let Ok(call) = activateProgramCall::abi_decode(&msg.input) else {
        return spend(msg, QUERY_GAS, CallStatus::Revert, vec![]);
    };
    let code = world.state.code(call.program);
    if !is_stylus_program(&code) {
        return fail(msg, ProgramNotWasm {});
    }
    let code_hash = keccak256(&code);
    if activation(&world.state, code_hash).is_some() {
        return fail(msg, ProgramUpToDate {});
    }
    if msg.gas < ACTIVATION_GAS {
        return FrameResult::out_of_gas();
    }
    let info = match activate(world, &code) {
        Ok(info) => info,
        // Code that fails the rules burns all gas, as a compile error does on Arbitrum.
        Err(_) => return FrameResult::out_of_gas(),
    };
    // The data fee is 0 here: everything sent is excess, refunded to the caller.
    if !msg.transfer.is_zero() {
        world
            .state
            .transfer(ARBWASM_ADDRESS, msg.caller, msg.transfer)
            .expect("the value was received by this frame");
    }
    let event = ProgramActivated {
        codehash: code_hash,
        // There is no native module here; the hash of the code hash stands in.
        moduleHash: keccak256(code_hash),
        program: call.program,
        dataFee: U256::ZERO,
        version: info.version,
    };
    let (topics, data) = event.encode_log_data().split();
    world.state.push_log(Log {
        address: ARBWASM_ADDRESS,
        topics,
        data,
    });
    let out = activateProgramCall::abi_encode_returns(&activateProgramReturn {
        version: info.version,
        dataFee: U256::ZERO,
    });
    spend(msg, ACTIVATION_GAS, CallStatus::Success, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_a_storage_word() {
        let info = ProgramInfo {
            code_hash: B256::repeat_byte(7),
            version: STYLUS_VERSION,
            footprint: 3,
            wasm_size: 131_072,
            activated_at: 1_700_000_123,
        };
        let word = pack(&info);
        assert!(!word.is_zero());
        assert_eq!(unpack(info.code_hash, word), info);
    }
}
