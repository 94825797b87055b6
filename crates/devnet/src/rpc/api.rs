//! The methods: `dispatch` maps each name to the chain.

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_primitives::{Address, Bytes, B256, U256, U512};
use serde_json::{json, Value};

use crate::chain::{
    Chain, FilterChanges, FilterKind, LogFilter, Recovered, ReorgError, ReorgOutcome, TxError,
};

use super::error::{ErrorCode, RpcError};
use super::request::{
    arg, block_number, call_request, call_tracer_options, filter_id, parse_log_filter, quantity,
    reorg_depth, state_at, timestamp, BursarReorg, Params, StateOverride,
};
use super::response::{
    block_json, envelope_json, logs_raw, q, qu, receipt_answer, receipts_answer, trace_json,
    tx_json,
};
use super::server::Answer;
use super::{CLIENT_VERSION, MAX_MINE_BLOCKS, MAX_TIMESTAMP};

/// Runs `method` with params `p` (their count already checked by `check_arity`) against the
/// chain; `recovered` is an `eth_sendRawTransaction`'s transaction, decoded and its sender
/// recovered before the chain was locked.
pub(super) fn dispatch(
    chain: &mut Chain,
    method: &str,
    p: &Params,
    recovered: Option<Recovered>,
) -> Result<Answer, RpcError> {
    Ok(match method {
        "web3_clientVersion" => json!(CLIENT_VERSION),
        "eth_chainId" => q(chain.chain_id()),
        "net_version" => json!(chain.chain_id().to_string()),
        "net_listening" => json!(true),
        "eth_syncing" => json!(false),
        "eth_accounts" => json!(crate::accounts::dev_accounts()
            .iter()
            .map(|a| a.address)
            .collect::<Vec<_>>()),
        "eth_blockNumber" => q(chain.block_number()),
        "eth_gasPrice" => q(chain.base_fee()),
        // Arbitrum ignores tips; the devnet accepts them (they go to the coinbase) but does
        // not ask for any.
        "eth_maxPriorityFeePerGas" => q(0u64),
        "eth_feeHistory" => fee_history(chain, p)?,
        "eth_getBalance" => {
            let a: Address = p.get(0)?;
            qu(state_at(chain, p, 1)?.balance(a))
        }
        "eth_getTransactionCount" => {
            let a: Address = p.get(0)?;
            if p.raw(1).and_then(Value::as_str) == Some("pending") {
                q(chain.pending_nonce(a))
            } else {
                q(state_at(chain, p, 1)?.nonce(a))
            }
        }
        "eth_getCode" => {
            let a: Address = p.get(0)?;
            json!(state_at(chain, p, 1)?.code(a))
        }
        "eth_getStorageAt" => {
            let a: Address = p.get(0)?;
            let slot: U256 = p.get(1)?;
            json!(state_at(chain, p, 2)?.storage(a, B256::from(slot)))
        }
        "eth_call" => {
            let req = call_request(chain, p.raw(0))?;
            let at = arg(1, block_number(chain, p.raw(1)))?;
            let over = arg(2, StateOverride::parse(p.raw(2)))?;
            let out = chain.simulate(&req, Some(at), |s| over.apply(s));
            if out.success {
                json!(out.output)
            } else {
                return Err(RpcError::reverted(&out.output));
            }
        }
        "eth_estimateGas" => {
            let req = call_request(chain, p.raw(0))?;
            arg(1, block_number(chain, p.raw(1)))?;
            let over = arg(2, StateOverride::parse(p.raw(2)))?;
            match chain.estimate_gas(&req, |s| over.apply(s)) {
                Ok(gas) => q(gas),
                Err(out)
                    if out.output.is_empty()
                        && out.gas_used >= req.gas.unwrap_or(chain.config().block_gas_limit) =>
                {
                    return Err(RpcError::server("gas required exceeds allowance"))
                }
                Err(out) => return Err(RpcError::reverted(&out.output)),
            }
        }
        "eth_sendTransaction" => send_transaction(chain, p)?,
        "debug_traceTransaction" => {
            let h: B256 = p.get(0)?;
            let only_top = call_tracer_options(p.raw(1))?;
            let frame = chain
                .trace_transaction(h)
                .map_err(|e| RpcError::server(e.to_string()))?;
            trace_json(frame, only_top)
        }
        "debug_traceCall" => {
            let req = call_request(chain, p.raw(0))?;
            let at = arg(1, block_number(chain, p.raw(1)))?;
            let only_top = call_tracer_options(p.raw(2))?;
            match chain.trace_call(&req, Some(at)) {
                Some(frame) => trace_json(frame, only_top),
                None => Value::Null,
            }
        }
        "anvil_impersonateAccount" | "hardhat_impersonateAccount" => {
            chain.impersonate(p.get(0)?);
            Value::Null
        }
        "anvil_stopImpersonatingAccount" | "hardhat_stopImpersonatingAccount" => {
            chain.stop_impersonating(p.get(0)?);
            Value::Null
        }
        "eth_sendRawTransaction" => {
            let tx = match recovered {
                Some(tx) => tx,
                None => {
                    let raw: Bytes = p.get(0)?;
                    Recovered::new(decode_raw_transaction(&raw)?)
                }
            };
            check_cost_fits(chain, tx.envelope())?;
            json!(chain.send_recovered(tx)?)
        }
        "eth_getTransactionByHash" => {
            let h: B256 = p.get(0)?;
            match (chain.transaction(h), chain.pending_transaction(h)) {
                (Some(tx), _) => tx_json(&tx),
                (None, Some((env, from))) => envelope_json(env, from, None, env.max_fee_per_gas()),
                (None, None) => Value::Null,
            }
        }
        "eth_getTransactionReceipt" => {
            let h: B256 = p.get(0)?;
            return Ok(receipt_answer(chain.transaction(h).as_deref()));
        }
        "eth_getBlockReceipts" => {
            // A block number, tag, EIP-1898 object or bare block hash; `null` if unknown.
            let block = match p.raw(0) {
                Some(Value::String(s)) if s.len() == 66 => chain.block_by_hash(p.get(0)?),
                v => match arg(0, block_number(chain, v)) {
                    Ok(n) => chain.block_by_number(n),
                    Err(e) if e.code == ErrorCode::ServerError => None,
                    Err(e) => return Err(e),
                },
            };
            let Some(b) = block else {
                return Ok(Value::Null.into());
            };
            let txs: Vec<_> = b
                .transactions
                .iter()
                .filter_map(|h| chain.transaction(*h))
                .collect();
            return Ok(receipts_answer(txs.iter().map(|tx| tx.as_ref())));
        }
        "eth_getBlockByNumber" => {
            let full: bool = p.opt(1)?.unwrap_or(false);
            match arg(0, block_number(chain, p.raw(0))) {
                Ok(n) => chain
                    .block_by_number(n)
                    .map_or(Value::Null, |b| block_json(chain, b, full)),
                // Unknown future blocks are `null`, as geth answers.
                Err(e) if e.code == ErrorCode::ServerError => Value::Null,
                Err(e) => return Err(e),
            }
        }
        "eth_getBlockByHash" => {
            let h: B256 = p.get(0)?;
            let full: bool = p.opt(1)?.unwrap_or(false);
            chain
                .block_by_hash(h)
                .map_or(Value::Null, |b| block_json(chain, b, full))
        }
        "eth_getLogs" => {
            let f = arg(0, parse_log_filter(chain, p.raw(0)))?;
            // As geth (and the execution-apis tests): a range ending past the head is refused,
            // so a client behind a lagging node retries instead of taking `[]` for "no logs".
            if f.to_block.is_some_and(|to| to > chain.block_number()) {
                return Err(RpcError::invalid_params(
                    "block range extends beyond current head block",
                ));
            }
            return logs_answer(chain, &f);
        }
        "eth_newFilter" => {
            let f = arg(0, parse_log_filter(chain, p.raw(0)))?;
            q(chain.new_filter(FilterKind::Logs(f)))
        }
        "eth_newBlockFilter" => q(chain.new_filter(FilterKind::Blocks)),
        "eth_getFilterChanges" => match chain.filter_changes(filter_id(p)?) {
            Some(FilterChanges::Blocks(hashes)) => json!(hashes),
            Some(FilterChanges::Logs(logs)) => return Ok(logs_raw(chain, &logs)),
            None => return Err(filter_not_found()),
        },
        "eth_getFilterLogs" => match chain.filter(filter_id(p)?) {
            Some(FilterKind::Logs(f)) => {
                let f = f.clone();
                return logs_answer(chain, &f);
            }
            _ => return Err(filter_not_found()),
        },
        "eth_uninstallFilter" => json!(chain.uninstall_filter(filter_id(p)?)),
        "anvil_reorg" => anvil_reorg(chain, p)?,
        "bursar_reorg" => bursar_reorg(chain, p)?,
        // ----- dev methods (anvil names) -----
        "evm_mine" => {
            if let Some(ts) = p.raw(0) {
                let ts = match ts {
                    Value::Object(o) => o.get("timestamp").map(quantity).transpose(),
                    other => quantity(other).map(Some),
                };
                if let Some(ts) = arg(0, ts)? {
                    chain.set_next_timestamp(timestamp(0, ts)?);
                }
            }
            chain.mine(1);
            json!("0x0")
        }
        "anvil_mine" | "hardhat_mine" => {
            let n = p.raw(0).map(|_| p.quantity(0)).transpose()?.unwrap_or(1);
            if n > MAX_MINE_BLOCKS {
                return Err(RpcError::invalid_params(format!(
                    "invalid argument 0: at most {MAX_MINE_BLOCKS} blocks per call, got {n}"
                )));
            }
            let interval = p.raw(1).map(|_| p.quantity(1)).transpose()?;
            if let Some(i) = interval {
                // The last block's timestamp must stay representable.
                let last = i
                    .checked_mul(n)
                    .and_then(|d| d.checked_add(chain.latest_block().header.timestamp));
                if last.is_none_or(|t| t > MAX_TIMESTAMP) {
                    return Err(RpcError::invalid_params(format!(
                        "invalid argument 1: timestamps would pass {MAX_TIMESTAMP}"
                    )));
                }
            }
            for _ in 0..n {
                if let Some(i) = interval {
                    let ts = chain.latest_block().header.timestamp + i;
                    chain.set_next_timestamp(ts);
                }
                chain.mine(1);
            }
            Value::Null
        }
        "evm_setAutomine" | "anvil_setAutomine" => {
            let on: bool = p.get(0)?;
            chain.set_automine(on);
            Value::Null
        }
        "anvil_getAutomine" => json!(chain.automine()),
        "evm_setNextBlockTimestamp" | "anvil_setNextBlockTimestamp" => {
            let ts = timestamp(0, p.quantity(0)?)?;
            chain.set_next_timestamp(ts);
            Value::Null
        }
        "evm_increaseTime" | "anvil_increaseTime" => {
            let s = p.quantity(0)?;
            // `increase_time(0)` reads the current offset.
            let offset = chain.increase_time(0).unsigned_abs();
            if offset.saturating_add(s) > MAX_TIMESTAMP {
                return Err(RpcError::invalid_params(format!(
                    "invalid argument 0: the clock offset would pass {MAX_TIMESTAMP} seconds"
                )));
            }
            json!(chain.increase_time(s))
        }
        "evm_snapshot" | "anvil_snapshot" => q(chain.snapshot()),
        "evm_revert" | "anvil_revert" => json!(chain.revert_to(p.quantity(0)?)),
        "anvil_setBalance" | "hardhat_setBalance" => {
            let a: Address = p.get(0)?;
            let v: U256 = p.get(1)?;
            chain.set_balance(a, v);
            Value::Null
        }
        "anvil_setNonce" | "hardhat_setNonce" => {
            let a: Address = p.get(0)?;
            chain.set_nonce(a, p.quantity(1)?);
            Value::Null
        }
        "anvil_setCode" | "hardhat_setCode" => {
            let a: Address = p.get(0)?;
            let code: Bytes = p.get(1)?;
            chain.set_code(a, code);
            Value::Null
        }
        "anvil_setStorageAt" | "hardhat_setStorageAt" => {
            let a: Address = p.get(0)?;
            let slot: U256 = p.get(1)?;
            let value: B256 = p.get(2)?;
            chain.set_storage(a, B256::from(slot), value);
            json!(true)
        }
        "anvil_dropTransaction" => {
            let h: B256 = p.get(0)?;
            if chain.drop_transaction(h) {
                json!(h)
            } else {
                Value::Null
            }
        }
        "evm_setIntervalMining" | "anvil_setIntervalMining" => {
            // Seconds, as anvil takes them; 0 turns interval mining off.
            let secs = p.quantity(0)?;
            chain.set_interval_mining((secs > 0).then(|| std::time::Duration::from_secs(secs)));
            Value::Null
        }
        "anvil_setNextBlockBaseFeePerGas" => {
            chain.set_next_block_base_fee(p.quantity(0)?);
            Value::Null
        }
        "anvil_dropAllTransactions" => {
            chain.drop_all_transactions();
            Value::Null
        }
        "txpool_status" => json!({ "pending": q(chain.pool().count() as u64), "queued": q(0u64) }),
        "txpool_content" => {
            // Sender (lowercase, as anvil) → nonce (decimal) → transaction; no queue for future
            // nonces.
            let mut pending = serde_json::Map::new();
            for (env, from) in chain.pool() {
                let by_nonce = pending
                    .entry(format!("{from:#x}"))
                    .or_insert_with(|| json!({}));
                by_nonce[env.nonce().to_string()] =
                    envelope_json(env, from, None, env.max_fee_per_gas());
            }
            json!({ "pending": pending, "queued": {} })
        }
        _ => return Err(RpcError::method_not_found(method)),
    }
    .into())
}

