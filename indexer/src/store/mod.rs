//! The only place with SQL (see [`bursar_db`] for how one query means the same on SQLite and
//! PostgreSQL). Everything a batch of blocks brings — blocks, logs, the checkpoint — is written
//! in one database transaction, and so is everything a reorg changes: `kill -9` at any moment
//! leaves the database as it was before the batch or after it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use alloy_primitives::{Bytes, B256};
use bursar_db::{placeholders, Backend, DbTx, ROWS_PER_INSERT};
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

mod db;
mod rows;
mod spend;
mod sql;
mod upgrade;

// MIGRATIONS_SQLITE and MIGRATIONS_POSTGRES, embedded by the build script.
include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

pub use db::{Store, StoreError};
pub use rows::{BlockRow, Link, LogFilter, LogRow};
pub use spend::{Group, Sum};

use spend::HourlySums;
use sql::{bound, text, BinaryCopy, Bind, Field, Tail};

/// The indexes of `logs` a bulk load builds at its end instead of row by row: the session
/// index (entries land all over it, and each costs more than the row itself) and, on
/// PostgreSQL, the chain-order key (on SQLite it cannot be dropped, and its entries land at
/// the end of the index anyway). `logs_event` stays: the ingest's own lookups of receipts and
/// records by event read it. The PostgreSQL key keeps the name the table was created with.
const BULK_INDEXES: [(Backend, &str, &str); 3] = [
    (
        Backend::Postgres,
        "ALTER TABLE logs DROP CONSTRAINT logs_by_order_pkey",
        "ALTER TABLE logs ADD CONSTRAINT logs_by_order_pkey \
         PRIMARY KEY (block_number, log_index, block_hash)",
    ),
    (
        Backend::Postgres,
        "DROP INDEX logs_session",
        "CREATE INDEX logs_session ON logs (session_id, block_number, log_index, event)",
    ),
    (
        Backend::Sqlite,
        "DROP INDEX logs_session",
        "CREATE INDEX logs_session ON logs (session_id, block_number, log_index, event)",
    ),
];

const LOG_COLUMNS: &str = "chain_id, block_number, block_hash, block_timestamp, tx_hash, \
    log_index, address, contract, topics, data, event, args, decode_error, session_id, \
    canonical, orphaned_by";

