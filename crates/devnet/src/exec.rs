//! The executor: message calls through precompiles, plain accounts and Stylus programs.
//!
//! A call frame runs a program in its own wasmi [`Store`]. The store *owns* the world
//! (`World`, boxed) for the duration of the frame; a nested call made from a hostio takes the
//! world out of the caller's store, runs the callee frame with it and puts it back. That keeps
//! everything safe Rust with no shared-ownership cells, and `Executor` stays `Send`.
//!
//! `call_frame` routes a message by the code address: ArbWasm and the StylusDeployer (both
//! native, see [`crate::arbwasm`] and [`crate::deployer`]), the precompiles, plain accounts and
//! Stylus programs. So a transaction, an `eth_call` and a program reach them alike.

use std::collections::HashMap;
use std::sync::Arc;

use alloy_primitives::{Address, Bytes, B256, U256};
use wasmi::{Store, TrapCode};

use crate::arbos::{self, ARBGASINFO_ADDRESS, ARBSYS_ADDRESS};
use crate::arbwasm::{self, ARBWASM_ADDRESS};
use crate::deployer::{self, STYLUS_DEPLOYER_ADDRESS};
use crate::frame::{CallKind, FrameResult, Message};
use crate::host::{self, Escape};
use crate::meter::{self, INK_PER_FUEL, INK_PRICE};
use crate::precompiles;
use crate::state::{Log, State};
use crate::struct_log::{StructLog, StructLogConfig, StructLogger};
use crate::stylus::{is_stylus_program, ActivationError, ProgramInfo, Programs, STYLUS_VERSION};
use crate::trace::{CallFrame, CallTracer};
use crate::world::{Ctx, Frame, RecentPrograms, World};

pub use crate::frame::CallStatus;
pub use crate::world::{BlockEnv, BlockHashes, TxEnv, DEFAULT_CHAIN_ID};

/// The result of [`Executor::call`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallOutcome {
    /// Whether the call succeeded (`status == CallStatus::Success`).
    pub success: bool,
    /// How the call ended.
    pub status: CallStatus,
    /// Return data on success, revert data on revert, empty on out-of-gas.
    pub return_data: Bytes,
    /// Gas consumed, before refunds.
    pub gas_used: u64,
    /// EIP-3529 refund counter at the end (the transaction layer caps it at `gas_used / 5`).
    pub gas_refund: u64,
    /// Logs of the call (empty unless it succeeded).
    pub logs: Vec<Log>,
}

/// The result of [`Executor::create`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateOutcome {
    /// The new contract, `None` if the creation failed.
    pub address: Option<Address>,
    /// Revert data when the initcode reverted.
    pub revert_data: Bytes,
    /// Gas consumed by the creation, before refunds.
    pub gas_used: u64,
    /// EIP-3529 refund counter at the end (the transaction layer caps it at `gas_used / 5`).
    pub gas_refund: u64,
    /// Logs the constructor emitted (empty unless the creation succeeded).
    pub logs: Vec<Log>,
}

impl World {
    /// Resets the per-transaction state for a transaction sent by `origin` to `to`.
    fn begin_tx(&mut self, origin: Address, to: Option<Address>) {
        self.tx.origin = origin;
        self.open_frames.clear();
        self.open_pages = 0;
        self.ever_pages = 0;
        // EIP-2929: sender, recipient and precompiles (ArbWasm included, as ArbOS does) start
        // warm; EIP-3651: so does coinbase.
        let warm = [origin, self.block.coinbase].into_iter().chain(to);
        self.state.begin_tx(warm.chain(system_addresses()));
        // EIP-2930: what the transaction paid to name in its access list starts warm too. Taken,
        // so that the next call does not inherit it.
        for item in std::mem::take(&mut self.tx.access_list).iter() {
            self.state.warm_account(item.address);
            for slot in &item.storage_keys {
                self.state.warm_slot(item.address, *slot);
            }
        }
    }
}

/// The precompiles and ArbOS's precompiles: warm in every transaction, and never named in an
/// access list `eth_createAccessList` makes.
fn system_addresses() -> impl Iterator<Item = Address> {
    [ARBWASM_ADDRESS, ARBSYS_ADDRESS, ARBGASINFO_ADDRESS]
        .into_iter()
        .chain(precompiles::all())
}

