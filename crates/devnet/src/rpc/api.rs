//! The methods: [`execute`] runs each [`EthRequest`] against the chain, one line per method;
//! the longer ones are functions below it.

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_primitives::{Bytes, B256, U256, U512};
use serde_json::{json, Value};

use crate::chain::{
    Block, Chain, ChainView, FilterChanges, FilterKind, LogFilter, Recovered, ReorgError,
    ReorgOutcome, TraceError, TxError,
};

use super::envelope::MethodResult;
use super::error::RpcError;
use super::params::{
    BlockSpec, BursarReorg, CallObject, FilterSpec, Id, MineArg, Quantity, StateOverride, Tracer,
    TracerOptions,
};
use super::request::EthRequest;
use super::response::{
    block_view, logs_raw, quantity, quantity_u256, receipt_answer, receipts_answer, trace_json,
    typed, TxView,
};
use super::{CLIENT_VERSION, MAX_MINE_BLOCKS, MAX_TIMESTAMP};

type Result<T, E = RpcError> = std::result::Result<T, E>;

/// Runs `request` against the chain; `recovered` is an `eth_sendRawTransaction`'s
/// transaction, decoded and its sender recovered before the chain was locked.
pub(super) fn execute(
    chain: &mut Chain,
    request: EthRequest,
    recovered: Option<Recovered>,
) -> Result<MethodResult> {
    match read(chain, &request) {
        Some(answer) => answer,
        None => write(chain, request, recovered),
    }
}

/// Answers a read of finished blocks from `view` — the chain itself under its lock, or the view
/// it last published, without the lock; `None` for any other request (one that executes, waits
/// or changes something, or needs the pool).
pub(super) fn read(view: &ChainView, request: &EthRequest) -> Option<Result<MethodResult>> {
    use EthRequest::*;
    let done = |v: Value| Ok(v.into());
    Some(match request {
        Web3ClientVersion => done(json!(CLIENT_VERSION)),
        EthChainId => done(quantity(view.chain_id())),
        NetVersion => done(json!(view.chain_id().to_string())),
        NetListening => done(json!(true)),
        // A lone dev node.
        NetPeerCount => done(quantity(0u64)),
        Web3Sha3(data) => done(json!(alloy_primitives::keccak256(data))),
        EthSyncing => done(json!(false)),
        EthAccounts => done(json!(crate::accounts::dev_accounts()
            .iter()
            .map(|a| a.address)
            .collect::<Vec<_>>())),
        EthBlockNumber => done(quantity(view.block_number())),
        EthGasPrice => done(quantity(view.base_fee())),
        // Arbitrum ignores tips; the devnet accepts them (they go to the coinbase) but does
        // not ask for any.
        EthMaxPriorityFeePerGas => done(quantity(0u64)),
        // Arbitrum carries no blobs: the minimum blob base fee (1 wei), as geth answers with no
        // excess blob gas, and as anvil answers.
        EthBlobBaseFee => done(quantity(1u64)),
        EthFeeHistory(count, newest, percentiles) => {
            fee_history(view, *count, *newest, percentiles.as_deref()).map(|h| typed(&h))
        }
        EthGetBalance(a, at) => {
            BlockSpec::state(*at, view).map(|s| quantity_u256(s.balance(*a)).into())
        }
        // `pending` counts the pool: the chain answers it.
        EthGetTransactionCount(_, Some(BlockSpec::Pending)) => return None,
        EthGetTransactionCount(a, at) => {
            BlockSpec::state(*at, view).map(|s| quantity(s.nonce(*a)).into())
        }
        EthGetCode(a, at) => BlockSpec::state(*at, view).map(|s| json!(s.code(*a)).into()),
        EthGetStorageAt(a, slot, at) => {
            BlockSpec::state(*at, view).map(|s| json!(s.storage(*a, B256::from(*slot))).into())
        }
        // Not mined: perhaps in the pool, which the chain answers.
        EthGetTransactionByHash(h) => Ok(typed(&TxView::mined(view.transaction(*h)?.as_ref()))),
        EthGetTransactionReceipt(h) => Ok(receipt_answer(view.transaction(*h).as_deref())),
        EthGetBlockByNumber(at, full) => Ok(block(view, BlockSpec::block(Some(*at), view), *full)),
        EthGetBlockByHash(h, full) => Ok(block(view, view.block_by_hash(*h), *full)),
        EthGetBlockReceipts(at) => Ok(block_receipts(view, *at)),
        EthGetBlockTransactionCountByNumber(at) => {
            Ok(transaction_count(BlockSpec::block(Some(*at), view)))
        }
        EthGetBlockTransactionCountByHash(h) => Ok(transaction_count(view.block_by_hash(*h))),
        EthGetTransactionByBlockNumberAndIndex(at, Quantity(i)) => {
            Ok(transaction_at(view, BlockSpec::block(Some(*at), view), *i))
        }
        EthGetTransactionByBlockHashAndIndex(h, Quantity(i)) => {
            Ok(transaction_at(view, view.block_by_hash(*h), *i))
        }
        EthGetLogs(filter) => get_logs(view, filter),
        EthGetProof(a, slots, at) => BlockSpec::state(*at, view).map(|s| {
            let slots: Vec<B256> = slots.iter().map(|k| B256::from(*k)).collect();
            typed(&crate::proof::account_proof(s, *a, &slots))
        }),
        EthSign(a, data) => sign(*a, alloy_primitives::eip191_hash_message(data)),
        EthSignTypedDataV4(a, typed) => match typed.eip712_signing_hash() {
            Ok(hash) => sign(*a, hash),
            Err(e) => Err(RpcError::invalid_params(format!("invalid argument 1: {e}"))),
        },
        _ => return None,
    })
}

