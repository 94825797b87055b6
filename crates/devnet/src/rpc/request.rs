//! Parameters: positional access with geth's messages, quantities, block tags, call
//! requests, state overrides and log filters.

use alloy_primitives::{Address, Bytes, B256, U256};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::chain::{Block, CallRequest, Chain, LogFilter};
use crate::state::State;

use super::api::filter_not_found;
use super::error::{ErrorCode, RpcError};
use super::MAX_TIMESTAMP;

/// `(required, at most)` positional params of each method `dispatch` knows.
pub(super) fn arity(method: &str) -> Option<(usize, usize)> {
    Some(match method {
        "web3_clientVersion"
        | "eth_chainId"
        | "net_version"
        | "net_listening"
        | "eth_syncing"
        | "eth_accounts"
        | "eth_blockNumber"
        | "eth_gasPrice"
        | "eth_maxPriorityFeePerGas"
        | "eth_newBlockFilter"
        | "anvil_getAutomine"
        | "evm_snapshot"
        | "anvil_snapshot"
        | "anvil_dropAllTransactions"
        | "txpool_status"
        | "txpool_content" => (0, 0),
        "eth_feeHistory" => (2, 3),
        "debug_traceTransaction" => (1, 2),
        "debug_traceCall" => (1, 3),
        "eth_getBalance" | "eth_getTransactionCount" | "eth_getCode" => (1, 2),
        "eth_getStorageAt" => (2, 3),
        "eth_call" => (1, 4),
        "eth_estimateGas" => (1, 3),
        "eth_sendRawTransaction"
        | "eth_getTransactionByHash"
        | "eth_getTransactionReceipt"
        | "eth_getBlockReceipts"
        | "eth_getLogs"
        | "eth_newFilter"
        | "eth_getFilterChanges"
        | "eth_getFilterLogs"
        | "eth_uninstallFilter"
        | "bursar_reorg"
        | "evm_setAutomine"
        | "anvil_setAutomine"
        | "evm_setNextBlockTimestamp"
        | "anvil_setNextBlockTimestamp"
        | "evm_increaseTime"
        | "anvil_increaseTime"
        | "evm_revert"
        | "anvil_revert"
        | "eth_unsubscribe"
        | "anvil_dropTransaction"
        | "anvil_setNextBlockBaseFeePerGas"
        | "evm_setIntervalMining"
        | "anvil_setIntervalMining"
        | "anvil_impersonateAccount"
        | "hardhat_impersonateAccount"
        | "anvil_stopImpersonatingAccount"
        | "hardhat_stopImpersonatingAccount"
        | "eth_sendTransaction" => (1, 1),
        "eth_getBlockByNumber" | "eth_getBlockByHash" | "anvil_reorg" | "eth_subscribe" => (1, 2),
        "evm_mine" => (0, 1),
        "anvil_mine" | "hardhat_mine" => (0, 2),
        "anvil_setBalance" | "hardhat_setBalance" | "anvil_setNonce" | "hardhat_setNonce"
        | "anvil_setCode" | "hardhat_setCode" => (2, 2),
        "anvil_setStorageAt" | "hardhat_setStorageAt" => (3, 3),
        _ => return None,
    })
}

/// Too many or too few params, with geth's messages. Methods not in [`arity`] go unchecked
/// here; `dispatch` answers the unknown ones with -32601.
pub(super) fn check_arity(method: &str, p: &Params) -> Result<(), RpcError> {
    let Some((required, max)) = arity(method) else {
        return Ok(());
    };
    if p.0.len() > max {
        return Err(RpcError::invalid_params(format!(
            "too many arguments, want at most {max}"
        )));
    }
    if let Some(i) = (0..required).find(|&i| p.0.get(i).is_none_or(Value::is_null)) {
        return Err(RpcError::invalid_params(format!(
            "missing value for required argument {i}"
        )));
    }
    Ok(())
}

/// Prefixes a params error with the argument's position (geth: "invalid argument 1: …").
pub(super) fn arg<T>(i: usize, r: Result<T, RpcError>) -> Result<T, RpcError> {
    r.map_err(|mut e| {
        if e.code == ErrorCode::InvalidParams && !e.message.starts_with("invalid argument") {
            e.message = format!("invalid argument {i}: {}", e.message);
        }
        e
    })
}

/// Positional params with typed access.
pub(super) struct Params(pub(super) Vec<Value>);

impl Params {
    /// Param `i` as `T`; errors name the position, as geth's do.
    pub(super) fn get<T: DeserializeOwned>(&self, i: usize) -> Result<T, RpcError> {
        let v = self.0.get(i).ok_or_else(|| {
            RpcError::invalid_params(format!("missing value for required argument {i}"))
        })?;
        serde_json::from_value(v.clone())
            .map_err(|e| RpcError::invalid_params(format!("invalid argument {i}: {e}")))
    }
    pub(super) fn opt<T: DeserializeOwned>(&self, i: usize) -> Result<Option<T>, RpcError> {
        match self.0.get(i) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.get(i).map(Some),
        }
    }
    pub(super) fn raw(&self, i: usize) -> Option<&Value> {
        self.0.get(i).filter(|v| !v.is_null())
    }
    /// Param `i` as a quantity (required).
    pub(super) fn quantity(&self, i: usize) -> Result<u64, RpcError> {
        let v = self.raw(i).ok_or_else(|| {
            RpcError::invalid_params(format!("missing value for required argument {i}"))
        })?;
        arg(i, quantity(v))
    }
}

