//! Method parameters: positional argument lists with geth's messages, and the argument types
//! (quantities, block selectors, call objects, log filters, state overrides, tracer options).
//!
//! Each argument type deserializes from JSON alone; what needs the chain (a block tag's
//! number, a call's gas cap) is resolved by the method, in `api`.

use std::collections::HashMap;

use alloy_primitives::{Address, Bytes, B256, U256};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::chain::{Block, CallRequest, ChainView, LogFilter};
use crate::state::State;
use crate::struct_log::StructLogConfig;

use super::error::RpcError;

/// Why one positional argument was refused.
pub(super) enum ArgError {
    /// Absent or `null`, and required.
    Missing,
    /// Present but unusable; the message says why.
    Invalid(String),
}

/// One positional argument: `None` is an absent or `null` argument.
pub(super) trait Arg: Sized {
    fn from_arg(v: Option<Value>) -> Result<Self, ArgError>;
}

impl<T: Arg> Arg for Option<T> {
    fn from_arg(v: Option<Value>) -> Result<Self, ArgError> {
        v.map(|v| T::from_arg(Some(v))).transpose()
    }
}

/// Required arguments: any type that deserializes.
macro_rules! required_args {
    ($($t:ty),* $(,)?) => {$(
        impl Arg for $t {
            fn from_arg(v: Option<Value>) -> Result<Self, ArgError> {
                let v = v.ok_or(ArgError::Missing)?;
                serde_json::from_value(v).map_err(|e| ArgError::Invalid(e.to_string()))
            }
        }
    )*};
}

required_args!(
    Address,
    B256,
    U256,
    Bytes,
    bool,
    String,
    Quantity,
    BlockSpec,
    CallObject,
    FilterSpec,
    StateOverride,
    TracerOptions,
    MineArg,
    BursarReorg,
    Id,
    Vec<f64>,
    Vec<U256>,
    Value,
    Vec<(Bytes, Quantity)>,
    Box<alloy_dyn_abi::TypedData>,
);

/// A method's whole positional argument list, as a tuple of [`Arg`]s: at most as many as the
/// tuple has, each decoded in order, then the absent ones checked — geth's order and wording
/// ("invalid argument 1: …", "missing value for required argument 0", "too many arguments,
/// want at most 2").
pub(super) trait Args: Sized {
    const MAX: usize;
    fn from_args(args: &mut dyn FnMut() -> Result<Option<Value>, String>) -> Result<Self, String>;
}

fn next_arg<T: Arg>(
    i: usize,
    args: &mut dyn FnMut() -> Result<Option<Value>, String>,
) -> Result<T, String> {
    T::from_arg(args()?).map_err(|e| match e {
        ArgError::Missing => format!("missing value for required argument {i}"),
        ArgError::Invalid(why) => format!("invalid argument {i}: {why}"),
    })
}

macro_rules! tuple_args {
    ($n:expr; $($t:ident $i:tt),*) => {
        impl<$($t: Arg),*> Args for ($($t,)*) {
            const MAX: usize = $n;
            #[allow(unused_variables)]
            fn from_args(
                args: &mut dyn FnMut() -> Result<Option<Value>, String>,
            ) -> Result<Self, String> {
                Ok(($(next_arg::<$t>($i, args)?,)*))
            }
        }
    };
}

tuple_args!(0;);
tuple_args!(2; A 0, B 1);
tuple_args!(3; A 0, B 1, C 2);
tuple_args!(4; A 0, B 1, C 2, D 3);

/// One parameter (serde hands a newtype variant its field, not a 1-tuple).
impl<T: Arg> Args for T {
    const MAX: usize = 1;
    fn from_args(args: &mut dyn FnMut() -> Result<Option<Value>, String>) -> Result<Self, String> {
        next_arg(0, args)
    }
}

/// The `deserialize_with` of every request variant: the `params` array as the variant's
/// fields (see [`Args`]).
pub(super) fn args<'de, D: Deserializer<'de>, T: Args>(d: D) -> Result<T, D::Error> {
    let list = Vec::<Value>::deserialize(d).map_err(|_| D::Error::custom("non-array args"))?;
    if list.len() > T::MAX {
        return Err(D::Error::custom(format!(
            "too many arguments, want at most {}",
            T::MAX
        )));
    }
    let mut list = list.into_iter();
    T::from_args(&mut || Ok(list.next().filter(|v| !v.is_null()))).map_err(D::Error::custom)
}