/// Everything [`read`] does not answer.
fn write(
    chain: &mut Chain,
    request: EthRequest,
    recovered: Option<Recovered>,
) -> Result<MethodResult> {
    use EthRequest::*;
    let null = || Ok(Value::Null.into());
    let done = |v: Value| Ok(v.into());
    match request {
        EthGetTransactionCount(a, _) => done(quantity(chain.pending_nonce(a))),
        EthGetTransactionByHash(h) => Ok(typed(
            &chain
                .pending_transaction(h)
                .map(|(env, from)| TxView::pending(env, from)),
        )),
        EthCall(call, at, over, _block_overrides) => done(eth_call(chain, &call, at, over)?),
        EthEstimateGas(call, at, over) => done(estimate_gas(chain, &call, at, over)?),
        EthCreateAccessList(call, at, over) => done(create_access_list(chain, &call, at, over)?),

        EthSendRawTransaction(raw) => done(send_raw_transaction(chain, &raw, recovered)?),
        EthSendTransaction(call) => done(send_transaction(chain, &call)?),
        DebugTraceTransaction(h, options) => done(trace_transaction(chain, h, options)?),
        DebugTraceCall(call, at, options) => done(trace_call(chain, &call, at, options)?),

        EthNewFilter(filter) => done(quantity(
            chain.new_filter(FilterKind::Logs(filter.resolve(chain)?)),
        )),
        EthNewBlockFilter => done(quantity(chain.new_filter(FilterKind::Blocks))),
        EthNewPendingTransactionFilter => {
            done(quantity(chain.new_filter(FilterKind::PendingTransactions)))
        }
        EthGetFilterChanges(id) => filter_changes(chain, id),
        EthGetFilterLogs(id) => filter_logs(chain, id),
        EthUninstallFilter(Id(id)) => done(json!(id.is_some_and(|id| chain.uninstall_filter(id)))),
        // Subscriptions need a connection to notify: WebSocket only (see `ws`).
        EthSubscribe(..) => Err(RpcError::method_not_found("eth_subscribe")),
        EthUnsubscribe(_) => Err(RpcError::method_not_found("eth_unsubscribe")),

        EvmMine(arg) => done(evm_mine(chain, arg)?),
        AnvilMine(blocks, interval) => {
            anvil_mine(chain, blocks, interval)?;
            null()
        }
        AnvilSetAutomine(on) => {
            chain.set_automine(on);
            null()
        }
        AnvilGetAutomine => done(json!(chain.automine())),
        AnvilSetIntervalMining(Quantity(secs)) => {
            // Seconds, as anvil takes them; 0 turns interval mining off.
            chain.set_interval_mining((secs > 0).then(|| std::time::Duration::from_secs(secs)));
            null()
        }
        AnvilSetNextBlockTimestamp(Quantity(ts)) => {
            chain.set_next_timestamp(timestamp(0, ts)?);
            null()
        }
        AnvilIncreaseTime(Quantity(s)) => done(json!(increase_time(chain, s)?)),
        AnvilSnapshot => done(quantity(chain.snapshot())),
        AnvilRevert(Quantity(id)) => done(json!(chain.revert_to(id))),
        AnvilSetBalance(a, v) => {
            chain.set_balance(a, v);
            null()
        }
        AnvilSetNonce(a, Quantity(n)) => {
            chain.set_nonce(a, n);
            null()
        }
        AnvilSetCode(a, code) => {
            chain.set_code(a, code);
            null()
        }
        AnvilSetStorageAt(a, slot, value) => {
            chain.set_storage(a, B256::from(slot), value);
            done(json!(true))
        }
        AnvilImpersonateAccount(a) => {
            chain.impersonate(a);
            null()
        }
        AnvilStopImpersonatingAccount(a) => {
            chain.stop_impersonating(a);
            null()
        }
        AnvilSetNextBlockBaseFeePerGas(Quantity(fee)) => {
            chain.set_next_block_base_fee(fee);
            null()
        }
        AnvilDropTransaction(h) => done(if chain.drop_transaction(h) {
            json!(h)
        } else {
            Value::Null
        }),
        AnvilDropAllTransactions => {
            chain.drop_all_transactions();
            null()
        }
        Web3ClientVersion
        | EthChainId
        | NetVersion
        | NetListening
        | NetPeerCount
        | Web3Sha3(_)
        | EthBlobBaseFee
        | EthGetBlockTransactionCountByNumber(_)
        | EthGetBlockTransactionCountByHash(_)
        | EthGetTransactionByBlockNumberAndIndex(..)
        | EthGetTransactionByBlockHashAndIndex(..)
        | EthSign(..)
        | EthSignTypedDataV4(..)
        | EthSyncing
        | EthAccounts
        | EthBlockNumber
        | EthGasPrice
        | EthMaxPriorityFeePerGas
        | EthFeeHistory(..)
        | EthGetBalance(..)
        | EthGetCode(..)
        | EthGetStorageAt(..)
        | EthGetTransactionReceipt(_)
        | EthGetBlockByNumber(..)
        | EthGetBlockByHash(..)
        | EthGetBlockReceipts(_)
        | EthGetLogs(_)
        | EthGetProof(..) => unreachable!("answered by read()"),
        AnvilReorg(depth, txs) => {
            anvil_reorg(chain, depth, txs.unwrap_or_default())?;
            null()
        }
        BursarReorg(req) => done(bursar_reorg(chain, req)?),
        TxpoolStatus => done(
            json!({ "pending": quantity(chain.pool().count() as u64), "queued": quantity(0u64) }),
        ),
        TxpoolContent => done(txpool_content(chain)),
    }
}

