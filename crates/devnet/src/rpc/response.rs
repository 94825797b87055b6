//! Responses: blocks, transactions, receipts and logs as JSON-RPC returns them.

use alloy_consensus::transaction::Recovered;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_primitives::{Address, Bloom, Bytes, B256, U128, U256, U64, U8};
use alloy_rpc_types_eth::{
    Block as RpcBlock, BlockTransactions, Header as RpcHeader, Transaction as RpcTransaction,
};
use serde::Serialize;
use serde_json::Value;

use crate::chain::{Block, ChainLog, ChainView, MinedTx, ReceiptLog};

use super::envelope::{raw, MethodResult};

pub(super) fn quantity(n: impl Into<u128>) -> Value {
    Value::String(format!("{:#x}", n.into()))
}

pub(super) fn quantity_u256(n: U256) -> Value {
    Value::String(format!("{n:#x}"))
}

pub(super) fn trace_json(mut frame: crate::trace::CallFrame, only_top: bool) -> Value {
    if only_top {
        frame.calls.clear();
    }
    serde_json::to_value(frame).expect("a call frame serializes")
}

/// A transaction as JSON-RPC returns it: alloy's type (block fields `null` while pending),
/// plus, once mined, its block's `blockTimestamp` (geth ≥ 1.16 and anvil add it).
#[derive(Clone, Serialize)]
pub(super) struct TxView {
    #[serde(flatten)]
    tx: RpcTransaction,
    #[serde(rename = "blockTimestamp", skip_serializing_if = "Option::is_none")]
    block_timestamp: Option<U64>,
}

impl TxView {
    pub(super) fn mined(tx: &MinedTx) -> Self {
        TxView {
            tx: RpcTransaction {
                inner: Recovered::new_unchecked(tx.envelope.clone(), tx.from),
                block_hash: Some(tx.block_hash),
                block_number: Some(tx.block_number),
                transaction_index: Some(tx.index),
                effective_gas_price: Some(tx.receipt.effective_gas_price),
            },
            block_timestamp: Some(U64::from(tx.block_timestamp)),
        }
    }

    /// A transaction still in the pool (its `gasPrice` is its fee cap, as anvil shows it).
    pub(super) fn pending(env: &TxEnvelope, from: Address) -> Self {
        TxView {
            tx: RpcTransaction {
                inner: Recovered::new_unchecked(env.clone(), from),
                block_hash: None,
                block_number: None,
                transaction_index: None,
                effective_gas_price: Some(env.max_fee_per_gas()),
            },
            block_timestamp: None,
        }
    }
}

/// A block's header as JSON-RPC returns it (and `newHeads` notifies it).
pub(super) fn header_view(b: &Block) -> RpcHeader {
    RpcHeader {
        hash: b.hash,
        inner: b.header.clone(),
        total_difficulty: Some(U256::ZERO),
        size: Some(U256::from(alloy_rlp::Encodable::length(&b.header))),
    }
}

/// A block with its transactions' hashes, or (`full`) their objects.
pub(super) fn block_view(chain: &ChainView, b: &Block, full: bool) -> RpcBlock<TxView> {
    let transactions = if full {
        BlockTransactions::Full(
            b.transactions
                .iter()
                .filter_map(|h| chain.transaction(*h).map(|tx| TxView::mined(&tx)))
                .collect(),
        )
    } else {
        BlockTransactions::Hashes(b.transactions.clone())
    };
    RpcBlock {
        header: header_view(b),
        uncles: vec![],
        transactions,
        withdrawals: None,
    }
}

/// The timestamp of block `hash` (number `number`), if the chain still knows it.
fn block_timestamp(chain: &ChainView, hash: B256, number: u64) -> Option<u64> {
    chain
        .block_by_number(number)
        .filter(|b| b.hash == hash)
        .or_else(|| chain.block_by_hash(hash))
        .map(|b| b.header.timestamp)
}

/// Typed data as a method's answer.
pub(super) fn typed(v: &impl Serialize) -> MethodResult {
    MethodResult::Raw(raw(v))
}

