//! Receipts and provenance records (see [`crate::records`]).

use axum::extract::Path;
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use super::params::{bad, id_of};
use super::params::{AsOf, Params};
use super::rows::cursor;
use super::state::{QueryMap, Shared};
use crate::records::Records;
use crate::store::Link;

/// The reader of receipts and records as of `at`.
fn records<'a>(s: &'a Shared, at: &AsOf) -> Records<'a> {
    Records {
        store: &s.store,
        metrics: &s.metrics,
        at: at.block,
    }
}

/// `GET /v1/receipts`: receipts in the order they were recorded. Filters: `payer`, `payee`,
/// `session`, `purpose`, `acknowledged` (true/false), and the paging of `/v1/events`.
pub(super) async fn receipts(s: Shared, q: QueryMap) -> Result<Json<Value>, ApiError> {
    let mut p = Params::from(q.0);
    let mut args = Vec::new();
    for name in ["payer", "payee"] {
        args.extend(p.address(name)?.map(|a| (name.to_owned(), a)));
    }
    args.extend(p.hash("purpose")?.map(|h| ("purpose".to_owned(), h)));
    let linked = match p.take("acknowledged").as_deref() {
        None => None,
        Some(v @ ("true" | "false")) => Some(Link {
            present: v == "true",
            event: "ReceiptAcknowledged",
            field: "receiptId",
        }),
        Some(_) => return Err(bad("acknowledged", "want true or false")),
    };
    let at = p.as_of(&s.store).await?;
    let mut filter = p.log_filter(&at)?;
    p.finish()?;
    filter.event = Some("ReceiptRecorded".into());
    filter.args = args;
    filter.linked = linked;
    let rows = s.store.logs(&filter).await?;
    let reader = records(&s, &at);
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(reader.receipt(r).await?);
    }
    Ok(Json(
        json!({ "receipts": out, "nextCursor": cursor(&rows, filter.limit) }),
    ))
}

/// `GET /v1/receipts/{id}`.
pub(super) async fn receipt(
    s: Shared,
    Path(id): Path<String>,
    q: QueryMap,
) -> Result<Json<Value>, ApiError> {
    let id = id_of(&id, "id")?;
    let mut p = Params::from(q.0);
    let at = p.as_of(&s.store).await?;
    p.finish()?;
    let reader = records(&s, &at);
    let found = reader.receipt_by_id(&id).await?;
    Ok(Json(found.ok_or(ApiError::NotFound)?))
}

/// `GET /v1/provenance`: records in the order they were recorded. Filters: `subject`,
/// `attester`, `session`, and the paging of `/v1/events`.
pub(super) async fn provenance(s: Shared, q: QueryMap) -> Result<Json<Value>, ApiError> {
    let mut p = Params::from(q.0);
    let mut args = Vec::new();
    args.extend(p.address("attester")?.map(|a| ("attester".to_owned(), a)));
    args.extend(p.hash("subject")?.map(|h| ("subject".to_owned(), h)));
    let at = p.as_of(&s.store).await?;
    let mut filter = p.log_filter(&at)?;
    p.finish()?;
    filter.event = Some("ProvenanceRecorded".into());
    filter.args = args;
    let rows = s.store.logs(&filter).await?;
    let reader = records(&s, &at);
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(reader.record(r).await?);
    }
    Ok(Json(
        json!({ "records": out, "nextCursor": cursor(&rows, filter.limit) }),
    ))
}

/// `GET /v1/provenance/{id}`: the record, its revocation and `valid`.
pub(super) async fn record(
    s: Shared,
    Path(id): Path<String>,
    q: QueryMap,
) -> Result<Json<Value>, ApiError> {
    let id = id_of(&id, "id")?;
    let mut p = Params::from(q.0);
    let at = p.as_of(&s.store).await?;
    p.finish()?;
    let reader = records(&s, &at);
    let found = reader.record_by_id(&id).await?;
    Ok(Json(found.ok_or(ApiError::NotFound)?))
}

/// `GET /v1/provenance/{id}/lineage?depth=N` (1–64, default 8): ancestors and descendants up
/// to `depth` generations, and `lineageValid` (the record and every ancestor found unrevoked).
pub(super) async fn lineage(
    s: Shared,
    Path(id): Path<String>,
    q: QueryMap,
) -> Result<Json<Value>, ApiError> {
    let id = id_of(&id, "id")?;
    let mut p = Params::from(q.0);
    let depth = match p.number("depth")? {
        None => 8,
        Some(d @ 1..=64) => d as u32,
        Some(_) => return Err(bad("depth", "want 1 to 64")),
    };
    let at = p.as_of(&s.store).await?;
    p.finish()?;
    let reader = records(&s, &at);
    let found = reader.lineage(&id, depth).await?;
    Ok(Json(found.ok_or(ApiError::NotFound)?))
}
