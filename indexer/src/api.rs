//! The HTTP API: thin handlers that parse the query, ask the store, and answer JSON. Errors are
//! `{code, message, details}`; a bad query parameter is a 400 naming it.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::projections::Session;
use crate::records;
use crate::store::{Link, LogFilter, LogRow, Store, StoreError};

/// What the handlers share.
#[derive(Clone, Debug)]
pub struct State {
    /// The database.
    pub store: Store,
    /// The chain followed (for the time of an `asOfBlock` the store does not hold).
    pub client: std::sync::Arc<bursar_client::Client>,
    /// The chain's id.
    pub chain_id: u64,
    /// The follower's counters.
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
}

/// The API's routes.
pub fn router(state: State) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route(
            "/openapi.json",
            get(|| async { Json(crate::openapi::document()) }),
        )
        .route("/v1/events", get(events))
        .route("/v1/sessions", get(sessions))
        .route("/v1/sessions/{id}", get(session))
        .route("/v1/sessions/{id}/timeline", get(timeline))
        .route("/v1/sessions/{id}/export", get(export))
        .route("/v1/spend", get(spend))
        .route("/v1/receipts", get(receipts))
        .route("/v1/receipts/{id}", get(receipt))
        .route("/v1/provenance", get(provenance))
        .route("/v1/provenance/{id}", get(provenance_record))
        .route("/v1/provenance/{id}/lineage", get(lineage))
        .with_state(state)
}

/// Why a request failed.
#[derive(Debug)]
pub enum ApiError {
    /// A query parameter is malformed or unknown.
    BadParameter {
        /// Which.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// Nothing with this id.
    NotFound,
    /// The database or the node cannot be reached now.
    Unavailable,
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "store error");
        ApiError::Unavailable
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            ApiError::BadParameter { name, message } => (
                StatusCode::BAD_REQUEST,
                json!({ "code": "invalid_parameter", "message": message, "details": { "parameter": name } }),
            ),
            ApiError::NotFound => (
                StatusCode::NOT_FOUND,
                json!({ "code": "not_found", "message": "not found", "details": {} }),
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "code": "unavailable", "message": "the database is unavailable; retry later", "details": {} }),
            ),
        };
        (status, Json(body)).into_response()
    }
}

async fn metrics(axum::extract::State(s): axum::extract::State<State>) -> String {
    s.metrics.render()
}

async fn health(
    axum::extract::State(s): axum::extract::State<State>,
) -> Result<Json<Value>, ApiError> {
    let checkpoint = s.store.checkpoint().await?;
    let head = s.metrics.head.load(std::sync::atomic::Ordering::Relaxed);
    let indexed = checkpoint.as_ref().map_or(0, |(n, _)| *n);
    Ok(Json(json!({
        "status": "ok",
        "chainId": s.chain_id,
        "headBlock": head,
        "headLag": head.saturating_sub(indexed),
        "indexedBlock": checkpoint.as_ref().map(|(n, _)| n),
        "indexedBlockHash": checkpoint.map(|(_, h)| h),
    })))
}

/// `GET /v1/events`: logs in chain order. Parameters: `session`, `event`, `fromBlock`,
/// `toBlock`, `includeOrphaned`, `cursor` (from the last page), `limit` (1–1000, default 100).
async fn events(
    axum::extract::State(s): axum::extract::State<State>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let filter = filter(&q, None)?;
    page(&s.store, filter).await
}

/// `GET /v1/sessions/{id}/timeline`: every event of the session, in order (the parameters of
/// `/v1/events` but `session`).
async fn timeline(
    axum::extract::State(s): axum::extract::State<State>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let filter = filter(&q, Some(id_of(&id, "id")?))?;
    page(&s.store, filter).await
}

/// `GET /v1/sessions`: sessions in the order they opened, with their terms. Filters:
/// `owner`, `sessionKey`, `token` (one of them), and the paging of `/v1/events`.
async fn sessions(
    axum::extract::State(s): axum::extract::State<State>,
    Query(mut q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let mut arg = None;
    for name in ["owner", "sessionKey", "token"] {
        if let Some(v) = q.remove(name) {
            let a: alloy_primitives::Address =
                v.parse().map_err(|_| bad(name, "want an address"))?;
            if arg.is_some() {
                return Err(bad(name, "filter by one of owner, sessionKey, token"));
            }
            arg = Some((name.to_owned(), a.to_checksum(None)));
        }
    }
    let mut filter = filter(&q, None)?;
    filter.event = Some("SessionOpened".into());
    filter.args = arg.into_iter().collect();
    let rows = s.store.logs(&filter).await?;
    let next = cursor(&rows, filter.limit);
    let sessions: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "sessionId": r.session_id,
                "terms": r.args,
                "openedAt": { "blockNumber": r.block_number, "blockHash": r.block_hash, "txHash": r.tx_hash, "blockTimestamp": r.block_timestamp },
                "canonical": r.canonical,
            })
        })
        .collect();
    Ok(Json(json!({ "sessions": sessions, "nextCursor": next })))
}