/// Whether `address` is one of the [`system_addresses`].
pub(crate) fn is_system_address(address: Address) -> bool {
    system_addresses().any(|a| a == address)
}

/// Executes message calls against a world state.
///
/// `Executor` is `Send`, so the chain layer can keep it behind a mutex shared by tasks.
pub struct Executor {
    /// Always `Some` between calls; taken while a frame runs (see the module docs).
    world: Option<Box<World>>,
}

impl Default for Executor {
    fn default() -> Self {
        Self::new()
    }
}

impl Executor {
    /// A fresh world holding only the system accounts (see `genesis_state`).
    pub fn new() -> Self {
        let programs = Programs::new();
        let linker = Arc::new(host::linker(programs.engine()));
        Executor {
            world: Some(Box::new(World {
                state: genesis_state(),
                programs,
                linker,
                block: BlockEnv::default(),
                tx: TxEnv::default(),
                open_frames: HashMap::new(),
                open_pages: 0,
                ever_pages: 0,
                tracer: None,
                recent_programs: RecentPrograms::default(),
                router: call_frame,
                creator: crate::create::create,
                evm_code: HashMap::new(),
                block_hashes: Arc::new(|_| None),
                step_logger: None,
            })),
        }
    }

    fn world(&self) -> &World {
        self.world.as_deref().expect("world present between calls")
    }

    /// Starts over on `state` in `block` after a panic: a call that panicked took the world
    /// with it (it is moved into the frame that runs), and the compiled-program cache and
    /// linker go with it; both are rebuilt, programs recompiling on their next call.
    pub fn recover(&mut self, state: State, block: BlockEnv) {
        let mut fresh = Executor::new();
        let world = fresh.world_mut();
        world.state = state;
        world.block = block;
        *self = fresh;
    }

    fn world_mut(&mut self) -> &mut World {
        self.world
            .as_deref_mut()
            .expect("world present between calls")
    }

    /// The world state as of the last completed call.
    pub fn state(&self) -> &State {
        &self.world().state
    }

    /// Direct state access (genesis, cheats). Changes made here are not journaled into a call.
    pub fn state_mut(&mut self) -> &mut State {
        &mut self.world_mut().state
    }

    /// The block values programs currently see.
    pub fn block(&self) -> &BlockEnv {
        &self.world().block
    }

    /// Mutable block values, set by the chain before it executes a block or an `eth_call`.
    pub fn block_mut(&mut self) -> &mut BlockEnv {
        &mut self.world_mut().block
    }

    /// Starts a block (or a simulation, which runs in a block of its own): no program has been
    /// called in it yet.
    pub fn begin_block(&mut self) {
        self.world_mut().recent_programs = RecentPrograms::default();
    }

    /// Mutable transaction values, set per transaction before it executes.
    pub fn tx_env_mut(&mut self) -> &mut TxEnv {
        &mut self.world_mut().tx
    }

    /// Starts recording call frames (see [`crate::trace`]), dropping any earlier record.
    pub fn start_trace(&mut self) {
        self.world_mut().tracer = Some(CallTracer::default());
    }

    /// Tells the executor how to find earlier blocks' hashes (`BLOCKHASH`, `ArbSys`).
    pub fn set_block_hashes(&mut self, hashes: BlockHashes) {
        self.world_mut().block_hashes = hashes;
    }

    /// Starts recording EVM instructions (geth's opcode tracer), dropping any earlier record.
    pub fn start_struct_log(&mut self, config: StructLogConfig) {
        self.world_mut().step_logger = Some(StructLogger::new(config));
    }

    /// Stops recording and returns the instructions recorded since
    /// [`Executor::start_struct_log`].
    pub fn take_struct_log(&mut self) -> Vec<StructLog> {
        self.world_mut()
            .step_logger
            .take()
            .map(StructLogger::into_logs)
            .unwrap_or_default()
    }

    /// Stops recording and returns the outermost frames recorded since [`Executor::start_trace`].
    pub fn take_trace(&mut self) -> Vec<CallFrame> {
        self.world_mut()
            .tracer
            .take()
            .map(CallTracer::into_frames)
            .unwrap_or_default()
    }

    /// The compiled-module cache.
    pub fn programs(&self) -> &Programs {
        &self.world().programs
    }

