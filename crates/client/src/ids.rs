//! Session ids as every Bursar API, export, log and command writes them: `0x` and 64 lowercase
//! hex digits, the keccak-256 word the wallet derives (`sessionId = keccak256(owner, nonce)`).
//! Readers take that form or the decimal one (what a `uint256` prints as elsewhere).

use alloy_primitives::U256;

/// Session `id` in its one written form: `0x` + 64 lowercase hex digits.
pub fn session_id_text(id: U256) -> String {
    format!("{id:#066x}")
}

/// A session id written as `0x` + 64 hex digits (either case) or as a decimal integer;
/// `None` for anything else (a short or long hex string, a sign, spaces, an overflow).
pub fn parse_session_id(text: &str) -> Option<U256> {
    match text.strip_prefix("0x") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            U256::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            U256::from_str_radix(text, 10).ok()
        }
        None => None,
    }
}

/// `text` (either form) in the written form; `None` when it is not a session id.
pub fn canonical_session_id(text: &str) -> Option<String> {
    parse_session_id(text).map(session_id_text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_read_and_one_is_written() {
        let id = U256::from(0xabcdefu64) << 200;
        let hex = session_id_text(id);
        assert_eq!(hex.len(), 66);
        assert!(hex.starts_with("0x") && hex[2..].bytes().all(|b| !b.is_ascii_uppercase()));
        assert_eq!(parse_session_id(&hex), Some(id));
        assert_eq!(
            parse_session_id(&hex.to_uppercase().replacen("0X", "0x", 1)),
            Some(id)
        );
        assert_eq!(parse_session_id(&id.to_string()), Some(id));
        assert_eq!(canonical_session_id(&id.to_string()), Some(hex));
        assert_eq!(
            session_id_text(U256::from(7)),
            format!("0x{}7", "0".repeat(63))
        );
        for bad in [
            "",
            "0x",
            "0x7",
            "-7",
            "+7",
            " 7",
            "7 ",
            "1e5",
            "12a",
            "115792089237316195423570985008687907853269984665640564039457584007913129639936",
        ] {
            assert_eq!(parse_session_id(bad), None, "{bad:?}");
        }
        assert_eq!(parse_session_id(&format!("0x{}", "g".repeat(64))), None);
        assert_eq!(parse_session_id(&format!("0x{}", "0".repeat(65))), None);
    }
}
