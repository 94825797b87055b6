//! A test host for the Bursar contracts.
//!
//! `stylus_sdk::testing::TestVM` mocks calls by exact calldata and hands back the return data
//! of the *last registered* mock rather than of the call just made, which cannot express a
//! payment (ecrecover, then the allowlist, then a token, then the receipt registry). [`MockHost`]
//! wraps a `TestVM` for storage, logs and block values, and answers calls itself:
//! - `0x01` is a real `ecrecover` (k256), so contracts verify real signatures;
//! - other addresses are answered by handlers the test installs (a fake ERC-20 ledger, a
//!   registry...), each seeing the caller, calldata and value; unknown addresses behave like
//!   accounts without code (success, no data);
//! - value sent with a call moves between accounts in a native-balance ledger.
//!
//! Every call is recorded for assertions. Native tests get no EVM rollback, so
//! [`MockHost::checkpoint`] / [`MockHost::revert_to`] let a harness undo the storage, logs and
//! balances of a call that failed, as the chain would.

use std::{cell::RefCell, collections::HashMap, rc::Rc};

use alloy_primitives::{address, keccak256, Address, B256, U256};
use k256::ecdsa::{RecoveryId, Signature, SigningKey, VerifyingKey};
use stylus_sdk::{
    stylus_core::{
        AccountAccess, BlockAccess, CalldataAccess, ChainAccess, CryptographyAccess, Host,
        MemoryAccess, MessageAccess, MeteringAccess, RawLogAccess, StorageAccess, UnsafeCallAccess,
        UnsafeDeploymentAccess,
    },
    testing::TestVM,
};

/// The ecrecover precompile's address, answered by [`ecrecover`].
pub const ECRECOVER: Address = address!("0000000000000000000000000000000000000001");

/// How a contract called out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// `CALL`, which may carry value.
    Call,
    /// `STATICCALL`.
    Static,
    /// `DELEGATECALL`.
    Delegate,
}

/// One call a contract made.
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// Which call opcode was used.
    pub kind: CallKind,
    /// The calling contract (the VM's contract address at the time).
    pub from: Address,
    /// The callee.
    pub to: Address,
    /// The calldata.
    pub data: Vec<u8>,
    /// Native value sent (always zero for static and delegate calls).
    pub value: U256,
    /// Whether the call succeeded: the handler returned `Ok` and the caller could pay `value`.
    pub success: bool,
}

/// Answers calls to one address.
pub type Handler = Box<dyn FnMut(&CallRecord) -> Result<Vec<u8>, Vec<u8>>>;

#[derive(Default)]
struct World {
    handlers: HashMap<Address, Handler>,
    return_data: Vec<u8>,
    calls: Vec<CallRecord>,
    balances: HashMap<Address, U256>,
}

/// Storage, logs and native balances at one moment (see [`MockHost::revert_to`]).
pub struct Checkpoint {
    storage: HashMap<U256, B256>,
    logs: Vec<(Vec<B256>, Vec<u8>)>,
    balances: HashMap<Address, U256>,
}

/// See the crate docs. Cheap to clone; clones share one world.
#[derive(Clone)]
pub struct MockHost {
    /// The wrapped `TestVM`: storage, logs, caller, value and block values; set these on it
    /// directly.
    pub vm: TestVM,
    world: Rc<RefCell<World>>,
}

impl Default for MockHost {
    fn default() -> Self {
        Self::new()
    }
}

impl MockHost {
    /// A host with a default `TestVM`, no handlers, no calls and an empty balance ledger.
    pub fn new() -> Self {
        Self {
            vm: TestVM::default(),
            world: Rc::default(),
        }
    }

    /// Installs `handler` for calls to `to` (replacing any earlier one). Handlers must not
    /// call back into the host's world (they run while it is borrowed).
    pub fn on_call(
        &self,
        to: Address,
        handler: impl FnMut(&CallRecord) -> Result<Vec<u8>, Vec<u8>> + 'static,
    ) {
        self.world
            .borrow_mut()
            .handlers
            .insert(to, Box::new(handler));
        // Give the address code so that `code_size` reports a contract.
        self.vm.set_code(to, vec![0xfe]);
    }

