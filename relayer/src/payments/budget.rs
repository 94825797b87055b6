//! The budget logic of the payment queue, without I/O: what a session's payments stored but not
//! yet on chain hold ([`InFlight`]), what the session can still take ([`Budget`]), and the
//! wallet's errors for what it cannot. [`super::queue`] reads the chain and the database around
//! it.

use std::collections::{HashMap, HashSet, VecDeque};

use alloy_primitives::U256;
use bursar_client::revert::ContractError;
use serde_json::{Map, Value};

use crate::kernel::Error;

/// A session's payments stored but not yet in the chain's state, in the order its signer
/// sends them, with their sums.
#[derive(Default)]
pub(super) struct InFlight {
    /// `(transaction nonce, amount, executes, intent nonce)`.
    pub(super) payments: VecDeque<(u64, U256, bool, U256)>,
    /// The intent nonces of `payments`: a second intent under one of them would fail on chain.
    nonces: HashSet<U256>,
    /// Intent nonces of payments that left `payments` because a block's state holds them, with
    /// that block. A replay's simulation may have run at an earlier block, where the nonce
    /// was still free: it is refused by these until [`SETTLED_BLOCKS`] later.
    settled: HashMap<U256, u64>,
    /// The sum of `payments`' amounts (what they hold of the deposit).
    pub(super) deposit: U256,
    /// The sum of the amounts of those that execute (what they take of the period's budget).
    pub(super) period: U256,
    /// The session's room by its state at a block (deposit and period budget left), and the
    /// block.
    pub(super) state: Option<(u64, U256, U256)>,
    /// The session's queue version `payments` are at (`Store::advance_queue_versions`).
    pub(super) version: i64,
}

impl InFlight {
    pub(super) fn push(&mut self, tx_nonce: u64, amount: U256, executes: bool, intent_nonce: U256) {
        self.payments
            .push_back((tx_nonce, amount, executes, intent_nonce));
        self.nonces.insert(intent_nonce);
        self.deposit = self.deposit.saturating_add(amount);
        if executes {
            self.period = self.period.saturating_add(amount);
        }
    }

    /// Forgets the payments whose transactions are below `mined` (the signer's nonce at
    /// `block`): that block's state holds them.
    pub(super) fn settle(&mut self, mined: u64, block: u64) {
        self.settled
            .retain(|_, at| at.saturating_add(SETTLED_BLOCKS) >= block);
        while let Some(&(nonce, amount, executes, intent_nonce)) = self.payments.front() {
            if nonce >= mined {
                break;
            }
            self.payments.pop_front();
            self.nonces.remove(&intent_nonce);
            self.settled.insert(intent_nonce, block);
            self.deposit = self.deposit.saturating_sub(amount);
            if executes {
                self.period = self.period.saturating_sub(amount);
            }
        }
    }

    /// Whether an intent under `nonce` is in flight or was settled lately.
    pub(super) fn uses(&self, nonce: &U256) -> bool {
        self.nonces.contains(nonce) || self.settled.contains_key(nonce)
    }
}

/// How long a settled intent nonce is remembered, in blocks: longer than any simulation can
/// lag behind the block the queue reads.
const SETTLED_BLOCKS: u64 = 64;

/// What a session can still take: its deposit and period budget left, less the payments
/// queued but not yet on chain (and those taken in this batch so far).
pub(super) struct Budget {
    deposit: U256,
    period: U256,
    queued_deposit: U256,
    queued_period: U256,
}

impl Budget {
    /// The budget of a session with `deposit` and `period` budget left by its state at a
    /// block, less what `in_flight` holds of them (the payments that state does not hold yet).
    pub(super) fn left(deposit: U256, period: U256, in_flight: &InFlight) -> Self {
        Budget {
            deposit: deposit.saturating_sub(in_flight.deposit),
            period: period.saturating_sub(in_flight.period),
            queued_deposit: in_flight.deposit,
            queued_period: in_flight.period,
        }
    }

    /// Takes `amount`, or refuses it with the error the wallet would give.
    pub(super) fn take(&mut self, amount: U256, executes: bool) -> Result<(), Error> {
        if amount > self.deposit {
            return Err(refuse(
                "WalletInsufficientDeposit",
                amount,
                self.deposit,
                self.queued_deposit,
            ));
        }
        if executes && amount > self.period {
            return Err(refuse(
                "WalletPeriodBudgetExceeded",
                amount,
                self.period,
                self.queued_period,
            ));
        }
        self.deposit -= amount;
        self.queued_deposit = self.queued_deposit.saturating_add(amount);
        if executes {
            self.period -= amount;
            self.queued_period = self.queued_period.saturating_add(amount);
        }
        Ok(())
    }
}

fn refuse(name: &str, amount: U256, available: U256, queued: U256) -> Error {
    let mut args = Map::new();
    args.insert("amount".into(), Value::String(amount.to_string()));
    args.insert("available".into(), Value::String(available.to_string()));
    args.insert("queued".into(), Value::String(queued.to_string()));
    Error::Contract(ContractError {
        name: name.into(),
        args,
    })
}

