//! A session's stored terms and state, and the policy checks that read them.

use alloc::vec::Vec;
use alloy_primitives::{Address, B256, U128, U256};
use bursar_bindings::wallet::{ISessionWallet::*, SessionStatus};
use stylus_sdk::{prelude::*, storage::*};

use crate::error::WalletError;

/// One session, packed into nine slots (a new slot costs 22,100 gas): amounts are `uint128`
/// (`openSession` refuses more), list ids `uint64` and their pin `uint32`, small fields share
/// slots with addresses.
/// The terms set at open fill seven slots (fewer without a guardian, a period, a lease keeper
/// or caps); what every payment updates (`spent`, `periodSpent`) has a slot of its own, which a
/// session's first payment creates and later ones rewrite (one slot, not two); `held`
/// (pending payments) shares a slot with the allowlist id. The metadata is not stored: it is in
/// `SessionOpened`, which is where auditors read it.
#[storage]
pub struct Session {
    /// Owns the deposit: decides pending payments, may close at any time, gets the refund.
    pub owner: StorageAddress,
    /// A [`SessionStatus`]: unknown (0), active, revoked or closed.
    pub status: StorageU8,
    /// When the session stops paying (unix seconds).
    pub expires_at: StorageU64,
    /// Signs the agent's payment intents (and lease renewals without a keeper).
    pub session_key: StorageAddress,
    /// When the session starts paying (unix seconds; 0: at once).
    pub valid_after: StorageU64,
    /// The time its allowlist is pinned at (unix seconds; 0: the list as it is at each
    /// payment). In the session key's slot, which every payment reads anyway.
    pub allowlist_as_of: StorageU32,
    /// The ERC-20 escrowed, or zero for the native currency.
    pub token: StorageAddress,
    /// Start of the budget period last paid in (unix seconds).
    pub period_start: StorageU64,
    /// May revoke the session (zero: nobody besides the owner and the key).
    pub guardian: StorageAddress,
    /// Length of a budget period (0: no period budget).
    pub period_seconds: StorageU64,
    /// Who must keep renewing the lease (zero: the owner or the session key may).
    pub lease_keeper: StorageAddress,
    /// How far a renewal extends the lease (0: no lease).
    pub lease_seconds: StorageU64,
    /// Escrowed in all, top-ups included.
    pub deposit: StorageU128,
    /// What may be spent per period (with `period_seconds`).
    pub period_budget: StorageU128,
    /// Payments above this wait for the owner (0: none do).
    pub co_sign_threshold: StorageU128,
    /// The largest single payment (0: no cap).
    pub per_payment_cap: StorageU128,
    /// Paid out so far.
    pub spent: StorageU128,
    /// Spent in the period that starts at `period_start`.
    pub period_spent: StorageU128,
    /// Held back for pending payments until they are approved or rejected.
    pub held: StorageU128,
    /// The CounterpartyRegistry list payees must be on.
    pub allowlist_id: StorageU64,
    /// Zero without a lease.
    pub lease_expires_at: StorageU64,
    /// Session-key and lease-keeper nonces (payment intents, lease renewals): an unordered
    /// bitmap.
    pub nonces: StorageMap<U256, StorageU256>,
}

/// The policy an owner chooses when opening a session (the `openSession` arguments).
#[derive(Clone, Debug)]
pub struct Terms {
    /// Signs payment intents.
    pub session_key: Address,
    /// May revoke (zero: none).
    pub guardian: Address,
    /// ERC-20 escrowed (zero: native currency).
    pub token: Address,
    /// Escrowed at open.
    pub deposit: U256,
    /// Largest single payment (0: no cap).
    pub per_payment_cap: U256,
    /// Spendable per period (0: no budget).
    pub period_budget: U256,
    /// Period length in seconds (0: no budget).
    pub period_seconds: u64,
    /// Payments above this wait for the owner (0: none).
    pub co_sign_threshold: U256,
    /// Start (unix seconds; 0: at once).
    pub valid_after: u64,
    /// End (unix seconds).
    pub expires_at: u64,
    /// Lease length in seconds (0: no lease).
    pub lease_seconds: u64,
    /// Who must renew the lease (zero: the session key may).
    pub lease_keeper: Address,
    /// CounterpartyRegistry list of allowed payees: its id, plus the time it is pinned at
    /// (unix seconds, below 2^32) times 2^64.
    pub allowlist_id: U256,
    /// Opaque to the wallet; logged in `SessionOpened`.
    pub metadata: B256,
}