    /// Calls made so far.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.world.borrow().calls.clone()
    }

    /// Forgets the calls recorded so far.
    pub fn clear_calls(&self) {
        self.world.borrow_mut().calls.clear();
    }

    /// Native balance in the host's ledger.
    pub fn native_balance(&self, account: Address) -> U256 {
        self.world
            .borrow()
            .balances
            .get(&account)
            .copied()
            .unwrap_or_default()
    }

    /// Sets `account`'s native balance in the host's ledger.
    pub fn set_native_balance(&self, account: Address, amount: U256) {
        self.world.borrow_mut().balances.insert(account, amount);
    }

    /// Sets the caller and the value it sends, crediting the value to the contract as the
    /// EVM does before the call runs.
    pub fn send_from(&self, sender: Address, value: U256) {
        self.vm.set_sender(sender);
        self.vm.set_value(value);
        if !value.is_zero() {
            let this = self.vm.contract_address();
            let mut world = self.world.borrow_mut();
            let from = world.balances.entry(sender).or_default();
            *from = from
                .checked_sub(value)
                .expect("sender lacks native balance");
            *world.balances.entry(this).or_default() += value;
        }
    }

    /// Captures the current storage, logs and native balances for [`MockHost::revert_to`].
    pub fn checkpoint(&self) -> Checkpoint {
        let state = self.vm.snapshot();
        Checkpoint {
            storage: state.storage,
            logs: state.emitted_logs,
            balances: self.world.borrow().balances.clone(),
        }
    }

    /// Undoes everything since `checkpoint` in storage, logs and native balances (the record
    /// of calls is kept).
    pub fn revert_to(&self, checkpoint: Checkpoint) {
        self.vm.clear_storage();
        for (key, value) in checkpoint.storage {
            self.vm.set_storage(key, value);
        }
        // TestVM can only clear logs together with its own mocks, which this host doesn't use.
        self.vm.clear_mocks();
        for (topics, data) in checkpoint.logs {
            self.vm.raw_log(&topics, &data).expect("log");
        }
        self.world.borrow_mut().balances = checkpoint.balances;
    }

    fn dispatch(&self, kind: CallKind, to: Address, data: &[u8], value: U256) -> (u8, usize) {
        let from = self.vm.contract_address();
        let mut record = CallRecord {
            kind,
            from,
            to,
            data: data.to_vec(),
            value,
            success: true,
        };
        let mut world = self.world.borrow_mut();
        let mut result = if to == ECRECOVER {
            Ok(ecrecover(data))
        } else if let Some(handler) = world.handlers.get_mut(&to) {
            handler(&record)
        } else {
            Ok(Vec::new())
        };
        if result.is_ok() && !value.is_zero() {
            let have = world.balances.get(&from).copied().unwrap_or_default();
            match have.checked_sub(value) {
                Some(rest) => {
                    world.balances.insert(from, rest);
                    *world.balances.entry(to).or_default() += value;
                }
                None => result = Err(Vec::new()),
            }
        }
        record.success = result.is_ok();
        world.calls.push(record);
        let (status, out) = match result {
            Ok(out) => (0, out),
            Err(out) => (1, out),
        };
        let len = out.len();
        world.return_data = out;
        (status, len)
    }
}

/// The ecrecover precompile: `hash ‖ v ‖ r ‖ s` in, the left-padded signer out, nothing on
/// failure.
pub fn ecrecover(input: &[u8]) -> Vec<u8> {
    let mut buf = [0u8; 128];
    let n = input.len().min(128);
    buf[..n].copy_from_slice(&input[..n]);
    let v = U256::from_be_slice(&buf[32..64]);
    if v != U256::from(27) && v != U256::from(28) {
        return Vec::new();
    }
    let Ok(sig) = Signature::from_slice(&buf[64..128]) else {
        return Vec::new();
    };
    let recid = RecoveryId::from_byte(buf[63] - 27).expect("v checked");
    match VerifyingKey::recover_from_prehash(&buf[..32], &sig, recid) {
        Ok(key) => B256::left_padding_from(public_key_address(&key).as_slice()).to_vec(),
        Err(_) => Vec::new(),
    }
}