fn eth_call(
    chain: &mut Chain,
    call: &CallObject,
    at: Option<BlockSpec>,
    over: Option<StateOverride>,
) -> Result<Value> {
    let req = call.request(chain);
    let at = BlockSpec::resolve(at, chain)?;
    let over = over.unwrap_or_default();
    let out = chain.simulate(&req, Some(at), |s| over.apply(s));
    if out.success {
        Ok(json!(out.output))
    } else if let Some(reason) = out.halted {
        // A halt is not a revert: geth answers -32000 with its name.
        Err(RpcError::server(reason))
    } else {
        Err(RpcError::reverted(&out.output))
    }
}

fn create_access_list(
    chain: &mut Chain,
    call: &CallObject,
    at: Option<BlockSpec>,
    over: Option<StateOverride>,
) -> Result<Value> {
    let req = call.request(chain);
    let at = BlockSpec::resolve(at, chain)?;
    let over = over.unwrap_or_default();
    let (list, out) = chain.create_access_list(&req, Some(at), |s| over.apply(s));
    // As geth: the gas a transaction with this list would use (refunds applied), and a failure
    // named in the answer rather than as an error.
    let gas_used = out.gas_used - out.gas_refund.min(out.gas_used / 5);
    let mut answer = json!({ "accessList": list, "gasUsed": quantity(gas_used) });
    if !out.success {
        answer["error"] = json!(out.halted.unwrap_or("execution reverted"));
    }
    Ok(answer)
}