/// [`crate::chain::decode_raw_transaction`] with its error as a JSON-RPC error (-32000). Pure:
/// the fuzz tests call it directly.
pub fn decode_raw_transaction(raw: &[u8]) -> Result<TxEnvelope, RpcError> {
    crate::chain::decode_raw_transaction(raw).map_err(Into::into)
}

/// `gas * maxFee + value` can exceed 256 bits (a huge `value`); the chain's U256 sum would
/// wrap around to a small cost and accept the transaction. Refuse it as geth does (its big
/// integers do not wrap): insufficient funds.
pub(super) fn check_cost_fits(chain: &Chain, env: &TxEnvelope) -> Result<(), RpcError> {
    let cost =
        U512::from(env.gas_limit()) * U512::from(env.max_fee_per_gas()) + U512::from(env.value());
    if cost <= U512::from(U256::MAX) {
        return Ok(());
    }
    // An unrecoverable sender is left to the chain's own check ("invalid sender").
    let Ok(from) = env.recover_signer() else {
        return Ok(());
    };
    let have = chain
        .state_at(chain.block_number())
        .map(|s| s.balance(from))
        .unwrap_or_default();
    Err(RpcError::server(format!(
        "insufficient funds for gas * price + value: have {have} want {cost}"
    )))
}

/// `eth_sendTransaction`: the call object plus optional `nonce`, `maxFeePerGas` (or
/// `gasPrice`) and `maxPriorityFeePerGas`; gas is estimated when not given; sent as an
/// EIP-1559 transaction from a dev or impersonated account.
pub(super) fn send_transaction(chain: &mut Chain, p: &Params) -> Result<Value, RpcError> {
    let req = call_request(chain, p.raw(0))?;
    let Some(from) = req.from else {
        return Err(RpcError::invalid_params(
            "invalid argument 0: from: missing",
        ));
    };
    if !chain.may_send_as(from) {
        return Err(TxError::UnknownAccount.into());
    }
    let o = p
        .raw(0)
        .and_then(Value::as_object)
        .expect("checked by call_request");
    let quantity_field = |k: &str| -> Result<Option<u64>, RpcError> {
        arg(
            0,
            o.get(k).filter(|v| !v.is_null()).map(quantity).transpose(),
        )
    };
    let gas = match req.gas {
        Some(gas) => gas,
        None => chain
            .estimate_gas(&req, |_| {})
            .map_err(|out| RpcError::reverted(&out.output))?,
    };
    let base_fee = chain.base_fee();
    let tx = alloy_consensus::TxEip1559 {
        chain_id: chain.chain_id(),
        nonce: match quantity_field("nonce")? {
            Some(n) => n,
            None => chain.pending_nonce(from),
        },
        gas_limit: gas,
        max_fee_per_gas: u128::from(
            quantity_field("maxFeePerGas")?
                .or(quantity_field("gasPrice")?)
                .unwrap_or(base_fee.saturating_mul(2)),
        ),
        max_priority_fee_per_gas: u128::from(quantity_field("maxPriorityFeePerGas")?.unwrap_or(0)),
        to: req.to.map_or(
            alloy_primitives::TxKind::Create,
            alloy_primitives::TxKind::Call,
        ),
        value: req.value,
        input: req.data,
        access_list: Default::default(),
    };
    Ok(json!(chain.send_as(from, tx)?))
}

