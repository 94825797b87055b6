//! World state: accounts, storage, transient storage and logs, with a journal.
//!
//! Every mutation goes through a method that records how to undo it, so a call frame that
//! reverts can roll the world back to a [`Checkpoint`] — storage writes, balance transfers,
//! nonce bumps, account creations and logs included. Per-transaction bookkeeping (EIP-2929 warm
//! sets, EIP-2200 original values, transient storage, the refund counter) lives here too,
//! because it must be undone with the same journal (a reverted frame's accesses become cold
//! again, as in geth).

use std::collections::{HashMap, HashSet};

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};

/// `keccak256("")`: the code hash of an account without code.
pub const KECCAK_EMPTY: B256 =
    alloy_primitives::b256!("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");

/// One account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// Balance in wei.
    pub balance: U256,
    /// Transaction count (for EOAs) or contract-creation count (for contracts).
    pub nonce: u64,
    /// Deployed bytecode; Stylus programs keep their `EF F0 00` prefix.
    pub code: Bytes,
    /// `keccak256(code)`, kept alongside so `EXTCODEHASH` and the program cache need no rehash.
    pub code_hash: B256,
}

impl Default for Account {
    fn default() -> Self {
        Account {
            balance: U256::ZERO,
            nonce: 0,
            code: Bytes::new(),
            code_hash: KECCAK_EMPTY,
        }
    }
}

impl Account {
    /// EIP-161 emptiness: no code, zero nonce, zero balance.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty() && self.nonce == 0 && self.balance.is_zero()
    }
}

/// An event emitted by a contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Log {
    /// The contract that emitted the log.
    pub address: Address,
    /// Indexed topics (at most four), the event signature first for non-anonymous events.
    pub topics: Vec<B256>,
    /// Non-indexed, ABI-encoded event data.
    pub data: Bytes,
}

/// A position in the journal to revert to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    journal: usize,
    logs: usize,
}

/// Error when a transfer cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("insufficient balance: {from} has {have}, needs {need}")]
pub struct InsufficientBalance {
    /// The account the value would be taken from.
    pub from: Address,
    /// Its balance, in wei.
    pub have: U256,
    /// The amount the transfer needed, in wei.
    pub need: U256,
}

/// How to undo one mutation.
#[derive(Clone, Debug)]
enum Undo {
    /// The account did not exist before; remove it.
    AccountCreated(Address),
    Balance(Address, U256),
    Nonce(Address, u64),
    Code(Address, Bytes, B256),
    Storage(Address, B256, B256),
    Transient(Address, B256, B256),
    WarmAccount(Address),
    WarmSlot(Address, B256),
    Refund(i64),
    Created(Address),
    Destructed(Address),
}

/// The world state plus per-transaction bookkeeping. `Clone` gives whole-state snapshots (for
/// dev methods such as `evm_snapshot`) between transactions.
#[derive(Clone, Debug, Default)]
pub struct State {
    // Persistent maps (structural sharing): the chain keeps the state after every block, and
    // a clone is O(1) instead of a copy of every account and slot.
    accounts: imbl::HashMap<Address, Account>,
    storage: imbl::HashMap<Address, imbl::HashMap<B256, B256>>,
    transient: HashMap<(Address, B256), B256>,
    logs: Vec<Log>,
    journal: Vec<Undo>,
    warm_accounts: HashSet<Address>,
    warm_slots: HashSet<(Address, B256)>,
    /// What this transaction reached, reverted frames included (the warm sets forget those):
    /// what `eth_createAccessList` reports. Not journaled.
    touched_accounts: HashSet<Address>,
    touched_slots: HashSet<(Address, B256)>,
    /// EIP-2200 "original value": the slot's value at the start of the transaction.
    originals: HashMap<(Address, B256), B256>,
    /// EIP-3529 refund counter (may go negative within a tx, as in geth's accounting).
    refund: i64,
    /// Contracts created in this transaction: the only ones SELFDESTRUCT deletes (EIP-6780).
    created: HashSet<Address>,
    /// Of those, the ones that self-destructed: deleted when the transaction ends.
    destructed: HashSet<Address>,
}

impl State {
    /// An empty world: no accounts, an empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    // ----- transaction boundaries -----------------------------------------------------------

    /// Starts a transaction: clears the journal, logs, warm sets, originals, transient storage
    /// and refund counter. `sender` and `to` (and precompiles, by the caller) start warm.
    pub fn begin_tx(&mut self, warm: impl IntoIterator<Item = Address>) {
        self.journal.clear();
        self.logs.clear();
        self.warm_accounts.clear();
        self.warm_slots.clear();
        self.touched_accounts.clear();
        self.touched_slots.clear();
        self.originals.clear();
        self.transient.clear();
        self.refund = 0;
        self.created.clear();
        self.destructed.clear();
        self.warm_accounts.extend(warm);
    }