impl Store {
    /// Connects to `url` (`sqlite://FILE`, created if missing, or `postgres://…`) and brings
    /// the schema up to date.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pools = bursar_db::connect(
            url,
            MIGRATIONS_SQLITE,
            MIGRATIONS_POSTGRES,
            bursar_db::Durability::ProcessCrash,
        )
        .await?;
        // A bulk load that a restart interrupted goes on.
        let session_index = match pools.backend {
            Backend::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'logs_session'"
            }
            Backend::Postgres => {
                "SELECT COUNT(*) FROM pg_indexes \
                 WHERE schemaname = current_schema() AND indexname = 'logs_session'"
            }
        };
        let (indexed,): (i64,) = sqlx::query_as(session_index).fetch_one(&pools.read).await?;
        let rewritten = upgrade::hex_session_ids(&pools.write).await?;
        if rewritten > 0 {
            tracing::info!(sessions = rewritten, "session ids rewritten as 0x-hex");
        }
        let copy = match pools.backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(1)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            // As the other writes (see bursar_db::Durability::ProcessCrash).
                            sqlx::Executor::execute(conn, "SET synchronous_commit = off").await?;
                            Ok(())
                        })
                    })
                    // Opened on the first bulk batch: most starts never write one.
                    .connect_lazy(url)?,
            ),
        };
        Ok(Store {
            write: pools.write,
            read: pools.read,
            backend: pools.backend,
            bulk: Arc::new(AtomicBool::new(indexed == 0)),
            copy,
        })
    }

    /// Starts a bulk load when nothing is stored yet: the indexes in [`BULK_INDEXES`] are
    /// dropped, rows go in without them, and [`Store::end_bulk`] builds them once — a sort,
    /// several times faster than maintaining them row by row (the practice PostgreSQL's
    /// "Populating a Database" recommends). Until then, queries by session scan the table.
    /// So does the key of the spend sums, which the batches append to instead of adding to
    /// (see `spend::merge`). Answers whether a bulk load is on.
    pub async fn begin_bulk(&self) -> Result<bool, StoreError> {
        if self.bulk.load(Ordering::Acquire) {
            return Ok(true);
        }
        let mut db = self.write.begin().await?;
        // Rows of blocks above the checkpoint cannot be stored while a bulk load runs (each
        // batch lands with its checkpoint, and a reorg ends the load first), so a batch never
        // meets a row it would conflict with — which the dropped key would have caught.
        let (stored,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM (SELECT 1 FROM logs LIMIT 1) s")
                .fetch_one(&mut *db)
                .await?;
        if stored > 0 {
            return Ok(false);
        }
        for (backend, drop, _) in BULK_INDEXES {
            if backend == self.backend {
                sqlx::query(drop).execute(&mut *db).await?;
            }
        }
        sqlx::query(spend::DROP_KEY).execute(&mut *db).await?;
        db.commit().await?;
        self.bulk.store(true, Ordering::Release);
        Ok(true)
    }

    /// Ends a bulk load, if one is on: builds the indexes it went without. Answers whether it
    /// built them.
    pub async fn end_bulk(&self) -> Result<bool, StoreError> {
        if !self.bulk.load(Ordering::Acquire) {
            return Ok(false);
        }
        let mut db = self.write.begin().await?;
        if self.backend == Backend::Postgres {
            // Sorts a million keys in memory rather than in temporary files (this transaction
            // only).
            sqlx::query("SET LOCAL maintenance_work_mem = '256MB'")
                .execute(&mut *db)
                .await?;
        }
        for (backend, _, build) in BULK_INDEXES {
            if backend == self.backend {
                sqlx::query(build).execute(&mut *db).await?;
            }
        }
        spend::merge(&mut db, self.backend).await?;
        if self.backend == Backend::Postgres {
            // Statistics of the loaded table now, not when autovacuum gets to it: without
            // them, the all-payments spend over a million rows took 8.6 s instead of 2.7 s.
            // Of the columns queries filter, join and group on: with the long text ones too it
            // takes twice as long.
            sqlx::query(
                "ANALYZE logs (block_number, event, session_id, canonical, block_timestamp)",
            )
            .execute(&mut *db)
            .await?;
        }
        db.commit().await?;
        self.bulk.store(false, Ordering::Release);
        Ok(true)
    }

    /// The database this store runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The last block ingested: `(number, hash)`.
    pub async fn checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
        let row: Option<(i64, String)> =
            sqlx::query_as("SELECT block_number, block_hash FROM checkpoint WHERE id = 1")
                .fetch_optional(&self.read)
                .await?;
        Ok(row.map(|(n, h)| (n as u64, h)))
    }

    /// The canonical block stored at `number`, if any (blocks without Bursar logs below the
    /// recent window are not stored).
    pub async fn canonical_block(&self, number: u64) -> Result<Option<BlockRow>, StoreError> {
        let row = sqlx::query(
            "SELECT number, hash, parent_hash, timestamp FROM blocks \
             WHERE number = $1 AND canonical = 1",
        )
        .bind(number as i64)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(block_row).transpose()
    }

    /// The last canonical block stored at or before unix time `time` (blocks without Bursar
    /// logs below the recent window are not stored; none changes what the API answers).
    pub async fn canonical_block_at_time(&self, time: u64) -> Result<Option<u64>, StoreError> {
        let row: (Option<i64>,) = sqlx::query_as(
            "SELECT MAX(number) FROM blocks WHERE canonical = 1 AND timestamp <= $1",
        )
        .bind(time.min(i64::MAX as u64) as i64)
        .fetch_one(&self.read)
        .await?;
        Ok(row.0.map(|n| n as u64))
    }

    /// Writes a batch: `blocks` and `logs` (a block or log seen before becomes canonical again:
    /// a reorg can come back), the spend sums of its payments, and the checkpoint
    /// `(number, hash)` — all or nothing. The batch is above the checkpoint, where nothing is
    /// canonical (a reorg orphaned what was there): each of its canonical payments is new to the
    /// sums.
    pub async fn ingest(
        &self,
        blocks: &[BlockRow],
        logs: &[LogRow],
        checkpoint: (u64, &str),
    ) -> Result<(), StoreError> {
        let bulk = self.bulk.load(Ordering::Acquire);
        // Releases of reservations of earlier batches (committed: any connection sees them).
        let reserved = match logs
            .iter()
            .any(|l| l.event.as_deref() == Some(spend::RELEASE))
        {
            true => spend::reserved_at(&mut *self.read.acquire().await?, logs).await?,
            false => Default::default(),
        };
        let sums = HourlySums::of(logs, &reserved);
        if let (true, Some(copy)) = (bulk, &self.copy) {
            return copy_batch(copy, blocks, logs, &sums, checkpoint).await;
        }
        let mut db = self.write.begin().await?;
        insert_blocks(&mut db, blocks).await?;
        insert_logs(&mut db, logs, bulk).await?;
        sums.write(&mut db, bulk).await?;
        set_checkpoint(&mut db, checkpoint).await?;
        db.commit().await?;
        Ok(())
    }

    /// A reorg: the canonical blocks above `fork` (and their logs) are orphaned, each by the
    /// hash the chain now has at its height (`replaced_by`, height → hash), and the checkpoint
    /// goes back to `fork` — all or nothing. Answers how many logs were orphaned.
    pub async fn orphan_above(
        &self,
        fork: (u64, &str),
        replaced_by: &[(u64, String)],
    ) -> Result<u64, StoreError> {
        // Orphaning finds rows by block, and re-ingesting them may conflict: with the indexes.
        self.end_bulk().await?;
        let mut db = self.write.begin().await?;
        spend::take_out_above(&mut db, fork.0).await?;
        let mut orphaned = 0;
        for (number, by) in replaced_by {
            sqlx::query(
                "UPDATE blocks SET canonical = 0, orphaned_by = $1 \
                 WHERE number = $2 AND canonical = 1",
            )
            .bind(by)
            .bind(*number as i64)
            .execute(&mut *db)
            .await?;
            orphaned += sqlx::query(
                "UPDATE logs SET canonical = 0, orphaned_by = $1 \
                 WHERE block_number = $2 AND canonical = 1",
            )
            .bind(by)
            .bind(*number as i64)
            .execute(&mut *db)
            .await?
            .rows_affected();
        }
        // Anything canonical still above the fork (heights the new chain does not reach yet).
        let top = replaced_by.iter().map(|(n, _)| *n).max().unwrap_or(fork.0);
        let tip = replaced_by
            .iter()
            .max_by_key(|(n, _)| *n)
            .map_or(fork.1, |(_, h)| h.as_str());
        sqlx::query(
            "UPDATE blocks SET canonical = 0, orphaned_by = $1 WHERE number > $2 AND canonical = 1",
        )
        .bind(tip)
        .bind(top as i64)
        .execute(&mut *db)
        .await?;
        orphaned += sqlx::query(
            "UPDATE logs SET canonical = 0, orphaned_by = $1 \
             WHERE block_number > $2 AND canonical = 1",
        )
        .bind(tip)
        .bind(top as i64)
        .execute(&mut *db)
        .await?
        .rows_affected();
        set_checkpoint(&mut db, fork).await?;
        db.commit().await?;
        Ok(orphaned)
    }

    /// Canonical `ProvenanceRecorded` events up to block `at` that name `record_id` among
    /// their parents.
    pub async fn provenance_children(
        &self,
        record_id: &str,
        at: u64,
    ) -> Result<Vec<LogRow>, StoreError> {
        let contains = match self.backend {
            Backend::Sqlite => {
                "EXISTS (SELECT 1 FROM json_each(args, '$.parents') p WHERE p.value = $1)"
            }
            Backend::Postgres => "(args::jsonb -> 'parents') ? $1",
        };
        let sql = format!(
            "SELECT {LOG_COLUMNS} FROM logs WHERE event = 'ProvenanceRecorded' AND canonical = 1 \
             AND block_number <= $2 AND {contains} ORDER BY block_number, log_index"
        );
        let rows = sqlx::query(&sql)
            .bind(record_id)
            .bind(at.min(i64::MAX as u64) as i64)
            .fetch_all(&self.read)
            .await?;
        rows.iter().map(log_row).collect()
    }

    /// The SQL for decoded argument `name` of the row of `table` (its alias).
    fn json_arg(&self, table: &str, name: &str) -> Result<String, StoreError> {
        if !name.chars().all(|c| c.is_ascii_alphabetic()) {
            return Err(StoreError::Corrupt(format!("argument name {name:?}")));
        }
        Ok(match self.backend {
            Backend::Sqlite => format!("json_extract({table}.args, '$.{name}')"),
            Backend::Postgres => format!("({table}.args::json ->> '{name}')"),
        })
    }

    /// Logs in chain order (block number, log index), as `filter` says.
    pub async fn logs(&self, filter: &LogFilter) -> Result<Vec<LogRow>, StoreError> {
        let (sql, binds) = self.select(LOG_COLUMNS, "", &[], filter, Tail::Ordered)?;
        let rows = bound(&sql, binds).fetch_all(&self.read).await?;
        rows.iter().map(log_row).collect()
    }

    /// `SELECT columns FROM logs join` as `filter` and `extra` (SQL expression = text) say,
    /// ending as `tail` says, and its parameters.
    fn select(
        &self,
        columns: &str,
        join: &str,
        extra: &[(String, String)],
        filter: &LogFilter,
        tail: Tail<'_>,
    ) -> Result<(String, Vec<Bind>), StoreError> {
        let mut binds = Vec::new();
        let mut sql = format!("SELECT {columns} FROM logs {join} WHERE 1 = 1");
        let mut param = |sql: &mut String, text: &str, bind: Bind| {
            binds.push(bind);
            sql.push_str(&text.replace('?', &format!("${}", binds.len())));
        };
        if !filter.include_orphaned {
            sql.push_str(" AND logs.canonical = 1");
        }
        if let Some(s) = &filter.session_id {
            param(&mut sql, " AND logs.session_id = ?", Bind::Text(s.clone()));
        }
        if let Some(e) = &filter.event {
            param(&mut sql, " AND logs.event = ?", Bind::Text(e.clone()));
        }
        if !filter.events.is_empty() {
            let names: Vec<String> = filter
                .events
                .iter()
                .map(|e| format!("'{}'", e.replace('\'', "")))
                .collect();
            sql.push_str(&format!(" AND logs.event IN ({})", names.join(", ")));
        }
        if let Some(b) = filter.from_block {
            param(&mut sql, " AND logs.block_number >= ?", Bind::Int(b));
        }
        if let Some(b) = filter.to_block {
            param(&mut sql, " AND logs.block_number <= ?", Bind::Int(b));
        }
        if let Some(t) = filter.from_time {
            param(&mut sql, " AND logs.block_timestamp >= ?", Bind::Int(t));
        }
        if let Some(t) = filter.to_time {
            param(&mut sql, " AND logs.block_timestamp <= ?", Bind::Int(t));
        }
        for (expression, value) in extra {
            param(
                &mut sql,
                &format!(" AND {expression} = ?"),
                Bind::Text(value.clone()),
            );
        }
        for (name, value) in &filter.args {
            let arg = self.json_arg("logs", name)?;
            param(
                &mut sql,
                &format!(" AND {arg} = ?"),
                Bind::Text(value.clone()),
            );
        }
        if let Some(link) = &filter.linked {
            let (theirs, ours) = (
                self.json_arg("l", link.field)?,
                self.json_arg("logs", link.field)?,
            );
            // The linked event counts only up to the query's last block (as of that block).
            let until = filter
                .to_block
                .map_or(String::new(), |b| format!(" AND l.block_number <= {b}"));
            sql.push_str(&format!(
                " AND {}EXISTS (SELECT 1 FROM logs l WHERE l.event = '{}' AND l.canonical = 1 \
                 AND {theirs} = {ours}{until})",
                if link.present { "" } else { "NOT " },
                link.event.replace('\'', "")
            ));
        }
        for (present, event) in &filter.session_events {
            let until = filter
                .to_block
                .map_or(String::new(), |b| format!(" AND s.block_number <= {b}"));
            sql.push_str(&format!(
                " AND {}EXISTS (SELECT 1 FROM logs s WHERE s.session_id = logs.session_id \
                 AND s.event = '{}' AND s.canonical = 1{until})",
                if *present { "" } else { "NOT " },
                event.replace('\'', "")
            ));
        }
        if let Some((b, i)) = filter.after {
            param(&mut sql, " AND (logs.block_number > ?", Bind::Int(b));
            param(&mut sql, " OR (logs.block_number = ?", Bind::Int(b));
            param(&mut sql, " AND logs.log_index > ?))", Bind::Int(i));
        }
        match tail {
            Tail::Ordered => param(
                &mut sql,
                " ORDER BY logs.block_number, logs.log_index, logs.canonical DESC LIMIT ?",
                Bind::Int(filter.limit),
            ),
            Tail::GroupBy(keys) => sql.push_str(&format!(" GROUP BY {keys}")),
            Tail::Aggregate => {}
        }
        Ok((sql, binds))
    }
}