/// Parses a quantity given as hex string (geth's hexutil messages) or JSON number. Leading
/// zeros are accepted (geth refuses them, anvil does not).
pub(super) fn quantity(v: &Value) -> Result<u64, RpcError> {
    match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| {
            RpcError::invalid_params(format!(
                "invalid quantity {n}: not a 64-bit unsigned integer"
            ))
        }),
        Value::String(s) => {
            let bad = |why: &str| RpcError::invalid_params(format!("{why}: {s:?}"));
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
        other => Err(RpcError::invalid_params(format!(
            "invalid quantity {other}: want a hex string"
        ))),
    }
}

/// Resolves a block tag / number / EIP-1898 object to a block number (missing = latest).
pub(super) fn block_number(chain: &Chain, v: Option<&Value>) -> Result<u64, RpcError> {
    let latest = chain.block_number();
    let n = match v {
        None | Some(Value::Null) => latest,
        Some(Value::String(s)) => match s.as_str() {
            "latest" | "pending" => latest,
            // Lag the head by the configured finality depth (0: every block is final).
            "safe" => chain.safe_block_number(),
            "finalized" => chain.finalized_block_number(),
            "earliest" => 0,
            _ => quantity(&Value::String(s.clone())).map_err(|e| {
                RpcError::invalid_params(format!("invalid block number or tag: {}", e.message))
            })?,
        },
        Some(Value::Object(o)) => {
            if let Some(h) = o.get("blockHash") {
                let hash: B256 = serde_json::from_value(h.clone())
                    .map_err(|e| RpcError::invalid_params(e.to_string()))?;
                return chain
                    .block_by_hash(hash)
                    .map(Block::number)
                    .ok_or_else(|| RpcError::server(format!("header for hash {hash} not found")));
            }
            match o.get("blockNumber") {
                Some(n) => return block_number(chain, Some(n)),
                None => {
                    return Err(RpcError::invalid_params(
                        "invalid block selector: want blockHash or blockNumber",
                    ))
                }
            }
        }
        Some(other) => quantity(other)?,
    };
    if n > latest {
        return Err(RpcError::server("header not found"));
    }
    Ok(n)
}

pub(super) fn state_at<'a>(chain: &'a Chain, p: &Params, i: usize) -> Result<&'a State, RpcError> {
    let n = arg(i, block_number(chain, p.raw(i)))?;
    chain
        .state_at(n)
        .ok_or_else(|| RpcError::server("header not found"))
}

/// Timestamps beyond [`MAX_TIMESTAMP`] are refused (the chain adds to them).
pub(super) fn timestamp(i: usize, ts: u64) -> Result<u64, RpcError> {
    if ts > MAX_TIMESTAMP {
        return Err(RpcError::invalid_params(format!(
            "invalid argument {i}: timestamp {ts} is above {MAX_TIMESTAMP}"
        )));
    }
    Ok(ts)
}

/// The call object of `eth_call` / `eth_estimateGas` (param 0). Gas above the block gas
/// limit is capped to it, as geth caps at its `--rpc.gascap`.
pub(super) fn call_request(chain: &Chain, v: Option<&Value>) -> Result<CallRequest, RpcError> {
    let Some(Value::Object(o)) = v else {
        return Err(RpcError::invalid_params(
            "invalid argument 0: want a transaction call object",
        ));
    };
    pub(super) fn field<T: DeserializeOwned>(
        o: &Map<String, Value>,
        k: &str,
    ) -> Result<Option<T>, RpcError> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| RpcError::invalid_params(format!("invalid argument 0: {k}: {e}"))),
        }
    }
    Ok(CallRequest {
        from: field(o, "from")?,
        to: field(o, "to")?,
        gas: arg(
            0,
            o.get("gas")
                .filter(|v| !v.is_null())
                .map(quantity)
                .transpose(),
        )?
        .map(|g| g.min(chain.config().block_gas_limit)),
        value: field(o, "value")?.unwrap_or_default(),
        data: match field::<Bytes>(o, "input")? {
            Some(d) => d,
            None => field(o, "data")?.unwrap_or_default(),
        },
    })
}