/// A receipt as JSON-RPC returns it. It needs nothing but the transaction, so it can be
/// answered without the chain (see `receipt_unlocked` in the server).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReceiptView<'a> {
    block_timestamp: U64,
    transaction_hash: B256,
    transaction_index: U64,
    block_hash: B256,
    block_number: U64,
    from: Address,
    to: Option<Address>,
    cumulative_gas_used: U64,
    gas_used: U64,
    effective_gas_price: U128,
    contract_address: Option<Address>,
    logs: Vec<LogView<'a>>,
    logs_bloom: &'a Bloom,
    status: U8,
    #[serde(rename = "type")]
    tx_type: U8,
}

impl<'a> ReceiptView<'a> {
    pub(super) fn new(tx: &'a MinedTx) -> Self {
        let r = &tx.receipt;
        ReceiptView {
            block_timestamp: U64::from(tx.block_timestamp),
            transaction_hash: tx.hash,
            transaction_index: U64::from(tx.index),
            block_hash: tx.block_hash,
            block_number: U64::from(tx.block_number),
            from: tx.from,
            to: tx.envelope.to(),
            cumulative_gas_used: U64::from(r.cumulative_gas_used),
            gas_used: U64::from(r.gas_used),
            effective_gas_price: U128::from(r.effective_gas_price),
            contract_address: r.contract_address,
            logs: r.logs.iter().map(|l| LogView::in_receipt(tx, l)).collect(),
            logs_bloom: &r.logs_bloom,
            status: U8::from(u8::from(r.status)),
            tx_type: U8::from(tx.envelope.tx_type() as u8),
        }
    }
}

/// The receipts of `txs` (one transaction: `Some`, or `null` for none), as JSON text.
pub(super) fn receipts_answer<'a>(txs: impl IntoIterator<Item = &'a MinedTx>) -> MethodResult {
    let views: Vec<ReceiptView<'_>> = txs.into_iter().map(ReceiptView::new).collect();
    MethodResult::Raw(raw(&views))
}

/// The receipt of `tx`, or `null`, as JSON text.
pub(super) fn receipt_answer(tx: Option<&MinedTx>) -> MethodResult {
    MethodResult::Raw(raw(&tx.map(ReceiptView::new)))
}

pub(super) fn logs_raw(chain: &ChainView, logs: &[ChainLog]) -> MethodResult {
    let views: Vec<LogView<'_>> = logs.iter().map(|l| LogView::new(chain, l)).collect();
    MethodResult::Raw(raw(&views))
}

/// A log as JSON-RPC returns it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogView<'a> {
    address: Address,
    topics: &'a [B256],
    data: &'a Bytes,
    block_hash: B256,
    block_number: U64,
    /// Absent for a log of a block dropped by `evm_revert` (its block is no longer known).
    #[serde(skip_serializing_if = "Option::is_none")]
    block_timestamp: Option<U64>,
    transaction_hash: B256,
    transaction_index: U64,
    log_index: U64,
    removed: bool,
}

impl<'a> LogView<'a> {
    /// A log of a mined transaction's receipt.
    fn in_receipt(tx: &MinedTx, l: &'a ReceiptLog) -> Self {
        LogView {
            address: l.log.address,
            topics: &l.log.topics,
            data: &l.log.data,
            block_hash: tx.block_hash,
            block_number: U64::from(tx.block_number),
            block_timestamp: Some(U64::from(tx.block_timestamp)),
            transaction_hash: tx.hash,
            transaction_index: U64::from(tx.index),
            log_index: U64::from(l.log_index),
            removed: false,
        }
    }

    pub(super) fn new(chain: &ChainView, l: &'a ChainLog) -> Self {
        LogView {
            address: l.log.address,
            topics: &l.log.topics,
            data: &l.log.data,
            block_hash: l.block_hash,
            block_number: U64::from(l.block_number),
            block_timestamp: block_timestamp(chain, l.block_hash, l.block_number).map(U64::from),
            transaction_hash: l.tx_hash,
            transaction_index: U64::from(l.tx_index),
            log_index: U64::from(l.log_index),
            removed: l.removed,
        }
    }
}