fn estimate_gas(
    chain: &mut Chain,
    call: &CallObject,
    at: Option<BlockSpec>,
    over: Option<StateOverride>,
) -> Result<Value> {
    let req = call.request(chain);
    BlockSpec::resolve(at, chain)?;
    let over = over.unwrap_or_default();
    match chain.estimate_gas(&req, |s| over.apply(s)) {
        Ok(gas) => Ok(quantity(gas)),
        Err(out)
            if out.output.is_empty()
                && out.gas_used >= req.gas.unwrap_or(chain.config().block_gas_limit) =>
        {
            Err(RpcError::server("gas required exceeds allowance"))
        }
        Err(out) => Err(RpcError::reverted(&out.output)),
    }
}

fn trace_transaction(
    chain: &mut Chain,
    hash: B256,
    options: Option<TracerOptions>,
) -> Result<Value> {
    let failed = |e: TraceError| RpcError::server(e.to_string());
    Ok(match TracerOptions::tracer(options)? {
        Tracer::Calls { only_top_call } => trace_json(
            chain.trace_transaction(hash).map_err(failed)?,
            only_top_call,
        ),
        Tracer::Opcodes(config) => {
            json!(chain.struct_log_transaction(hash, config).map_err(failed)?)
        }
    })
}

fn trace_call(
    chain: &mut Chain,
    call: &CallObject,
    at: Option<BlockSpec>,
    options: Option<TracerOptions>,
) -> Result<Value> {
    let req = call.request(chain);
    let at = BlockSpec::resolve(at, chain)?;
    Ok(match TracerOptions::tracer(options)? {
        Tracer::Calls { only_top_call } => match chain.trace_call(&req, Some(at)) {
            Some(frame) => trace_json(frame, only_top_call),
            None => Value::Null,
        },
        Tracer::Opcodes(config) => json!(chain.struct_log_call(&req, Some(at), config)),
    })
}

fn send_raw_transaction(
    chain: &mut Chain,
    raw: &Bytes,
    recovered: Option<Recovered>,
) -> Result<Value> {
    let tx = match recovered {
        Some(tx) => tx,
        None => Recovered::new(decode_raw_transaction(raw)?),
    };
    check_cost_fits(chain, tx.envelope())?;
    Ok(json!(chain.send_recovered(tx)?))
}

/// A block (`full`: with its transactions' objects, else their hashes), or `null`.
fn block(view: &ChainView, b: Option<&Block>, full: Option<bool>) -> MethodResult {
    typed(&b.map(|b| block_view(view, b, full.unwrap_or(false))))
}

/// `hash` signed by dev account `a` (`r ‖ s ‖ v`); other accounts have no key here.
fn sign(a: alloy_primitives::Address, hash: B256) -> Result<MethodResult> {
    let account = crate::accounts::dev_account(a)
        .ok_or_else(|| RpcError::server(format!("no key for account {a}: not a dev account")))?;
    Ok(json!(alloy_primitives::Bytes::from(
        account.sign_hash(hash).to_vec()
    ))
    .into())
}

/// How many transactions block `b` has, `null` for an unknown block.
fn transaction_count(b: Option<&Block>) -> MethodResult {
    b.map_or(Value::Null, |b| quantity(b.transactions.len() as u64))
        .into()
}

/// Transaction `index` of block `b`, `null` for an unknown block or an index past its end.
fn transaction_at(view: &ChainView, b: Option<&Block>, index: u64) -> MethodResult {
    let tx = b
        .and_then(|b| b.transactions.get(usize::try_from(index).ok()?))
        .and_then(|h| view.transaction(*h));
    typed(&tx.map(|tx| TxView::mined(&tx)))
}

/// A block's receipts, `null` for an unknown block.
fn block_receipts(view: &ChainView, at: BlockSpec) -> MethodResult {
    let Some(b) = BlockSpec::block(Some(at), view) else {
        return Value::Null.into();
    };
    let txs: Vec<_> = b
        .transactions
        .iter()
        .filter_map(|h| view.transaction(*h))
        .collect();
    receipts_answer(txs.iter().map(|tx| tx.as_ref()))
}

fn get_logs(view: &ChainView, filter: &FilterSpec) -> Result<MethodResult> {
    let f = filter.resolve(view)?;
    // As geth (and the execution-apis tests): a range ending past the head is refused, so a
    // client behind a lagging node retries instead of taking `[]` for "no logs".
    if f.to_block.is_some_and(|to| to > view.block_number()) {
        return Err(RpcError::invalid_params(
            "block range extends beyond current head block",
        ));
    }
    logs_answer(view, &f)
}

