//! USDC amounts (6 decimals).

use alloy_primitives::U256;

/// USDC's decimals.
pub const DECIMALS: u32 = 6;

/// `dollars` whole tokens in base units.
pub fn usd(dollars: u64) -> U256 {
    U256::from(dollars) * U256::from(10u64.pow(DECIMALS))
}

/// Base units as `12.50 USDC` (cents; finer units shown when present).
pub fn format_usd(amount: U256) -> String {
    let unit = U256::from(10u64.pow(DECIMALS));
    let whole = amount / unit;
    let frac: u64 = (amount % unit).to();
    if frac.is_multiple_of(10_000) {
        format!("{whole}.{:02} USDC", frac / 10_000)
    } else {
        format!("{whole}.{frac:06} USDC")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(format_usd(usd(12)), "12.00 USDC");
        assert_eq!(format_usd(U256::from(1_500_000)), "1.50 USDC");
        assert_eq!(format_usd(U256::from(1)), "0.000001 USDC");
    }
}
