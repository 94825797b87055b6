//! Spend sums (see [`crate::spend`]).

use super::dto::{AsOfQuery, AsOfView, RangeQuery, Spend};
use super::error::ApiError;
use super::params::bad;
use super::params::Params;
use super::state::{QueryMap, Shared};
use crate::spend::{Group, SpendFilter};
use axum::Json;

/// Executed payments summed, once each (a reservation when reserved, unless released).
#[utoipa::path(get, path = "/v1/spend", operation_id = "spend", tag = "spend",
    params(("groupBy" = Option<String>, Query, description = "Comma-separated: session, owner, counterparty, token, hour, day (none: one total)."),
        ("session" = Option<String>, Query, description = "A session id."),
        ("owner" = Option<String>, Query, description = "An address."),
        ("counterparty" = Option<String>, Query, description = "An address."),
        ("token" = Option<String>, Query, description = "An address."),
        AsOfQuery, RangeQuery),
    responses((status = 200, description = "The sums", body = Spend)))]
pub(super) async fn spend(s: Shared, q: QueryMap) -> Result<Json<Spend>, ApiError> {
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
    Ok(Json(Spend {
        groups: crate::spend::spend(&s.store, &groups, &filter).await?,
        group_by: groups.iter().map(|g| g.name()).collect(),
        as_of: AsOfView {
            block_number: at.block,
            block_timestamp: None,
            as_of_time: at.time,
        },
    }))
}
