//! Dev controls: automine and interval mining, the next base fee, account cheats
//! (`anvil_set*`), snapshots and reverts.

use super::*;

impl Chain {
    /// Sets the base fee of the next block and the ones after it
    /// (`anvil_setNextBlockBaseFeePerGas`; the devnet's base fee does not adjust by itself).
    /// Pooled transactions that no longer pay it wait in the pool.
    pub fn set_next_block_base_fee(&mut self, base_fee: u64) {
        self.view.config.base_fee = base_fee;
        self.publish();
    }

    /// Whether automine is on (a block mined for every transaction).
    pub fn automine(&self) -> bool {
        self.automine
    }

    /// Sets a storage slot directly (`anvil_setStorageAt`), bypassing execution.
    pub fn set_automine(&mut self, on: bool) {
        self.automine = on;
    }

    /// The interval-mining period, if on.
    pub fn interval_mining(&self) -> Option<std::time::Duration> {
        self.interval_mining
    }

    /// Turns interval mining on (every `period`, automine off, as anvil's `--block-time`) or
    /// off (`None`). The miner task of [`crate::miner`] does the mining.
    pub fn set_interval_mining(&mut self, period: Option<std::time::Duration>) {
        if period.is_some() {
            self.automine = false;
        }
        self.interval_mining = period;
        if let Some(hook) = &self.on_interval {
            hook(period);
        }
    }

    /// Registers the callback [`Chain::set_interval_mining`] calls (the miner task's wake-up).
    pub fn set_interval_hook(
        &mut self,
        hook: impl Fn(Option<std::time::Duration>) + Send + 'static,
    ) {
        self.on_interval = Some(Box::new(hook));
    }

    /// Sets an account's nonce in the current state (`anvil_setNonce`).
    pub fn set_nonce(&mut self, address: Address, nonce: u64) {
        self.exec.state_mut().set_nonce(address, nonce);
        self.publish_head_state();
    }

    /// Sets an account's code in the current state (`anvil_setCode`); a Stylus program still
    /// needs activating.
    pub fn set_code(&mut self, address: Address, code: Bytes) {
        self.exec.state_mut().set_code(address, code);
        self.publish_head_state();
    }

    /// Sets one storage slot in the current state (`anvil_setStorageAt`).
    pub fn set_storage(&mut self, address: Address, slot: B256, value: B256) {
        self.exec.state_mut().set_storage(address, slot, value);
        self.publish_head_state();
    }

    /// Turns automine on or off (`evm_setAutomine`).
    pub fn set_balance(&mut self, address: Address, balance: U256) {
        self.exec.state_mut().set_balance(address, balance);
        self.publish_head_state();
    }

    /// Saves the whole chain; returns the snapshot id (`evm_snapshot`).
    pub fn snapshot(&mut self) -> u64 {
        self.snapshots.push(Some(Snapshot {
            state: self.exec.state().clone(),
            block_env: self.exec.block().clone(),
            blocks: self.view.blocks.clone(),
            history: self.view.history.clone(),
            txs: self.view.txs.copy(),
            pending: self.pending.clone(),
            time_offset: self.time_offset,
            next_timestamp: self.next_timestamp,
        }));
        self.snapshots.len() as u64 - 1
    }

    /// Restores snapshot `id`; later snapshots are dropped, and `id` itself is consumed (as in
    /// anvil/ganache). Returns false for an unknown id.
    pub fn revert_to(&mut self, id: u64) -> bool {
        let Some(Some(snap)) = self.snapshots.get_mut(id as usize).map(Option::take) else {
            return false;
        };
        self.snapshots.truncate(id as usize);
        *self.exec.state_mut() = snap.state;
        *self.exec.block_mut() = snap.block_env;
        self.view.history = snap.history;
        self.replace_blocks(snap.blocks, snap.txs);
        self.pending = snap.pending;
        self.time_offset = snap.time_offset;
        self.next_timestamp = snap.next_timestamp;
        self.publish();
        true
    }
}
