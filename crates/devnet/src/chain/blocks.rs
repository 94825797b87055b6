//! Building blocks: executing pooled transactions, sealing, and forgetting old ones
//! (`transaction_block_keeper`).

use super::*;

impl Chain {
    /// Mines `n` blocks; the first takes every pooled transaction (the pool holds only
    /// transactions that passed validation, so none is dropped unless a sender's balance
    /// changed meanwhile — such a transaction is then skipped).
    pub fn mine(&mut self, n: u64) {
        for _ in 0..n {
            let number = self.block_number() + 1;
            let ts = self.next_block_timestamp();
            // A copy: should building panic (a devnet bug), the pool and the next timestamp
            // stay as they were (see `Chain::recover`).
            let pending = self.pending.clone();
            // Those that do not fit wait for the next block.
            let (leftover, _) = self.build_block(number, ts, pending, Bytes::new());
            self.pending = leftover;
            self.next_timestamp = None;
        }
        self.publish();
    }

    /// Lets `BLOCKHASH` and `ArbSys.arbBlockHash` read the canonical blocks (an O(1) copy of the
    /// persistent block list).
    pub(super) fn install_block_hashes(&mut self) {
        let blocks = self.view.blocks.clone();
        self.exec.set_block_hashes(std::sync::Arc::new(move |n| {
            blocks.get(usize::try_from(n).ok()?).map(|b| b.hash)
        }));
    }

    /// Executes `txs` in order as block `number` (skipping those whose sender can no longer
    /// pay or whose nonce is stale) and seals it. Returns the transactions that did not fit
    /// and the hashes of those skipped.
    pub(super) fn build_block(
        &mut self,
        number: u64,
        ts: u64,
        txs: Vec<PendingTx>,
        extra_data: Bytes,
    ) -> (Vec<PendingTx>, Vec<B256>) {
        {
            let b = self.exec.block_mut();
            b.number = number;
            b.timestamp = ts;
            b.basefee = U256::from(self.view.config.base_fee);
            b.gas_limit = self.view.config.block_gas_limit;
        }
        self.install_block_hashes();
        self.exec.begin_block();
        let mut leftover = Vec::new();
        let mut skipped = Vec::new();
        let mut mined = Vec::new();
        let mut cumulative = 0u64;
        let mut log_index = 0u64;
        // Senders with a transaction held back: their later nonces wait too.
        let mut held = std::collections::HashSet::new();
        for tx in txs {
            // Too big for what is left of the block, or priced below a base fee raised since it
            // was pooled: it waits in the pool.
            if cumulative + tx.envelope.gas_limit() > self.view.config.block_gas_limit
                || tx.envelope.max_fee_per_gas() < u128::from(self.view.config.base_fee)
                || held.contains(&tx.from)
            {
                held.insert(tx.from);
                leftover.push(tx);
                continue;
            }
            let Some(mut receipt) = self.execute(&tx) else {
                skipped.push(tx.hash);
                continue;
            };
            cumulative += receipt.gas_used;
            receipt.cumulative_gas_used = cumulative;
            for l in &mut receipt.logs {
                l.log_index = log_index;
                log_index += 1;
            }
            mined.push((tx, receipt));
        }
        self.seal_block(number, ts, mined, extra_data);
        (leftover, skipped)
    }

    /// Builds the header for `number`, records the block and its transactions.
    pub(super) fn seal_block(
        &mut self,
        number: u64,
        timestamp: u64,
        mined: Vec<(PendingTx, Receipt)>,
        extra_data: Bytes,
    ) {
        let parent_hash = self.view.blocks.last().map_or(B256::ZERO, |b| b.hash);
        let mut bloom = Bloom::default();
        let mut tx_hashes = Vec::new();
        let mut receipt_bytes = Vec::new();
        for (tx, r) in &mined {
            bloom.accrue_bloom(&r.logs_bloom);
            tx_hashes.extend_from_slice(tx.hash.as_slice());
            receipt_bytes.push(u8::from(r.status));
            receipt_bytes.extend_from_slice(r.logs_bloom.as_slice());
        }
        let gas_used = mined.last().map_or(0, |(_, r)| r.cumulative_gas_used);
        let header = Header {
            parent_hash,
            ommers_hash: alloy_consensus::EMPTY_OMMER_ROOT_HASH,
            beneficiary: self.exec.block().coinbase,
            state_root: B256::ZERO,
            transactions_root: if mined.is_empty() {
                alloy_consensus::EMPTY_ROOT_HASH
            } else {
                keccak256(&tx_hashes)
            },
            receipts_root: if mined.is_empty() {
                alloy_consensus::EMPTY_ROOT_HASH
            } else {
                keccak256(&receipt_bytes)
            },
            logs_bloom: bloom,
            difficulty: U256::ZERO,
            number,
            gas_limit: self.view.config.block_gas_limit,
            gas_used,
            timestamp,
            extra_data,
            mix_hash: B256::ZERO,
            nonce: Default::default(),
            base_fee_per_gas: Some(self.view.config.base_fee),
            ..Default::default()
        };
        let hash = header.hash_slow();
        let mut transactions = Vec::new();
        for (index, (tx, receipt)) in mined.into_iter().enumerate() {
            transactions.push(tx.hash);
            self.view.txs.insert(Arc::new(MinedTx {
                envelope: tx.envelope,
                hash: tx.hash,
                from: tx.from,
                block_number: number,
                block_hash: hash,
                block_timestamp: timestamp,
                index: index as u64,
                receipt,
            }));
        }
        let block = Block {
            header,
            hash,
            transactions,
        };
        self.view.blocks.push_back(block.clone());
        let keep = self.view.config.prune_history;
        self.view.history.push(self.exec.state().clone(), keep);
        self.record(block, false);
        self.forget_old_transactions();
    }

