//! How values travel in the API's JSON: amounts as decimal strings in base units (a JSON number
//! loses precision past 2^53), hashes as 0x-hex, addresses checked and answered EIP-55.

use alloy_primitives::{keccak256, B256, U256};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;

pub use bursar_agent::money::parse_amount;
pub use bursar_client::ids::{parse_session_id, session_id_text};

/// A non-negative integer given as a decimal string (`"1500000"`): no sign, no exponent, no hex,
/// at most 78 digits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amount(pub U256);

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_amount(&text)
            .map(Amount)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_string())
    }
}

impl utoipa::PartialSchema for Amount {
    fn schema() -> RefOr<Schema> {
        string_schema("^[0-9]{1,78}$", "Base units, as a decimal string.")
    }
}

impl utoipa::ToSchema for Amount {}

/// A 32-byte value given either as 0x + 64 hex digits (used as is) or as any other text (its
/// keccak-256 is used): purposes, artifact hashes, URIs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashOrText {
    /// The 32 bytes.
    pub hash: B256,
    /// The text it was hashed from, if it was text.
    pub text: Option<String>,
}

impl<'de> Deserialize<'de> for HashOrText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() > 4096 {
            return Err(serde::de::Error::custom("longer than 4096 bytes"));
        }
        Ok(hash_or_text(&text))
    }
}

impl utoipa::PartialSchema for HashOrText {
    fn schema() -> RefOr<Schema> {
        let schema = ObjectBuilder::new()
            .schema_type(Type::String)
            .max_length(Some(4096))
            .description(Some(
                "0x and 64 hex digits (used as is), or text whose keccak-256 is used.",
            ));
        RefOr::T(Schema::Object(schema.build()))
    }
}

impl utoipa::ToSchema for HashOrText {}

fn string_schema(pattern: &str, description: &str) -> RefOr<Schema> {
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
        .description(Some(description));
    RefOr::T(Schema::Object(schema.build()))
}

/// Schemas of values whose Rust types (alloy's) know nothing of OpenAPI: fields holding them
/// name these with `#[schema(value_type = …)]`.
pub mod schema {
    /// An address: 0x and 40 hex digits (answered EIP-55 checksummed).
    #[derive(utoipa::ToSchema)]
    #[schema(pattern = "^0x[0-9a-fA-F]{40}$")]
    pub struct Address(pub String);

    /// 32 bytes: 0x and 64 hex digits.
    #[derive(utoipa::ToSchema)]
    #[schema(pattern = "^0x[0-9a-fA-F]{64}$")]
    pub struct Bytes32(pub String);

    /// Bytes: 0x and an even number of hex digits.
    #[derive(utoipa::ToSchema)]
    #[schema(pattern = "^0x([0-9a-fA-F]{2})*$")]
    pub struct Hex(pub String);

    /// EIP-712 typed data as `eth_signTypedData_v4` takes it (integers as decimal strings).
    #[derive(utoipa::ToSchema)]
    #[schema(rename_all = "camelCase")]
    pub struct TypedData {
        /// The struct types by name, `EIP712Domain` among them: `[{name, type}]` each.
        #[schema(value_type = Object)]
        pub types: serde_json::Value,
        /// The type of `message`.
        pub primary_type: String,
        /// The domain: name, version, chainId, verifyingContract.
        #[schema(value_type = Object)]
        pub domain: serde_json::Value,
        /// What is signed.
        #[schema(value_type = Object)]
        pub message: serde_json::Value,
    }
}

/// `text` as 32 bytes: parsed when it is 0x + 64 hex digits, hashed otherwise.
pub fn hash_or_text(text: &str) -> HashOrText {
    let is_hex = text.len() == 66
        && text.starts_with("0x")
        && text[2..].bytes().all(|b| b.is_ascii_hexdigit());
    match text.parse::<B256>() {
        Ok(hash) if is_hex => HashOrText { hash, text: None },
        _ => HashOrText {
            hash: keccak256(text.as_bytes()),
            text: Some(text.to_owned()),
        },
    }
}

