//! # CounterpartyRegistry
//!
//! Allowlists of payees, each owned by an owner or an org and shared by many sessions. An entry
//! maps a counterparty to `{allowed, maxPerPayment, label}`; the owner and the admins it appoints
//! edit entries, and a change (removal included) takes effect at once for every session that
//! references the list — unless the reference is pinned at a time: then entries that were added,
//! or whose cap rose, after that time do not count for it, while removals and lowered caps do at
//! once. The SessionWallet asks `isAllowed(reference, counterparty, amount)` before each
//! payment: unknown lists and unknown counterparties are denied, and that view never reverts.
//!
//! Once bound to its SessionWallet (by the binder named at construction, once), the registry
//! refuses entries for the wallet, its gateway, its receipt registry and itself: a payment to
//! them would count as spent yet never leave the escrow. (The wallet refuses such payees too.)
//!
//! Every check runs before the first storage write, so a call that fails changes nothing even
//! where nothing rolls it back (the unit-test VM).
//!
//! The ABI, events and errors are declared once in `bursar_bindings::counterparty`.
#![cfg_attr(not(any(test, feature = "export-abi")), no_main)]
#![cfg_attr(not(any(test, feature = "export-abi")), no_std)]
// `#[public]` generates an undocumented `print_from_args` for `export-abi`; the lints run
// without that feature too (`cargo xtask test`), where every public item needs docs.
#![cfg_attr(feature = "export-abi", allow(missing_docs))]

#[macro_use]
extern crate alloc;

pub mod error;
pub mod list;
#[cfg(test)]
mod tests;

use alloc::vec::Vec;

use alloy_primitives::{Address, B256, U256, U64};
use alloy_sol_types::SolCall;
use bursar_bindings::{counterparty::ICounterpartyRegistry::*, wallet::ISessionWallet};
use bursar_contract_common::{call, calldata};
use stylus_sdk::{prelude::*, storage::*};

pub use error::RegistryError;
use list::List;

type Result<T, E = RegistryError> = core::result::Result<T, E>;

/// The registry's storage: lists by id, and the wallet it is bound to with its satellites
/// (which may never be listed).
#[storage]
#[entrypoint]
pub struct CounterpartyRegistry {
    list_count: StorageU256,
    lists: StorageMap<U256, List>,
    /// May call `bind`, once; cleared when it does.
    binder: StorageAddress,
    wallet: StorageAddress,
    gateway: StorageAddress,
    receipt_registry: StorageAddress,
}

#[public]
impl CounterpartyRegistry {
    /// Names the one account that may bind the registry to its wallet (the deployer: contracts
    /// deployed through StylusDeployer see the deployer contract as their sender).
    ///
    /// # Errors
    /// * [`CounterpartyNotBinder`]`(0)` — `binder` is zero.
    #[constructor]
    pub fn constructor(&mut self, binder: Address) -> Result<()> {
        if binder.is_zero() {
            return Err(CounterpartyNotBinder { caller: binder }.into());
        }
        self.binder.set(binder);
        Ok(())
    }

    /// Binds the registry to `wallet`, once, by the binder, and only if
    /// `wallet.counterpartyRegistry()` is this registry; records the wallet's gateway and
    /// receipt registry, which (with the wallet and this registry) can no longer be listed.
    ///
    /// # Errors
    /// * [`CounterpartyAlreadyBound`] — bound before.
    /// * [`CounterpartyNotBinder`] — the caller is not the binder.
    /// * [`CounterpartyWalletMismatch`] — `wallet` does not name this registry.
    ///
    /// # Events
    /// [`WalletBound`].
    pub fn bind(&mut self, wallet: Address) -> Result<()> {
        let bound = self.wallet.get();
        if !bound.is_zero() {
            return Err(CounterpartyAlreadyBound { wallet: bound }.into());
        }
        let caller = self.vm().msg_sender();
        if caller != self.binder.get() {
            return Err(CounterpartyNotBinder { caller }.into());
        }
        if !call::names_this_contract(
            self.vm(),
            wallet,
            ISessionWallet::counterpartyRegistryCall::SELECTOR,
        ) {
            return Err(CounterpartyWalletMismatch { wallet }.into());
        }
        let gateway = self.wallet_view(wallet, ISessionWallet::gatewayCall::SELECTOR);
        let receipts = self.wallet_view(wallet, ISessionWallet::receiptRegistryCall::SELECTOR);
        self.wallet.set(wallet);
        self.gateway.set(gateway);
        self.receipt_registry.set(receipts);
        self.binder.set(Address::ZERO);
        self.vm().log(WalletBound { wallet });
        Ok(())
    }

    /// The SessionWallet this registry serves (zero until bound).
    pub fn wallet(&self) -> Address {
        self.wallet.get()
    }