/// `GET /v1/sessions/{id}`: the session's terms and its state by the wallet's rules, at the
/// last block indexed or at `asOfBlock`.
async fn session(
    axum::extract::State(s): axum::extract::State<State>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let id = id_of(&id, "id")?;
    if let Some(unknown) = q.keys().find(|k| *k != "asOfBlock") {
        return Err(bad(unknown, "unknown parameter"));
    }
    let Some((indexed, _)) = s.store.checkpoint().await? else {
        return Err(ApiError::NotFound);
    };
    let at = match q.get("asOfBlock") {
        None => indexed,
        Some(v) => {
            let n: u64 = v
                .parse()
                .map_err(|_| bad("asOfBlock", "want a block number"))?;
            if n > indexed {
                return Err(bad(
                    "asOfBlock",
                    &format!("block {n} is not indexed yet (indexed: {indexed})"),
                ));
            }
            n
        }
    };
    let time = match s.store.canonical_block(at).await? {
        Some(b) => b.timestamp,
        None => s
            .client
            .block(at)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "node error");
                ApiError::Unavailable
            })?
            .ok_or(ApiError::Unavailable)?
            .timestamp
            .to(),
    };
    let events = s
        .store
        .logs(&LogFilter {
            session_id: Some(id.clone()),
            to_block: Some(at),
            limit: u64::MAX,
            ..LogFilter::default()
        })
        .await?;
    let session = Session::fold(&events).ok_or(ApiError::NotFound)?;
    let mut body = session.to_json(time);
    body["sessionId"] = json!(id);
    body["asOf"] = json!({ "blockNumber": at, "blockTimestamp": time });
    Ok(Json(body))
}

/// Takes the address filter `name` out of `q`, as the events' JSON has addresses (EIP-55).
fn address_arg(
    q: &mut HashMap<String, String>,
    name: &str,
) -> Result<Option<(String, String)>, ApiError> {
    q.remove(name)
        .map(|v| {
            let a: alloy_primitives::Address =
                v.parse().map_err(|_| bad(name, "want an address"))?;
            Ok((name.to_owned(), a.to_checksum(None)))
        })
        .transpose()
}

/// Takes the hash filter `name` out of `q` (0x + 64 hex, as the events' JSON has them).
fn hash_arg(
    q: &mut HashMap<String, String>,
    name: &str,
) -> Result<Option<(String, String)>, ApiError> {
    q.remove(name)
        .map(|v| {
            let h: alloy_primitives::B256 = v
                .parse()
                .map_err(|_| bad(name, "want 0x and 64 hex digits"))?;
            Ok((name.to_owned(), h.to_string()))
        })
        .transpose()
}

/// `GET /v1/sessions/{id}/export?format=ndjson|csv`: the session's timeline as a hash-chained
/// audit export with a final manifest (see [`crate::audit`]).
async fn export(
    axum::extract::State(s): axum::extract::State<State>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let id = id_of(&id, "id")?;
    if let Some(unknown) = q.keys().find(|k| *k != "format") {
        return Err(bad(unknown, "unknown parameter"));
    }
    let csv = match q.get("format").map(String::as_str) {
        None | Some("ndjson") => false,
        Some("csv") => true,
        Some(_) => return Err(bad("format", "want ndjson or csv")),
    };
    let Some((head, head_hash)) = s.store.checkpoint().await? else {
        return Err(ApiError::NotFound);
    };
    let rows = s
        .store
        .logs(&LogFilter {
            session_id: Some(id.clone()),
            to_block: Some(head),
            limit: u64::MAX,
            ..LogFilter::default()
        })
        .await?;
    if rows.is_empty() {
        return Err(ApiError::NotFound);
    }
    let (rows, manifest) = crate::audit::export(&id, s.chain_id, &rows, (head, &head_hash));
    let mut body = String::new();
    if csv {
        body.push_str(crate::audit::CSV_HEADER);
        body.push('\n');
        for r in &rows {
            body.push_str(&crate::audit::csv_line(r));
            body.push('\n');
        }
    } else {
        for r in &rows {
            body.push_str(&serde_json::to_string(r).unwrap_or_default());
            body.push('\n');
        }
    }
    let manifest = json!({ "manifest": manifest });
    if csv {
        body.push_str(&format!("# {manifest}\n"));
    } else {
        body.push_str(&format!("{manifest}\n"));
    }
    let kind = if csv {
        "text/csv"
    } else {
        "application/x-ndjson"
    };
    Ok(([(axum::http::header::CONTENT_TYPE, kind)], body).into_response())
}