    /// With `transaction_block_keeper` N: forgets the transactions (receipts and logs with
    /// them) of the block that just fell out of the last N, and chain events older than about
    /// 2N. Headers stay, so numbers, hashes and timestamps still answer.
    pub(super) fn forget_old_transactions(&mut self) {
        let Some(keep) = self.view.config.transaction_block_keeper else {
            return;
        };
        let keep = keep.max(1);
        let Some(old) = self.block_number().checked_sub(keep) else {
            return;
        };
        if let Some(block) = self.view.blocks.get_mut(old as usize) {
            for hash in std::mem::take(&mut block.transactions) {
                self.view.txs.remove(&hash);
            }
        }
        // Postings of forgotten logs find nothing; drop them now and then, not every block.
        if old % 256 == 0 {
            self.view.log_index.forget_before(old + 1);
        }
        let keep_events = usize::try_from(keep).unwrap_or(usize::MAX);
        if self.events.len() / 2 > keep_events {
            let drop = self.events.len() - keep_events;
            self.events.drain(..drop);
            self.events_base += drop;
        }
    }

    /// Executes a validated transaction in the current block environment: buys gas, runs the
    /// message, refunds (capped at gas_used / 5, EIP-3529), burns the base fee and pays the tip
    /// to the coinbase. `None` if the sender can no longer pay.
    pub(super) fn execute(&mut self, tx: &PendingTx) -> Option<Receipt> {
        let env = &tx.envelope;
        // The block being built's (or replayed's) base fee.
        let base_fee: u64 = self.exec.block().basefee.saturating_to();
        let price = env.effective_gas_price(Some(base_fee));
        let gas_limit = env.gas_limit();
        let state = self.exec.state_mut();
        let upfront = U256::from(gas_limit) * U256::from(price);
        let balance = state.balance(tx.from);
        if balance < upfront + env.value() || state.nonce(tx.from) != env.nonce() {
            return None;
        }
        state.set_balance(tx.from, balance - upfront);
        let tx_env = self.exec.tx_env_mut();
        tx_env.gas_price = U256::from(price);
        tx_env.access_list = env.access_list().cloned().unwrap_or_default();
        let intrinsic = intrinsic_gas(env);
        let gas = gas_limit - intrinsic;

        let (success, output, exec_gas, refund, logs, contract) = match env.to() {
            None => {
                // `Executor::create` bumps the nonce itself.
                let out = self.exec.create(tx.from, env.value(), env.input(), gas);
                let ok = out.address.is_some();
                // As geth: the address is reported whether or not the creation succeeded.
                let contract = tx.from.create(env.nonce());
                let (refund, logs) = (out.gas_refund, out.logs);
                (
                    ok,
                    out.revert_data,
                    out.gas_used,
                    refund,
                    logs,
                    Some(contract),
                )
            }
            Some(to) => {
                self.exec.state_mut().increment_nonce(tx.from);
                let r = self
                    .exec
                    .call(tx.from, to, env.value(), env.input(), gas, false);
                (
                    r.success,
                    r.return_data,
                    r.gas_used,
                    r.gas_refund,
                    r.logs,
                    None,
                )
            }
        };
        let used = intrinsic + exec_gas;
        let gas_used = used - refund.min(used / 5);
        let state = self.exec.state_mut();
        let back = U256::from(gas_limit - gas_used) * U256::from(price);
        let b = state.balance(tx.from);
        state.set_balance(tx.from, b + back);
        // The base fee is burnt; only the tip reaches the coinbase.
        let tip = U256::from(gas_used) * U256::from(price - u128::from(base_fee));
        let coinbase = self.exec.block().coinbase;
        if !tip.is_zero() {
            let state = self.exec.state_mut();
            let c = state.balance(coinbase);
            state.set_balance(coinbase, c + tip);
        }
        let mut logs_bloom = Bloom::default();
        for log in &logs {
            logs_bloom.accrue(BloomInput::Raw(log.address.as_slice()));
            for t in &log.topics {
                logs_bloom.accrue(BloomInput::Raw(t.as_slice()));
            }
        }
        Some(Receipt {
            status: success,
            cumulative_gas_used: 0,
            gas_used,
            effective_gas_price: price,
            logs: logs
                .into_iter()
                .map(|log| ReceiptLog { log, log_index: 0 })
                .collect(),
            logs_bloom,
            contract_address: contract,
            revert_data: if success { Bytes::new() } else { output },
        })
    }
}