fn filter_changes(chain: &mut Chain, Id(id): Id) -> Result<MethodResult> {
    match id.and_then(|id| chain.filter_changes(id)) {
        Some(FilterChanges::Blocks(hashes) | FilterChanges::Transactions(hashes)) => {
            Ok(json!(hashes).into())
        }
        Some(FilterChanges::Logs(logs)) => Ok(logs_raw(chain, &logs)),
        None => Err(filter_not_found()),
    }
}

fn filter_logs(chain: &Chain, Id(id): Id) -> Result<MethodResult> {
    match id.and_then(|id| chain.filter(id)) {
        Some(FilterKind::Logs(f)) => logs_answer(chain, &f.clone()),
        _ => Err(filter_not_found()),
    }
}

fn evm_mine(chain: &mut Chain, arg: Option<MineArg>) -> Result<Value> {
    if let Some(MineArg(Some(ts))) = arg {
        chain.set_next_timestamp(timestamp(0, ts)?);
    }
    chain.mine(1);
    Ok(json!("0x0"))
}

fn anvil_mine(
    chain: &mut Chain,
    blocks: Option<Quantity>,
    interval: Option<Quantity>,
) -> Result<()> {
    let n = blocks.map_or(1, |q| q.0);
    if n > MAX_MINE_BLOCKS {
        return Err(RpcError::invalid_params(format!(
            "invalid argument 0: at most {MAX_MINE_BLOCKS} blocks per call, got {n}"
        )));
    }
    let interval = interval.map(|q| q.0);
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
    Ok(())
}

fn increase_time(chain: &mut Chain, seconds: u64) -> Result<i64> {
    // `increase_time(0)` reads the current offset.
    let offset = chain.increase_time(0).unsigned_abs();
    if offset.saturating_add(seconds) > MAX_TIMESTAMP {
        return Err(RpcError::invalid_params(format!(
            "invalid argument 0: the clock offset would pass {MAX_TIMESTAMP} seconds"
        )));
    }
    Ok(chain.increase_time(seconds))
}

/// Timestamps beyond [`MAX_TIMESTAMP`] are refused (the chain adds to them).
fn timestamp(i: usize, ts: u64) -> Result<u64> {
    if ts > MAX_TIMESTAMP {
        return Err(RpcError::invalid_params(format!(
            "invalid argument {i}: timestamp {ts} is above {MAX_TIMESTAMP}"
        )));
    }
    Ok(ts)
}

/// Sender (lowercase, as anvil) → nonce (decimal) → transaction; no queue for future nonces.
fn txpool_content(chain: &Chain) -> Value {
    let mut pending = serde_json::Map::new();
    for (env, from) in chain.pool() {
        let by_nonce = pending
            .entry(format!("{from:#x}"))
            .or_insert_with(|| json!({}));
        by_nonce[env.nonce().to_string()] = json!(TxView::pending(env, from));
    }
    json!({ "pending": pending, "queued": {} })
}

/// [`crate::chain::decode_raw_transaction`] with its error as a JSON-RPC error (-32000). Pure:
/// the fuzz tests call it directly.
pub fn decode_raw_transaction(raw: &[u8]) -> Result<TxEnvelope, RpcError> {
    crate::chain::decode_raw_transaction(raw).map_err(Into::into)
}

