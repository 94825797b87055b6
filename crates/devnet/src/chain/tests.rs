use super::*;
use crate::exec::DEFAULT_CHAIN_ID;
use alloy_consensus::{SignableTransaction, TxEip1559, TxLegacy};
use alloy_primitives::{Signature, TxKind};

fn sign<T: SignableTransaction<Signature>>(tx: T, key: usize) -> TxEnvelope
where
    TxEnvelope: From<alloy_consensus::Signed<T>>,
{
    let sk = dev_accounts()[key].signing_key();
    let (sig, recid) = sk
        .sign_prehash_recoverable(tx.signature_hash().as_slice())
        .unwrap();
    let sig = Signature::from_signature_and_parity(sig, recid.is_y_odd());
    tx.into_signed(sig).into()
}

#[test]
fn bloom_prefilter_never_skips_a_matching_block() {
    let (a, b) = (Address::repeat_byte(1), Address::repeat_byte(2));
    let (t1, t2) = (B256::repeat_byte(7), B256::repeat_byte(8));
    let mut bloom = Bloom::default();
    bloom.accrue(BloomInput::Raw(a.as_slice()));
    bloom.accrue(BloomInput::Raw(t1.as_slice()));
    let filter = |addresses: Vec<Address>, topics: Vec<Option<Vec<B256>>>| LogFilter {
        from_block: None,
        to_block: None,
        block_hash: None,
        addresses,
        topics,
    };
    assert!(filter(vec![], vec![]).may_match(&bloom));
    assert!(filter(vec![b, a], vec![None, Some(vec![t2, t1])]).may_match(&bloom));
    assert!(!filter(vec![b], vec![]).may_match(&bloom));
    assert!(!filter(vec![a], vec![Some(vec![t2])]).may_match(&bloom));
    assert!(!filter(vec![], vec![Some(vec![t1]), Some(vec![t2])]).may_match(&bloom));
}

fn transfer(nonce: u64, to: Address, value: u64) -> TxEip1559 {
    TxEip1559 {
        chain_id: DEFAULT_CHAIN_ID,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 2_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(to),
        value: U256::from(value),
        ..Default::default()
    }
}

#[test]
fn transfer_charges_fees_and_chains_blocks() {
    let mut chain = Chain::default();
    let a = dev_accounts()[0].address;
    let to = Address::repeat_byte(0x42);
    let before = chain.state().balance(a);
    let hash = chain.send_transaction(sign(transfer(0, to, 5), 0)).unwrap();
    let tx = chain.transaction(hash).unwrap();
    assert!(tx.receipt.status);
    assert_eq!(tx.receipt.gas_used, 21_000);
    // effective price = min(max fee, base fee + tip) = 0.1 + 1 gwei.
    assert_eq!(tx.receipt.effective_gas_price, 1_100_000_000);
    assert_eq!(chain.state().balance(to), U256::from(5));
    assert_eq!(
        chain.state().balance(a),
        before - U256::from(5) - U256::from(21_000u64 * 1_100_000_000)
    );
    assert_eq!(chain.block_number(), 1);
    assert_eq!(
        chain.latest_block().header.parent_hash,
        chain.blocks()[0].hash
    );
    assert_eq!(chain.state().nonce(a), 1);
}

#[test]
fn validation_errors() {
    let mut chain = Chain::default();
    let to = Address::repeat_byte(1);
    chain.send_transaction(sign(transfer(0, to, 1), 0)).unwrap();
    assert!(matches!(
        chain.send_transaction(sign(transfer(0, to, 2), 0)),
        Err(TxError::NonceTooLow { .. })
    ));
    assert!(matches!(
        chain.send_transaction(sign(transfer(5, to, 2), 0)),
        Err(TxError::NonceTooHigh { .. })
    ));
    let mut t = transfer(1, to, 1);
    t.chain_id = 1;
    assert!(matches!(
        chain.send_transaction(sign(t, 0)),
        Err(TxError::WrongChainId { .. })
    ));
    let mut t = transfer(1, to, 1);
    t.gas_limit = 20_000;
    assert!(matches!(
        chain.send_transaction(sign(t, 0)),
        Err(TxError::IntrinsicGasTooLow { .. })
    ));
    let mut t = transfer(1, to, 1);
    t.max_fee_per_gas = 1;
    t.max_priority_fee_per_gas = 1;
    assert!(matches!(
        chain.send_transaction(sign(t, 0)),
        Err(TxError::FeeCapTooLow { .. })
    ));
    let mut t = transfer(1, to, 1);
    t.gas_limit = 40_000_000;
    assert_eq!(
        chain.send_transaction(sign(t, 0)),
        Err(TxError::GasLimitExceeded)
    );
    let t = transfer(1, to, u64::MAX);
    chain.set_balance(dev_accounts()[0].address, U256::from(1_000u64));
    assert!(matches!(
        chain.send_transaction(sign(t, 0)),
        Err(TxError::InsufficientFunds { .. })
    ));
}