/// Deserializes through a JSON value with a custom parser whose `Err` is the message.
fn via_value<'de, D: Deserializer<'de>, T>(
    d: D,
    parse: impl FnOnce(&Value) -> Result<T, String>,
) -> Result<T, D::Error> {
    parse(&Value::deserialize(d)?).map_err(D::Error::custom)
}

/// A 64-bit quantity: a hex string (geth's hexutil messages) or a JSON number. Leading zeros
/// are accepted (geth refuses them, anvil does not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Quantity(pub(super) u64);

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| quantity(v).map(Quantity))
    }
}

pub(super) fn quantity(v: &Value) -> Result<u64, String> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .ok_or_else(|| format!("invalid quantity {n}: not a 64-bit unsigned integer")),
        Value::String(s) => {
            let bad = |why: &str| format!("{why}: {s:?}");
            let hex = s
                .strip_prefix("0x")
                .or_else(|| s.strip_prefix("0X"))
                .ok_or_else(|| bad("hex string without 0x prefix"))?;
            if hex.is_empty() {
                return Err(bad("empty hex number"));
            }
            // `from_str_radix` alone would accept a sign.
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad("invalid hex string"));
            }
            u64::from_str_radix(hex, 16).map_err(|_| bad("hex number > 64 bits"))
        }
        other => Err(format!("invalid quantity {other}: want a hex string")),
    }
}

/// Which block: a tag, a number, or a hash (a bare 32-byte hex string or an EIP-1898 object,
/// as geth's `BlockNumberOrHash` takes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BlockSpec {
    Latest,
    /// Answered as `latest`: the devnet mines every transaction it accepts (or keeps it
    /// queued for the next block, which `pending` does not model).
    Pending,
    Safe,
    Finalized,
    Earliest,
    Number(u64),
    Hash(B256),
}

impl<'de> Deserialize<'de> for BlockSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, block_spec)
    }
}

fn block_spec(v: &Value) -> Result<BlockSpec, String> {
    match v {
        Value::String(s) => Ok(match s.as_str() {
            "latest" => BlockSpec::Latest,
            "pending" => BlockSpec::Pending,
            "safe" => BlockSpec::Safe,
            "finalized" => BlockSpec::Finalized,
            "earliest" => BlockSpec::Earliest,
            _ if s.len() == 66 => BlockSpec::Hash(s.parse().map_err(|e| format!("{e}"))?),
            _ => BlockSpec::Number(
                quantity(v).map_err(|e| format!("invalid block number or tag: {e}"))?,
            ),
        }),
        Value::Object(o) => match (o.get("blockHash"), o.get("blockNumber")) {
            (Some(h), _) => B256::deserialize(h)
                .map(BlockSpec::Hash)
                .map_err(|e| e.to_string()),
            (None, Some(n)) => block_spec(n),
            (None, None) => Err("invalid block selector: want blockHash or blockNumber".into()),
        },
        other => quantity(other).map(BlockSpec::Number),
    }
}

impl BlockSpec {
    /// The block's number (absent: the head). Blocks past the head and unknown hashes are
    /// server errors, as geth words them.
    pub(super) fn resolve(spec: Option<Self>, chain: &ChainView) -> Result<u64, RpcError> {
        let latest = chain.block_number();
        let n = match spec.unwrap_or(BlockSpec::Latest) {
            BlockSpec::Latest | BlockSpec::Pending => latest,
            // Lag the head by the configured finality depth (0: every block is final).
            BlockSpec::Safe => chain.safe_block_number(),
            BlockSpec::Finalized => chain.finalized_block_number(),
            BlockSpec::Earliest => 0,
            BlockSpec::Number(n) => n,
            BlockSpec::Hash(hash) => {
                return chain
                    .block_by_hash(hash)
                    .map(Block::number)
                    .ok_or_else(|| RpcError::server(format!("header for hash {hash} not found")))
            }
        };
        if n > latest {
            return Err(RpcError::server("header not found"));
        }
        Ok(n)
    }

    /// The block itself; `None` for an unknown one.
    pub(super) fn block(spec: Option<Self>, chain: &ChainView) -> Option<&Block> {
        chain.block_by_number(Self::resolve(spec, chain).ok()?)
    }

    /// The state after the block.
    pub(super) fn state(spec: Option<Self>, chain: &ChainView) -> Result<&State, RpcError> {
        let n = Self::resolve(spec, chain)?;
        chain
            .state_at(n)
            .ok_or_else(|| RpcError::server("header not found"))
    }
}

/// A field of a JSON object; its errors name it.
fn field<T: DeserializeOwned>(o: &Map<String, Value>, k: &str) -> Result<Option<T>, String> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => T::deserialize(v).map(Some).map_err(|e| format!("{k}: {e}")),
    }
}