    /// The activation record of `code_hash` (ArbWasm storage), if activated.
    pub fn program_info(&self, code_hash: B256) -> Option<ProgramInfo> {
        arbwasm::activation(self.state(), code_hash)
    }

    /// Activates `code` (as stored on chain: `EF F0 00 <dict> || brotli(wasm)`) outside any
    /// transaction, writing its record at the current block timestamp. Code that is already
    /// active returns its record (ArbWasm would revert with `ProgramUpToDate`).
    pub fn activate(&mut self, code: &[u8]) -> Result<ProgramInfo, ActivationError> {
        arbwasm::activate(self.world_mut(), code)
    }

    /// Activates the code installed at `address`.
    pub fn activate_at(&mut self, address: Address) -> Result<ProgramInfo, ActivationError> {
        let code = self.state().code(address);
        self.activate(&code)
    }

    /// Installs `code` at `address` and activates it (a deploy + `activateProgram` shortcut).
    pub fn deploy_program(
        &mut self,
        address: Address,
        code: &[u8],
    ) -> Result<ProgramInfo, ActivationError> {
        let info = self.activate(code)?;
        self.state_mut()
            .set_code(address, Bytes::copy_from_slice(code));
        Ok(info)
    }

    /// Runs one message call as a transaction of its own: `from` is `tx.origin`, access lists
    /// and transient storage start fresh, and everything is undone unless it succeeds. No
    /// intrinsic gas, nonce or fee handling — that belongs to the transaction layer.
    /// `is_static` runs a STATICCALL (any `value` is then ignored).
    pub fn call(
        &mut self,
        from: Address,
        to: Address,
        value: U256,
        calldata: &[u8],
        gas: u64,
        is_static: bool,
    ) -> CallOutcome {
        let mut world = self.world.take().expect("world present between calls");
        world.begin_tx(from, Some(to));
        let cp = world.state.checkpoint();
        let msg = Message {
            kind: if is_static {
                CallKind::StaticCall
            } else {
                CallKind::Call
            },
            caller: from,
            address: to,
            code_address: to,
            value: if is_static { U256::ZERO } else { value },
            transfer: if is_static { U256::ZERO } else { value },
            input: Bytes::copy_from_slice(calldata),
            gas,
            is_static,
            depth: 0,
        };
        let (mut world, result) = call_frame(world, msg);
        if result.status != CallStatus::Success {
            world.state.revert(cp);
        }
        let (logs, refund) = world.state.end_tx();
        self.world = Some(world);
        CallOutcome {
            success: result.status == CallStatus::Success,
            status: result.status,
            return_data: result.output,
            gas_used: gas - result.gas_left,
            gas_refund: u64::try_from(refund).unwrap_or(0),
            logs,
        }
    }
}

impl Executor {
    /// Runs a contract creation as a transaction of its own (CREATE semantics: the address
    /// comes from `from`'s current nonce, which is bumped — as geth does for creation
    /// transactions, so the transaction layer must not bump it again). The initcode runs as EVM
    /// code (see [`crate::create`]). No intrinsic gas or fees.
    pub fn create(
        &mut self,
        from: Address,
        value: U256,
        initcode: &[u8],
        gas: u64,
    ) -> CreateOutcome {
        self.creation(from, gas, |world| {
            crate::create::create(world, from, value, initcode.to_vec(), None, gas, 0)
        })
    }

    /// Runs `initcode` by `from` at `address`, chosen rather than derived (no nonce is used),
    /// as a transaction of its own: a genesis placing a contract at its well-known address.
    pub fn create_at(
        &mut self,
        from: Address,
        address: Address,
        initcode: &[u8],
        gas: u64,
    ) -> CreateOutcome {
        self.creation(from, gas, |world| {
            crate::create::create_at(world, from, address, initcode.to_vec(), gas)
        })
    }

    /// `run` (a creation by `from` with `gas`) between the start and the end of a
    /// transaction of its own.
    fn creation(
        &mut self,
        from: Address,
        gas: u64,
        run: impl FnOnce(Box<World>) -> (Box<World>, crate::frame::CreateResult),
    ) -> CreateOutcome {
        let mut world = self.world.take().expect("world present between calls");
        world.begin_tx(from, None);
        let (mut world, result) = run(world);
        let (logs, refund) = world.state.end_tx();
        self.world = Some(world);
        CreateOutcome {
            address: result.address,
            revert_data: result.revert_data,
            gas_used: gas - result.gas_left,
            gas_refund: u64::try_from(refund).unwrap_or(0),
            logs,
        }
    }
}

