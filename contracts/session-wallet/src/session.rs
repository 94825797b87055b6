//! A session's stored terms and state, and the policy checks that read them.

use alloc::vec::Vec;
use alloy_primitives::{Address, B256, U128, U256};
use bursar_bindings::wallet::{ISessionWallet::*, SessionStatus};
use stylus_sdk::{prelude::*, storage::*};

use crate::error::WalletError;

/// One session, packed into nine slots (a new slot costs 22,100 gas): amounts are `uint128`
/// (`openSession` refuses more), list ids `uint64`, small fields share slots with addresses.
/// Fields written together share a slot: what a payment updates (`spent`, `periodSpent`,
/// `reserved`) sits beside a term set at open, so a first payment rewrites slots instead of
/// creating them, and a session without a keeper or lease leaves their slot empty. The
/// metadata is not stored: it is in `SessionOpened`, which is where auditors read it.
#[storage]
pub struct Session {
    pub owner: StorageAddress,
    pub status: StorageU8,
    pub expires_at: StorageU64,
    pub session_key: StorageAddress,
    pub valid_after: StorageU64,
    pub token: StorageAddress,
    pub period_start: StorageU64,
    pub guardian: StorageAddress,
    pub period_seconds: StorageU64,
    /// Who must keep renewing the lease (zero: the owner or the session key may).
    pub lease_keeper: StorageAddress,
    pub lease_seconds: StorageU64,
    pub deposit: StorageU128,
    pub spent: StorageU128,
    pub period_budget: StorageU128,
    pub period_spent: StorageU128,
    pub co_sign_threshold: StorageU128,
    /// Held back for pending payments until they are approved or rejected.
    pub reserved: StorageU128,
    pub per_payment_cap: StorageU128,
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
    pub session_key: Address,
    pub guardian: Address,
    pub token: Address,
    pub deposit: U256,
    pub per_payment_cap: U256,
    pub period_budget: U256,
    pub period_seconds: u64,
    pub co_sign_threshold: U256,
    pub valid_after: u64,
    pub expires_at: u64,
    pub lease_seconds: u64,
    pub lease_keeper: Address,
    pub allowlist_id: U256,
    pub metadata: B256,
}

/// An amount as stored. Callers keep amounts within `uint128` (checked at `openSession` and
/// `topUp`; spending never exceeds the deposit), so this never truncates. (Limbs rather than
/// `U128::from`, whose overflow panic would bring formatting code into the WASM.)
pub fn narrow(amount: U256) -> U128 {
    let limbs = amount.as_limbs();
    U128::from_limbs([limbs[0], limbs[1]])
}

impl Session {
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
        if self.lease_lapsed(now) {
            return Err(WalletLeaseLapsed {
                sessionId: id,
                leaseExpiresAt: self.lease_expires_at.get().to::<u64>(),
            }
            .into());
        }
        Ok(())
    }

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
        // spent + reserved <= deposit always holds (property-tested); saturate rather than wrap.
        self.amount(&self.deposit)
            .saturating_sub(self.amount(&self.spent))
            .saturating_sub(self.amount(&self.reserved))
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

    /// The counterparty list the session pays from.
    pub fn list_id(&self) -> U256 {
        U256::from(self.allowlist_id.get().as_limbs()[0])
    }

    /// A stored amount, widened.
    pub fn amount(&self, field: &StorageU128) -> U256 {
        let limbs = field.get().into_limbs();
        U256::from_limbs([limbs[0], limbs[1], 0, 0])
    }
}
