//! # TestToken
//!
//! "Bursar Test USD" (tUSD): a 6-decimal ERC-20 stablecoin with EIP-2612 `permit`, for local
//! networks and tests. The owner mints; everything else is plain ERC-20 with OpenZeppelin 5's
//! EIP-6093 errors. An allowance of `type(uint256).max` is infinite: `transferFrom` never
//! decreases it.
//!
//! Every check runs before the first storage write, so a call that fails changes nothing even
//! where nothing rolls it back (the unit-test VM).
//!
//! The ABI, events and errors are declared once in `bursar_bindings::token`.
#![cfg_attr(not(any(test, feature = "export-abi")), no_main)]
#![cfg_attr(not(any(test, feature = "export-abi")), no_std)]
// `#[public]` generates an undocumented `print_from_args` for `export-abi`; the lints run
// without that feature too (`cargo xtask test`), where every public item needs docs.
#![cfg_attr(feature = "export-abi", allow(missing_docs))]

#[macro_use]
extern crate alloc;

pub mod error;
#[cfg(test)]
mod tests;

use alloc::{string::String, vec::Vec};

use alloy_primitives::{Address, B256, U256};
use bursar_bindings::{
    eip712::{PERMIT_TYPEHASH, TEST_TOKEN_DOMAIN},
    token::ITestToken::*,
};
use bursar_contract_common::{
    eip712::{domain_separator, hash_words, typed_data_hash},
    signature, word,
};
use stylus_sdk::{prelude::*, storage::*};

pub use error::TokenError;

type Result<T, E = TokenError> = core::result::Result<T, E>;

/// Decimals of tUSD, like USDC.
pub const DECIMALS: u8 = 6;
/// The token's symbol.
pub const SYMBOL: &str = "tUSD";

/// The token's storage: an ERC-20 ledger with EIP-2612 nonces and a minting owner.
#[storage]
#[entrypoint]
pub struct TestToken {
    owner: StorageAddress,
    total_supply: StorageU256,
    balances: StorageMap<Address, StorageU256>,
    allowances: StorageMap<Address, StorageMap<Address, StorageU256>>,
    /// EIP-2612 nonces: sequential per owner.
    nonces: StorageMap<Address, StorageU256>,
}

#[public]
impl TestToken {
    /// Sets the owner, who alone may mint. `owner` is an argument rather than the caller
    /// because under StylusDeployer the caller is the deployer contract.
    ///
    /// # Errors
    /// * `OwnableInvalidOwner(0)` — `owner` is the zero address.
    ///
    /// # Events
    /// `OwnershipTransferred(0, owner)`.
    #[constructor]
    pub fn constructor(&mut self, owner: Address) -> Result<()> {
        if owner.is_zero() {
            return Err(OwnableInvalidOwner { owner }.into());
        }
        self.set_owner(owner);
        Ok(())
    }

    /// "Bursar Test USD" (also the EIP-712 domain name).
    pub fn name() -> String {
        TEST_TOKEN_DOMAIN.name.into()
    }

    /// "tUSD".
    pub fn symbol() -> String {
        SYMBOL.into()
    }

    /// 6.
    pub fn decimals() -> u8 {
        DECIMALS
    }

    /// All tokens minted (tokens are never burned).
    pub fn total_supply(&self) -> U256 {
        self.total_supply.get()
    }

    /// The balance of `account`.
    pub fn balance_of(&self, account: Address) -> U256 {
        self.balances.get(account)
    }

    /// What `spender` may still move out of `owner`'s balance.
    pub fn allowance(&self, owner: Address, spender: Address) -> U256 {
        self.allowances.getter(owner).get(spender)
    }

    /// Moves `value` from the caller to `to`. Returns `true` (failures revert).
    ///
    /// # Errors
    /// * `ERC20InvalidSender(0)` — the caller is the zero address.
    /// * `ERC20InvalidReceiver(0)` — `to` is the zero address.
    /// * `ERC20InsufficientBalance` — the caller holds less than `value`.
    ///
    /// # Events
    /// `Transfer(caller, to, value)`.
    pub fn transfer(&mut self, to: Address, value: U256) -> Result<bool> {
        let from = self.vm().msg_sender();
        self.move_tokens(from, to, value)?;
        Ok(true)
    }