/// The world at genesis: ArbWasm, ArbSys, ArbGasInfo and the StylusDeployer exist with a
/// one-byte code marker (`INVALID`, as ArbOS gives its precompiles), so `eth_getCode` shows
/// them as nitro does; the deployer, a contract, has nonce 1 (EIP-161), which its CREATE
/// addresses start from. All run natively.
fn genesis_state() -> State {
    let mut state = State::new();
    let marker = Bytes::from_static(&[0xfe]);
    for precompile in [ARBWASM_ADDRESS, ARBSYS_ADDRESS, ARBGASINFO_ADDRESS] {
        state.set_code(precompile, marker.clone());
    }
    state.set_code(STYLUS_DEPLOYER_ADDRESS, marker);
    state.set_nonce(STYLUS_DEPLOYER_ADDRESS, 1);
    state
}

/// Executes `msg`, reverting its state changes unless it succeeds.
pub(crate) fn call_frame(mut world: Box<World>, msg: Message) -> (Box<World>, FrameResult) {
    if let Some(t) = world.tracer.as_mut() {
        t.enter(&msg);
    }
    let (mut world, result) = run_frame(world, msg);
    if let Some(t) = world.tracer.as_mut() {
        t.exit(&result);
    }
    (world, result)
}

/// [`call_frame`] without the tracer.
fn run_frame(mut world: Box<World>, msg: Message) -> (Box<World>, FrameResult) {
    if msg.depth > meter::MAX_CALL_DEPTH {
        return (world, FrameResult::revert(Bytes::new(), msg.gas));
    }
    let cp = world.state.checkpoint();
    if !msg.transfer.is_zero()
        && world
            .state
            .transfer(msg.caller, msg.address, msg.transfer)
            .is_err()
    {
        return (world, FrameResult::revert(Bytes::new(), msg.gas));
    }

    let result = if msg.code_address == ARBWASM_ADDRESS {
        arbwasm::call(&mut world, &msg)
    } else if msg.code_address == ARBSYS_ADDRESS || msg.code_address == ARBGASINFO_ADDRESS {
        arbos::call(&world, &msg)
    } else if msg.code_address == STYLUS_DEPLOYER_ADDRESS {
        let (w, r) = deployer::call(world, msg);
        world = w;
        r
    } else if let Some(pre) = precompiles::run(msg.code_address, &msg.input, msg.gas) {
        match pre.output {
            Some(output) => FrameResult {
                status: CallStatus::Success,
                output,
                gas_left: msg.gas - pre.gas,
            },
            None => FrameResult::out_of_gas(),
        }
    } else {
        let code = world.state.code(msg.code_address);
        if code.is_empty() {
            // A plain account: the call succeeds, the value (if any) has moved.
            FrameResult {
                status: CallStatus::Success,
                output: Bytes::new(),
                gas_left: msg.gas,
            }
        } else if is_stylus_program(&code) {
            let code_hash = world
                .state
                .account(msg.code_address)
                .map(|a| a.code_hash)
                .unwrap_or_default();
            let (w, r) = run_program(world, code_hash, msg);
            world = w;
            r
        } else {
            let code_hash = world.state.code_hash(msg.code_address);
            let (w, r) = crate::evm::call(world, msg, code_hash, code);
            world = w;
            r
        }
    };

    if result.status == CallStatus::Success {
        world.state.commit(cp);
    } else {
        world.state.revert(cp);
    }
    (world, result)
}