/// The tracer options of `debug_trace*`: only geth's `callTracer` is offered (the default
/// struct logger traces EVM opcodes, which Stylus programs do not have). Returns `onlyTopCall`.
pub(super) fn call_tracer_options(v: Option<&Value>) -> Result<bool, RpcError> {
    let tracer = v.and_then(|o| o.get("tracer")).and_then(Value::as_str);
    if tracer != Some("callTracer") {
        return Err(RpcError::invalid_params(
            "only the callTracer is supported: pass {\"tracer\": \"callTracer\"}",
        ));
    }
    Ok(v.and_then(|o| o.pointer("/tracerConfig/onlyTopCall"))
        .and_then(Value::as_bool)
        .unwrap_or(false))
}

/// `eth_call` / `eth_estimateGas` state overrides (geth's format).
#[derive(Default)]
pub(super) struct StateOverride(Vec<(Address, AccountOverride)>);

#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct AccountOverride {
    balance: Option<U256>,
    nonce: Option<U256>,
    code: Option<Bytes>,
    state: Option<std::collections::HashMap<B256, B256>>,
    state_diff: Option<std::collections::HashMap<B256, B256>>,
}

impl StateOverride {
    pub(super) fn parse(v: Option<&Value>) -> Result<Self, RpcError> {
        let Some(v) = v else {
            return Ok(Self::default());
        };
        let map: std::collections::HashMap<Address, AccountOverride> =
            serde_json::from_value(v.clone())
                .map_err(|e| RpcError::invalid_params(format!("state override: {e}")))?;
        Ok(StateOverride(map.into_iter().collect()))
    }

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

/// Parses an `eth_getLogs` / `eth_newFilter` / `logs` subscription filter object: block range
/// (tags kept open, resolved at query time) or `blockHash`, `address` (one or many), `topics`
/// (positional; `null` = any, an array = one of).
pub(crate) fn parse_log_filter(
    chain: &Chain,
    filter: Option<&Value>,
) -> Result<LogFilter, RpcError> {
    let f = match filter {
        Some(Value::Object(o)) => o,
        None => return Err(RpcError::invalid_params("missing filter")),
        Some(_) => return Err(RpcError::invalid_params("filter must be an object")),
    };
    let mut out = LogFilter::default();
    if let Some(h) = f.get("blockHash").filter(|v| !v.is_null()) {
        if f.contains_key("fromBlock") || f.contains_key("toBlock") {
            return Err(RpcError::invalid_params(
                "cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other",
            ));
        }
        out.block_hash = Some(
            serde_json::from_value(h.clone())
                .map_err(|e| RpcError::invalid_params(e.to_string()))?,
        );
    } else {
        let bound = |k: &str| -> Result<Option<u64>, RpcError> {
            match f.get(k).filter(|v| !v.is_null()) {
                None => Ok(None),
                Some(Value::String(s)) if matches!(s.as_str(), "latest" | "pending") => Ok(None),
                Some(Value::String(s)) if s == "earliest" => Ok(Some(0)),
                Some(v @ Value::String(s)) if matches!(s.as_str(), "safe" | "finalized") => {
                    block_number(chain, Some(v)).map(Some)
                }
                Some(v @ Value::Object(_)) => block_number(chain, Some(v)).map(Some),
                Some(v) => quantity(v).map(Some),
            }
        };
        out.from_block = bound("fromBlock")?;
        out.to_block = bound("toBlock")?;
    }
    out.addresses = match f.get("address") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => serde_json::from_value(Value::Array(a.clone()))
            .map_err(|e| RpcError::invalid_params(e.to_string()))?,
        Some(v) => vec![serde_json::from_value(v.clone())
            .map_err(|e| RpcError::invalid_params(e.to_string()))?],
    };
    out.topics = match f.get("topics") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| match t {
                Value::Null => Ok(None),
                Value::Array(alts) => serde_json::from_value(Value::Array(alts.clone()))
                    .map(|v: Vec<B256>| if v.is_empty() { None } else { Some(v) }),
                v => serde_json::from_value(v.clone()).map(|h: B256| Some(vec![h])),
            })
            .collect::<Result<_, _>>()
            .map_err(|e| RpcError::invalid_params(e.to_string()))?,
        Some(_) => return Err(RpcError::invalid_params("topics must be an array")),
    };
    Ok(out)
}

/// Filter ids are quantities; anything unparseable is simply not a known filter.
pub(super) fn filter_id(p: &Params) -> Result<u64, RpcError> {
    let v = p
        .raw(0)
        .ok_or_else(|| RpcError::invalid_params("missing filter id"))?;
    quantity(v).map_err(|_| filter_not_found())
}

/// `bursar_reorg` parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BursarReorg {
    pub(super) depth: Value,
    #[serde(default)]
    pub(super) drop: Vec<B256>,
    #[serde(default)]
    pub(super) reorder: bool,
}

pub(super) fn reorg_depth(chain: &Chain, v: &Value) -> Result<u64, RpcError> {
    let depth = quantity(v)?;
    if depth == 0 || depth > chain.block_number() {
        return Err(RpcError::invalid_params(format!(
            "reorg depth must be between 1 and the chain height {}, got {depth}",
            chain.block_number()
        )));
    }
    Ok(depth)
}
