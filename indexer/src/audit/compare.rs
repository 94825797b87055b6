//! The core of verification, without I/O: the rows the chain gives for the session against the
//! rows exported, to the first difference.

use serde_json::Value;

use super::Content;

/// How an export first departs from the chain's timeline.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Difference {
    /// Row `index` is another log than the chain's at that position.
    #[error("row {index}: the chain has {chain} here, the export has {export}")]
    OtherLog {
        /// The row's index.
        index: u64,
        /// The chain's log there (`log L of block B (tx T)`).
        chain: String,
        /// The export's.
        export: String,
    },
    /// Row `index` is the chain's log, but one of its fields says otherwise.
    #[error("row {index}: {field} {verb} from the chain's log: the export has {export}, the chain {chain}", verb = if matches!(*field, "args" | "topics") { "differ" } else { "differs" })]
    Field {
        /// The row's index.
        index: u64,
        /// The field, as the export names it (`blockTimestamp`, `args`).
        field: &'static str,
        /// Its value in the export (for `args`, the first argument that differs).
        export: String,
        /// The chain's.
        chain: String,
    },
    /// The export ends before the chain's timeline does.
    #[error("the chain has {chain_rows} rows for the session up to block {to_block}, the export stops at row {export_rows}")]
    Missing {
        /// Rows the chain has.
        chain_rows: u64,
        /// Rows the export has.
        export_rows: u64,
        /// The block both end at.
        to_block: u64,
    },
    /// The export has rows after the chain's timeline ends.
    #[error("row {index}: the chain has no such row (it has {index} rows for the session up to block {to_block})")]
    Extra {
        /// The first row too many.
        index: u64,
        /// The block both end at.
        to_block: u64,
    },
}

/// Every field of a row's content, in the order it is checked.
pub(super) const FIELDS: [&str; 12] = [
    "index",
    "chainId",
    "blockNumber",
    "blockHash",
    "blockTimestamp",
    "txHash",
    "logIndex",
    "address",
    "topics",
    "data",
    "event",
    "args",
];

/// The first difference between the chain's timeline (`chain`) and the export's rows, both
/// ending at block `to_block`; `None` when they are the same, row by row and field by field.
pub fn first_difference(
    chain: &[Content],
    export: &[Content],
    to_block: u64,
) -> Option<Difference> {
    for (i, (c, e)) in chain.iter().zip(export).enumerate() {
        let index = i as u64;
        // The same log when it is at the same place in the same block (by hash or number):
        // then a field is wrong, else a row is missing, added or moved.
        let same_log = c.log_index == e.log_index
            && (c.block_hash == e.block_hash || c.block_number == e.block_number);
        if !same_log {
            return Some(Difference::OtherLog {
                index,
                chain: describe(c),
                export: describe(e),
            });
        }
        if let Some(d) = field_difference(index, c, e) {
            return Some(d);
        }
    }
    let (chain_rows, export_rows) = (chain.len() as u64, export.len() as u64);
    if chain_rows > export_rows {
        return Some(Difference::Missing {
            chain_rows,
            export_rows,
            to_block,
        });
    }
    (export_rows > chain_rows).then_some(Difference::Extra {
        index: chain_rows,
        to_block,
    })
}

/// `log L of block B (tx T)`.
fn describe(c: &Content) -> String {
    format!(
        "log {} of block {} (tx {})",
        c.log_index, c.block_number, c.tx_hash
    )
}

/// The first field of row `index` whose value in the export is not the chain's.
fn field_difference(index: u64, chain: &Content, export: &Content) -> Option<Difference> {
    let (c, e) = (json(chain), json(export));
    let field = FIELDS.into_iter().find(|f| c.get(*f) != e.get(*f))?;
    let (export, chain) = narrowed(&e[field], &c[field]);
    Some(Difference::Field {
        index,
        field,
        export,
        chain,
    })
}

fn json(c: &Content) -> Value {
    serde_json::to_value(c).expect("a row's content is JSON")
}

/// Two values as the message shows them: two objects by their first differing key
/// (`amount = "5000"`), anything else whole.
fn narrowed(export: &Value, chain: &Value) -> (String, String) {
    let (Value::Object(e), Value::Object(c)) = (export, chain) else {
        return (export.to_string(), chain.to_string());
    };
    let keys = e.keys().chain(c.keys());
    let Some(key) = keys.into_iter().find(|k| e.get(*k) != c.get(*k)) else {
        return (export.to_string(), chain.to_string());
    };
    let show = |m: &serde_json::Map<String, Value>| match m.get(key) {
        Some(v) => format!("{key} = {v}"),
        None => format!("no {key}"),
    };
    (show(e), show(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{Bytes, B256};
    use serde_json::json;

    fn content(index: u64, block: u64, log: u64) -> Content {
        Content {
            index,
            chain_id: 412346,
            block_number: block,
            block_hash: B256::with_last_byte(block as u8).to_string(),
            block_timestamp: 1_000 + block,
            tx_hash: B256::repeat_byte(log as u8).to_string(),
            log_index: log,
            address: "0xab".into(),
            topics: vec![B256::repeat_byte(9)],
            data: Bytes::from(vec![1, 2]),
            event: Some("PaymentExecuted".into()),
            args: Some(json!({ "sessionId": "7", "amount": "5" })),
        }
    }

    fn chain() -> Vec<Content> {
        vec![content(0, 40, 0), content(1, 41, 2), content(2, 41, 3)]
    }

    fn first(export: &[Content]) -> String {
        first_difference(&chain(), export, 50)
            .map(|d| d.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_same_rows_do_not_differ() {
        assert_eq!(first_difference(&chain(), &chain(), 50), None);
        assert_eq!(first_difference(&[], &[], 50), None);
    }

    #[test]
    fn a_changed_field_is_named() {
        type Case = (&'static str, fn(&mut Content));
        let cases: [Case; 7] = [
            ("row 1: args differ from the chain's log: the export has amount = \"5000\", the chain amount = \"5\"",
                |c| c.args = Some(json!({ "sessionId": "7", "amount": "5000" }))),
            ("row 1: event differs from the chain's log: the export has \"Paid\", the chain \"PaymentExecuted\"",
                |c| c.event = Some("Paid".into())),
            ("row 1: blockTimestamp differs from the chain's log: the export has 7, the chain 1041",
                |c| c.block_timestamp = 7),
            ("row 1: blockNumber differs from the chain's log: the export has 42, the chain 41",
                |c| c.block_number = 42),
            ("row 1: chainId differs", |c| c.chain_id = 1),
            ("row 1: topics differ", |c| c.topics.clear()),
            ("row 1: address differs", |c| c.address = "0xcd".into()),
        ];
        for (want, tamper) in cases {
            let mut export = chain();
            tamper(&mut export[1]);
            assert!(
                first(&export).starts_with(want),
                "{want} / {}",
                first(&export)
            );
        }
    }

    #[test]
    fn removed_added_and_moved_rows_are_named() {
        let mut removed = chain();
        removed.remove(1);
        removed[1].index = 1;
        assert!(
            first(&removed).starts_with("row 1: the chain has log 2 of block 41 (tx "),
            "{}",
            first(&removed)
        );
        let mut swapped = chain();
        swapped.swap(1, 2);
        assert!(first(&swapped).contains("the export has log 3 of block 41"));
        assert_eq!(
            first(&chain()[..2]),
            "the chain has 3 rows for the session up to block 50, the export stops at row 2"
        );
        let mut extra = chain();
        extra.push(content(3, 42, 0));
        assert_eq!(
            first(&extra),
            "row 3: the chain has no such row (it has 3 rows for the session up to block 50)"
        );
    }
}
