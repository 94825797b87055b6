//! Events, sessions, a session's state and timeline, and its audit export.

use super::dto::{
    AsOfQuery, AsOfView, EventPage, Opened, PageQuery, RangeQuery, SessionPage, SessionState,
};
use super::error::ApiError;
use super::params::Params;
use super::params::{bad, session_of};
use super::rows::{cursor, views};
use super::state::{AppState, QueryMap, Shared};
use crate::projections::Session;
use crate::store::{LogFilter, LogRow};
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Logs in chain order, decoded (the filters and paging of [`Params::log_filter`]).
#[utoipa::path(get, path = "/v1/events", operation_id = "listEvents", tag = "events",
    params(("session" = Option<String>, Query, description = "A session id: 0x and 64 hex digits, or decimal."), ("event" = Option<String>, Query, description = "An event's name (`PaymentExecuted`)."),
        AsOfQuery, RangeQuery, PageQuery),
    responses((status = 200, description = "A page of events", body = EventPage)))]
pub(super) async fn events(s: Shared, q: QueryMap) -> Result<Json<EventPage>, ApiError> {
    let mut p = Params::from(q.0);
    let at = p.as_of(&s.store).await?;
    let filter = p.log_filter(&at)?;
    p.finish()?;
    page(&s, filter).await
}

/// Every event of the session in order: receipts, provenance, acknowledgements and
/// revocations included (the parameters of `/v1/events` but `session`).
#[utoipa::path(get, path = "/v1/sessions/{id}/timeline", operation_id = "sessionTimeline",
    tag = "sessions", params(("id" = String, Path, description = "A session id: 0x and 64 hex digits (as answered), or decimal."), ("event" = Option<String>, Query, description = "An event's name."),
        AsOfQuery, RangeQuery, PageQuery),
    responses((status = 200, description = "A page of events", body = EventPage)))]
pub(super) async fn timeline(
    s: Shared,
    Path(id): Path<String>,
    q: QueryMap,
) -> Result<Json<EventPage>, ApiError> {
    let mut p = Params::from(q.0);
    if p.take("session").is_some() {
        return Err(bad(
            "session",
            "unknown parameter (the path names the session)",
        ));
    }
    let at = p.as_of(&s.store).await?;
    let mut filter = p.log_filter(&at)?;
    p.finish()?;
    filter.session_id = Some(session_of(&id, "id")?);
    page(&s, filter).await
}

async fn page(s: &Shared, filter: LogFilter) -> Result<Json<EventPage>, ApiError> {
    let rows = s.store.logs(&filter).await?;
    let next_cursor = cursor(&rows, filter.limit);
    Ok(Json(EventPage {
        events: views(&s.metrics, rows),
        next_cursor,
    }))
}

/// Sessions in the order they opened, with their terms.
#[utoipa::path(get, path = "/v1/sessions", operation_id = "listSessions", tag = "sessions",
    params(("owner" = Option<String>, Query, description = "An address."),
        ("sessionKey" = Option<String>, Query, description = "An address."),
        ("token" = Option<String>, Query, description = "An address."),
        ("metadata" = Option<String>, Query, description = "0x and 64 hex digits, as opened."),
        ("status" = Option<String>, Query, description = "`active`, `revoked` or `closed`."),
        ("openedFrom" = Option<u64>, Query, description = "Opened at or after this unix time."),
        ("openedTo" = Option<u64>, Query, description = "Opened at or before this unix time."),
        AsOfQuery, RangeQuery, PageQuery),
    responses((status = 200, description = "A page of sessions", body = SessionPage)))]
pub(super) async fn list(s: Shared, q: QueryMap) -> Result<Json<SessionPage>, ApiError> {
    let mut p = Params::from(q.0);
    let mut args = Vec::new();
    for name in ["owner", "sessionKey", "token"] {
        args.extend(p.address(name)?.map(|a| (name.to_owned(), a)));
    }
    args.extend(p.hash("metadata")?.map(|h| ("metadata".to_owned(), h)));
    // As the wallet's status: closed once closed; revoked once revoked and not closed.
    let (revoked, closed) = ("SessionRevoked", "SessionClosed");
    let session_events = match p.take("status").as_deref() {
        None => vec![],
        Some("active") => vec![(false, revoked), (false, closed)],
        Some("revoked") => vec![(true, revoked), (false, closed)],
        Some("closed") => vec![(true, closed)],
        Some(_) => return Err(bad("status", "want active, revoked or closed")),
    };
    let opened_from = p.number("openedFrom")?;
    let opened_to = p.number("openedTo")?;
    let at = p.as_of(&s.store).await?;
    let mut filter = p.log_filter(&at)?;
    p.finish()?;
    filter.event = Some("SessionOpened".into());
    filter.args = args;
    filter.session_events = session_events;
    filter.from_time = filter.from_time.max(opened_from);
    filter.to_time = match (filter.to_time, opened_to) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let rows = s.store.logs(&filter).await?;
    let sessions = rows
        .iter()
        .map(|r| Opened {
            session_id: r.session_id.clone(),
            terms: r.args.clone(),
            opened_at: crate::records::chain(&s.metrics, r),
            canonical: r.canonical,
        })
        .collect();
    Ok(Json(SessionPage {
        sessions,
        next_cursor: cursor(&rows, filter.limit),
    }))
}