/// `GET /v1/spend`: executed payments summed. `groupBy` (comma-separated: session, owner,
/// counterparty, token, hour, day; none: one total); filters `session`, `owner`,
/// `counterparty`, `token`, `fromBlock`, `toBlock`, `fromTime`, `toTime` (unix seconds).
async fn spend(
    axum::extract::State(s): axum::extract::State<State>,
    Query(mut q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let groups = match q.remove("groupBy") {
        None => Vec::new(),
        Some(g) => g
            .split(',')
            .filter(|w| !w.is_empty())
            .map(|w| {
                crate::spend::Group::parse(w).ok_or_else(|| {
                    bad(
                        "groupBy",
                        "want session, owner, counterparty, token, hour or day",
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let owner = address_arg(&mut q, "owner")?.map(|(_, a)| a);
    let token = address_arg(&mut q, "token")?.map(|(_, a)| a);
    let counterparty = address_arg(&mut q, "counterparty")?.map(|(_, a)| ("to".to_owned(), a));
    let time = |q: &mut HashMap<String, String>, name: &str| -> Result<Option<u64>, ApiError> {
        q.remove(name)
            .map(|v| v.parse().map_err(|_| bad(name, "want unix seconds")))
            .transpose()
    };
    let (from_time, to_time) = (time(&mut q, "fromTime")?, time(&mut q, "toTime")?);
    if let Some(paging) = ["cursor", "limit", "event", "includeOrphaned"]
        .iter()
        .find(|k| q.contains_key(**k))
    {
        return Err(bad(paging, "unknown parameter"));
    }
    let mut logs = filter(&q, None)?;
    logs.args = counterparty.into_iter().collect();
    logs.from_time = from_time;
    logs.to_time = to_time;
    let filter = crate::spend::SpendFilter { logs, owner, token };
    Ok(Json(crate::spend::spend(&s.store, &groups, &filter).await?))
}

/// `GET /v1/receipts`: receipts in the order they were recorded. Filters: `payer`, `payee`,
/// `session`, `purpose`, `acknowledged` (true/false), and the paging of `/v1/events`.
async fn receipts(
    axum::extract::State(s): axum::extract::State<State>,
    Query(mut q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let mut args = Vec::new();
    for name in ["payer", "payee"] {
        args.extend(address_arg(&mut q, name)?);
    }
    args.extend(hash_arg(&mut q, "purpose")?);
    let linked = match q.remove("acknowledged").as_deref() {
        None => None,
        Some(v @ ("true" | "false")) => Some(Link {
            present: v == "true",
            event: "ReceiptAcknowledged",
            field: "receiptId",
        }),
        Some(_) => return Err(bad("acknowledged", "want true or false")),
    };
    let mut filter = filter(&q, None)?;
    filter.event = Some("ReceiptRecorded".into());
    filter.args = args;
    filter.linked = linked;
    let rows = s.store.logs(&filter).await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(records::receipt(&s.store, r).await?);
    }
    Ok(Json(
        json!({ "receipts": out, "nextCursor": cursor(&rows, filter.limit) }),
    ))
}

/// `GET /v1/receipts/{id}`.
async fn receipt(
    axum::extract::State(s): axum::extract::State<State>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = id_of(&id, "id")?;
    Ok(Json(
        records::receipt_by_id(&s.store, &id)
            .await?
            .ok_or(ApiError::NotFound)?,
    ))
}

/// `GET /v1/provenance`: records in the order they were recorded. Filters: `subject`,
/// `attester`, `session`, and the paging of `/v1/events`.
async fn provenance(
    axum::extract::State(s): axum::extract::State<State>,
    Query(mut q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let mut args = Vec::new();
    args.extend(address_arg(&mut q, "attester")?);
    args.extend(hash_arg(&mut q, "subject")?);
    let mut filter = filter(&q, None)?;
    filter.event = Some("ProvenanceRecorded".into());
    filter.args = args;
    let rows = s.store.logs(&filter).await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(records::record(&s.store, r).await?);
    }
    Ok(Json(
        json!({ "records": out, "nextCursor": cursor(&rows, filter.limit) }),
    ))
}

/// `GET /v1/provenance/{id}`: the record, its revocation and `valid`.
async fn provenance_record(
    axum::extract::State(s): axum::extract::State<State>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = id_of(&id, "id")?;
    Ok(Json(
        records::record_by_id(&s.store, &id)
            .await?
            .ok_or(ApiError::NotFound)?,
    ))
}

/// `GET /v1/provenance/{id}/lineage?depth=N` (1–64, default 8): ancestors and descendants up
/// to `depth` generations, and `lineageValid` (the record and every ancestor found unrevoked).
async fn lineage(
    axum::extract::State(s): axum::extract::State<State>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let id = id_of(&id, "id")?;
    if let Some(unknown) = q.keys().find(|k| *k != "depth") {
        return Err(bad(unknown, "unknown parameter"));
    }
    let depth = match q.get("depth") {
        None => 8,
        Some(d) => d
            .parse()
            .ok()
            .filter(|d| (1..=64).contains(d))
            .ok_or_else(|| bad("depth", "want 1 to 64"))?,
    };
    Ok(Json(
        records::lineage(&s.store, &id, depth)
            .await?
            .ok_or(ApiError::NotFound)?,
    ))
}

fn cursor(rows: &[LogRow], limit: u64) -> Option<String> {
    (rows.len() as u64 == limit)
        .then(|| {
            rows.last()
                .map(|r| format!("{}:{}", r.block_number, r.log_index))
        })
        .flatten()
}

/// An id (session, receipt, record), decimal or 0x-hex, as the store keeps it (decimal).
fn id_of(text: &str, name: &str) -> Result<String, ApiError> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => alloy_primitives::U256::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    };
    parsed
        .map(|v| v.to_string())
        .ok_or_else(|| bad(name, "an id is a decimal or 0x-hex integer"))
}

async fn page(store: &Store, filter: LogFilter) -> Result<Json<Value>, ApiError> {
    let rows = store.logs(&filter).await?;
    let next = (rows.len() as u64 == filter.limit)
        .then(|| {
            rows.last()
                .map(|r| format!("{}:{}", r.block_number, r.log_index))
        })
        .flatten();
    Ok(Json(json!({
        "events": rows.iter().map(view).collect::<Vec<_>>(),
        "nextCursor": next,
    })))
}

fn bad(name: &str, message: &str) -> ApiError {
    ApiError::BadParameter {
        name: name.into(),
        message: format!("{name}: {message}"),
    }
}

fn filter(q: &HashMap<String, String>, session: Option<String>) -> Result<LogFilter, ApiError> {
    let known = [
        "session",
        "event",
        "fromBlock",
        "toBlock",
        "includeOrphaned",
        "cursor",
        "limit",
    ];
    if let Some(unknown) = q
        .keys()
        .find(|k| !known.contains(&k.as_str()) || (session.is_some() && *k == "session"))
    {
        return Err(bad(unknown, "unknown parameter"));
    }
    let number = |name: &str| -> Result<Option<u64>, ApiError> {
        q.get(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| bad(name, "want a non-negative integer"))
            })
            .transpose()
    };
    let after = q
        .get("cursor")
        .map(|c| {
            c.split_once(':')
                .and_then(|(b, i)| Some((b.parse().ok()?, i.parse().ok()?)))
                .ok_or_else(|| bad("cursor", "use the nextCursor of the previous page"))
        })
        .transpose()?;
    let limit = number("limit")?.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(bad("limit", "want 1 to 1000"));
    }
    let include_orphaned = match q.get("includeOrphaned").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(bad("includeOrphaned", "want true or false")),
    };
    let session_id = match session {
        Some(s) => Some(s),
        None => q.get("session").map(|s| id_of(s, "session")).transpose()?,
    };
    Ok(LogFilter {
        session_id,
        event: q.get("event").cloned(),
        from_block: number("fromBlock")?,
        to_block: number("toBlock")?,
        include_orphaned,
        after,
        limit,
        args: Vec::new(),
        linked: None,
        from_time: None,
        to_time: None,
    })
}

fn view(r: &LogRow) -> Value {
    let address = r
        .address
        .parse::<alloy_primitives::Address>()
        .map_or(r.address.clone(), |a| a.to_checksum(None));
    json!({
        "chainId": r.chain_id,
        "blockNumber": r.block_number,
        "blockHash": r.block_hash,
        "blockTimestamp": r.block_timestamp,
        "txHash": r.tx_hash,
        "logIndex": r.log_index,
        "contract": r.contract,
        "address": address,
        "event": r.event,
        "args": r.args,
        "topics": r.topics,
        "data": r.data,
        "decodeError": r.decode_error,
        "sessionId": r.session_id,
        "canonical": r.canonical,
        "orphanedBy": r.orphaned_by,
    })
}