fn public_key_address(key: &VerifyingKey) -> Address {
    let point = key.to_encoded_point(false);
    Address::from_slice(&keccak256(&point.as_bytes()[1..])[12..])
}

/// A secp256k1 key for tests: derives its address and signs digests as `r ‖ s ‖ v` (v 27/28,
/// low s), the format the contracts take.
#[derive(Clone)]
pub struct TestKey(SigningKey);

impl TestKey {
    /// A deterministic key from a small seed (never zero).
    pub fn from_seed(seed: u64) -> Self {
        let mut bytes = [0u8; 32];
        bytes[24..].copy_from_slice(&(seed + 1).to_be_bytes());
        bytes[0] = 0x42;
        Self(SigningKey::from_slice(&bytes).expect("valid scalar"))
    }

    /// The Ethereum address of the key's public key.
    pub fn address(&self) -> Address {
        public_key_address(self.0.verifying_key())
    }

    /// Signs the 32-byte `digest` as is (no hashing, no prefix), returning 65 bytes
    /// `r ‖ s ‖ v`.
    pub fn sign(&self, digest: B256) -> Vec<u8> {
        let (sig, recid) = self
            .0
            .sign_prehash_recoverable(digest.as_slice())
            .expect("signing works");
        let mut out = sig.to_bytes().to_vec();
        out.push(27 + recid.to_byte());
        out
    }
}

/// A log as TestVM records it: topics, then data.
pub type RawLog = (Vec<B256>, Vec<u8>);

/// Hands out the logs a [`TestVM`] emitted since the last time it was asked.
#[derive(Debug, Default)]
pub struct LogCursor {
    seen: usize,
}

impl LogCursor {
    /// The logs `vm` emitted since the previous call, oldest first.
    pub fn take(&mut self, vm: &TestVM) -> Vec<RawLog> {
        let all = vm.get_emitted_logs();
        let new = all[self.seen.min(all.len())..].to_vec();
        self.seen = all.len();
        new
    }
}

/// `event` as the log a contract would emit for it.
pub fn raw_log<E: alloy_sol_types::SolEvent>(event: E) -> RawLog {
    let data = event.encode_log_data();
    (data.topics().to_vec(), data.data.to_vec())
}

/// Decodes `log` as event `E` (panics when it is not one).
pub fn decode_log<E: alloy_sol_types::SolEvent>(log: &RawLog) -> E {
    E::decode_raw_log_validate(log.0.iter().copied(), &log.1).expect("log decodes as the event")
}

/// Asserts that `result` failed with exactly `expected`'s revert data; on a mismatch the
/// message shows what came back, decoded with the contract's error set `Errors` when it can be.
#[track_caller]
pub fn assert_revert<Errors: alloy_sol_types::SolInterface + std::fmt::Debug>(
    result: Result<impl std::fmt::Debug, Vec<u8>>,
    expected: impl alloy_sol_types::SolError + std::fmt::Debug,
) {
    match result {
        Ok(v) => panic!("expected {expected:?}, got Ok({v:?})"),
        Err(data) => {
            let got = Errors::abi_decode(&data)
                .map(|e| format!("{e:?}"))
                .unwrap_or_else(|_| alloy_primitives::hex::encode(&data));
            assert_eq!(
                data,
                expected.abi_encode(),
                "expected {expected:?}, got {got}"
            );
        }
    }
}

impl Host for MockHost {}

impl CryptographyAccess for MockHost {
    fn native_keccak256(&self, input: &[u8]) -> B256 {
        keccak256(input)
    }
}