    /// Ends a transaction: returns its logs and refund counter and drops the journal (nothing
    /// before this point can be reverted any more).
    pub fn end_tx(&mut self) -> (Vec<Log>, i64) {
        self.journal.clear();
        self.transient.clear();
        self.created.clear();
        for address in std::mem::take(&mut self.destructed) {
            self.accounts.remove(&address);
            self.storage.remove(&address);
        }
        (
            std::mem::take(&mut self.logs),
            std::mem::replace(&mut self.refund, 0),
        )
    }

    // ----- journal ----------------------------------------------------------------------------

    /// Marks the current point in the journal, to [`revert`](Self::revert) or
    /// [`commit`](Self::commit) to later.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            journal: self.journal.len(),
            logs: self.logs.len(),
        }
    }

    /// Undoes everything recorded since `cp`, newest first.
    pub fn revert(&mut self, cp: Checkpoint) {
        while self.journal.len() > cp.journal {
            match self.journal.pop().expect("length checked") {
                Undo::AccountCreated(a) => {
                    self.accounts.remove(&a);
                }
                Undo::Balance(a, v) => self.account_mut_raw(a).balance = v,
                Undo::Nonce(a, v) => self.account_mut_raw(a).nonce = v,
                Undo::Code(a, code, hash) => {
                    let acc = self.account_mut_raw(a);
                    acc.code = code;
                    acc.code_hash = hash;
                }
                Undo::Storage(a, k, v) => self.write_slot_raw(a, k, v),
                Undo::Transient(a, k, v) => {
                    self.transient.insert((a, k), v);
                }
                Undo::WarmAccount(a) => {
                    self.warm_accounts.remove(&a);
                }
                Undo::WarmSlot(a, k) => {
                    self.warm_slots.remove(&(a, k));
                }
                Undo::Refund(r) => self.refund = r,
                Undo::Created(a) => {
                    self.created.remove(&a);
                }
                Undo::Destructed(a) => {
                    self.destructed.remove(&a);
                }
            }
        }
        self.logs.truncate(cp.logs);
    }

    /// Keeps everything since `cp`. The journal is flat, so this only exists to make frame
    /// code read symmetrically; entries stay until the transaction ends so an outer revert
    /// still undoes them.
    pub fn commit(&mut self, _cp: Checkpoint) {}

    // ----- accounts ---------------------------------------------------------------------------

    /// The account at `address`, if it exists.
    pub fn account(&self, address: Address) -> Option<&Account> {
        self.accounts.get(&address)
    }

    /// Every account (for dumps and state files).
    pub fn accounts(&self) -> impl Iterator<Item = (&Address, &Account)> {
        self.accounts.iter()
    }

    /// Whether an account exists at `address` (even if empty).
    pub fn exists(&self, address: Address) -> bool {
        self.accounts.contains_key(&address)
    }

    /// Balance of `address` in wei; zero if it does not exist.
    pub fn balance(&self, address: Address) -> U256 {
        self.accounts
            .get(&address)
            .map_or(U256::ZERO, |a| a.balance)
    }

    /// Nonce of `address`; zero if it does not exist.
    pub fn nonce(&self, address: Address) -> u64 {
        self.accounts.get(&address).map_or(0, |a| a.nonce)
    }

    /// Bytecode of `address`; empty if it has none or does not exist.
    pub fn code(&self, address: Address) -> Bytes {
        self.accounts
            .get(&address)
            .map_or_else(Bytes::new, |a| a.code.clone())
    }

    /// `EXTCODEHASH`: zero for a non-existent (or EIP-161 empty) account.
    pub fn code_hash(&self, address: Address) -> B256 {
        match self.accounts.get(&address) {
            Some(a) if !a.is_empty() => a.code_hash,
            _ => B256::ZERO,
        }
    }

    /// The account, created (journaled) if missing.
    fn account_mut(&mut self, address: Address) -> &mut Account {
        if !self.accounts.contains_key(&address) {
            self.journal.push(Undo::AccountCreated(address));
        }
        self.accounts.entry(address).or_default()
    }

    /// The account for undo application, never journaled.
    fn account_mut_raw(&mut self, address: Address) -> &mut Account {
        self.accounts.entry(address).or_default()
    }

    /// Creates `address` if it does not exist (journaled).
    pub fn touch(&mut self, address: Address) {
        self.account_mut(address);
    }

    /// Sets the balance (wei) of `address`, creating it if missing (journaled).
    pub fn set_balance(&mut self, address: Address, balance: U256) {
        let acc = self.account_mut(address);
        let old = std::mem::replace(&mut acc.balance, balance);
        self.journal.push(Undo::Balance(address, old));
    }

    /// Sets the nonce of `address`, creating it if missing (journaled).
    pub fn set_nonce(&mut self, address: Address, nonce: u64) {
        let acc = self.account_mut(address);
        let old = std::mem::replace(&mut acc.nonce, nonce);
        self.journal.push(Undo::Nonce(address, old));
    }

    /// Bumps the nonce of `address` by one (journaled); returns the nonce before the bump.
    pub fn increment_nonce(&mut self, address: Address) -> u64 {
        let old = self.nonce(address);
        self.set_nonce(address, old + 1);
        old
    }

    /// Replaces the code of `address` and its cached code hash (journaled).
    pub fn set_code(&mut self, address: Address, code: Bytes) {
        let hash = if code.is_empty() {
            KECCAK_EMPTY
        } else {
            keccak256(&code)
        };
        let acc = self.account_mut(address);
        let old_code = std::mem::replace(&mut acc.code, code);
        let old_hash = std::mem::replace(&mut acc.code_hash, hash);
        self.journal.push(Undo::Code(address, old_code, old_hash));
    }

    /// Moves `value` from `from` to `to` (creating `to`), or fails without changing anything.
    pub fn transfer(
        &mut self,
        from: Address,
        to: Address,
        value: U256,
    ) -> Result<(), InsufficientBalance> {
        let have = self.balance(from);
        if have < value {
            return Err(InsufficientBalance {
                from,
                have,
                need: value,
            });
        }
        self.touch(to);
        if value.is_zero() || from == to {
            return Ok(());
        }
        self.set_balance(from, have - value);
        let to_balance = self.balance(to);
        self.set_balance(to, to_balance + value);
        Ok(())
    }

    /// Records that `address` was created by this transaction (journaled).
    pub fn mark_created(&mut self, address: Address) {
        if self.created.insert(address) {
            self.journal.push(Undo::Created(address));
        }
    }

    /// SELFDESTRUCT of `address` in favour of `target` (EIP-6780): the whole balance moves to
    /// `target`, and a contract created in this same transaction is deleted when it ends (its
    /// balance burnt if it named itself). Returns whether it had a balance and whether it had
    /// already self-destructed in this transaction.
    pub fn self_destruct(&mut self, address: Address, target: Address) -> (bool, bool) {
        let balance = self.balance(address);
        let previously = self.destructed.contains(&address);
        let deleted = self.created.contains(&address);
        if address != target {
            self.transfer(address, target, balance)
                .expect("moves the account's own balance");
        } else if deleted && !balance.is_zero() {
            self.set_balance(address, U256::ZERO);
        }
        if deleted && !previously {
            self.destructed.insert(address);
            self.journal.push(Undo::Destructed(address));
        }
        (!balance.is_zero(), previously)
    }

    // ----- storage ----------------------------------------------------------------------------

    /// Current value of a persistent storage slot; zero if never written.
    pub fn storage(&self, address: Address, slot: B256) -> B256 {
        self.storage
            .get(&address)
            .and_then(|s| s.get(&slot))
            .copied()
            .unwrap_or_default()
    }

    /// The value `slot` had when the transaction began (EIP-2200).
    pub fn original_storage(&self, address: Address, slot: B256) -> B256 {
        self.originals
            .get(&(address, slot))
            .copied()
            .unwrap_or_else(|| self.storage(address, slot))
    }

    /// Writes a slot (journaled), remembering its original value for EIP-2200 pricing.
    pub fn set_storage(&mut self, address: Address, slot: B256, value: B256) {
        let old = self.storage(address, slot);
        self.originals.entry((address, slot)).or_insert(old);
        self.journal.push(Undo::Storage(address, slot, old));
        self.write_slot_raw(address, slot, value);
    }

    fn write_slot_raw(&mut self, address: Address, slot: B256, value: B256) {
        let slots = self.storage.entry(address).or_default();
        if value.is_zero() {
            slots.remove(&slot);
        } else {
            slots.insert(slot, value);
        }
    }

    /// Every address holding storage (an account of its own or not: `anvil_setStorageAt` can
    /// write to an address nothing else touched).
    pub fn storage_owners(&self) -> impl Iterator<Item = &Address> {
        self.storage.keys()
    }

    /// All non-zero slots of `address` (for dumps and tests).
    pub fn storage_of(&self, address: Address) -> impl Iterator<Item = (&B256, &B256)> {
        self.storage.get(&address).into_iter().flatten()
    }

    // ----- transient storage (EIP-1153) -------------------------------------------------------

    /// Current value of a transient (EIP-1153) storage slot; zero if unset.
    pub fn transient(&self, address: Address, slot: B256) -> B256 {
        self.transient
            .get(&(address, slot))
            .copied()
            .unwrap_or_default()
    }

    /// Writes a transient (EIP-1153) storage slot (journaled); cleared at transaction end.
    pub fn set_transient(&mut self, address: Address, slot: B256, value: B256) {
        let old = self
            .transient
            .insert((address, slot), value)
            .unwrap_or_default();
        self.journal.push(Undo::Transient(address, slot, old));
    }

    // ----- EIP-2929 access sets ---------------------------------------------------------------

    /// Marks `address` warm (and touched); returns whether it was cold.
    pub fn warm_account(&mut self, address: Address) -> bool {
        self.touched_accounts.insert(address);
        self.warm_created(address)
    }

    /// Marks an address a creation is about to use warm, without counting it as touched (geth's
    /// access lists name only what code reached; a created contract is not listed).
    pub fn warm_created(&mut self, address: Address) -> bool {
        let cold = self.warm_accounts.insert(address);
        if cold {
            self.journal.push(Undo::WarmAccount(address));
        }
        cold
    }

    /// Whether `address` has been accessed in this transaction.
    pub fn is_warm(&self, address: Address) -> bool {
        self.warm_accounts.contains(&address)
    }

    /// Whether the slot has been accessed in this transaction.
    pub fn is_warm_slot(&self, address: Address, slot: B256) -> bool {
        self.warm_slots.contains(&(address, slot))
    }

    /// The accounts and slots this (or the last) transaction touched: reached by its code,
    /// in frames that reverted too, or named in its access list (not the sender, recipient,
    /// coinbase and precompiles every transaction starts with warm): what
    /// `eth_createAccessList` reports.
    pub fn touched(&self) -> (&HashSet<Address>, &HashSet<(Address, B256)>) {
        (&self.touched_accounts, &self.touched_slots)
    }

    /// Marks a slot warm (and touched); returns whether it was cold.
    pub fn warm_slot(&mut self, address: Address, slot: B256) -> bool {
        self.touched_slots.insert((address, slot));
        let cold = self.warm_slots.insert((address, slot));
        if cold {
            self.journal.push(Undo::WarmSlot(address, slot));
        }
        cold
    }

    // ----- refunds and logs -------------------------------------------------------------------

    /// The transaction's gas refund counter so far (EIP-3529; may dip negative inside a frame).
    pub fn refund(&self) -> i64 {
        self.refund
    }

    /// Adds `delta` (possibly negative) to the refund counter (journaled).
    pub fn add_refund(&mut self, delta: i64) {
        if delta != 0 {
            self.journal.push(Undo::Refund(self.refund));
            self.refund += delta;
        }
    }

    /// Records a log emitted by the current frame; dropped again if the frame reverts.
    pub fn push_log(&mut self, log: Log) {
        self.logs.push(log);
    }

    /// Logs emitted so far in the current transaction (reverted frames excluded).
    pub fn logs(&self) -> &[Log] {
        &self.logs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(n: u8) -> Address {
        Address::repeat_byte(n)
    }

    #[test]
    fn revert_undoes_storage_balances_creations_and_logs() {
        let mut s = State::new();
        s.set_balance(addr(1), U256::from(100));
        s.begin_tx([]);
        let cp = s.checkpoint();
        s.set_storage(addr(1), B256::with_last_byte(1), B256::with_last_byte(7));
        s.transfer(addr(1), addr(2), U256::from(40)).unwrap();
        s.push_log(Log {
            address: addr(1),
            topics: vec![],
            data: Bytes::new(),
        });
        assert!(s.warm_slot(addr(1), B256::ZERO));
        s.revert(cp);
        assert_eq!(s.storage(addr(1), B256::with_last_byte(1)), B256::ZERO);
        assert_eq!(s.balance(addr(1)), U256::from(100));
        assert!(!s.exists(addr(2)));
        assert!(s.logs().is_empty());
        assert!(
            s.warm_slot(addr(1), B256::ZERO),
            "reverted access is cold again"
        );
    }

    #[test]
    fn original_value_is_the_value_at_tx_start() {
        let mut s = State::new();
        let k = B256::with_last_byte(1);
        s.set_storage(addr(1), k, B256::with_last_byte(1));
        s.begin_tx([]);
        s.set_storage(addr(1), k, B256::with_last_byte(2));
        s.set_storage(addr(1), k, B256::with_last_byte(3));
        assert_eq!(s.original_storage(addr(1), k), B256::with_last_byte(1));
        assert_eq!(s.storage(addr(1), k), B256::with_last_byte(3));
    }

    #[test]
    fn transfer_fails_without_funds() {
        let mut s = State::new();
        let err = s.transfer(addr(1), addr(2), U256::from(1)).unwrap_err();
        assert_eq!(err.need, U256::from(1));
        assert!(!s.exists(addr(2)));
    }
}