/// Runs the Stylus program with `code_hash` for `msg`.
fn run_program(mut world: Box<World>, code_hash: B256, msg: Message) -> (Box<World>, FrameResult) {
    // Deployed but never activated (or at an older version): reverts with empty data, as on
    // Arbitrum.
    let Some(info) =
        arbwasm::activation(&world.state, code_hash).filter(|i| i.version == STYLUS_VERSION)
    else {
        return (world, FrameResult::revert(Bytes::new(), msg.gas));
    };
    // Activated but not compiled in this process (e.g. loaded from a state file): compile now.
    let code = world.state.code(msg.code_address);
    let module = match world.programs.compile(code_hash, &code) {
        Ok(compiled) => compiled.module.clone(),
        // Cannot happen for code that passed activation; fail the call rather than the node.
        Err(_) => return (world, FrameResult::revert(Bytes::new(), msg.gas)),
    };
    // Program init and memory footprint are paid before the program runs.
    let footprint = info.footprint;
    let init = if world.recent_programs.insert(code_hash) {
        meter::PROGRAM_CACHED_GAS
    } else {
        meter::PROGRAM_INIT_GAS
    };
    let upfront = init + meter::memory_gas(footprint, world.open_pages, world.ever_pages);
    if upfront > msg.gas || world.open_pages.saturating_add(footprint) > meter::PAGE_LIMIT {
        return (world, FrameResult::out_of_gas());
    }
    world.open_pages += footprint;
    world.ever_pages = world.ever_pages.max(world.open_pages);
    let gas = msg.gas - upfront;

    let counts_as_open = msg.kind != CallKind::DelegateCall;
    if counts_as_open {
        *world.open_frames.entry(msg.address).or_default() += 1;
    }

    let engine = world.programs.engine().clone();
    let linker = Arc::clone(&world.linker);
    let input_len = msg.input.len() as i32;
    let mut store = Store::new(&engine, Ctx::new(world, Frame::new(msg, footprint)));
    store.limiter(|ctx| &mut ctx.limiter);
    // Ink beyond what fuel can express is irrelevant: u64 fuel × 100 ink covers any gas limit.
    let fuel = gas.saturating_mul(INK_PRICE) / INK_PER_FUEL;
    store.set_fuel(fuel).expect("fuel metering is enabled");

    let outcome = linker
        .instantiate_and_start(&mut store, &module)
        .and_then(|instance| {
            let memory = instance.get_memory(&store, "memory");
            store.data_mut().memory = memory;
            let entry = instance.get_typed_func::<i32, i32>(&store, "user_entrypoint")?;
            entry.call(&mut store, input_len)
        });
    // Memory grown through `memory.grow` since the last hostio is paid now (see `meter`).
    let grown_ok = host::settle_memory_growth(&mut store).is_ok();
    let fuel_left = store.get_fuel().expect("fuel metering is enabled");
    let ctx = store.into_data();
    let gas_left = fuel_left * INK_PER_FUEL / INK_PRICE;
    let mut world = ctx.world.expect("world returned by nested calls");
    // The frame's pages (footprint and growth) close with it.
    world.open_pages = world.open_pages.saturating_sub(ctx.frame.open_pages);
    if counts_as_open {
        if let Some(n) = world.open_frames.get_mut(&ctx.frame.msg.address) {
            *n -= 1;
        }
    }
    let result = ctx.frame.result;

    let frame_result = match outcome {
        _ if !grown_ok => FrameResult::out_of_gas(),
        Ok(0) => FrameResult {
            status: CallStatus::Success,
            output: result.into(),
            gas_left,
        },
        Ok(_) => FrameResult::revert(result.into(), gas_left),
        Err(err) => match err.downcast_ref::<Escape>() {
            Some(Escape::Exit(0)) => FrameResult {
                status: CallStatus::Success,
                output: result.into(),
                gas_left,
            },
            Some(Escape::Exit(_)) => FrameResult::revert(result.into(), gas_left),
            Some(Escape::OutOfInk) => FrameResult::out_of_gas(),
            Some(Escape::Failure(_)) => FrameResult::revert(Bytes::new(), gas_left),
            None if err.as_trap_code() == Some(TrapCode::OutOfFuel) => FrameResult::out_of_gas(),
            // Any other trap (unreachable, out-of-bounds, stack exhaustion...) is a program
            // failure: revert with empty data, unused gas returned.
            None => FrameResult::revert(Bytes::new(), gas_left),
        },
    };
    (world, frame_result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recover_rebuilds_a_world_a_panicking_call_took() {
        let mut exec = Executor::new();
        drop(exec.world.take());
        let (from, to) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let mut state = State::new();
        state.set_balance(from, U256::from(10));
        let block = BlockEnv {
            number: 7,
            ..BlockEnv::default()
        };
        exec.recover(state, block);
        assert_eq!(exec.block().number, 7);
        let out = exec.call(from, to, U256::from(3), &[], 100_000, false);
        assert!(out.success);
        assert_eq!(exec.state().balance(to), U256::from(3));
    }
}
