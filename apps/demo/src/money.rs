//! Test-token amounts (6 decimals, like USDC).

use alloy_primitives::U256;

/// Decimals of the test token.
pub const DECIMALS: u32 = 6;

/// `dollars` whole tokens in base units.
pub fn usd(dollars: u64) -> U256 {
    U256::from(dollars) * U256::from(10u64.pow(DECIMALS))
}

/// Base units as `12.50 tUSD` (cents; the token has finer units, shown when present).
pub fn format_usd(amount: U256) -> String {
    let unit = U256::from(10u64.pow(DECIMALS));
    let whole = amount / unit;
    let frac: u64 = (amount % unit).to();
    if frac.is_multiple_of(10_000) {
        format!("{whole}.{:02} tUSD", frac / 10_000)
    } else {
        format!("{whole}.{frac:06} tUSD")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(format_usd(usd(12)), "12.00 tUSD");
        assert_eq!(format_usd(U256::from(1_500_000)), "1.50 tUSD");
        assert_eq!(format_usd(U256::from(1)), "0.000001 tUSD");
    }
}