#[test]
fn legacy_eip155_and_manual_mining_and_snapshots() {
    let mut chain = Chain::default();
    chain.set_automine(false);
    let to = Address::repeat_byte(2);
    let legacy = TxLegacy {
        chain_id: Some(DEFAULT_CHAIN_ID),
        nonce: 0,
        gas_price: 1_000_000_000,
        gas_limit: 21_000,
        to: TxKind::Call(to),
        value: U256::from(7),
        input: Bytes::new(),
    };
    let snap = chain.snapshot();
    let h1 = chain.send_transaction(sign(legacy, 1)).unwrap();
    let h2 = chain.send_transaction(sign(transfer(1, to, 1), 1)).unwrap();
    assert!(chain.transaction(h1).is_none());
    chain.mine(1);
    let block = chain.latest_block().clone();
    assert_eq!(block.transactions, vec![h1, h2]);
    assert_eq!(
        chain.transaction(h2).unwrap().receipt.cumulative_gas_used,
        42_000
    );
    assert_eq!(chain.state().balance(to), U256::from(8));
    assert!(chain.revert_to(snap));
    assert_eq!(chain.block_number(), 0);
    assert_eq!(chain.state().balance(to), U256::ZERO);
    assert!(chain.transaction(h1).is_none());
    assert!(!chain.revert_to(snap), "a snapshot is used up by revert");
}

#[test]
fn access_lists_cost_intrinsic_gas_and_estimates_succeed() {
    use alloy_eips::eip2930::{AccessList, AccessListItem};
    let mut chain = Chain::default();
    let to = Address::repeat_byte(3);
    let tx = alloy_consensus::TxEip2930 {
        chain_id: DEFAULT_CHAIN_ID,
        nonce: 0,
        gas_price: 100_000_000,
        gas_limit: 21_000 + 2_400 + 1_900,
        to: TxKind::Call(to),
        value: U256::from(1),
        access_list: AccessList(vec![AccessListItem {
            address: to,
            storage_keys: vec![B256::ZERO],
        }]),
        input: Bytes::new(),
    };
    let mut short = tx.clone();
    short.gas_limit -= 1;
    assert_eq!(
        chain.send_transaction(sign(short, 2)),
        Err(TxError::IntrinsicGasTooLow {
            have: 25_299,
            want: 25_300
        })
    );
    let h = chain.send_transaction(sign(tx, 2)).unwrap();
    let r = &chain.transaction(h).unwrap().receipt;
    assert!(r.status);
    assert_eq!(r.gas_used, 25_300);
    // Base fee only: nothing for the coinbase.
    assert_eq!(chain.state().balance(Address::ZERO), U256::ZERO);

    let req = CallRequest {
        to: Some(to),
        data: Bytes::from(vec![1, 0]),
        ..Default::default()
    };
    assert_eq!(chain.estimate_gas(&req, |_| {}).unwrap(), 21_000 + 16 + 4);
}

#[test]
fn unrecoverable_signatures_are_refused() {
    let mut chain = Chain::default();
    let tx = transfer(0, Address::repeat_byte(1), 1);
    let bogus = Signature::new(U256::ZERO, U256::from(1), false);
    let env: TxEnvelope = tx.into_signed(bogus).into();
    assert!(matches!(
        chain.send_transaction(env),
        Err(TxError::InvalidSignature(_))
    ));
    assert!(matches!(
        chain.send_raw_transaction(&[0xc0]),
        Err(TxError::Decode(_))
    ));
}