async fn insert_blocks(db: &mut DbTx, blocks: &[BlockRow]) -> Result<(), StoreError> {
    for chunk in blocks.chunks(ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO blocks (number, hash, parent_hash, timestamp, canonical) VALUES {} \
             ON CONFLICT (hash) DO UPDATE SET canonical = 1, orphaned_by = NULL",
            placeholders(db, chunk.len(), 5)
        );
        let mut q = sqlx::query(&sql);
        for b in chunk {
            q = q
                .bind(b.number as i64)
                .bind(&b.hash)
                .bind(&b.parent_hash)
                .bind(b.timestamp as i64)
                .bind(1i64);
        }
        q.execute(&mut **db).await?;
    }
    Ok(())
}

/// Inserts `logs`; one seen before becomes canonical again (a reorg came back) — except in a
/// bulk load, which meets none (see [`Store::begin_bulk`]) and may lack the key to detect them.
async fn insert_logs(db: &mut DbTx, logs: &[LogRow], bulk: bool) -> Result<(), StoreError> {
    let on_conflict = match bulk {
        true => "",
        false => {
            " ON CONFLICT (block_number, log_index, block_hash) \
             DO UPDATE SET canonical = 1, orphaned_by = NULL"
        }
    };
    for chunk in logs.chunks(ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO logs ({LOG_COLUMNS}) VALUES {}{on_conflict}",
            placeholders(db, chunk.len(), 16)
        );
        let mut q = sqlx::query(&sql);
        for l in chunk {
            q = q
                .bind(l.chain_id as i64)
                .bind(l.block_number as i64)
                .bind(&l.block_hash)
                .bind(l.block_timestamp as i64)
                .bind(&l.tx_hash)
                .bind(l.log_index as i64)
                .bind(&l.address)
                .bind(&l.contract)
                .bind(topic_bytes(&l.topics))
                .bind(l.data.to_vec())
                .bind(&l.event)
                .bind(l.args.as_ref().map(Value::to_string))
                .bind(&l.decode_error)
                .bind(&l.session_id)
                .bind(i64::from(l.canonical))
                .bind(&l.orphaned_by);
        }
        q.execute(&mut **db).await?;
    }
    Ok(())
}