    /// Moves `value` from `from` to `to` out of the caller's allowance, which decreases unless
    /// it is `type(uint256).max`. Returns `true` (failures revert).
    ///
    /// # Errors
    /// * `ERC20InsufficientAllowance` — the caller's allowance is below `value`.
    /// * `ERC20InvalidSender(0)` — `from` is the zero address.
    /// * `ERC20InvalidReceiver(0)` — `to` is the zero address.
    /// * `ERC20InsufficientBalance` — `from` holds less than `value`.
    ///
    /// # Events
    /// `Transfer(from, to, value)` (no `Approval`).
    pub fn transfer_from(&mut self, from: Address, to: Address, value: U256) -> Result<bool> {
        let spender = self.vm().msg_sender();
        let allowance = self.allowances.getter(from).get(spender);
        let remaining = if allowance == U256::MAX {
            allowance
        } else {
            allowance
                .checked_sub(value)
                .ok_or(ERC20InsufficientAllowance {
                    spender,
                    allowance,
                    needed: value,
                })?
        };
        self.move_tokens(from, to, value)?;
        if remaining != allowance {
            self.allowances.setter(from).setter(spender).set(remaining);
        }
        Ok(true)
    }

    /// Lets `spender` move up to `value` of the caller's tokens (replacing any allowance).
    /// Returns `true` (failures revert).
    ///
    /// # Errors
    /// * `ERC20InvalidApprover(0)` — the caller is the zero address.
    /// * `ERC20InvalidSpender(0)` — `spender` is the zero address.
    ///
    /// # Events
    /// `Approval(caller, spender, value)`.
    pub fn approve(&mut self, spender: Address, value: U256) -> Result<bool> {
        let owner = self.vm().msg_sender();
        self.set_allowance(owner, spender, value)?;
        Ok(true)
    }

    /// EIP-2612: sets `owner`'s allowance for `spender` to `value` on the strength of `owner`'s
    /// EIP-712 `Permit` signature `(v, r, s)` over `nonces(owner)`, submitted by anyone.
    ///
    /// # Errors
    /// * `ERC2612ExpiredSignature` — `deadline` is before the current block's timestamp.
    /// * `ERC2612InvalidSigner(signer, owner)` — the signature recovers to another address;
    ///   `signer` is zero when it recovers to none (malformed, `v` not 27/28 (or 0/1), high `s`).
    /// * `ERC20InvalidSpender(0)` — `spender` is the zero address.
    /// * `TokenOverflow` — the owner's nonce is exhausted (unreachable in practice).
    ///
    /// # Events
    /// `Approval(owner, spender, value)`.
    #[allow(clippy::too_many_arguments)]
    pub fn permit(
        &mut self,
        owner: Address,
        spender: Address,
        value: U256,
        deadline: U256,
        v: u8,
        r: B256,
        s: B256,
    ) -> Result<()> {
        if U256::from(self.vm().block_timestamp()) > deadline {
            return Err(ERC2612ExpiredSignature { deadline }.into());
        }
        let nonce = self.nonces.get(owner);
        let digest = self.permit_digest(owner, spender, value, nonce, deadline);
        let mut sig = [0u8; 65];
        sig[..32].copy_from_slice(r.as_slice());
        sig[32..64].copy_from_slice(s.as_slice());
        sig[64] = v;
        match signature::recover(self.vm(), digest, &sig) {
            Some(signer) if signer == owner => {}
            signer => {
                return Err(ERC2612InvalidSigner {
                    signer: signer.unwrap_or_default(),
                    owner,
                }
                .into())
            }
        }
        let next = checked_inc(nonce, U256::from(1))?;
        self.set_allowance(owner, spender, value)?;
        self.nonces.setter(owner).set(next);
        Ok(())
    }

    /// The nonce `owner`'s next permit must sign.
    pub fn nonces(&self, owner: Address) -> U256 {
        self.nonces.get(owner)
    }

    /// The EIP-712 domain separator ("Bursar Test USD", "1", chain id, this address).
    #[selector(name = "DOMAIN_SEPARATOR")]
    pub fn domain_separator(&self) -> B256 {
        domain_separator(
            self.vm(),
            TEST_TOKEN_DOMAIN.name_hash,
            TEST_TOKEN_DOMAIN.version_hash,
        )
    }