#[test]
fn reorg_rewinds_state_history_and_records_events() {
    let mut chain = Chain::default();
    let to = Address::repeat_byte(9);
    let h1 = chain.send_transaction(sign(transfer(0, to, 1), 0)).unwrap();
    let h2 = chain.send_transaction(sign(transfer(1, to, 2), 0)).unwrap();
    let h3 = chain.send_transaction(sign(transfer(0, to, 4), 1)).unwrap();
    let old: Vec<B256> = chain.blocks().iter().map(|b| b.hash).collect();
    let filter = chain.new_filter(FilterKind::Blocks);
    let cursor = chain.event_count();
    // Replace blocks 2 and 3 with: block 2 = [h3], block 3 = [h2] — h2 still valid.
    let e2 = chain.transaction(h2).unwrap().envelope.clone();
    let e3 = chain.transaction(h3).unwrap().envelope.clone();
    let out = chain.reorg(vec![vec![e3], vec![e2]]).unwrap();
    assert!(out.excluded.is_empty());
    assert_eq!(chain.block_number(), 3);
    assert_eq!(chain.blocks()[1].hash, old[1]);
    assert_ne!(chain.blocks()[2].hash, old[2]);
    assert_eq!(chain.blocks()[2].header.parent_hash, old[1]);
    assert_eq!(chain.transaction(h1).unwrap().block_number, 1);
    assert_eq!(chain.transaction(h3).unwrap().block_number, 2);
    assert_eq!(chain.transaction(h2).unwrap().block_number, 3);
    assert_eq!(chain.state_at(1).unwrap().balance(to), U256::from(1));
    assert_eq!(chain.state_at(2).unwrap().balance(to), U256::from(5));
    assert_eq!(chain.state().balance(to), U256::from(7));
    let evs = chain.events_since(cursor);
    assert_eq!(
        evs.iter()
            .map(|e| (e.block.number(), e.removed))
            .collect::<Vec<_>>(),
        vec![(3, true), (2, true), (2, false), (3, false)]
    );
    let Some(FilterChanges::Blocks(hashes)) = chain.filter_changes(filter) else {
        panic!("block filter");
    };
    assert_eq!(hashes, out.blocks);
    // Dropping h1 makes h2 (same sender, next nonce) invalid: excluded.
    let e2 = chain.transaction(h2).unwrap().envelope.clone();
    let out = chain.reorg(vec![vec![], vec![], vec![e2]]).unwrap();
    assert_eq!(out.excluded, vec![h2]);
    assert!(chain.transaction(h1).is_none());
    assert_eq!(chain.state().balance(to), U256::ZERO);
    assert!(matches!(
        chain.reorg(vec![vec![]; 4]),
        Err(ReorgError::Depth { depth: 4, head: 3 })
    ));
}

#[test]
fn filters_not_polled_within_the_timeout_are_uninstalled() {
    // A zero timeout: every filter has expired by the time it is next touched.
    let mut chain = Chain::new(ChainConfig {
        filter_timeout: std::time::Duration::ZERO,
        ..ChainConfig::default()
    });
    let id = chain.new_filter(FilterKind::Blocks);
    assert!(chain.filter(id).is_none());
    assert!(chain.filter_changes(id).is_none());
    assert!(!chain.uninstall_filter(id), "already gone");

    // The default (5 minutes): polled at once, it lives, and each poll restarts the clock.
    let mut chain = Chain::new(ChainConfig::default());
    let id = chain.new_filter(FilterKind::Blocks);
    chain.mine(1);
    assert!(matches!(chain.filter_changes(id), Some(FilterChanges::Blocks(b)) if b.len() == 1));
    assert!(chain.filter(id).is_some());
    assert!(chain.uninstall_filter(id));
}

#[test]
fn snapshot_revert_reports_removed_blocks() {
    let mut chain = Chain::default();
    let snap = chain.snapshot();
    chain.mine(2);
    let cursor = chain.event_count();
    assert!(chain.revert_to(snap));
    let evs = chain.events_since(cursor);
    assert_eq!(
        evs.iter()
            .map(|e| (e.block.number(), e.removed))
            .collect::<Vec<_>>(),
        vec![(2, true), (1, true)]
    );
}

#[test]
fn time_controls() {
    let mut chain = Chain::default();
    chain.set_next_timestamp(2_000_000_000);
    chain.mine(1);
    assert_eq!(chain.latest_block().header.timestamp, 2_000_000_000);
    chain.mine(1);
    // The clock has not reached it: the next block shares its second, as on Arbitrum.
    assert_eq!(chain.latest_block().header.timestamp, 2_000_000_000);
    chain.increase_time(100_000_000_000);
    chain.mine(1);
    assert!(chain.latest_block().header.timestamp >= now() + 100_000_000_000 - 10);
}

#[test]
fn a_burst_of_blocks_keeps_the_wall_clock() {
    let mut chain = Chain::default();
    let start = now();
    let mut times = Vec::new();
    for _ in 0..200 {
        chain.mine(1);
        times.push(chain.latest_block().header.timestamp);
    }
    // Never behind the parent; within a second of the wall clock however many blocks.
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(times[0] >= start);
    assert!(*times.last().unwrap() <= now() + 1, "{times:?}");
    assert!(
        times.windows(2).any(|w| w[0] == w[1]),
        "blocks share a second"
    );
}

#[test]
fn recover_puts_the_executor_back_on_the_head_after_a_panic() {
    let mut chain = Chain::default();
    let who = Address::repeat_byte(9);
    // A panic inside a simulation leaves the executor on the simulated state...
    let mut simulated = chain.state().clone();
    simulated.set_balance(who, U256::from(5));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        chain.on_state(simulated, |_| {}, |_| panic!("a devnet bug"))
    }));
    assert!(panicked.is_err());
    assert_eq!(chain.state().balance(who), U256::from(5));
    // ...until it recovers: the head's state, and transactions run again.
    chain.recover();
    assert_eq!(chain.state().balance(who), U256::ZERO);
    chain
        .send_transaction(sign(transfer(0, who, 7), 0))
        .unwrap();
    assert_eq!(chain.state().balance(who), U256::from(7));
    assert_eq!(chain.block_number(), 1);
}