/// A bulk load's batch on PostgreSQL, all or nothing: blocks and logs by `COPY` in its binary
/// format (a stream of rows the server stores without parsing them: no statement of thousands
/// of parameters to prepare per chunk, no text to scan for escapes, numbers and bytes as they
/// are), then the checkpoint. None of its rows can conflict (see [`Store::begin_bulk`]).
async fn copy_batch(
    pool: &sqlx::PgPool,
    blocks: &[BlockRow],
    logs: &[LogRow],
    sums: &HourlySums,
    (number, hash): (u64, &str),
) -> Result<(), StoreError> {
    use Field::{Int, Text};
    let mut db = pool.begin().await?;
    let mut rows = BinaryCopy::new(blocks.len() * 180);
    for b in blocks {
        rows.row([
            Int(b.number as i64),
            Text(&b.hash),
            Text(&b.parent_hash),
            Int(b.timestamp as i64),
            Int(1),
        ]);
    }
    let sql = "COPY blocks (number, hash, parent_hash, timestamp, canonical) \
        FROM STDIN (FORMAT binary)";
    let mut copy = db.copy_in_raw(sql).await?;
    copy.send(rows.finish()).await?;
    copy.finish().await?;
    let mut rows = BinaryCopy::new(logs.len() * 800);
    for l in logs {
        let topics = topic_bytes(&l.topics);
        let args = l.args.as_ref().map(Value::to_string);
        // In LOG_COLUMNS' order.
        rows.row([
            Int(l.chain_id as i64),
            Int(l.block_number as i64),
            Text(&l.block_hash),
            Int(l.block_timestamp as i64),
            Text(&l.tx_hash),
            Int(l.log_index as i64),
            Text(&l.address),
            Text(&l.contract),
            Field::Bytes(&topics),
            Field::Bytes(&l.data),
            text(&l.event),
            text(&args),
            text(&l.decode_error),
            text(&l.session_id),
            Int(i64::from(l.canonical)),
            text(&l.orphaned_by),
        ]);
    }
    let mut copy = db
        .copy_in_raw(&format!(
            "COPY logs ({LOG_COLUMNS}) FROM STDIN (FORMAT binary)"
        ))
        .await?;
    copy.send(rows.finish()).await?;
    copy.finish().await?;
    let sql = format!(
        "COPY spend_by_hour ({}) FROM STDIN (FORMAT binary)",
        spend::COLUMNS
    );
    let mut copy = db.copy_in_raw(&sql).await?;
    copy.send(sums.copy_rows()).await?;
    copy.finish().await?;
    sqlx::query(CHECKPOINT_UPSERT)
        .bind(number as i64)
        .bind(hash)
        .execute(&mut *db)
        .await?;
    db.commit().await?;
    Ok(())
}