/// An amount as stored. Callers keep amounts within `uint128` (checked at `openSession` and
/// `topUp`; spending never exceeds the deposit), so this never truncates. (Limbs rather than
/// `U128::from`, whose overflow panic would bring formatting code into the WASM.)
pub fn narrow(amount: U256) -> U128 {
    let limbs = amount.as_limbs();
    U128::from_limbs([limbs[0], limbs[1]])
}

/// A stored amount, widened.
pub fn widen(amount: U128) -> U256 {
    let limbs = amount.into_limbs();
    U256::from_limbs([limbs[0], limbs[1], 0, 0])
}

impl Session {
    /// The stored [`SessionStatus`] as a number.
    pub fn status(&self) -> u8 {
        self.status.get().to::<u8>()
    }

    /// Fails unless the session exists and is neither revoked nor closed.
    pub fn ensure_open(&self, id: U256) -> Result<(), WalletError> {
        match self.status() {
            s if s == SessionStatus::Active as u8 => Ok(()),
            s if s == SessionStatus::Revoked as u8 => {
                Err(WalletSessionRevoked { sessionId: id }.into())
            }
            s if s == SessionStatus::Closed as u8 => {
                Err(WalletSessionClosed { sessionId: id }.into())
            }
            _ => Err(WalletUnknownSession { sessionId: id }.into()),
        }
    }

    /// Fails unless the session is open, not expired and its lease (if any) is current.
    /// `check_start` also requires `validAfter` to have passed (payments do; top-ups don't).
    pub fn ensure_live(&self, id: U256, now: u64, check_start: bool) -> Result<(), WalletError> {
        self.ensure_unexpired(id, now, check_start)?;
        if self.lease_lapsed(now) {
            return Err(WalletLeaseLapsed {
                sessionId: id,
                leaseExpiresAt: self.lease_expires_at.get().to::<u64>(),
            }
            .into());
        }
        Ok(())
    }

    /// [`Session::ensure_live`] without the lease: open, started if `check_start`, not expired.
    pub fn ensure_unexpired(
        &self,
        id: U256,
        now: u64,
        check_start: bool,
    ) -> Result<(), WalletError> {
        self.ensure_open(id)?;
        let valid_after = self.valid_after.get().to::<u64>();
        if check_start && now < valid_after {
            return Err(WalletSessionNotYetValid {
                sessionId: id,
                validAfter: valid_after,
            }
            .into());
        }
        let expires_at = self.expires_at.get().to::<u64>();
        if now >= expires_at {
            return Err(WalletSessionExpired {
                sessionId: id,
                expiresAt: expires_at,
            }
            .into());
        }
        Ok(())
    }

    /// Whether the session has a lease and it ran out before `now`.
    pub fn lease_lapsed(&self, now: u64) -> bool {
        self.lease_seconds.get().to::<u64>() != 0 && now >= self.lease_expires_at.get().to::<u64>()
    }

    /// Whether anyone (not just the owner) may close the session now.
    pub fn closable_by_anyone(&self, now: u64) -> bool {
        self.status() == SessionStatus::Revoked as u8
            || now >= self.expires_at.get().to::<u64>()
            || self.lease_lapsed(now)
    }

    /// Deposit not yet spent nor held for pending payments.
    pub fn available(&self) -> U256 {
        if self.status() == SessionStatus::Closed as u8 {
            return U256::ZERO;
        }
        // spent + held <= deposit always holds (property-tested); saturate rather than wrap.
        self.amount(&self.deposit)
            .saturating_sub(self.amount(&self.spent))
            .saturating_sub(self.amount(&self.held))
    }

    /// Start of the period that contains `now` and the amount spent in it so far.
    pub fn current_period(&self, now: u64) -> (u64, U256) {
        let length = self.period_seconds.get().to::<u64>();
        let start = self.period_start.get().to::<u64>();
        if length == 0 || now < start.saturating_add(length) {
            return (start, self.amount(&self.period_spent));
        }
        (now - (now - start) % length, U256::ZERO)
    }

    /// What may still be spent in the current period (`type(uint256).max` without a budget).
    pub fn period_available(&self, now: u64) -> U256 {
        if self.period_seconds.get().to::<u64>() == 0 {
            return U256::MAX;
        }
        self.amount(&self.period_budget)
            .saturating_sub(self.current_period(now).1)
    }

    /// The reference of the counterparty list the session pays from, as the owner signed it:
    /// the list's id, plus the time it is pinned at times 2^64 (see the CounterpartyRegistry).
    pub fn list_id(&self) -> U256 {
        U256::from_limbs([
            self.allowlist_id.get().as_limbs()[0],
            self.allowlist_as_of.get().to::<u64>(),
            0,
            0,
        ])
    }

    /// A stored amount, widened.
    pub fn amount(&self, field: &StorageU128) -> U256 {
        widen(field.get())
    }
}