    /// Creates an empty list owned by the caller. Returns its id; ids run from 1.
    ///
    /// # Errors
    /// * `CounterpartyUnknownList(0)` — no id is left (after 2^256 − 1 lists: unreachable).
    ///
    /// # Events
    /// `ListCreated`.
    pub fn create_list(&mut self) -> Result<U256> {
        let owner = self.vm().msg_sender();
        let id = self
            .list_count
            .get()
            .checked_add(U256::from(1))
            .ok_or(CounterpartyUnknownList { listId: U256::ZERO })?;
        self.list_count.set(id);
        self.lists.setter(id).owner.set(owner);
        self.vm().log(ListCreated { listId: id, owner });
        Ok(id)
    }

    /// Hands a list to `new_owner` (owner only). Admins stay appointed.
    ///
    /// # Errors
    /// * `CounterpartyUnknownList`, `CounterpartyUnauthorized` — the caller is not the owner.
    /// * `CounterpartyInvalidAddress(0)` — `new_owner` is the zero address.
    ///
    /// # Events
    /// `ListOwnershipTransferred`.
    pub fn transfer_list_ownership(&mut self, list_id: U256, new_owner: Address) -> Result<()> {
        let previous_owner = self.only_owner(list_id)?;
        non_zero(new_owner)?;
        self.lists.setter(list_id).owner.set(new_owner);
        self.vm().log(ListOwnershipTransferred {
            listId: list_id,
            previousOwner: previous_owner,
            newOwner: new_owner,
        });
        Ok(())
    }

    /// Appoints (`enabled`) or dismisses an admin, who may edit entries (owner only).
    ///
    /// # Errors
    /// * `CounterpartyUnknownList`, `CounterpartyUnauthorized` — the caller is not the owner.
    /// * `CounterpartyInvalidAddress(0)` — `admin` is the zero address.
    ///
    /// # Events
    /// `ListAdminSet`.
    pub fn set_admin(&mut self, list_id: U256, admin: Address, enabled: bool) -> Result<()> {
        self.only_owner(list_id)?;
        non_zero(admin)?;
        self.lists.setter(list_id).admins.setter(admin).set(enabled);
        self.vm().log(ListAdminSet {
            listId: list_id,
            admin,
            enabled,
        });
        Ok(())
    }

    /// Adds or replaces `counterparty`'s entry (owner or admin). `allowed == false` keeps the
    /// entry as an explicit denial; `maxPerPayment == 0` means no cap.
    ///
    /// # Errors
    /// * [`CounterpartyUnknownList`], [`CounterpartyUnauthorized`] — neither owner nor admin.
    /// * [`CounterpartyInvalidAddress`] — `counterparty` is zero, the wallet, its gateway or a
    ///   registry.
    ///
    /// # Events
    /// [`EntrySet`] (with `by`, the caller).
    pub fn set_entry(
        &mut self,
        list_id: U256,
        counterparty: Address,
        allowed: bool,
        max_per_payment: U256,
        label: B256,
    ) -> Result<()> {
        let by = self.only_editor(list_id)?;
        self.payable(counterparty)?;
        self.write_entry(list_id, counterparty, allowed, max_per_payment, label, by);
        Ok(())
    }

    /// `setEntry` for many counterparties at once (owner or admin); all four arrays have one
    /// element per entry. Either every entry is written or none.
    ///
    /// # Errors
    /// * `CounterpartyUnknownList`, `CounterpartyUnauthorized` — neither owner nor admin.
    /// * `CounterpartyLengthMismatch(counterparties.length, other.length)` — the first array
    ///   (`allowed`, `maxPerPayment`, `labels`, in that order) of another length.
    /// * [`CounterpartyInvalidAddress`] — a counterparty is zero, the wallet, its gateway or a
    ///   registry.
    ///
    /// # Events
    /// `EntrySet` per entry, in order.
    pub fn set_entries(
        &mut self,
        list_id: U256,
        counterparties: Vec<Address>,
        allowed: Vec<bool>,
        max_per_payment: Vec<U256>,
        labels: Vec<B256>,
    ) -> Result<()> {
        let by = self.only_editor(list_id)?;
        let n = counterparties.len();
        for other in [allowed.len(), max_per_payment.len(), labels.len()] {
            if other != n {
                return Err(CounterpartyLengthMismatch {
                    counterparties: U256::from(n),
                    other: U256::from(other),
                }
                .into());
            }
        }
        for &counterparty in &counterparties {
            self.payable(counterparty)?;
        }
        for (i, &counterparty) in counterparties.iter().enumerate() {
            self.write_entry(
                list_id,
                counterparty,
                allowed[i],
                max_per_payment[i],
                labels[i],
                by,
            );
        }
        Ok(())
    }

    /// Deletes `counterparty`'s entry (owner or admin): payments to it are denied at once.
    ///
    /// # Errors
    /// * `CounterpartyUnknownList`, `CounterpartyUnauthorized` — neither owner nor admin.
    /// * `CounterpartyUnknownEntry` — the list has no entry for `counterparty`.
    ///
    /// # Events
    /// `EntryRemoved` (with `by`, the caller).
    pub fn remove_entry(&mut self, list_id: U256, counterparty: Address) -> Result<()> {
        let by = self.only_editor(list_id)?;
        let mut list = self.lists.setter(list_id);
        let mut entry = list.entries.setter(counterparty);
        if !entry.exists.get() {
            return Err(CounterpartyUnknownEntry {
                listId: list_id,
                counterparty,
            }
            .into());
        }
        entry.erase();
        self.vm().log(EntryRemoved {
            listId: list_id,
            counterparty,
            by,
        });
        Ok(())
    }