    /// Creates `value` new tokens for `to` (owner only).
    ///
    /// # Errors
    /// * `OwnableUnauthorizedAccount` — the caller is not the owner.
    /// * `ERC20InvalidReceiver(0)` — `to` is the zero address.
    /// * `TokenOverflow(totalSupply, value)` — the total supply would exceed 2^256 − 1.
    ///
    /// # Events
    /// `Transfer(0, to, value)`.
    pub fn mint(&mut self, to: Address, value: U256) -> Result<()> {
        self.only_owner()?;
        if to.is_zero() {
            return Err(ERC20InvalidReceiver { receiver: to }.into());
        }
        let supply = checked_inc(self.total_supply.get(), value)?;
        // Every balance is at most the total supply, so this cannot overflow once that did not.
        let balance = checked_inc(self.balances.get(to), value)?;
        self.total_supply.set(supply);
        self.balances.setter(to).set(balance);
        self.vm().log(Transfer {
            from: Address::ZERO,
            to,
            value,
        });
        Ok(())
    }

    /// The account that may mint.
    pub fn owner(&self) -> Address {
        self.owner.get()
    }

    /// Hands minting rights to `new_owner` (owner only).
    ///
    /// # Errors
    /// * `OwnableUnauthorizedAccount` — the caller is not the owner.
    /// * `OwnableInvalidOwner(0)` — `new_owner` is the zero address.
    ///
    /// # Events
    /// `OwnershipTransferred(previous, new_owner)`.
    pub fn transfer_ownership(&mut self, new_owner: Address) -> Result<()> {
        self.only_owner()?;
        if new_owner.is_zero() {
            return Err(OwnableInvalidOwner { owner: new_owner }.into());
        }
        self.set_owner(new_owner);
        Ok(())
    }
}

// Internal machinery, not part of the ABI.
impl TestToken {
    fn only_owner(&self) -> Result<()> {
        let account = self.vm().msg_sender();
        if account != self.owner.get() {
            return Err(OwnableUnauthorizedAccount { account }.into());
        }
        Ok(())
    }

    fn set_owner(&mut self, new_owner: Address) {
        let previous_owner = self.owner.get();
        self.owner.set(new_owner);
        self.vm().log(OwnershipTransferred {
            previousOwner: previous_owner,
            newOwner: new_owner,
        });
    }

    /// Debits `from` and credits `to`; fails before writing anything.
    fn move_tokens(&mut self, from: Address, to: Address, value: U256) -> Result<()> {
        if from.is_zero() {
            return Err(ERC20InvalidSender { sender: from }.into());
        }
        if to.is_zero() {
            return Err(ERC20InvalidReceiver { receiver: to }.into());
        }
        let balance = self.balances.get(from);
        let rest = balance.checked_sub(value).ok_or(ERC20InsufficientBalance {
            sender: from,
            balance,
            needed: value,
        })?;
        self.balances.setter(from).set(rest);
        // Read after the debit so that a transfer to oneself is a no-op. The sum of all
        // balances is the total supply, so the credit cannot overflow.
        let credited = checked_inc(self.balances.get(to), value)?;
        self.balances.setter(to).set(credited);
        self.vm().log(Transfer { from, to, value });
        Ok(())
    }

    fn set_allowance(&mut self, owner: Address, spender: Address, value: U256) -> Result<()> {
        if owner.is_zero() {
            return Err(ERC20InvalidApprover { approver: owner }.into());
        }
        if spender.is_zero() {
            return Err(ERC20InvalidSpender { spender }.into());
        }
        self.allowances.setter(owner).setter(spender).set(value);
        self.vm().log(Approval {
            owner,
            spender,
            value,
        });
        Ok(())
    }

    /// The EIP-712 digest of `Permit(owner, spender, value, nonce, deadline)`.
    fn permit_digest(
        &self,
        owner: Address,
        spender: Address,
        value: U256,
        nonce: U256,
        deadline: U256,
    ) -> B256 {
        typed_data_hash(
            self.domain_separator(),
            hash_words(&[
                word(PERMIT_TYPEHASH),
                word(owner),
                word(spender),
                word(value),
                word(nonce),
                word(deadline),
            ]),
        )
    }
}

/// `current + increment`, or `TokenOverflow`.
fn checked_inc(current: U256, increment: U256) -> Result<U256> {
    current
        .checked_add(increment)
        .ok_or_else(|| TokenOverflow { current, increment }.into())
}