/// Why something the relayer sent failed: a contract error's name (or the relayer's code) and
/// its arguments.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Failure {
    /// The stable code.
    pub code: String,
    /// The error's arguments by name.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

impl Failure {
    /// A stored error: its code, and its details as stored JSON (an empty object without).
    pub fn stored(code: Option<&String>, details: Option<&str>) -> Option<Failure> {
        Some(Failure {
            code: code?.clone(),
            details: details
                .and_then(|d| serde_json::from_str(d).ok())
                .unwrap_or_else(|| serde_json::Value::Object(Default::default())),
        })
    }
}

/// Whether `c` is invisible or reorders what follows it: a control character, or one of the
/// formatting characters that hide text or reverse its direction (bidi overrides and
/// isolates, zero-width spaces and joiners, the byte-order mark, the soft hyphen). Text shown
/// to an owner must not carry them: `exe.\u{202E}fdp` reads as `exe.pdf`.
pub fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{FEFF}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}')
}

/// `text` with every [`is_invisible`] character written as its escape (`\u{202e}`), for
/// showing text that others chose.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_invisible) {
        return text.into();
    }
    text.chars()
        .map(|c| match is_invisible(c) {
            true => c.escape_unicode().to_string(),
            false => c.to_string(),
        })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_plain_decimal_strings() {
        assert_eq!(parse_amount("0"), Ok(U256::ZERO));
        assert_eq!(parse_amount("1500000"), Ok(U256::from(1_500_000)));
        let max = U256::MAX.to_string();
        assert_eq!(parse_amount(&max), Ok(U256::MAX));
        for bad in [
            "",
            "-1",
            "+1",
            "1e6",
            "0x10",
            " 1",
            "1.5",
            &format!("{max}0"),
        ] {
            assert!(parse_amount(bad).is_err(), "{bad:?}");
        }
        // 2^256 has 78 digits but does not fit.
        let over = "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        assert!(parse_amount(over).is_err());
        assert!(
            serde_json::from_str::<Amount>("1500000").is_err(),
            "numbers are refused"
        );
    }

    #[test]
    fn hashes_are_taken_as_given_and_text_is_hashed() {
        let h = format!("0x{}", "ab".repeat(32));
        assert_eq!(hash_or_text(&h).hash, h.parse::<B256>().unwrap());
        assert_eq!(hash_or_text(&h).text, None);
        let t = hash_or_text("gpu-minutes for job 7");
        assert_eq!(t.hash, keccak256("gpu-minutes for job 7"));
        // Almost-hex text is text.
        assert!(hash_or_text(&format!("0x{}", "ab".repeat(31)))
            .text
            .is_some());
    }

    #[test]
    fn session_ids_in_paths() {
        let id = U256::from(0xabcdu64);
        let text = session_id_text(id);
        assert_eq!(text.len(), 66);
        assert_eq!(parse_session_id(&text), Some(id));
        assert_eq!(parse_session_id("43981"), Some(id));
        assert_eq!(parse_session_id("0xabcd"), None);
        assert_eq!(parse_session_id("-1"), None);
    }

    #[test]
    fn invisible_characters_are_shown_escaped() {
        assert_eq!(visible("sbx-7"), "sbx-7");
        assert_eq!(visible("exe.\u{202E}fdp"), "exe.\\u{202e}fdp");
        assert_eq!(
            visible("a\u{200B}b\u{2066}c\u{7}"),
            "a\\u{200b}b\\u{2066}c\\u{7}"
        );
        for c in [
            '\u{202E}', '\u{200B}', '\u{200F}', '\u{2067}', '\u{FEFF}', '\n',
        ] {
            assert!(is_invisible(c), "{c:?}");
        }
        for c in ['a', 'é', '漢', '-', ' '] {
            assert!(!is_invisible(c), "{c:?}");
        }
    }
}