impl CalldataAccess for MockHost {
    fn read_args(&self, len: usize) -> Vec<u8> {
        self.vm.read_args(len)
    }
    fn read_return_data(&self, offset: usize, size: Option<usize>) -> Vec<u8> {
        let world = self.world.borrow();
        let data = &world.return_data;
        let start = offset.min(data.len());
        let end = size.map_or(data.len(), |s| (start + s).min(data.len()));
        data[start..end].to_vec()
    }
    fn return_data_size(&self) -> usize {
        self.world.borrow().return_data.len()
    }
    fn write_result(&self, data: &[u8]) {
        self.vm.write_result(data)
    }
}

// SAFETY: both methods forward to `TestVM`'s implementation of the same trait unchanged, so
// they uphold the trait's contract exactly as far as `TestVM` does.
unsafe impl UnsafeDeploymentAccess for MockHost {
    unsafe fn create1(
        &self,
        code: *const u8,
        code_len: usize,
        endowment: *const u8,
        contract: *mut u8,
        revert_data_len: *mut usize,
    ) {
        // SAFETY: the caller upholds `create1`'s contract for these pointers, which is the same
        // contract `TestVM::create1` relies on; they are passed through unchanged.
        unsafe {
            self.vm
                .create1(code, code_len, endowment, contract, revert_data_len)
        }
    }
    unsafe fn create2(
        &self,
        code: *const u8,
        code_len: usize,
        endowment: *const u8,
        salt: *const u8,
        contract: *mut u8,
        revert_data_len: *mut usize,
    ) {
        // SAFETY: the caller upholds `create2`'s contract for these pointers, which is the same
        // contract `TestVM::create2` relies on; they are passed through unchanged.
        unsafe {
            self.vm
                .create2(code, code_len, endowment, salt, contract, revert_data_len)
        }
    }
}

impl StorageAccess for MockHost {
    fn storage_load_bytes32(&self, key: U256) -> B256 {
        self.vm.storage_load_bytes32(key)
    }
    unsafe fn storage_cache_bytes32(&self, key: U256, value: B256) {
        // SAFETY: same method and contract on the wrapped `TestVM`; the caller's guarantee
        // (no live storage reference aliases `key`) carries over unchanged.
        unsafe { self.vm.storage_cache_bytes32(key, value) }
    }
    fn flush_cache(&self, clear: bool) {
        self.vm.flush_cache(clear)
    }
}

// SAFETY: the calls read their pointer arguments only as the hostio ABI lays them out (see the
// blocks below), write only `outs_len`, and leave the return data where `read_return_data`
// finds it, as the trait's callers (`RawCall`) expect.
unsafe impl UnsafeCallAccess for MockHost {
    unsafe fn call_contract(
        &self,
        to: *const u8,
        data: *const u8,
        data_len: usize,
        value: *const u8,
        _gas: u64,
        outs_len: &mut usize,
    ) -> u8 {
        // SAFETY: per the hostio ABI (as `RawCall` calls it), `to` points to a 20-byte address,
        // `value` to a 32-byte big-endian word and `data` to `data_len` bytes, all readable and
        // alive for this call; the slices are copied before it returns.
        let (to, data, value) = unsafe {
            (
                Address::from_slice(std::slice::from_raw_parts(to, 20)),
                std::slice::from_raw_parts(data, data_len),
                U256::from_be_slice(std::slice::from_raw_parts(value, 32)),
            )
        };
        let (status, len) = self.dispatch(CallKind::Call, to, data, value);
        *outs_len = len;
        status
    }
    unsafe fn static_call_contract(
        &self,
        to: *const u8,
        data: *const u8,
        data_len: usize,
        _gas: u64,
        outs_len: &mut usize,
    ) -> u8 {
        // SAFETY: per the hostio ABI (as `RawCall` calls it), `to` points to a 20-byte address
        // and `data` to `data_len` bytes, both readable and alive for this call; `dispatch`
        // copies the data before it returns.
        let (to, data) = unsafe {
            (
                Address::from_slice(std::slice::from_raw_parts(to, 20)),
                std::slice::from_raw_parts(data, data_len),
            )
        };
        let (status, len) = self.dispatch(CallKind::Static, to, data, U256::ZERO);
        *outs_len = len;
        status
    }
    unsafe fn delegate_call_contract(
        &self,
        to: *const u8,
        data: *const u8,
        data_len: usize,
        _gas: u64,
        outs_len: &mut usize,
    ) -> u8 {
        // SAFETY: per the hostio ABI (as `RawCall` calls it), `to` points to a 20-byte address
        // and `data` to `data_len` bytes, both readable and alive for this call; `dispatch`
        // copies the data before it returns.
        let (to, data) = unsafe {
            (
                Address::from_slice(std::slice::from_raw_parts(to, 20)),
                std::slice::from_raw_parts(data, data_len),
            )
        };
        let (status, len) = self.dispatch(CallKind::Delegate, to, data, U256::ZERO);
        *outs_len = len;
        status
    }
}

