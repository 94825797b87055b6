//! Responses: blocks, transactions, receipts and logs as JSON-RPC returns them.

use alloy_consensus::{Transaction, TxEnvelope};
use alloy_primitives::{Address, Bloom, Bytes, B256, U128, U256, U64, U8};
use serde::Serialize;
use serde_json::{json, Value};

use crate::chain::{Block, Chain, ChainLog, MinedTx, ReceiptLog};

use super::server::{raw, Answer};

pub(super) fn q(n: impl Into<u128>) -> Value {
    Value::String(format!("{:#x}", n.into()))
}

pub(super) fn qu(n: U256) -> Value {
    Value::String(format!("{n:#x}"))
}

pub(super) fn trace_json(mut frame: crate::trace::CallFrame, only_top: bool) -> Value {
    if only_top {
        frame.calls.clear();
    }
    serde_json::to_value(frame).expect("a call frame serializes")
}

/// A mined transaction (geth ≥ 1.16 and anvil add its block's `blockTimestamp`).
pub(super) fn tx_json(tx: &MinedTx) -> Value {
    let mut v = envelope_json(
        &tx.envelope,
        tx.from,
        Some(tx),
        tx.receipt.effective_gas_price,
    );
    v["blockTimestamp"] = q(tx.block_timestamp);
    v
}

/// The timestamp of block `hash` (number `number`), if the chain still knows it.
pub(super) fn block_timestamp(chain: &Chain, hash: B256, number: u64) -> Option<u64> {
    chain
        .block_by_number(number)
        .filter(|b| b.hash == hash)
        .or_else(|| chain.block_by_hash(hash))
        .map(|b| b.header.timestamp)
}

/// A transaction object; block fields are `null` while it is pending.
pub(super) fn envelope_json(
    env: &TxEnvelope,
    from: Address,
    mined: Option<&MinedTx>,
    price: u128,
) -> Value {
    let sig = env.signature();
    let mut v = json!({
        "hash": env.tx_hash(),
        "nonce": q(env.nonce()),
        "blockHash": mined.map(|t| t.block_hash),
        "blockNumber": mined.map(|t| q(t.block_number)),
        "transactionIndex": mined.map(|t| q(t.index)),
        "from": from,
        "to": env.to(),
        "value": qu(env.value()),
        "gas": q(env.gas_limit()),
        "input": env.input(),
        "r": qu(sig.r()),
        "s": qu(sig.s()),
        "type": q(env.tx_type() as u8),
        "gasPrice": q(price),
    });
    match env {
        TxEnvelope::Legacy(t) => {
            v["v"] = q(alloy_consensus::transaction::to_eip155_value(
                sig.v(),
                t.tx().chain_id,
            ));
            if let Some(id) = t.tx().chain_id {
                v["chainId"] = q(id);
            }
        }
        _ => {
            v["v"] = q(u8::from(sig.v()));
            v["yParity"] = q(u8::from(sig.v()));
            v["chainId"] = q(env.chain_id().unwrap_or_default());
            v["accessList"] = json!(env.access_list().map(|l| l.0.clone()).unwrap_or_default());
            if env.is_dynamic_fee() {
                v["maxFeePerGas"] = q(env.max_fee_per_gas());
                v["maxPriorityFeePerGas"] = q(env.max_priority_fee_per_gas().unwrap_or_default());
            }
        }
    }
    v
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
pub(super) fn receipts_answer<'a>(txs: impl IntoIterator<Item = &'a MinedTx>) -> Answer {
    let views: Vec<ReceiptView<'_>> = txs.into_iter().map(ReceiptView::new).collect();
    Answer::Raw(raw(&views))
}

/// The receipt of `tx`, or `null`, as JSON text.
pub(super) fn receipt_answer(tx: Option<&MinedTx>) -> Answer {
    Answer::Raw(raw(&tx.map(ReceiptView::new)))
}

pub(super) fn block_json(chain: &Chain, b: &Block, full: bool) -> Value {
    let h = &b.header;
    let txs: Vec<Value> = if full {
        b.transactions
            .iter()
            .filter_map(|t| chain.transaction(*t).map(|tx| tx_json(&tx)))
            .collect()
    } else {
        b.transactions.iter().map(|t| json!(t)).collect()
    };
    json!({
        "number": q(h.number),
        "hash": b.hash,
        "parentHash": h.parent_hash,
        "nonce": h.nonce,
        "sha3Uncles": h.ommers_hash,
        "logsBloom": h.logs_bloom,
        "transactionsRoot": h.transactions_root,
        "stateRoot": h.state_root,
        "receiptsRoot": h.receipts_root,
        "miner": h.beneficiary,
        "difficulty": qu(h.difficulty),
        "totalDifficulty": "0x0",
        "extraData": h.extra_data,
        "size": q(alloy_rlp::Encodable::length(h) as u64),
        "gasLimit": q(h.gas_limit),
        "gasUsed": q(h.gas_used),
        "timestamp": q(h.timestamp),
        "baseFeePerGas": q(h.base_fee_per_gas.unwrap_or_default()),
        "mixHash": h.mix_hash,
        "transactions": txs,
        "uncles": [],
    })
}

pub(super) fn logs_raw(chain: &Chain, logs: &[ChainLog]) -> Answer {
    let views: Vec<LogView<'_>> = logs.iter().map(|l| LogView::new(chain, l)).collect();
    Answer::Raw(raw(&views))
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

    pub(super) fn new(chain: &Chain, l: &'a ChainLog) -> Self {
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