    /// Whether one payment of `amount` to `counterparty` is allowed by list reference
    /// `list_id`: the entry exists, is allowed, and `amount` is within its cap
    /// (`maxPerPayment == 0`: none). A reference is the list's id, or the id plus a time
    /// times 2^64 (`list::reference`): pinned at that time, an entry that became allowed or
    /// whose cap rose after it does not count. Unknown lists and counterparties give `false`;
    /// never reverts.
    pub fn is_allowed(&self, list_id: U256, counterparty: Address, amount: U256) -> bool {
        let Some((id, as_of)) = list::reference(list_id) else {
            return false;
        };
        // Entries are only ever written to existing lists: an unknown list has none.
        let list = self.lists.getter(id);
        let entry = list.entries.getter(counterparty);
        entry.allows(amount) && (as_of == 0 || entry.since.get().to::<u64>() <= as_of)
    }

    /// `(exists, allowed, maxPerPayment, label)` of `counterparty`'s entry; all zero if none.
    pub fn get_entry(&self, list_id: U256, counterparty: Address) -> (bool, bool, U256, B256) {
        let list = self.lists.getter(list_id);
        let entry = list.entries.getter(counterparty);
        (
            entry.exists.get(),
            entry.allowed.get(),
            entry.max_per_payment.get(),
            entry.label.get(),
        )
    }

    /// The owner of a list; zero for an unknown id.
    pub fn list_owner(&self, list_id: U256) -> Address {
        self.lists.getter(list_id).owner.get()
    }

    /// Whether `account` is an admin of the list (the owner is not, unless appointed).
    pub fn is_admin(&self, list_id: U256, account: Address) -> bool {
        self.lists.getter(list_id).admins.get(account)
    }

    /// Number of lists created; ids run from 1 to this.
    pub fn list_count(&self) -> U256 {
        self.list_count.get()
    }
}

// Internal machinery, not part of the ABI.
impl CounterpartyRegistry {
    /// Fails for an address no session may pay: zero, this registry, and once bound the
    /// wallet, its gateway and its receipt registry.
    fn payable(&self, counterparty: Address) -> Result<()> {
        non_zero(counterparty)?;
        if counterparty == self.vm().contract_address()
            || counterparty == self.wallet.get()
            || counterparty == self.gateway.get()
            || counterparty == self.receipt_registry.get()
        {
            return Err(CounterpartyInvalidAddress {
                account: counterparty,
            }
            .into());
        }
        Ok(())
    }

    /// An address-returning view of the wallet (zero if it does not answer one).
    fn wallet_view(&self, wallet: Address, selector: [u8; 4]) -> Address {
        call::view(self.vm(), wallet, &calldata::encode(selector, &[]))
            .filter(|out| out.len() == 32)
            .map(|out| Address::from_slice(&out[12..]))
            .unwrap_or_default()
    }

    fn ensure_list(&self, list_id: U256) -> Result<()> {
        if list_id.is_zero() || list_id > self.list_count.get() {
            return Err(CounterpartyUnknownList { listId: list_id }.into());
        }
        Ok(())
    }

    /// Fails unless the list exists and the caller owns it; returns the caller.
    fn only_owner(&self, list_id: U256) -> Result<Address> {
        self.ensure_list(list_id)?;
        let caller = self.vm().msg_sender();
        if caller != self.lists.getter(list_id).owner.get() {
            return Err(CounterpartyUnauthorized {
                listId: list_id,
                caller,
            }
            .into());
        }
        Ok(caller)
    }

    /// Fails unless the list exists and the caller owns it or is its admin; returns the caller.
    fn only_editor(&self, list_id: U256) -> Result<Address> {
        self.ensure_list(list_id)?;
        let caller = self.vm().msg_sender();
        let list = self.lists.getter(list_id);
        if caller != list.owner.get() && !list.admins.get(caller) {
            return Err(CounterpartyUnauthorized {
                listId: list_id,
                caller,
            }
            .into());
        }
        Ok(caller)
    }

    fn write_entry(
        &mut self,
        list_id: U256,
        counterparty: Address,
        allowed: bool,
        max_per_payment: U256,
        label: B256,
        by: Address,
    ) {
        let now = self.vm().block_timestamp();
        let mut list = self.lists.setter(list_id);
        let mut entry = list.entries.setter(counterparty);
        if entry.widens(allowed, max_per_payment) {
            entry.since.set(U64::from(now));
        }
        entry.exists.set(true);
        entry.allowed.set(allowed);
        entry.max_per_payment.set(max_per_payment);
        entry.label.set(label);
        self.vm().log(EntrySet {
            listId: list_id,
            counterparty,
            by,
            allowed,
            maxPerPayment: max_per_payment,
            label,
        });
    }
}

fn non_zero(account: Address) -> Result<()> {
    if account.is_zero() {
        return Err(CounterpartyInvalidAddress { account }.into());
    }
    Ok(())
}