/// A session's terms and state by the wallet's rules, at the last block indexed or as of
/// `asOfBlock`/`asOfTime`.
#[utoipa::path(get, path = "/v1/sessions/{id}", operation_id = "getSession", tag = "sessions",
    params(("id" = String, Path, description = "A session id: 0x and 64 hex digits (as answered), or decimal."), AsOfQuery),
    responses((status = 200, description = "The session", body = SessionState)))]
pub(super) async fn one(
    s: Shared,
    Path(id): Path<String>,
    q: QueryMap,
) -> Result<Json<SessionState>, ApiError> {
    let id = session_of(&id, "id")?;
    let mut p = Params::from(q.0);
    let at = p.as_of(&s.store).await?;
    p.finish()?;
    // The wallet's views judge leases and periods by the block's time; as of a time, by it.
    let time = match at.time {
        Some(t) => t,
        None => block_time(&s, at.block).await?,
    };
    let events = session_events(&s, &id, at.block).await?;
    let session = Session::fold(&events).ok_or(ApiError::NotFound)?;
    Ok(Json(SessionState {
        session_id: id,
        state: session.to_view(time),
        as_of: AsOfView {
            block_number: at.block,
            block_timestamp: Some(time),
            as_of_time: at.time,
        },
    }))
}

/// Every canonical event of session `id` up to block `at`, in order.
async fn session_events(s: &Shared, id: &str, at: u64) -> Result<Vec<LogRow>, ApiError> {
    let filter = LogFilter {
        session_id: Some(id.to_owned()),
        to_block: Some(at),
        limit: u64::MAX,
        ..LogFilter::default()
    };
    Ok(s.store.logs(&filter).await?)
}

/// The time of block `number`: stored, or asked of the node (blocks without Bursar logs
/// below the recent window are not stored).
pub(super) async fn block_time(s: &AppState, number: u64) -> Result<u64, ApiError> {
    if let Some(b) = s.store.canonical_block(number).await? {
        return Ok(b.timestamp);
    }
    Ok(node_block(s, number).await?.timestamp.to())
}

/// The session's timeline up to the last block indexed (or `asOfBlock`/`asOfTime`) as a
/// signed, hash-chained audit export (see [`crate::audit`]): NDJSON rows with `prevHash` and
/// `hash`, then a line `{"manifest": …}` (CSV: the same columns, the manifest on a last `# `
/// line). `bursar audit verify` re-checks it against a node.
#[utoipa::path(get, path = "/v1/sessions/{id}/export", operation_id = "exportSession",
    tag = "sessions",
    params(("id" = String, Path, description = "A session id: 0x and 64 hex digits (as answered), or decimal."), ("format" = Option<String>, Query, description = "`ndjson` (default) or `csv`."), AsOfQuery),
    responses((status = 200, description = "The export", content(
        (String = "application/x-ndjson"), (String = "text/csv")))))]
pub(super) async fn export(
    s: Shared,
    Path(id): Path<String>,
    q: QueryMap,
) -> Result<Response, ApiError> {
    let id = session_of(&id, "id")?;
    let mut p = Params::from(q.0);
    let csv = match p.take("format").as_deref() {
        None | Some("ndjson") => false,
        Some("csv") => true,
        Some(_) => return Err(bad("format", "want ndjson or csv")),
    };
    let at = p.as_of(&s.store).await?;
    p.finish()?;
    let head_hash = block_hash(&s, at.block).await?;
    let rows = session_events(&s, &id, at.block).await?;
    if rows.is_empty() {
        return Err(ApiError::NotFound);
    }
    let (rows, manifest) = s
        .exporter
        .export(&id, s.chain_id, &rows, (at.block, &head_hash));
    let mut body = String::new();
    if csv {
        body.push_str(crate::audit::CSV_HEADER);
        body.push('\n');
    }
    for r in &rows {
        if csv {
            body.push_str(&crate::audit::csv_line(r));
        } else {
            body.push_str(&serde_json::to_string(r).unwrap_or_default());
        }
        body.push('\n');
    }
    let manifest = crate::audit::manifest_line(&manifest);
    let (kind, manifest) = if csv {
        ("text/csv", format!("# {manifest}\n"))
    } else {
        ("application/x-ndjson", format!("{manifest}\n"))
    };
    body.push_str(&manifest);
    Ok(([(axum::http::header::CONTENT_TYPE, kind)], body).into_response())
}

/// The hash of canonical block `number`: the checkpoint's, stored, or asked of the node.
async fn block_hash(s: &Shared, number: u64) -> Result<String, ApiError> {
    if let Some((n, hash)) = s.store.checkpoint().await? {
        if n == number {
            return Ok(hash);
        }
    }
    if let Some(b) = s.store.canonical_block(number).await? {
        return Ok(b.hash);
    }
    Ok(node_block(s, number).await?.hash.to_string())
}

async fn node_block(
    s: &AppState,
    number: u64,
) -> Result<bursar_client::rpc::BlockHeader, ApiError> {
    let header = s.client.block(number).await.map_err(|e| {
        tracing::warn!(error = %e, "node error");
        ApiError::Unavailable
    })?;
    header.ok_or(ApiError::Unavailable)
}