impl BlockAccess for MockHost {
    fn block_basefee(&self) -> U256 {
        self.vm.block_basefee()
    }
    fn block_coinbase(&self) -> Address {
        self.vm.block_coinbase()
    }
    fn block_number(&self) -> u64 {
        self.vm.block_number()
    }
    fn block_timestamp(&self) -> u64 {
        self.vm.block_timestamp()
    }
    fn block_gas_limit(&self) -> u64 {
        self.vm.block_gas_limit()
    }
}

impl ChainAccess for MockHost {
    fn chain_id(&self) -> u64 {
        self.vm.chain_id()
    }
}

impl AccountAccess for MockHost {
    fn balance(&self, account: Address) -> U256 {
        self.native_balance(account)
    }
    fn contract_address(&self) -> Address {
        self.vm.contract_address()
    }
    fn code(&self, account: Address) -> Vec<u8> {
        self.vm.code(account)
    }
    fn code_size(&self, account: Address) -> usize {
        self.vm.code_size(account)
    }
    fn code_hash(&self, account: Address) -> B256 {
        self.vm.code_hash(account)
    }
}

impl MemoryAccess for MockHost {
    fn pay_for_memory_grow(&self, pages: u16) {
        self.vm.pay_for_memory_grow(pages)
    }
}

impl MessageAccess for MockHost {
    fn msg_sender(&self) -> Address {
        self.vm.msg_sender()
    }
    fn msg_reentrant(&self) -> bool {
        self.vm.msg_reentrant()
    }
    fn msg_value(&self) -> U256 {
        self.vm.msg_value()
    }
    fn tx_origin(&self) -> Address {
        self.vm.tx_origin()
    }
}

impl MeteringAccess for MockHost {
    fn evm_gas_left(&self) -> u64 {
        self.vm.evm_gas_left()
    }
    fn evm_ink_left(&self) -> u64 {
        self.vm.evm_ink_left()
    }
    fn tx_gas_price(&self) -> U256 {
        self.vm.tx_gas_price()
    }
    fn tx_ink_price(&self) -> u32 {
        self.vm.tx_ink_price()
    }
}

impl RawLogAccess for MockHost {
    fn emit_log(&self, input: &[u8], num_topics: usize) {
        self.vm.emit_log(input, num_topics)
    }
    fn raw_log(&self, topics: &[B256], data: &[u8]) -> Result<(), &'static str> {
        self.vm.raw_log(topics, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecrecover_recovers_the_signer_and_rejects_garbage() {
        let key = TestKey::from_seed(7);
        let digest = keccak256(b"bursar");
        let sig = key.sign(digest);
        let mut input = digest.to_vec();
        input.extend_from_slice(&B256::with_last_byte(sig[64]).0);
        input.extend_from_slice(&sig[..64]);
        assert_eq!(
            ecrecover(&input),
            B256::left_padding_from(key.address().as_slice()).to_vec()
        );
        input[63] = 29;
        assert!(ecrecover(&input).is_empty());
    }
}
