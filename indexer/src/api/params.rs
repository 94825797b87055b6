//! Query parameters: each taken once by name and parsed, whatever is left over refused — so a
//! misspelt filter is a 400 naming it, never silently ignored. Names are camelCase
//! (`asOfBlock`); the snake_case spelling (`as_of_block`) means the same.

use std::collections::HashMap;

use alloy_primitives::{Address, B256, U256};
use bursar_client::ids::canonical_session_id;

use super::error::ApiError;
use crate::store::{LogFilter, Store};

/// A request's query parameters not taken yet.
#[derive(Debug, Default)]
pub struct Params(HashMap<String, String>);

impl From<HashMap<String, String>> for Params {
    fn from(query: HashMap<String, String>) -> Self {
        Params(
            query
                .into_iter()
                .map(|(name, value)| (camel_case(&name), value))
                .collect(),
        )
    }
}

/// `as_of_block` → `asOfBlock`; camelCase names unchanged.
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A 400 naming parameter `name`.
pub(super) fn bad(name: &str, message: &str) -> ApiError {
    ApiError::BadParameter {
        name: name.into(),
        message: format!("{name}: {message}"),
    }
}

/// A session id, `0x` + 64 hex digits or decimal, as the store keeps it (the hex form).
pub(super) fn session_of(text: &str, name: &str) -> Result<String, ApiError> {
    canonical_session_id(text).ok_or_else(|| {
        bad(
            name,
            "a session id is 0x and 64 hex digits, or a decimal integer",
        )
    })
}

/// An id (receipt, record), decimal or 0x-hex, as the store keeps it (decimal).
pub(super) fn id_of(text: &str, name: &str) -> Result<String, ApiError> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => U256::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    };
    parsed
        .map(|v| v.to_string())
        .ok_or_else(|| bad(name, "an id is a decimal or 0x-hex integer"))
}

impl Params {
    /// Parameter `name`, taken.
    pub fn take(&mut self, name: &str) -> Option<String> {
        self.0.remove(name)
    }

    /// Parameter `name` parsed by `parse`, or a 400 saying what was wanted.
    fn parsed<T>(
        &mut self,
        name: &str,
        want: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<Option<T>, ApiError> {
        self.take(name)
            .map(|v| parse(&v).ok_or_else(|| bad(name, want)))
            .transpose()
    }

    /// An address, EIP-55 as the events' JSON has them.
    pub fn address(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        self.parsed(name, "want an address", |v| {
            v.parse::<Address>().ok().map(|a| a.to_checksum(None))
        })
    }

    /// A 32-byte hash, 0x + 64 lowercase hex as the events' JSON has them.
    pub fn hash(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        self.parsed(name, "want 0x and 64 hex digits", |v| {
            v.parse::<B256>().ok().map(|h| h.to_string())
        })
    }

    /// A session id (either form), as the store keeps it (hex).
    pub fn session(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        self.take(name).map(|v| session_of(&v, name)).transpose()
    }

    /// A non-negative integer.
    pub fn number(&mut self, name: &str) -> Result<Option<u64>, ApiError> {
        self.parsed(name, "want a non-negative integer", |v| v.parse().ok())
    }

    /// `true` or `false` (absent: false).
    pub fn flag(&mut self, name: &str) -> Result<bool, ApiError> {
        Ok(self
            .parsed(name, "want true or false", |v| match v {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            })?
            .unwrap_or(false))
    }

    /// Refuses whatever was not taken.
    pub fn finish(self) -> Result<(), ApiError> {
        match self.0.into_keys().min() {
            Some(unknown) => Err(bad(&unknown, "unknown parameter")),
            None => Ok(()),
        }
    }

    /// The point in the chain a query answers at: `asOfBlock` or `asOfTime` (unix seconds: the
    /// last block at or before it), the last block indexed by default. A block not indexed yet
    /// is a 400.
    pub async fn as_of(&mut self, store: &Store) -> Result<AsOf, ApiError> {
        let block = self.number("asOfBlock")?;
        let time = self.parsed("asOfTime", "want unix seconds", |v| v.parse().ok())?;
        let indexed = store.checkpoint().await?.map_or(0, |(n, _)| n);
        let block = match (block, time) {
            (Some(_), Some(_)) => {
                return Err(bad("asOfTime", "give asOfBlock or asOfTime, not both"))
            }
            (Some(n), None) if n > indexed => {
                return Err(bad(
                    "asOfBlock",
                    &format!("block {n} is not indexed yet (indexed: {indexed})"),
                ))
            }
            (Some(n), None) => n,
            (None, Some(t)) => match store.canonical_block_at_time(t).await? {
                Some(b) => b.min(indexed),
                // Before the first block indexed: nothing had happened yet.
                None => 0,
            },
            (None, None) => indexed,
        };
        Ok(AsOf { block, time })
    }

    /// The filters and paging every list shares: `session`, `event`, `fromBlock`, `toBlock`,
    /// `fromTime`, `toTime`, `includeOrphaned`, `cursor` (the last page's `nextCursor`) and
    /// `limit` (1–1000, default 100), up to the block `at`.
    pub fn log_filter(&mut self, at: &AsOf) -> Result<LogFilter, ApiError> {
        let after = self.parsed("cursor", "use the nextCursor of the previous page", |c| {
            let (b, i) = c.split_once(':')?;
            Some((b.parse().ok()?, i.parse().ok()?))
        })?;
        let limit = self.number("limit")?.unwrap_or(100);
        if !(1..=1000).contains(&limit) {
            return Err(bad("limit", "want 1 to 1000"));
        }
        let to_block = self
            .number("toBlock")?
            .map_or(at.block, |b| b.min(at.block));
        Ok(LogFilter {
            session_id: self.session("session")?,
            event: self.take("event"),
            from_block: self.number("fromBlock")?,
            to_block: Some(to_block),
            from_time: self.parsed("fromTime", "want unix seconds", |v| v.parse().ok())?,
            to_time: self.parsed("toTime", "want unix seconds", |v| v.parse().ok())?,
            include_orphaned: self.flag("includeOrphaned")?,
            after,
            limit,
            ..LogFilter::default()
        })
    }
}

/// The block a query answers at.
#[derive(Clone, Copy, Debug)]
pub struct AsOf {
    /// The last block counted.
    pub block: u64,
    /// The `asOfTime` asked for, if that is how.
    pub time: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_names_mean_their_camel_case() {
        assert_eq!(camel_case("as_of_block"), "asOfBlock");
        assert_eq!(camel_case("include_orphaned"), "includeOrphaned");
        assert_eq!(camel_case("asOfTime"), "asOfTime");
        assert_eq!(camel_case("limit"), "limit");
    }

    #[test]
    fn leftovers_are_refused_by_name() {
        let mut p = Params::from(HashMap::from([
            ("limit".to_owned(), "5".to_owned()),
            ("colour".to_owned(), "red".to_owned()),
        ]));
        assert_eq!(p.number("limit").unwrap(), Some(5));
        match p.finish() {
            Err(ApiError::BadParameter { name, .. }) => assert_eq!(name, "colour"),
            other => panic!("{other:?}"),
        }
    }
}
