//! Everything a frame can reach: the [`World`] (state, programs, block and transaction
//! environment, per-transaction counters, tracer) and a program frame's store data ([`Ctx`]).
//!
//! Nested calls go through [`World::call`], which runs the executor's router without naming
//! it: the hostios, creation and the native contracts reach the executor through the world, so
//! none of them imports `exec` (which imports them all).

use std::collections::HashMap;
use std::sync::Arc;

use alloy_primitives::{Address, Bytes, B256, U256};
use wasmi::{Linker, Memory};

use crate::frame::{CreateResult, FrameResult, Message};
use crate::meter::{self, GrowthMeter};
use crate::state::State;
use crate::stylus::Programs;
use crate::trace::CallTracer;

/// Chain id of nitro's dev node.
pub const DEFAULT_CHAIN_ID: u64 = bursar_bindings::arbitrum::DEVNET_CHAIN_ID;

/// Block values visible to programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockEnv {
    /// Block number (`block_number` hostio / `NUMBER`).
    pub number: u64,
    /// Block timestamp in seconds since the Unix epoch.
    pub timestamp: u64,
    /// Chain id (`chainid`); nitro's dev node id by default.
    pub chain_id: u64,
    /// Base fee per gas, in wei.
    pub basefee: U256,
    /// Block beneficiary (`block_coinbase`), paid the priority fees; the zero address here.
    pub coinbase: Address,
    /// Block gas limit (`block_gas_limit`).
    pub gas_limit: u64,
}

impl Default for BlockEnv {
    fn default() -> Self {
        BlockEnv {
            number: 1,
            timestamp: 1_700_000_000,
            chain_id: DEFAULT_CHAIN_ID,
            basefee: U256::from(100_000_000u64),
            coinbase: Address::ZERO,
            gas_limit: 1 << 50,
        }
    }
}

/// Transaction values visible to programs (`tx_origin` is the top-level caller).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxEnv {
    /// The top-level sender of the transaction (`tx_origin`).
    pub origin: Address,
    /// Effective gas price of the transaction, in wei (`tx_gas_price`).
    pub gas_price: U256,
    /// The transaction's EIP-2930 access list: its accounts and slots start warm.
    pub access_list: alloy_eips::eip2930::AccessList,
}

/// Everything a frame can reach: state, the module cache, environment and per-tx counters.
pub(crate) struct World {
    pub state: State,
    pub programs: Programs,
    pub linker: Arc<Linker<Ctx>>,
    pub block: BlockEnv,
    pub tx: TxEnv,
    /// Open non-delegate frames per acting address (`msg_reentrant`).
    pub open_frames: HashMap<Address, u32>,
    /// Wasm pages open now / ever in this transaction (memory model).
    pub open_pages: u16,
    pub ever_pages: u16,
    /// Installed while a transaction is replayed for `debug_trace*`.
    pub tracer: Option<CallTracer>,
    /// Programs called in this block (see [`RecentPrograms`]).
    pub recent_programs: RecentPrograms,
    /// Runs a message call: the executor's router, installed by `Executor::new`.
    pub router: Router,
    /// Runs a creation: [`crate::create::create`], installed by `Executor::new`.
    pub creator: Creator,
    /// Analysed EVM bytecode by code hash (a cache: code under a hash never changes).
    pub evm_code: HashMap<B256, revm_interpreter::bytecode::Bytecode>,
    /// The hashes of earlier blocks, for `BLOCKHASH` and `ArbSys.arbBlockHash`.
    pub block_hashes: BlockHashes,
    /// Installed while a transaction is replayed for geth's opcode tracer.
    pub step_logger: Option<crate::struct_log::StructLogger>,
}

/// The hash of block `n`, if the chain knows it.
pub type BlockHashes = Arc<dyn Fn(u64) -> Option<B256> + Send + Sync>;

/// Runs a message call in a world and hands the world back with the call's result.
pub(crate) type Router = fn(Box<World>, Message) -> (Box<World>, FrameResult);

/// Runs a creation (creator, value, initcode, CREATE2 salt, gas, the creator's depth).
pub(crate) type Creator =
    fn(Box<World>, Address, U256, Vec<u8>, Option<B256>, u64, usize) -> (Box<World>, CreateResult);

impl World {
    /// Runs a nested message call (from a hostio, a creation or a native contract), growing
    /// the native stack first if it runs low.
    pub(crate) fn call(self: Box<Self>, msg: Message) -> (Box<Self>, FrameResult) {
        let route = self.router;
        crate::frame::on_enough_stack(|| route(self, msg))
    }

    /// Runs a nested creation (from an EVM opcode), growing the native stack first if it runs
    /// low.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn create(
        self: Box<Self>,
        creator: Address,
        value: U256,
        initcode: Vec<u8>,
        salt: Option<B256>,
        gas: u64,
        depth: usize,
    ) -> (Box<Self>, CreateResult) {
        let create = self.creator;
        crate::frame::on_enough_stack(|| create(self, creator, value, initcode, salt, gas, depth))
    }
}

/// ArbOS 60's `RecentWasms`: the code hashes of the [`meter::BLOCK_CACHE_SIZE`] programs called
/// most recently in this block, least recent first. A call into one of them pays only the cached
/// init gas. Not undone by reverts (nitro does not journal it); emptied at each block.
#[derive(Default)]
pub(crate) struct RecentPrograms(Vec<B256>);

impl RecentPrograms {
    /// Records a call into `code_hash`; whether it was already recent.
    pub(crate) fn insert(&mut self, code_hash: B256) -> bool {
        let hit = match self.0.iter().position(|h| *h == code_hash) {
            Some(i) => {
                self.0.remove(i);
                true
            }
            None => false,
        };
        if self.0.len() == meter::BLOCK_CACHE_SIZE {
            self.0.remove(0);
        }
        self.0.push(code_hash);
        hit
    }
}

/// A cached storage slot: its value and whether it still has to be written.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CachedSlot {
    pub value: B256,
    pub dirty: bool,
}

/// The frame a program runs in.
pub(crate) struct Frame {
    pub msg: Message,
    /// The last `write_result` data.
    pub result: Vec<u8>,
    /// Return data of the last call/create made by this frame.
    pub return_data: Bytes,
    /// The per-call storage cache (`storage_load_bytes32` / `storage_cache_bytes32`).
    pub cache: HashMap<B256, CachedSlot>,
    /// Wasm pages this frame holds open in the transaction: its footprint plus growth.
    pub open_pages: u16,
}

impl Frame {
    pub(crate) fn new(msg: Message, footprint: u16) -> Self {
        Frame {
            msg,
            result: Vec::new(),
            return_data: Bytes::new(),
            cache: HashMap::new(),
            open_pages: footprint,
        }
    }
}

/// The wasmi store data of a program frame.
pub(crate) struct Ctx {
    /// The world; `None` only while a nested call has it.
    pub world: Option<Box<World>>,
    pub memory: Option<Memory>,
    pub frame: Frame,
    pub limiter: GrowthMeter,
}

impl Ctx {
    pub(crate) fn new(world: Box<World>, frame: Frame) -> Self {
        Ctx {
            world: Some(world),
            memory: None,
            frame,
            limiter: GrowthMeter::default(),
        }
    }

    pub(crate) fn world(&mut self) -> &mut World {
        self.world
            .as_deref_mut()
            .expect("world present outside nested calls")
    }
}
