//! Reorgs on demand (`anvil_reorg`, `bursar_reorg`).

use super::*;

impl Chain {
    /// Replaces the last `blocks.len()` blocks with new ones: block `i` of the replacement
    /// executes `blocks[i]` in order against the state after the fork point. Removed blocks'
    /// logs are reported to filters/subscribers as removed, then the new blocks as added. Transactions of the old blocks not given again are gone (not
    /// returned to the pool); pool transactions included in the new blocks leave the pool.
    pub fn reorg(&mut self, blocks: Vec<Vec<TxEnvelope>>) -> Result<ReorgOutcome, ReorgError> {
        let depth = blocks.len() as u64;
        let head = self.block_number();
        if depth == 0 || depth > head {
            return Err(ReorgError::Depth { depth, head });
        }
        let fork = head - depth;
        let Some(fork_state) = self.view.history.get(fork).cloned() else {
            return Err(ReorgError::NoHistory {
                fork,
                first: self.view.history.first,
            });
        };
        let mut plan = Vec::with_capacity(blocks.len());
        for txs in blocks {
            let mut b = Vec::with_capacity(txs.len());
            for envelope in txs {
                // Impersonated transactions have no recoverable sender: use the known one.
                let from = match self.view.txs.get(envelope.tx_hash()) {
                    Some(mined) => mined.from,
                    None => envelope
                        .recover_signer()
                        .map_err(|e| TxError::InvalidSignature(e.to_string()))?,
                };
                b.push(PendingTx {
                    hash: *envelope.tx_hash(),
                    envelope,
                    from,
                });
            }
            plan.push(b);
        }
        for n in (fork + 1..=head).rev() {
            let block = self.view.blocks[n as usize].clone();
            self.record(block, true);
        }
        let old = self.view.blocks.split_off(fork as usize + 1);
        for b in &old {
            for h in &b.transactions {
                self.view.txs.remove(h);
            }
        }
        self.view.history.truncate_after(fork);
        *self.exec.state_mut() = fork_state;
        self.reorgs += 1;
        let extra = Bytes::from(format!("bursar-reorg-{}", self.reorgs).into_bytes());
        let mut out = ReorgOutcome::default();
        for (old_block, txs) in old.iter().zip(plan) {
            let number = self.block_number() + 1;
            // The replaced block's time, never behind the new parent's (see `chain::time`).
            let ts = old_block
                .header
                .timestamp
                .max(self.latest_block().header.timestamp);
            let (leftover, skipped) = self.build_block(number, ts, txs, extra.clone());
            out.blocks.push(self.latest_block().hash);
            out.excluded.extend(skipped);
            out.excluded.extend(leftover.into_iter().map(|t| t.hash));
        }
        let txs = &self.view.txs;
        self.pending.retain(|p| !txs.contains(&p.hash));
        self.publish();
        Ok(out)
    }

    /// The transactions of block `number` (in order).
    pub fn block_envelopes(&self, number: u64) -> Vec<TxEnvelope> {
        self.block_by_number(number)
            .map(|b| {
                b.transactions
                    .iter()
                    .filter_map(|h| self.view.txs.get(h).map(|t| t.envelope.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}
