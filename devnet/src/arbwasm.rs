//! ArbWasm (0x…71), handled natively by the chain layer: activation of deployed programs and
//! the version queries cargo-stylus and our tooling use. Only top-level transactions and
//! `eth_call`s reach it; a program calling ArbWasm itself is not supported (no contract of
//! ours does).

use alloy_primitives::{address, keccak256, Address, Bytes, U256};
use alloy_sol_types::{sol, SolCall, SolError, SolEvent};

use crate::exec::Executor;
use crate::state::Log;
use crate::stylus::{is_stylus_program, STYLUS_VERSION};

pub const ARBWASM_ADDRESS: Address = address!("0000000000000000000000000000000000000071");

/// Fixed gas `activateProgram` burns on Arbitrum (reference §3); compile costs are not modelled.
pub const ACTIVATION_GAS: u64 = 1_659_168;

sol! {
    /// The subset of ArbWasm the devnet implements.
    interface IArbWasm {
        function activateProgram(address program) external payable returns (uint16 version, uint256 dataFee);
        function stylusVersion() external view returns (uint16 version);
        function codehashVersion(bytes32 codehash) external view returns (uint16 version);
        function programVersion(address program) external view returns (uint16 version);

        error ProgramNotWasm();
        error ProgramNotActivated();
        error ProgramUpToDate();

        event ProgramActivated(bytes32 indexed codehash, bytes32 moduleHash, address program, uint256 dataFee, uint16 version);
    }
}

use IArbWasm::*;

/// The result of an ArbWasm call.
pub struct ArbWasmOutcome {
    pub success: bool,
    pub output: Bytes,
    pub gas_used: u64,
    pub logs: Vec<Log>,
}

fn revert<E: SolError>(e: E, gas_used: u64) -> ArbWasmOutcome {
    ArbWasmOutcome {
        success: false,
        output: e.abi_encode().into(),
        gas_used,
        logs: vec![],
    }
}

fn ok(output: Vec<u8>, gas_used: u64, logs: Vec<Log>) -> ArbWasmOutcome {
    ArbWasmOutcome {
        success: true,
        output: output.into(),
        gas_used,
        logs,
    }
}

/// Runs `input` against ArbWasm with `gas` available. `is_static` refuses activation (it
/// writes state), as the precompile's `payable` method would under STATICCALL.
pub fn call(exec: &mut Executor, input: &[u8], gas: u64, is_static: bool) -> ArbWasmOutcome {
    // Queries cost a flat, small amount (the precompile's storage reads on Arbitrum).
    const QUERY_GAS: u64 = 2_100;
    let Some(selector) = input.get(..4) else {
        return ArbWasmOutcome {
            success: false,
            output: Bytes::new(),
            gas_used: 0,
            logs: vec![],
        };
    };
    let active = |exec: &Executor, hash| exec.programs().info(hash).cloned();
    match <[u8; 4]>::try_from(selector).expect("4 bytes") {
        activateProgramCall::SELECTOR if !is_static => {
            let Ok(call) = activateProgramCall::abi_decode(input) else {
                return revert(ProgramNotWasm {}, QUERY_GAS.min(gas));
            };
            let code = exec.state().code(call.program);
            let code_hash = keccak256(&code);
            if !is_stylus_program(&code) {
                return revert(ProgramNotWasm {}, QUERY_GAS.min(gas));
            }
            if active(exec, code_hash).is_some() {
                return revert(ProgramUpToDate {}, QUERY_GAS.min(gas));
            }
            if gas < ACTIVATION_GAS {
                return ArbWasmOutcome {
                    success: false,
                    output: Bytes::new(),
                    gas_used: gas,
                    logs: vec![],
                };
            }
            match exec.activate(&code) {
                Ok(info) => {
                    let event = ProgramActivated {
                        codehash: code_hash,
                        // There is no native module here; the hash of the code stands in.
                        moduleHash: keccak256(code_hash),
                        program: call.program,
                        dataFee: U256::ZERO,
                        version: info.version,
                    };
                    let (topics, data) = event.encode_log_data().split();
                    let log = Log {
                        address: ARBWASM_ADDRESS,
                        topics,
                        data,
                    };
                    let out = activateProgramCall::abi_encode_returns(&activateProgramReturn {
                        version: info.version,
                        dataFee: U256::ZERO,
                    });
                    ok(out, ACTIVATION_GAS, vec![log])
                }
                // A program that fails the rules burns all gas, as a compile error does on
                // Arbitrum.
                Err(_) => ArbWasmOutcome {
                    success: false,
                    output: Bytes::new(),
                    gas_used: gas,
                    logs: vec![],
                },
            }
        }
        stylusVersionCall::SELECTOR => ok(
            stylusVersionCall::abi_encode_returns(&STYLUS_VERSION),
            QUERY_GAS.min(gas),
            vec![],
        ),
        codehashVersionCall::SELECTOR => match codehashVersionCall::abi_decode(input) {
            Ok(c) => match active(exec, c.codehash) {
                Some(info) => ok(
                    codehashVersionCall::abi_encode_returns(&info.version),
                    QUERY_GAS.min(gas),
                    vec![],
                ),
                None => revert(ProgramNotActivated {}, QUERY_GAS.min(gas)),
            },
            Err(_) => revert(ProgramNotActivated {}, QUERY_GAS.min(gas)),
        },
        programVersionCall::SELECTOR => match programVersionCall::abi_decode(input) {
            Ok(c) => {
                let hash = keccak256(exec.state().code(c.program));
                match active(exec, hash) {
                    Some(info) => ok(
                        programVersionCall::abi_encode_returns(&info.version),
                        QUERY_GAS.min(gas),
                        vec![],
                    ),
                    None => revert(ProgramNotActivated {}, QUERY_GAS.min(gas)),
                }
            }
            Err(_) => revert(ProgramNotActivated {}, QUERY_GAS.min(gas)),
        },
        _ => ArbWasmOutcome {
            success: false,
            output: Bytes::new(),
            gas_used: QUERY_GAS.min(gas),
            logs: vec![],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_matches_the_reference() {
        assert_eq!(activateProgramCall::SELECTOR, [0x58, 0xc7, 0x80, 0xc2]);
        assert_eq!(stylusVersionCall::SELECTOR, [0xa9, 0x96, 0xe0, 0xc2]);
        assert_eq!(codehashVersionCall::SELECTOR, [0xd7, 0x0c, 0x0c, 0xa7]);
        assert_eq!(programVersionCall::SELECTOR, [0xcc, 0x8f, 0x4e, 0x88]);
        assert_eq!(ProgramUpToDate::SELECTOR, [0xcc, 0x94, 0x4b, 0xf2]);
        assert_eq!(ProgramNotActivated::SELECTOR, [0x6f, 0x80, 0x9c, 0x4e]);
        assert_eq!(
            ProgramActivated::SIGNATURE_HASH,
            alloy_primitives::b256!(
                "c0e812780707128d9a180db8ee4d1c1f1300b6dd0626d577b5d9ac759b76253c"
            )
        );
    }
}
