//! Spend: executed payments summed by any of session, owner, counterparty, token and time
//! bucket (hour or day, UTC), over a block or time range. Amounts are 256-bit, so sums are
//! made here rather than in SQL.

use std::collections::{BTreeMap, HashMap};

use alloy_primitives::U256;
use serde_json::{json, Value};

use crate::store::{LogFilter, Store, StoreError};

/// A dimension to group by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// The paying session.
    Session,
    /// The session's owner.
    Owner,
    /// The payee.
    Counterparty,
    /// The session's token.
    Token,
    /// The hour of the block (unix seconds of its start).
    Hour,
    /// The day of the block (UTC).
    Day,
}

impl Group {
    /// The dimension a `groupBy` word names.
    pub fn parse(word: &str) -> Option<Group> {
        Some(match word {
            "session" => Group::Session,
            "owner" => Group::Owner,
            "counterparty" => Group::Counterparty,
            "token" => Group::Token,
            "hour" => Group::Hour,
            "day" => Group::Day,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Group::Session => "session",
            Group::Owner => "owner",
            Group::Counterparty => "counterparty",
            Group::Token => "token",
            Group::Hour => "hour",
            Group::Day => "day",
        }
    }
}

/// Which payments count.
#[derive(Clone, Debug, Default)]
pub struct SpendFilter {
    /// Blocks, times, session and counterparty (`args` `to`) as the store filters them.
    pub logs: LogFilter,
    /// Only sessions of this owner (EIP-55).
    pub owner: Option<String>,
    /// Only sessions in this token (EIP-55).
    pub token: Option<String>,
}

/// The sums of the payments `filter` selects, grouped by `groups` (none: one total).
pub async fn spend(
    store: &Store,
    groups: &[Group],
    filter: &SpendFilter,
) -> Result<Value, StoreError> {
    // Only the fields summed and grouped by, not whole rows: this reads every payment.
    let payments = store
        .arguments(
            &LogFilter {
                event: Some("PaymentExecuted".into()),
                limit: u64::MAX,
                ..filter.logs.clone()
            },
            &["to", "amount"],
        )
        .await?;
    // Each session's owner and token, from its opening.
    let mut sessions: HashMap<String, (String, String)> = HashMap::new();
    let opened = store
        .arguments(
            &LogFilter {
                event: Some("SessionOpened".into()),
                session_id: filter.logs.session_id.clone(),
                limit: u64::MAX,
                ..LogFilter::default()
            },
            &["owner", "token"],
        )
        .await?;
    for (id, _, mut args) in opened {
        if let Some(id) = id {
            let token = args.pop().flatten().unwrap_or_default();
            let owner = args.pop().flatten().unwrap_or_default();
            sessions.insert(id, (owner, token));
        }
    }
    let mut sums: BTreeMap<Vec<String>, (U256, u64)> = BTreeMap::new();
    for (session, time, mut args) in payments {
        let session = session.unwrap_or_default();
        let (owner, token) = sessions.get(&session).cloned().unwrap_or_default();
        if filter.owner.as_ref().is_some_and(|o| *o != owner)
            || filter.token.as_ref().is_some_and(|t| *t != token)
        {
            continue;
        }
        let amount: U256 = args
            .pop()
            .flatten()
            .and_then(|a| a.parse().ok())
            .unwrap_or_default();
        let to = args.pop().flatten().unwrap_or_default();
        let key: Vec<String> = groups
            .iter()
            .map(|g| match g {
                Group::Session => session.clone(),
                Group::Owner => owner.clone(),
                Group::Counterparty => to.clone(),
                Group::Token => token.clone(),
                Group::Hour => (time - time % 3_600).to_string(),
                Group::Day => (time - time % 86_400).to_string(),
            })
            .collect();
        let entry = sums.entry(key).or_default();
        entry.0 = entry.0.saturating_add(amount);
        entry.1 += 1;
    }
    let rows: Vec<Value> = sums
        .into_iter()
        .map(|(key, (total, count))| {
            let mut row = json!({ "total": total.to_string(), "payments": count });
            for (g, k) in groups.iter().zip(key) {
                row[g.name()] = match g {
                    Group::Hour | Group::Day => json!(k.parse::<u64>().unwrap_or_default()),
                    _ => json!(k),
                };
            }
            row
        })
        .collect();
    Ok(json!({
        "groupBy": groups.iter().map(|g| g.name()).collect::<Vec<_>>(),
        "groups": rows,
    }))
}
