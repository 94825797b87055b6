//! Spend sums (see [`crate::spend`]).

use axum::Json;
use serde_json::Value;

use super::error::ApiError;
use super::params::bad;
use super::params::Params;
use super::state::{QueryMap, Shared};
use crate::spend::{Group, SpendFilter};

/// `GET /v1/spend`: executed payments summed. `groupBy` (comma-separated: session, owner,
/// counterparty, token, hour, day; none: one total); filters `session`, `owner`,
/// `counterparty`, `token`, `fromBlock`, `toBlock`, `fromTime`, `toTime` (unix seconds),
/// `asOfBlock`/`asOfTime`, `includeOrphaned`.
pub(super) async fn spend(s: Shared, q: QueryMap) -> Result<Json<Value>, ApiError> {
    let mut p = Params::from(q.0);
    let groups = match p.take("groupBy") {
        None => Vec::new(),
        Some(g) => g
            .split(',')
            .filter(|w| !w.is_empty())
            .map(|w| {
                Group::parse(w).ok_or_else(|| {
                    bad(
                        "groupBy",
                        "want session, owner, counterparty, token, hour or day",
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let owner = p.address("owner")?;
    let token = p.address("token")?;
    let counterparty = p.address("counterparty")?;
    for paging in ["cursor", "limit", "event"] {
        if p.take(paging).is_some() {
            return Err(bad(paging, "unknown parameter"));
        }
    }
    let at = p.as_of(&s.store).await?;
    let mut logs = p.log_filter(&at)?;
    p.finish()?;
    logs.args = counterparty
        .map(|a| ("to".to_owned(), a))
        .into_iter()
        .collect();
    let filter = SpendFilter { logs, owner, token };
    let mut body = crate::spend::spend(&s.store, &groups, &filter).await?;
    body["asOf"] = at.to_json();
    Ok(Json(body))
}