/// Sets the checkpoint row: `$1` the block number, `$2` its hash.
const CHECKPOINT_UPSERT: &str = "INSERT INTO checkpoint (id, block_number, block_hash) \
    VALUES (1, $1, $2) ON CONFLICT (id) DO UPDATE SET block_number = excluded.block_number, \
    block_hash = excluded.block_hash";

async fn set_checkpoint(db: &mut DbTx, (number, hash): (u64, &str)) -> Result<(), StoreError> {
    sqlx::query(CHECKPOINT_UPSERT)
        .bind(number as i64)
        .bind(hash)
        .execute(&mut **db)
        .await?;
    Ok(())
}

fn block_row(r: &AnyRow) -> Result<BlockRow, StoreError> {
    Ok(BlockRow {
        number: r.try_get::<i64, _>("number")? as u64,
        hash: r.try_get("hash")?,
        parent_hash: r.try_get("parent_hash")?,
        timestamp: r.try_get::<i64, _>("timestamp")? as u64,
    })
}

/// `topics` as stored: their words end to end.
fn topic_bytes(topics: &[B256]) -> Vec<u8> {
    topics.iter().flat_map(|t| t.0).collect()
}

fn log_row(r: &AnyRow) -> Result<LogRow, StoreError> {
    let topics: Vec<u8> = r.try_get("topics")?;
    if !topics.len().is_multiple_of(32) {
        return Err(StoreError::Corrupt(format!(
            "topics of {} bytes",
            topics.len()
        )));
    }
    let args: Option<String> = r.try_get("args")?;
    Ok(LogRow {
        chain_id: r.try_get::<i64, _>("chain_id")? as u64,
        block_number: r.try_get::<i64, _>("block_number")? as u64,
        block_hash: r.try_get("block_hash")?,
        block_timestamp: r.try_get::<i64, _>("block_timestamp")? as u64,
        tx_hash: r.try_get("tx_hash")?,
        log_index: r.try_get::<i64, _>("log_index")? as u64,
        address: r.try_get("address")?,
        contract: r.try_get("contract")?,
        topics: topics.chunks_exact(32).map(B256::from_slice).collect(),
        data: Bytes::from(r.try_get::<Vec<u8>, _>("data")?),
        event: r.try_get("event")?,
        args: args
            .map(|a| serde_json::from_str(&a))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("args: {e}")))?,
        decode_error: r.try_get("decode_error")?,
        session_id: r.try_get("session_id")?,
        canonical: r.try_get::<i64, _>("canonical")? != 0,
        orphaned_by: r.try_get("orphaned_by")?,
    })
}
