//! Amounts as people write and read them: `1.50 USDC` in a token of 6 decimals is 1,500,000
//! base units. Base units are what the contracts and the relayer's API take (decimal strings).

use alloy_primitives::U256;

/// `amount` base units in a token of `decimals`: whole units, then the fraction without its
/// trailing zeros but with at least two digits (`1.50`, `0.000001`, `12.00`).
pub fn format_units(amount: U256, decimals: u8) -> String {
    let unit = U256::from(10).pow(U256::from(decimals));
    let (whole, fraction) = (amount / unit, amount % unit);
    if decimals == 0 {
        return whole.to_string();
    }
    let digits = format!(
        "{:0>width$}",
        fraction.to_string(),
        width = decimals as usize
    );
    let trimmed = digits.trim_end_matches('0');
    let shown = if trimmed.len() < 2 {
        &digits[..2.min(digits.len())]
    } else {
        trimmed
    };
    format!("{whole}.{shown}")
}

/// An amount written `1.50 USDC`, `1.50` (token units: a decimal point or the symbol) or
/// `1500000` (base units: digits alone), in a token of `decimals` named `symbol`.
///
/// # Errors
/// A message naming what is wrong: another symbol, more decimals than the token has, not a
/// number, too large.
pub fn parse_money(text: &str, decimals: u8, symbol: &str) -> Result<U256, String> {
    let text = text.trim();
    let (number, unit) = match text.split_once(char::is_whitespace) {
        Some((number, unit)) => (number.trim(), Some(unit.trim())),
        None => (text, None),
    };
    if let Some(unit) = unit {
        if !unit.eq_ignore_ascii_case(symbol) {
            return Err(format!(
                "{text:?}: the session pays in {symbol}, not {unit}"
            ));
        }
    }
    if unit.is_none() && !number.contains('.') {
        return parse_amount(number);
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
        return Err(format!(
            "{text:?} is not an amount such as \"1.50 {symbol}\""
        ));
    }
    if fraction.len() > decimals as usize {
        return Err(format!("{text:?}: {symbol} has {decimals} decimals"));
    }
    let base = format!("{whole}{fraction:0<width$}", width = decimals as usize);
    let base = base.trim_start_matches('0');
    parse_amount(if base.is_empty() { "0" } else { base })
        .map_err(|_| format!("{text:?} is too large"))
}

/// A decimal string of base units: digits only, at most 78 of them, within 256 bits.
///
/// # Errors
/// A message naming the text.
pub fn parse_amount(text: &str) -> Result<U256, String> {
    if text.is_empty() || text.len() > 78 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "expected a decimal string of base units such as \"1500000\", got {text:?}"
        ));
    }
    U256::from_str_radix(text, 10).map_err(|_| format!("{text:?} does not fit in 256 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_as_people_write_them() {
        let usdc = |t: &str| parse_money(t, 6, "USDC");
        assert_eq!(usdc("1.50 USDC"), Ok(U256::from(1_500_000)));
        assert_eq!(usdc("1.5 usdc"), Ok(U256::from(1_500_000)));
        assert_eq!(usdc("1.50"), Ok(U256::from(1_500_000)));
        assert_eq!(
            usdc("1500000"),
            Ok(U256::from(1_500_000)),
            "digits alone: base units"
        );
        assert_eq!(usdc("3 USDC"), Ok(U256::from(3_000_000)));
        assert_eq!(usdc(".25"), Ok(U256::from(250_000)));
        assert_eq!(usdc("0.000001"), Ok(U256::from(1)));
        assert_eq!(usdc("0.00 USDC"), Ok(U256::ZERO));
        for bad in [
            "1.5 DAI",
            "0.0000001",
            "-1",
            "1e6",
            "1.2.3",
            ".",
            "",
            "one USDC",
            "0x10",
            "1,50",
        ] {
            assert!(usdc(bad).is_err(), "{bad:?}");
        }
        let huge = format!("{} USDC", "9".repeat(80));
        assert!(usdc(&huge).is_err());
    }

    #[test]
    fn amounts_shown_as_people_read_them() {
        assert_eq!(format_units(U256::from(1_500_000), 6), "1.50");
        assert_eq!(format_units(U256::from(12_000_000), 6), "12.00");
        assert_eq!(format_units(U256::from(1), 6), "0.000001");
        assert_eq!(format_units(U256::from(1_234_567), 6), "1.234567");
        assert_eq!(format_units(U256::from(7), 0), "7");
        assert_eq!(format_units(U256::ZERO, 18), "0.00");
        // What it shows, it reads back.
        for n in [0u64, 1, 10, 999_999, 1_000_000, 123_456_789] {
            let shown = format_units(U256::from(n), 6);
            assert_eq!(parse_money(&shown, 6, "USDC"), Ok(U256::from(n)), "{shown}");
        }
    }
}