/// A quantity field of a JSON object.
fn quantity_field(o: &Map<String, Value>, k: &str) -> Result<Option<u64>, String> {
    Ok(field::<Quantity>(o, k)?.map(|q| q.0))
}

/// The transaction call object of `eth_call`, `eth_estimateGas`, `debug_traceCall` and
/// `eth_sendTransaction` (which also reads the nonce and fees).
#[derive(Clone, Debug, Default)]
pub(super) struct CallObject {
    pub(super) from: Option<Address>,
    pub(super) to: Option<Address>,
    pub(super) gas: Option<u64>,
    pub(super) value: U256,
    /// `input`, or `data` when `input` is absent.
    pub(super) data: Bytes,
    pub(super) nonce: Option<u64>,
    /// `maxFeePerGas`, or `gasPrice` when it is absent.
    pub(super) max_fee_per_gas: Option<u64>,
    pub(super) max_priority_fee_per_gas: Option<u64>,
    pub(super) access_list: alloy_eips::eip2930::AccessList,
}

impl<'de> Deserialize<'de> for CallObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| {
            let o = v.as_object().ok_or("want a transaction call object")?;
            Ok(CallObject {
                from: field(o, "from")?,
                to: field(o, "to")?,
                gas: quantity_field(o, "gas")?,
                value: field(o, "value")?.unwrap_or_default(),
                data: match field(o, "input")? {
                    Some(d) => d,
                    None => field(o, "data")?.unwrap_or_default(),
                },
                nonce: quantity_field(o, "nonce")?,
                max_fee_per_gas: match quantity_field(o, "maxFeePerGas")? {
                    Some(fee) => Some(fee),
                    None => quantity_field(o, "gasPrice")?,
                },
                max_priority_fee_per_gas: quantity_field(o, "maxPriorityFeePerGas")?,
                access_list: field(o, "accessList")?.unwrap_or_default(),
            })
        })
    }
}

impl CallObject {
    /// The message to simulate; gas above the block gas limit is capped to it, as geth caps
    /// at its `--rpc.gascap`.
    pub(super) fn request(&self, chain: &ChainView) -> CallRequest {
        CallRequest {
            from: self.from,
            to: self.to,
            gas: self.gas.map(|g| g.min(chain.config().block_gas_limit)),
            value: self.value,
            data: self.data.clone(),
            access_list: self.access_list.clone(),
        }
    }
}

/// An `eth_getLogs` / `eth_newFilter` / `logs` subscription filter as sent: a block range
/// (tags resolved at query time) or a `blockHash`, `address` (one or many), `topics`
/// (positional; `null` = any, an array = one of).
#[derive(Clone, Debug, Default)]
pub(super) struct FilterSpec {
    from_block: Option<BlockSpec>,
    to_block: Option<BlockSpec>,
    block_hash: Option<B256>,
    addresses: Vec<Address>,
    topics: Vec<Option<Vec<B256>>>,
}

impl<'de> Deserialize<'de> for FilterSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, filter_spec)
    }
}

fn filter_spec(v: &Value) -> Result<FilterSpec, String> {
    let f = v.as_object().ok_or("filter must be an object")?;
    let mut out = FilterSpec::default();
    if let Some(h) = f.get("blockHash").filter(|v| !v.is_null()) {
        if f.contains_key("fromBlock") || f.contains_key("toBlock") {
            return Err(
                "cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other"
                    .into(),
            );
        }
        out.block_hash = Some(B256::deserialize(h).map_err(|e| e.to_string())?);
    } else {
        out.from_block = field(f, "fromBlock")?;
        out.to_block = field(f, "toBlock")?;
    }
    out.addresses = match f.get("address") {
        None | Some(Value::Null) => vec![],
        Some(a @ Value::Array(_)) => Vec::deserialize(a).map_err(|e| e.to_string())?,
        Some(v) => vec![Address::deserialize(v).map_err(|e| e.to_string())?],
    };
    out.topics = match f.get("topics") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| match t {
                Value::Null => Ok(None),
                alts @ Value::Array(_) => {
                    Vec::<B256>::deserialize(alts)
                        .map(|v| if v.is_empty() { None } else { Some(v) })
                }
                v => B256::deserialize(v).map(|h| Some(vec![h])),
            })
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?,
        Some(_) => return Err("topics must be an array".into()),
    };
    Ok(out)
}

