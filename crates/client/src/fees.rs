//! EIP-1559 fee caps: what a new transaction offers, and what a replacement of a pending one
//! must offer for nodes to accept it.

/// Percent by which a replacement must raise both the tip and the fee cap over the transaction
/// it replaces: geth's txpool default (`--txpool.pricebump`), which the devnet and anvil share.
pub const REPLACEMENT_BUMP_PERCENT: u128 = 10;

/// A transaction's fee caps, in wei per gas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fees {
    /// `maxFeePerGas`: the most the sender pays per gas (base fee plus tip).
    pub max_fee_per_gas: u128,
    /// `maxPriorityFeePerGas`: the most of it that goes to the block producer.
    pub max_priority_fee_per_gas: u128,
}

impl Fees {
    /// Caps for a transaction in the next blocks: the suggested `tip` on top of twice the
    /// latest `base_fee`, so that the transaction survives the base fee rising for a while.
    pub fn for_next_block(base_fee: u128, tip: u128) -> Self {
        Fees {
            max_fee_per_gas: base_fee.saturating_mul(2).saturating_add(tip),
            max_priority_fee_per_gas: tip,
        }
    }

    /// Caps for a transaction replacing one sent with `self` (same sender and nonce): each cap
    /// at least [`REPLACEMENT_BUMP_PERCENT`] higher, rounded up (nodes refuse less as
    /// "replacement transaction underpriced"), and never below what the chain asks now
    /// (`now`), so a replacement also catches up with a risen base fee.
    pub fn replacement(&self, now: Fees) -> Self {
        let bump = |fee: u128| {
            fee.saturating_add((fee.saturating_mul(REPLACEMENT_BUMP_PERCENT)).div_ceil(100))
        };
        let tip = bump(self.max_priority_fee_per_gas).max(now.max_priority_fee_per_gas);
        // The cap must cover the tip (EIP-1559 refuses tip > cap).
        let cap = bump(self.max_fee_per_gas).max(now.max_fee_per_gas).max(tip);
        Fees {
            max_fee_per_gas: cap,
            max_priority_fee_per_gas: tip,
        }
    }

    /// Whether a transaction with these caps can be included at `base_fee`.
    pub fn covers(&self, base_fee: u128) -> bool {
        self.max_fee_per_gas >= base_fee
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fees(cap: u128, tip: u128) -> Fees {
        Fees {
            max_fee_per_gas: cap,
            max_priority_fee_per_gas: tip,
        }
    }

    #[test]
    fn a_new_transaction_offers_twice_the_base_fee_plus_the_tip() {
        assert_eq!(Fees::for_next_block(100, 7), fees(207, 7));
        assert_eq!(Fees::for_next_block(u128::MAX, 1), fees(u128::MAX, 1));
        assert!(Fees::for_next_block(100, 0).covers(200));
        assert!(!Fees::for_next_block(100, 0).covers(201));
    }

    #[test]
    fn a_replacement_raises_both_caps_by_at_least_ten_percent_rounded_up() {
        let old = fees(1_000, 100);
        assert_eq!(old.replacement(Fees::default()), fees(1_100, 110));
        // Rounded up: 10% of 15 is 1.5, and 16 is the least a node accepts.
        assert_eq!(fees(15, 5).replacement(Fees::default()), fees(17, 6));
        // A zero tip stays acceptable at zero (10% of nothing), the cap still rises.
        assert_eq!(fees(200, 0).replacement(Fees::default()), fees(220, 0));
        // Repeated replacements keep climbing.
        let twice = old
            .replacement(Fees::default())
            .replacement(Fees::default());
        assert_eq!(twice, fees(1_210, 121));
    }

    #[test]
    fn a_replacement_never_offers_less_than_the_chain_asks_now() {
        let old = fees(1_000, 100);
        let now = Fees::for_next_block(5_000, 300);
        assert_eq!(old.replacement(now), fees(10_300, 300));
        // The cap always covers the tip.
        let odd = fees(10, 1_000).replacement(Fees::default());
        assert!(odd.max_fee_per_gas >= odd.max_priority_fee_per_gas);
    }

    #[test]
    fn caps_saturate_instead_of_wrapping() {
        let top = fees(u128::MAX, u128::MAX);
        assert_eq!(top.replacement(top), top);
        assert_eq!(
            fees(u128::MAX - 1, 0)
                .replacement(Fees::default())
                .max_fee_per_gas,
            u128::MAX
        );
    }
}
