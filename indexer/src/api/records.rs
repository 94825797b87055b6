//! Receipts and provenance records (see [`crate::records`]).

use axum::extract::Path;
use axum::Json;
use serde_json::Value;

use super::dto::{
    AsOfQuery, Lineage, PageQuery, RangeQuery, Receipt, ReceiptPage, Record, RecordPage,
};
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

/// Receipts in the order they were recorded, with their acknowledgements.
#[utoipa::path(get, path = "/v1/receipts", operation_id = "listReceipts", tag = "records",
    params(("payer" = Option<String>, Query, description = "An address."),
        ("payee" = Option<String>, Query, description = "An address."),
        ("session" = Option<String>, Query, description = "A session id."),
        ("purpose" = Option<String>, Query, description = "0x and 64 hex digits."),
        ("acknowledged" = Option<bool>, Query, description = "`true` or `false`."),
        AsOfQuery, RangeQuery, PageQuery),
    responses((status = 200, description = "A page of receipts", body = ReceiptPage)))]
pub(super) async fn receipts(s: Shared, q: QueryMap) -> Result<Json<ReceiptPage>, ApiError> {
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
    Ok(Json(ReceiptPage {
        receipts: out,
        next_cursor: cursor(&rows, filter.limit),
    }))
}

/// A receipt and its acknowledgement.
#[utoipa::path(get, path = "/v1/receipts/{id}", operation_id = "getReceipt", tag = "records",
    params(("id" = String, Path, description = "The receipt id (decimal)."), AsOfQuery),
    responses((status = 200, description = "The receipt", body = Receipt)))]
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

/// Provenance records in the order they were recorded, with their validity.
#[utoipa::path(get, path = "/v1/provenance", operation_id = "listRecords", tag = "records",
    params(("subject" = Option<String>, Query, description = "0x and 64 hex digits."),
        ("attester" = Option<String>, Query, description = "An address."),
        ("session" = Option<String>, Query, description = "A session id."),
        AsOfQuery, RangeQuery, PageQuery),
    responses((status = 200, description = "A page of records", body = RecordPage)))]
pub(super) async fn provenance(s: Shared, q: QueryMap) -> Result<Json<RecordPage>, ApiError> {
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
    Ok(Json(RecordPage {
        records: out,
        next_cursor: cursor(&rows, filter.limit),
    }))
}

/// A provenance record, its revocation and `valid`.
#[utoipa::path(get, path = "/v1/provenance/{id}", operation_id = "getRecord", tag = "records",
    params(("id" = String, Path, description = "The record id (decimal)."), AsOfQuery),
    responses((status = 200, description = "The record", body = Record)))]
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

/// A record's ancestors and descendants up to `depth` generations, and `lineageValid` (false
/// when the record or an ancestor is revoked).
#[utoipa::path(get, path = "/v1/provenance/{id}/lineage", operation_id = "getLineage",
    tag = "records",
    params(("id" = String, Path, description = "The record id (decimal)."), ("depth" = Option<u32>, Query, minimum = 1, maximum = 64, description = "Generations each way, 1 to 64 (default 8)."), AsOfQuery),
    responses((status = 200, description = "The lineage", body = Lineage)))]
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