impl FilterSpec {
    /// The filter the chain runs: `latest`/`pending` bounds stay open (the head when the
    /// filter is polled); other tags, hashes and numbers are fixed now.
    pub(super) fn resolve(&self, chain: &ChainView) -> Result<LogFilter, RpcError> {
        let bound = |b: Option<BlockSpec>| match b {
            None | Some(BlockSpec::Latest | BlockSpec::Pending) => Ok(None),
            Some(BlockSpec::Number(n)) => Ok(Some(n)),
            Some(spec) => BlockSpec::resolve(Some(spec), chain).map(Some),
        };
        Ok(LogFilter {
            from_block: bound(self.from_block)?,
            to_block: bound(self.to_block)?,
            block_hash: self.block_hash,
            addresses: self.addresses.clone(),
            topics: self.topics.clone(),
        })
    }
}

/// A filter or subscription id. Anything unparseable is simply not a known id.
#[derive(Clone, Copy, Debug)]
pub(super) struct Id(pub(super) Option<u64>);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| Ok(Id(quantity(v).ok())))
    }
}

/// The tracer options of `debug_trace*`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TracerOptions {
    tracer: Option<String>,
    #[serde(default)]
    tracer_config: TracerConfig,
    #[serde(default)]
    disable_stack: bool,
    #[serde(default)]
    enable_memory: bool,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TracerConfig {
    #[serde(default)]
    only_top_call: bool,
}

/// Which of geth's tracers a `debug_trace*` call asked for.
#[derive(Clone, Copy, Debug)]
pub(super) enum Tracer {
    /// `callTracer`, with `onlyTopCall`.
    Calls { only_top_call: bool },
    /// No `tracer`: the struct logger (EVM opcodes; Stylus frames add none).
    Opcodes(StructLogConfig),
}

impl TracerOptions {
    /// The tracer asked for; any other named tracer is refused.
    pub(super) fn tracer(options: Option<Self>) -> Result<Tracer, RpcError> {
        let o = options.unwrap_or_default();
        match o.tracer.as_deref() {
            None | Some("") => Ok(Tracer::Opcodes(StructLogConfig {
                disable_stack: o.disable_stack,
                enable_memory: o.enable_memory,
            })),
            Some("callTracer") => Ok(Tracer::Calls {
                only_top_call: o.tracer_config.only_top_call,
            }),
            Some(other) => Err(RpcError::invalid_params(format!(
                "tracer {other:?} is not supported: use the default (opcode) tracer or \"callTracer\""
            ))),
        }
    }
}

/// `evm_mine`'s optional argument: the block's timestamp, bare or as `{timestamp}`.
#[derive(Clone, Copy, Debug)]
pub(super) struct MineArg(pub(super) Option<u64>);

impl<'de> Deserialize<'de> for MineArg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        via_value(d, |v| match v {
            Value::Object(o) => Ok(MineArg(quantity_field(o, "timestamp")?)),
            other => quantity(other).map(|t| MineArg(Some(t))),
        })
    }
}

/// `eth_call` / `eth_estimateGas` state overrides (geth's format).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(transparent)]
pub(super) struct StateOverride(HashMap<Address, AccountOverride>);

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AccountOverride {
    balance: Option<U256>,
    nonce: Option<U256>,
    code: Option<Bytes>,
    state: Option<HashMap<B256, B256>>,
    state_diff: Option<HashMap<B256, B256>>,
}

impl StateOverride {
    /// Applies the overrides to a scratch copy of the state.
    pub(super) fn apply(&self, s: &mut State) {
        for (a, o) in &self.0 {
            if let Some(b) = o.balance {
                s.set_balance(*a, b);
            }
            if let Some(n) = o.nonce {
                s.set_nonce(*a, n.saturating_to());
            }
            if let Some(c) = &o.code {
                s.set_code(*a, c.clone());
            }
            if let Some(full) = &o.state {
                let old: Vec<B256> = s.storage_of(*a).map(|(k, _)| *k).collect();
                for k in old {
                    s.set_storage(*a, k, B256::ZERO);
                }
                for (k, v) in full {
                    s.set_storage(*a, *k, *v);
                }
            }
            if let Some(diff) = &o.state_diff {
                for (k, v) in diff {
                    s.set_storage(*a, *k, *v);
                }
            }
        }
    }
}

/// `bursar_reorg` parameters: rebuild the last `depth` blocks from their own transactions
/// minus `drop` (reversed within each block if `reorder`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BursarReorg {
    pub(super) depth: Quantity,
    #[serde(default)]
    pub(super) drop: Vec<B256>,
    #[serde(default)]
    pub(super) reorder: bool,
}