/// The wallet's refusal of a second intent under `nonce`.
pub(super) fn nonce_used(nonce: U256) -> Error {
    let mut args = Map::new();
    args.insert("nonce".into(), Value::String(nonce.to_string()));
    Error::Contract(ContractError {
        name: "WalletNonceUsed".into(),
        args,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_settled_intent_nonce_is_still_used_for_a_while() {
        let mut f = InFlight::default();
        f.push(0, U256::from(5), true, U256::from(9));
        f.push(1, U256::from(7), false, U256::from(10));
        assert!(f.uses(&U256::from(9)) && f.uses(&U256::from(10)));
        // Block 100's state holds the first: its nonce is no longer in flight, but a replay
        // simulated at block 99 would have found it free.
        f.settle(1, 100);
        assert_eq!((f.deposit, f.period), (U256::from(7), U256::ZERO));
        assert!(!f.nonces.contains(&U256::from(9)));
        assert!(f.uses(&U256::from(9)), "settled lately");
        assert!(f.uses(&U256::from(10)), "in flight");
        assert!(!f.uses(&U256::from(11)));
        f.settle(2, 100 + SETTLED_BLOCKS);
        assert!(f.uses(&U256::from(9)) && f.uses(&U256::from(10)));
        f.settle(2, 101 + SETTLED_BLOCKS);
        assert!(
            !f.uses(&U256::from(9)),
            "forgotten once no simulation can lag so far"
        );
        assert!(f.uses(&U256::from(10)));
    }

    #[test]
    fn a_budget_refuses_what_the_wallet_would() {
        let mut budget = Budget {
            deposit: U256::from(10),
            period: U256::from(6),
            queued_deposit: U256::ZERO,
            queued_period: U256::ZERO,
        };
        assert!(budget.take(U256::from(5), true).is_ok());
        let over_period = budget.take(U256::from(2), true).unwrap_err();
        assert_eq!(over_period.code(), "WalletPeriodBudgetExceeded");
        // A pending payment holds deposit, not period budget.
        assert!(budget.take(U256::from(4), false).is_ok());
        let over_deposit = budget.take(U256::from(2), false).unwrap_err();
        assert_eq!(over_deposit.code(), "WalletInsufficientDeposit");
        assert!(budget.take(U256::from(1), true).is_ok());
        assert_eq!((budget.deposit, budget.period), (U256::ZERO, U256::ZERO));
    }

    #[test]
    fn a_budget_is_what_the_state_leaves_less_what_is_in_flight() {
        let mut f = InFlight::default();
        f.push(0, U256::from(3), true, U256::from(1));
        f.push(1, U256::from(4), false, U256::from(2));
        let b = Budget::left(U256::from(10), U256::from(5), &f);
        assert_eq!((b.deposit, b.period), (U256::from(3), U256::from(2)));
        // The state may already hold what the queue still counts (a block it has not read):
        // the budget is then none, never a wrapped-around huge one.
        let b = Budget::left(U256::from(2), U256::from(1), &f);
        assert_eq!((b.deposit, b.period), (U256::ZERO, U256::ZERO));
    }

    /// An amount as a hostile sandbox would send it: small, at the edges, or near `U256::MAX`.
    fn amount() -> impl Strategy<Value = U256> {
        prop_oneof![
            (0u64..1_000).prop_map(U256::from),
            Just(U256::ZERO),
            Just(U256::MAX),
            (0u64..1_000).prop_map(|n| U256::MAX - U256::from(n)),
            any::<[u8; 32]>().prop_map(U256::from_be_bytes),
        ]
    }

    proptest! {
        /// Whatever is asked, a budget never lets the payments it takes sum to more than the
        /// deposit left, nor those that execute to more than the period's budget left, and it
        /// refuses only what would.
        #[test]
        fn a_budget_never_overspends(
            deposit in amount(),
            period in amount(),
            asks in proptest::collection::vec((amount(), any::<bool>()), 0..40),
        ) {
            let mut budget = Budget::left(deposit, period, &InFlight::default());
            let (mut taken, mut executed) = (U256::ZERO, U256::ZERO);
            for (amount, executes) in asks {
                let fits = taken.checked_add(amount).is_some_and(|t| t <= deposit)
                    && (!executes || executed.checked_add(amount).is_some_and(|e| e <= period));
                match budget.take(amount, executes) {
                    Ok(()) => {
                        prop_assert!(fits);
                        taken += amount;
                        if executes {
                            executed += amount;
                        }
                    }
                    Err(e) => {
                        prop_assert!(!fits);
                        prop_assert!(matches!(
                            e.code(),
                            "WalletInsufficientDeposit" | "WalletPeriodBudgetExceeded"
                        ));
                    }
                }
            }
            prop_assert!(taken <= deposit && executed <= period);
        }

        /// What is in flight is the sum of the payments the chain does not hold yet, whatever
        /// blocks are read; amounts whose sum would overflow (which no simulation lets in, as
        /// each is at most the deposit) saturate rather than panic.
        #[test]
        fn in_flight_sums_follow_the_chain(
            payments in proptest::collection::vec((amount(), any::<bool>()), 0..30),
            reads in proptest::collection::vec((0u64..40, 0u64..200), 0..10),
        ) {
            let mut f = InFlight::default();
            for (i, (amount, executes)) in payments.iter().enumerate() {
                f.push(i as u64, *amount, *executes, U256::from(i));
            }
            let exact = payments
                .iter()
                .try_fold(U256::ZERO, |sum, (a, _)| sum.checked_add(*a))
                .is_some();
            let mut mined = 0;
            for (nonce, block) in reads {
                // A signer's nonce never goes back.
                mined = mined.max(nonce);
                f.settle(mined, block);
                let left: Vec<_> = payments.iter().enumerate().skip(mined as usize).collect();
                if exact {
                    let deposit = left.iter().fold(U256::ZERO, |d, (_, (a, _))| d + *a);
                    let period = left
                        .iter()
                        .filter(|(_, (_, e))| *e)
                        .fold(U256::ZERO, |p, (_, (a, _))| p + *a);
                    prop_assert_eq!((f.deposit, f.period), (deposit, period));
                }
                for (i, _) in &left {
                    prop_assert!(f.uses(&U256::from(*i)), "in flight");
                }
            }
        }
    }
}
