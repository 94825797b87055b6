//! A contract rule's refusal in words, in the token's units, for people and models alike:
//! `WalletPeriodBudgetExceeded: 3.00 USDC left until 14:00 UTC (asked 5.00 USDC)`. The MCP
//! tools and `bursar pay` say it the same way.

use alloy_primitives::U256;
use serde_json::Value;

use crate::money::format_units;

/// Refusal `code` with its `details` in words, its amounts in the token's units when the
/// session's `limits` (as `GET /v1/session` answers them) are known.
pub fn explain(code: &str, details: &Value, limits: Option<&Value>) -> String {
    let token = limits.and_then(token);
    let money = |key: &str| -> Option<String> {
        let base = U256::from_str_radix(details[key].as_str()?, 10).ok()?;
        Some(match &token {
            Some((decimals, symbol)) => format!("{} {symbol}", format_units(base, *decimals)),
            None => format!("{base} base units"),
        })
    };
    let asked = money("amount").map_or(String::new(), |a| format!(" (asked {a})"));
    let refills = limits
        .and_then(|l| l["period"]["refillsAt"].as_u64())
        .map_or(String::new(), |t| format!(" until {} UTC", clock(t)));
    match (code, money("available")) {
        ("WalletPeriodBudgetExceeded", Some(left)) => {
            format!("{code}: {left} left{refills}{asked}")
        }
        ("WalletInsufficientDeposit", Some(left)) => {
            format!("{code}: {left} left in the deposit{asked}")
        }
        (_, Some(left)) => format!("{code}: at most {left}{asked}"),
        _ => match (
            money("cap").or_else(|| money("max")),
            details["counterparty"].as_str(),
        ) {
            (Some(cap), _) => format!("{code}: at most {cap} per payment{asked}"),
            (None, Some(who)) => {
                // Allowed, but not this much: the list caps payments to it.
                let listed = limits.and_then(|l| {
                    l["counterparties"].as_array()?.iter().find(|c| {
                        c["address"]
                            .as_str()
                            .is_some_and(|a| a.eq_ignore_ascii_case(who))
                    })
                });
                match listed.and_then(|c| c["maxPerPayment"]["display"].as_str()) {
                    Some(cap) => format!("{code}: at most {cap} per payment to {who}{asked}"),
                    None => format!(
                        "{code}: {who} is not on the session's allowlist (its limits list \
                         whom it may pay)"
                    ),
                }
            }
            (None, None) => format!("{code} {details}"),
        },
    }
}

/// `HH:MM` of unix time `t`, UTC.
fn clock(t: u64) -> String {
    format!("{:02}:{:02}", (t % 86_400) / 3_600, (t % 3_600) / 60)
}

/// The session's token's decimals and symbol, from its limits.
fn token(limits: &Value) -> Option<(u8, String)> {
    let t = &limits["token"];
    Some((
        t["decimals"].as_u64()? as u8,
        t["symbol"].as_str()?.to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn times_read_as_a_clock() {
        assert_eq!(clock(0), "00:00");
        assert_eq!(clock(1_765_029_600), "14:00");
        assert_eq!(clock(1_765_029_600 + 59 * 60 + 59), "14:59");
    }

    fn limits() -> Value {
        json!({
            "token": { "decimals": 6, "symbol": "USDC" },
            "period": { "refillsAt": 1_765_029_600u64 },
            "counterparties": [
                { "address": "0x00000000000000000000000000000000000000a1",
                  "maxPerPayment": { "display": "25.00 USDC" } }
            ]
        })
    }

    #[test]
    fn a_listed_counterparty_over_its_cap_is_told_its_cap() {
        let details = json!({ "counterparty": "0x00000000000000000000000000000000000000A1",
                              "amount": "30000000" });
        assert_eq!(
            explain("WalletCounterpartyNotAllowed", &details, Some(&limits())),
            "WalletCounterpartyNotAllowed: at most 25.00 USDC per payment to \
             0x00000000000000000000000000000000000000A1 (asked 30.00 USDC)"
        );
        let stranger = json!({ "counterparty": "0x00000000000000000000000000000000000000b2" });
        assert!(
            explain("WalletCounterpartyNotAllowed", &stranger, Some(&limits()))
                .contains("is not on the session's allowlist")
        );
    }

    #[test]
    fn budgets_say_what_is_left_and_when_it_refills() {
        let details = json!({ "available": "3000000", "amount": "5000000" });
        assert_eq!(
            explain("WalletPeriodBudgetExceeded", &details, Some(&limits())),
            "WalletPeriodBudgetExceeded: 3.00 USDC left until 14:00 UTC (asked 5.00 USDC)"
        );
        // Without the limits, base units.
        assert_eq!(
            explain("WalletPeriodBudgetExceeded", &details, None),
            "WalletPeriodBudgetExceeded: 3000000 base units left (asked 5000000 base units)"
        );
    }
}