pub(super) fn fee_history(chain: &Chain, p: &Params) -> Result<Value, RpcError> {
    let count = p.quantity(0)?.clamp(1, 1024);
    let newest = arg(1, block_number(chain, p.raw(1)))?;
    let percentiles: Vec<f64> = p.opt(2)?.unwrap_or_default();
    // geth: each within [0, 100], in non-decreasing order.
    for (i, w) in percentiles.iter().enumerate() {
        let before = if i == 0 { 0.0 } else { percentiles[i - 1] };
        if !(0.0..=100.0).contains(w) || *w < before {
            return Err(RpcError::invalid_params(format!(
                "invalid argument 2: invalid reward percentile #{i}: {w}"
            )));
        }
    }
    let oldest = newest.saturating_sub(count - 1);
    let mut base = vec![];
    let mut ratio = vec![];
    let mut reward = vec![];
    for n in oldest..=newest {
        let b = chain.block_by_number(n).expect("within range");
        base.push(q(b.header.base_fee_per_gas.unwrap_or_default()));
        ratio.push(json!(b.header.gas_used as f64 / b.header.gas_limit as f64));
        reward.push(json!(percentiles
            .iter()
            .map(|_| q(0u64))
            .collect::<Vec<_>>()));
    }
    // The constant base fee is also the next block's.
    base.push(q(chain.base_fee()));
    let mut out = json!({
        "oldestBlock": q(oldest),
        "baseFeePerGas": base,
        "gasUsedRatio": ratio,
    });
    if !percentiles.is_empty() {
        out["reward"] = json!(reward);
    }
    Ok(out)
}

