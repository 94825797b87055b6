//! revm's `Host` over the devnet's [`World`]: what an EVM opcode reads and writes, answered
//! from the journaled state, so its accesses warm the same sets and its writes are undone by the
//! same checkpoints as a Stylus program's.

use std::borrow::Cow;

use alloy_primitives::{Address, Log as AlloyLog, B256, U256};
use revm_interpreter::context_interface::cfg::GasParams;
use revm_interpreter::context_interface::journaled_state::AccountInfoLoad;
use revm_interpreter::host::LoadError;
use revm_interpreter::state::AccountInfo;
use revm_interpreter::{Host, SStoreResult, SelfDestructResult, StateLoad};

use super::GAS_PARAMS;
use crate::state::Log;
use crate::world::World;

/// EIP-3860: twice the EIP-170 code size limit.
const MAX_INITCODE_SIZE: usize = 2 * 24_576;

impl Host for World {
    fn basefee(&self) -> U256 {
        self.block.basefee
    }
    /// Arbitrum carries no blobs: the minimum blob base fee, as `eth_blobBaseFee` answers.
    fn blob_gasprice(&self) -> U256 {
        U256::from(1)
    }
    fn gas_limit(&self) -> U256 {
        U256::from(self.block.gas_limit)
    }
    /// `DIFFICULTY`/`PREVRANDAO` are the constant 1 on Arbitrum.
    fn difficulty(&self) -> U256 {
        U256::from(1)
    }
    fn prevrandao(&self) -> Option<U256> {
        Some(U256::from(1))
    }
    fn block_number(&self) -> U256 {
        U256::from(self.block.number)
    }
    fn timestamp(&self) -> U256 {
        U256::from(self.block.timestamp)
    }
    fn beneficiary(&self) -> Address {
        self.block.coinbase
    }
    fn slot_num(&self) -> U256 {
        U256::ZERO
    }
    fn chain_id(&self) -> U256 {
        U256::from(self.block.chain_id)
    }
    fn effective_gas_price(&self) -> U256 {
        self.tx.gas_price
    }
    fn caller(&self) -> Address {
        self.tx.origin
    }
    /// No blob transactions: `BLOBHASH` is zero for every index.
    fn blob_hash(&self, _number: usize) -> Option<U256> {
        None
    }
    fn max_initcode_size(&self) -> usize {
        MAX_INITCODE_SIZE
    }
    fn gas_params(&self) -> &GasParams {
        &GAS_PARAMS
    }
    fn is_amsterdam_eip8037_enabled(&self) -> bool {
        false
    }

    fn block_hash(&mut self, number: u64) -> Option<B256> {
        // The interpreter asks only within the last 256 blocks; a block the chain no longer
        // knows (a pruned or loaded history) reads as zero rather than aborting the frame.
        Some((self.block_hashes)(number).unwrap_or_default())
    }

    fn selfdestruct(
        &mut self,
        address: Address,
        target: Address,
        skip_cold_load: bool,
    ) -> Result<StateLoad<SelfDestructResult>, LoadError> {
        let is_cold = !self.state.is_warm(target);
        if is_cold && skip_cold_load {
            return Err(LoadError::ColdLoadSkipped);
        }
        self.state.warm_account(target);
        let target_exists = self.state.account(target).is_some_and(|a| !a.is_empty());
        let (had_value, previously_destroyed) = self.state.self_destruct(address, target);
        Ok(StateLoad::new(
            SelfDestructResult {
                had_value,
                target_exists,
                previously_destroyed,
            },
            is_cold,
        ))
    }

    fn log(&mut self, log: AlloyLog) {
        let (topics, data) = log.data.split();
        self.state.push_log(Log {
            address: log.address,
            topics,
            data,
        });
    }

    fn sstore_skip_cold_load(
        &mut self,
        address: Address,
        key: U256,
        value: U256,
        skip_cold_load: bool,
    ) -> Result<StateLoad<SStoreResult>, LoadError> {
        let slot = B256::from(key);
        let is_cold = !self.state.is_warm_slot(address, slot);
        if is_cold && skip_cold_load {
            return Err(LoadError::ColdLoadSkipped);
        }
        self.state.warm_slot(address, slot);
        let original_value = self.state.original_storage(address, slot).into();
        let present_value = self.state.storage(address, slot).into();
        self.state.set_storage(address, slot, B256::from(value));
        Ok(StateLoad::new(
            SStoreResult {
                original_value,
                present_value,
                new_value: value,
            },
            is_cold,
        ))
    }

    fn sload_skip_cold_load(
        &mut self,
        address: Address,
        key: U256,
        skip_cold_load: bool,
    ) -> Result<StateLoad<U256>, LoadError> {
        let slot = B256::from(key);
        let is_cold = !self.state.is_warm_slot(address, slot);
        if is_cold && skip_cold_load {
            return Err(LoadError::ColdLoadSkipped);
        }
        self.state.warm_slot(address, slot);
        Ok(StateLoad::new(
            self.state.storage(address, slot).into(),
            is_cold,
        ))
    }

    fn tstore(&mut self, address: Address, key: U256, value: U256) {
        self.state
            .set_transient(address, B256::from(key), B256::from(value));
    }

    fn tload(&mut self, address: Address, key: U256) -> U256 {
        self.state.transient(address, B256::from(key)).into()
    }

    fn load_account_info_skip_cold_load(
        &mut self,
        address: Address,
        load_code: bool,
        skip_cold_load: bool,
    ) -> Result<AccountInfoLoad<'_>, LoadError> {
        let is_cold = !self.state.is_warm(address);
        if is_cold && skip_cold_load {
            return Err(LoadError::ColdLoadSkipped);
        }
        self.state.warm_account(address);
        let account = self.state.account(address).cloned().unwrap_or_default();
        let code = load_code.then(|| self.evm_bytecode(account.code_hash, account.code.clone()));
        let info = AccountInfo {
            balance: account.balance,
            nonce: account.nonce,
            code_hash: account.code_hash,
            code,
            ..Default::default()
        };
        Ok(AccountInfoLoad {
            account: Cow::Owned(info),
            is_cold,
            is_empty: account.is_empty(),
        })
    }
}