/// `gas * maxFee + value` can exceed 256 bits (a huge `value`); the chain's U256 sum would
/// wrap around to a small cost and accept the transaction. Refuse it as geth does (its big
/// integers do not wrap): insufficient funds.
fn check_cost_fits(chain: &Chain, env: &TxEnvelope) -> Result<(), RpcError> {
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
fn send_transaction(chain: &mut Chain, call: &CallObject) -> Result<Value> {
    let Some(from) = call.from else {
        return Err(RpcError::invalid_params(
            "invalid argument 0: from: missing",
        ));
    };
    if !chain.may_send_as(from) {
        return Err(TxError::UnknownAccount.into());
    }
    let req = call.request(chain);
    let gas = match req.gas {
        Some(gas) => gas,
        None => chain
            .estimate_gas(&req, |_| {})
            .map_err(|out| RpcError::reverted(&out.output))?,
    };
    let tx = alloy_consensus::TxEip1559 {
        chain_id: chain.chain_id(),
        nonce: call.nonce.unwrap_or_else(|| chain.pending_nonce(from)),
        gas_limit: gas,
        max_fee_per_gas: u128::from(
            call.max_fee_per_gas
                .unwrap_or(chain.base_fee().saturating_mul(2)),
        ),
        max_priority_fee_per_gas: u128::from(call.max_priority_fee_per_gas.unwrap_or(0)),
        to: req.to.map_or(
            alloy_primitives::TxKind::Create,
            alloy_primitives::TxKind::Call,
        ),
        value: req.value,
        input: req.data,
        access_list: req.access_list,
    };
    Ok(json!(chain.send_as(from, tx)?))
}

fn fee_history(
    view: &ChainView,
    Quantity(count): Quantity,
    newest: BlockSpec,
    percentiles: Option<&[f64]>,
) -> Result<alloy_rpc_types_eth::FeeHistory> {
    let count = count.clamp(1, 1024);
    let newest = BlockSpec::resolve(Some(newest), view)?;
    let percentiles = percentiles.unwrap_or_default();
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
    let blocks: Vec<_> = (oldest..=newest)
        .map(|n| &view.block_by_number(n).expect("within range").header)
        .collect();
    Ok(alloy_rpc_types_eth::FeeHistory {
        oldest_block: oldest,
        // The constant base fee is also the next block's.
        base_fee_per_gas: blocks
            .iter()
            .map(|h| u128::from(h.base_fee_per_gas.unwrap_or_default()))
            .chain([u128::from(view.base_fee())])
            .collect(),
        gas_used_ratio: blocks
            .iter()
            .map(|h| h.gas_used as f64 / h.gas_limit as f64)
            .collect(),
        // Arbitrum has no tips to rank: every percentile is 0.
        reward: (!percentiles.is_empty())
            .then(|| blocks.iter().map(|_| vec![0; percentiles.len()]).collect()),
        ..Default::default()
    })
}

/// `eth_getLogs` (and `eth_getFilterLogs`) over the canonical chain.
fn logs_answer(view: &ChainView, f: &LogFilter) -> Result<MethodResult, RpcError> {
    if let Some(h) = f.block_hash {
        if view.block_by_hash(h).is_none() {
            return Err(RpcError::server("unknown block"));
        }
    }
    let latest = view.block_number();
    if let (Some(from), Some(to)) = (f.from_block, f.to_block) {
        if from > to && from <= latest {
            return Err(RpcError::invalid_params("invalid block range params"));
        }
    }
    Ok(logs_raw(view, &view.logs(f)))
}

fn filter_not_found() -> RpcError {
    RpcError::server("filter not found")
}

fn reorg_result(chain: &mut Chain, blocks: Vec<Vec<TxEnvelope>>) -> Result<ReorgOutcome, RpcError> {
    chain.reorg(blocks).map_err(|e| match e {
        ReorgError::Depth { .. } => RpcError::invalid_params(e.to_string()),
        ReorgError::NoHistory { .. } => RpcError::server(e.to_string()),
        ReorgError::Tx(t) => t.into(),
    })
}

/// `anvil_reorg [depth, [[rawTx, blockOffset], ...]]`.
fn anvil_reorg(chain: &mut Chain, depth: Quantity, txs: Vec<(Bytes, Quantity)>) -> Result<()> {
    let depth = reorg_depth(chain, depth)?;
    let mut blocks = vec![vec![]; depth as usize];
    for (raw, Quantity(offset)) in txs {
        if offset >= depth {
            return Err(RpcError::invalid_params(format!(
                "block offset {offset} must be below the depth {depth}"
            )));
        }
        blocks[offset as usize].push(decode_raw_transaction(&raw)?);
    }
    reorg_result(chain, blocks)?;
    Ok(())
}

/// `bursar_reorg {depth, drop, reorder}`: rebuilds the last `depth` blocks from their own
/// transactions minus `drop` (reversed within each block if `reorder`).
fn bursar_reorg(chain: &mut Chain, req: BursarReorg) -> Result<Value> {
    let depth = reorg_depth(chain, req.depth)?;
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

fn reorg_depth(chain: &Chain, Quantity(depth): Quantity) -> Result<u64> {
    if depth == 0 || depth > chain.block_number() {
        return Err(RpcError::invalid_params(format!(
            "reorg depth must be between 1 and the chain height {}, got {depth}",
            chain.block_number()
        )));
    }
    Ok(depth)
}