/// `eth_getLogs` (and `eth_getFilterLogs`) over the canonical chain.
pub(super) fn logs_answer(chain: &Chain, f: &LogFilter) -> Result<Answer, RpcError> {
    if let Some(h) = f.block_hash {
        if chain.block_by_hash(h).is_none() {
            return Err(RpcError::server("unknown block"));
        }
    }
    let latest = chain.block_number();
    if let (Some(from), Some(to)) = (f.from_block, f.to_block) {
        if from > to && from <= latest {
            return Err(RpcError::invalid_params("invalid block range params"));
        }
    }
    Ok(logs_raw(chain, &chain.logs(f)))
}

pub(super) fn filter_not_found() -> RpcError {
    RpcError::server("filter not found")
}

pub(super) fn reorg_result(
    chain: &mut Chain,
    blocks: Vec<Vec<TxEnvelope>>,
) -> Result<ReorgOutcome, RpcError> {
    chain.reorg(blocks).map_err(|e| match e {
        ReorgError::Depth { .. } => RpcError::invalid_params(e.to_string()),
        ReorgError::NoHistory { .. } => RpcError::server(e.to_string()),
        ReorgError::Tx(t) => t.into(),
    })
}

/// `anvil_reorg [depth, [[rawTx, blockOffset], ...]]`.
pub(super) fn anvil_reorg(chain: &mut Chain, p: &Params) -> Result<Value, RpcError> {
    let depth = reorg_depth(
        chain,
        p.raw(0)
            .ok_or_else(|| RpcError::invalid_params("missing depth"))?,
    )?;
    let txs: Vec<(Bytes, Value)> = p.opt(1)?.unwrap_or_default();
    let mut blocks = vec![vec![]; depth as usize];
    for (raw, offset) in txs {
        let offset = quantity(&offset)?;
        if offset >= depth {
            return Err(RpcError::invalid_params(format!(
                "block offset {offset} must be below the depth {depth}"
            )));
        }
        let env = decode_raw_transaction(&raw)?;
        blocks[offset as usize].push(env);
    }
    reorg_result(chain, blocks)?;
    Ok(Value::Null)
}

/// `bursar_reorg {depth, drop, reorder}`: rebuilds the last `depth` blocks from their own
/// transactions minus `drop` (reversed within each block if `reorder`).
pub(super) fn bursar_reorg(chain: &mut Chain, p: &Params) -> Result<Value, RpcError> {
    let req: BursarReorg = p.get(0)?;
    let depth = reorg_depth(chain, &req.depth)?;
    let head = chain.block_number();
    let blocks: Vec<Vec<TxEnvelope>> = (head - depth + 1..=head)
        .map(|n| {
            let mut txs: Vec<TxEnvelope> = chain
                .block_envelopes(n)
                .into_iter()
                .filter(|t| !req.drop.contains(t.tx_hash()))
                .collect();
            if req.reorder {
                txs.reverse();
            }
            txs
        })
        .collect();
    let out = reorg_result(chain, blocks)?;
    Ok(json!({ "blocks": out.blocks, "excluded": out.excluded }))
}
