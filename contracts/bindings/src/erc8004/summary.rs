//! ERC-8004 `getSummary`'s arithmetic, pure: the mean of fixed-point values of mixed decimals,
//! given at the decimals most entries use. The Reputation Registry sums with it on chain and
//! the indexer over the feedback it counts, so both compute exactly alike.

use crate::erc8004::MAX_VALUE_DECIMALS;
use alloy_primitives::{I256, U256};

/// Sums matching feedback as the deployed registry does: each value scaled to 18 decimals.
#[derive(Debug)]
pub struct Summary {
    count: u64,
    sum: I256,
    decimal_counts: [u64; MAX_VALUE_DECIMALS as usize + 1],
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            count: 0,
            sum: I256::ZERO,
            decimal_counts: [0; MAX_VALUE_DECIMALS as usize + 1],
        }
    }
}

fn ten_to(exponent: u8) -> I256 {
    I256::from_raw(U256::from(10).pow(U256::from(exponent)))
}

impl Summary {
    /// Counts one feedback (`decimals` at most 18, as `giveFeedback` enforces).
    pub fn add(&mut self, value: i128, decimals: u8) {
        self.sum += I256::try_from(value).expect("i128 fits in int256")
            * ten_to(MAX_VALUE_DECIMALS - decimals);
        self.count += 1;
        self.decimal_counts[decimals as usize] += 1;
    }

    /// `(count, value, decimals)`: the mean truncated toward zero at the most common decimals
    /// (the fewest on a tie), cast to `int128` without a range check as the deployed contract
    /// does; `(0, 0, 0)` when nothing matched.
    pub fn finish(&self) -> (u64, i128, u8) {
        if self.count == 0 {
            return (0, 0, 0);
        }
        let mut mode = 0u8;
        for d in 1..=MAX_VALUE_DECIMALS {
            if self.decimal_counts[d as usize] > self.decimal_counts[mode as usize] {
                mode = d;
            }
        }
        let mean = self.sum / I256::try_from(self.count).expect("u64 fits in int256");
        let value = mean / ten_to(MAX_VALUE_DECIMALS - mode);
        // `int128(x)`: the low 128 bits.
        let low =
            value.into_raw().as_limbs()[0] as u128 | (value.into_raw().as_limbs()[1] as u128) << 64;
        (self.count, low as i128, mode)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    fn summarize(entries: &[(i128, u8)]) -> (u64, i128, u8) {
        let mut s = Summary::default();
        for &(v, d) in entries {
            s.add(v, d);
        }
        s.finish()
    }

    #[test]
    fn the_specifications_examples() {
        assert_eq!(summarize(&[]), (0, 0, 0));
        assert_eq!(summarize(&[(80, 0), (90, 0), (9977, 2)]), (3, 89, 0));
        // A tie between 1 and 0 decimals goes to 0; the mean 0.65 truncates to 0.
        assert_eq!(summarize(&[(-7, 1), (2, 0)]), (2, 0, 0));
        assert_eq!(summarize(&[(-15, 1), (-16, 1)]), (2, -15, 1));
    }

    proptest! {
        /// Against the same computation in plain integers (values small enough for i128).
        #[test]
        fn matches_a_reference(entries in proptest::collection::vec((-1_000_000i128..1_000_000, 0u8..=18), 1..20)) {
            let scaled: Vec<i128> = entries.iter().map(|&(v, d)| v * 10i128.pow(u32::from(18 - d))).collect();
            let mut counts = [0u64; 19];
            for &(_, d) in &entries { counts[d as usize] += 1; }
            let mode = (0..19).fold(0usize, |m, d| if counts[d] > counts[m] { d } else { m });
            let sum: i128 = scaled.iter().sum();
            let mean = sum / entries.len() as i128;
            let expected = mean / 10i128.pow(18 - mode as u32);
            prop_assert_eq!(summarize(&entries), (entries.len() as u64, expected, mode as u8));
        }
    }
}
