//! Bursar devnet: a local Arbitrum chain running Stylus programs and EVM bytecode side by side.
//!
//! * [`state`] — world state with a journal (checkpoint / revert / commit), EIP-2929 warm sets,
//!   EIP-2200 original values, transient storage and logs.
//! * [`stylus`] — program validation and compilation (prefix, brotli, the nitro activation rules
//!   from `stylus-activation`, wasmi) and the compiled-module cache (a cache only: programs
//!   compile lazily on first call).
//! * `host` — the 42 `vm_hooks` imports a program links against.
//! * [`exec`] — [`Executor`]: message calls through ArbWasm, ArbSys, ArbGasInfo, the
//!   StylusDeployer, precompiles, plain accounts, programs and EVM code.
//! * `evm` — EVM frames on revm's interpreter, against the same journaled state.
//! * [`create`] — CREATE/CREATE2: addresses, checks, and the deposit rules.
//! * [`precompiles`] — 0x01-0x11 and P-256 (0x100), from `revm-precompile`.
//! * [`arbos`] — ArbSys and ArbGasInfo.
//! * [`trace`], [`struct_log`] — geth's call tracer and default opcode tracer.
//! * [`meter`] — the gas/ink model and where it differs from Arbitrum.
//! * [`proof`] — `eth_getProof`'s Merkle-Patricia proofs, over tries built on demand.
//!
//! * [`chain`] — [`Chain`]: signed transactions, validation, fees, receipts, blocks, dev
//!   controls (automine, time, snapshots) over [`Executor`].
//! * [`arbwasm`] — ArbWasm (0x71), native, callable from transactions and programs alike:
//!   activation and version queries. Activation records are world state (ArbWasm storage, slot
//!   = code hash), so they are journaled, snapshotted, reorged and saved like any storage.
//! * [`deployer`] — the StylusDeployer at `0xcEcb…A990`, native: deploy + activate + construct
//!   in one frame.
//! * [`state_file`] — the JSON state file of `bursar devnet --state` ([`Chain::save_state`],
//!   [`Chain::load_state`]).
//! * [`rpc`] — JSON-RPC 2.0 over HTTP and WebSocket (axum; filters, `eth_subscribe`, reorg
//!   dev methods): `spawn(RpcConfig) -> Handle`.
//! * [`accounts`] — the ten prefunded accounts of the standard test mnemonic.
//! * [`fixtures`] — Safe 1.4.1, USDC, Multicall3 and Permit2 in the genesis state, at their
//!   Arbitrum One addresses (`ChainConfig::evm_fixtures`).

pub mod accounts;
#[cfg(feature = "mimalloc")]
pub mod allocator;
pub mod arbos;
pub mod arbwasm;
pub mod chain;
pub mod create;
pub mod deployer;
mod evm;
pub mod exec;
pub mod fixtures;
mod frame;
mod host;
pub mod log_index;
pub mod meter;
pub mod miner;
pub mod precompiles;
pub mod proof;
pub mod rpc;
pub mod state;
pub mod state_file;
pub mod struct_log;
pub mod stylus;
pub mod trace;
mod world;

pub use chain::{Chain, ChainConfig, TxError};
pub use exec::{
    BlockEnv, CallOutcome, CallStatus, CreateOutcome, Executor, TxEnv, DEFAULT_CHAIN_ID,
};
pub use rpc::{spawn, Handle, RpcConfig};
pub use state::{Account, Checkpoint, Log, State};
pub use state_file::StateFileError;
pub use stylus::{ActivationError, ProgramInfo, Programs};
