//! Spend sums: executed payments counted and summed per group, exactly (amounts are 256-bit).
//!
//! Two ways to the same answer. `spend_by_hour` holds every canonical payment's count and
//! amount summed per (session, counterparty, hour), kept in the transaction that writes or
//! orphans the payments ([`HourlySums`]); a question of whole hours up to the checkpoint — the
//! API's default — reads it, a row per session and counterparty and hour instead of one per
//! payment. Any other question (a block range, an earlier block, a time inside an hour,
//! orphaned rows) reads the payments themselves.
//!
//! Amounts are summed in [`LIMBS`] limbs of nine decimal digits, most significant first: each
//! limb sum fits 64 bits for nine billion payments, in SQL on both databases, and is carried
//! here. (PostgreSQL sums the payments themselves in `NUMERIC`.)

use std::collections::{BTreeMap, HashMap};

use alloy_primitives::U256;
use bursar_db::{Backend, DbTx, ROWS_PER_INSERT};
use serde_json::Value;
use sqlx::Row;

use super::db::{Store, StoreError};
use super::rows::{Link, LogFilter, LogRow};
use super::sql::{bound, BinaryCopy, Bind, Tail};

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

    /// Its word in `groupBy` and in the answer's rows.
    pub fn name(self) -> &'static str {
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

/// The events that spend a session's money: a payment, and an authorization reserved for a
/// third party to settle (x402 `exact`; counted once, when reserved, not again when the token
/// moves).
pub(super) const SPEND_EVENTS: [&str; 2] = ["PaymentExecuted", "PaymentReserved"];

/// Limbs of 9 decimal digits a 256-bit amount (78 digits) is summed in.
const LIMBS: usize = 9;

/// A group's key (one value per grouped dimension), total and number of payments.
pub type Sum = (Vec<String>, U256, u64);

/// Counts and amounts of payments per (session, counterparty, hour), to add to
/// `spend_by_hour` (or take from it: counts and limbs negative).
#[derive(Debug, Default)]
pub(super) struct HourlySums(BTreeMap<(String, String, i64), (i64, [i64; LIMBS])>);

/// Gives back what a reservation spent (its authorization unused): a release takes the
/// reservation out of the sums of the reservation's hour, so an hour's spend is what left then.
pub(super) const RELEASE: &str = "ReservationReleased";

impl HourlySums {
    /// The spending among `logs` that are canonical: [`SPEND_EVENTS`] added at their hour,
    /// [`RELEASE`]s taken out at their reservation's (found among `logs`, or in `reserved_at`:
    /// receipt id → time, see [`reserved_at`]).
    pub(super) fn of(logs: &[LogRow], reserved_at: &HashMap<String, u64>) -> Self {
        let mut sums = HourlySums::default();
        for l in logs.iter().filter(|l| l.canonical) {
            let (session, args) = (l.session_id.as_deref(), l.args.as_ref());
            match l.event.as_deref() {
                Some(e) if SPEND_EVENTS.contains(&e) => {
                    sums.add(session, args, l.block_timestamp, 1)
                }
                Some(RELEASE) => {
                    let reserved = reservation_time(logs, l)
                        .or_else(|| receipt(l).and_then(|id| reserved_at.get(&id).copied()));
                    if let Some(time) = reserved {
                        sums.add(session, args, time, -1);
                    }
                }
                _ => {}
            }
        }
        sums
    }

    /// These with their signs turned (taken out rather than added).
    fn negated(mut self) -> Self {
        for (count, limbs) in self.0.values_mut() {
            *count = -*count;
            limbs.iter_mut().for_each(|l| *l = -*l);
        }
        self
    }

    /// Counts a payment of `session` (`args` as decoded) at block time `time`, `sign` times.
    fn add(&mut self, session: Option<&str>, args: Option<&Value>, time: u64, sign: i64) {
        let arg = |name| args.and_then(|a| a[name].as_str()).unwrap_or_default();
        let time = time.min(i64::MAX as u64) as i64;
        let key = (
            session.unwrap_or_default().to_owned(),
            arg("to").to_owned(),
            time - time % 3600,
        );
        let (count, limbs) = self.0.entry(key).or_default();
        *count += sign;
        for (sum, limb) in limbs.iter_mut().zip(limbs_of(arg("amount"))) {
            *sum += sign * limb;
        }
    }

    /// Adds these to `spend_by_hour` (in the caller's transaction), and drops the groups left
    /// without payments. In a bulk load (`appended`), as rows of their own (see [`merge`]).
    pub(super) async fn write(
        &self,
        db: &mut sqlx::AnyConnection,
        appended: bool,
    ) -> Result<(), sqlx::Error> {
        let added = match appended {
            true => String::new(),
            false => {
                let limbs: String = (0..LIMBS)
                    .map(|i| format!(", a{i} = spend_by_hour.a{i} + excluded.a{i}"))
                    .collect();
                format!(
                    " ON CONFLICT (session_id, counterparty, hour) DO UPDATE SET \
                     payments = spend_by_hour.payments + excluded.payments{limbs}"
                )
            }
        };
        let rows: Vec<_> = self.0.iter().collect();
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let sql = format!(
                "INSERT INTO spend_by_hour ({COLUMNS}) VALUES {}{added}",
                bursar_db::placeholders(db, chunk.len(), 4 + LIMBS),
            );
            let mut q = sqlx::query(&sql);
            for ((session, counterparty, hour), (count, sums)) in chunk {
                q = q
                    .bind(session.as_str())
                    .bind(counterparty.as_str())
                    .bind(*hour)
                    .bind(*count);
                for limb in sums {
                    q = q.bind(*limb);
                }
            }
            q.execute(&mut *db).await?;
        }
        if self.0.values().any(|(count, _)| *count < 0) {
            sqlx::query("DELETE FROM spend_by_hour WHERE payments = 0")
                .execute(&mut *db)
                .await?;
        }
        Ok(())
    }

    /// These as rows of PostgreSQL's binary `COPY` into `spend_by_hour` (a bulk load's way).
    pub(super) fn copy_rows(&self) -> Vec<u8> {
        use super::sql::Field::{Int, Text};
        let mut rows = BinaryCopy::new(self.0.len() * 200);
        for ((session, counterparty, hour), (count, [a0, a1, a2, a3, a4, a5, a6, a7, a8])) in
            &self.0
        {
            rows.row([
                Text(session),
                Text(counterparty),
                Int(*hour),
                Int(*count),
                Int(*a0),
                Int(*a1),
                Int(*a2),
                Int(*a3),
                Int(*a4),
                Int(*a5),
                Int(*a6),
                Int(*a7),
                Int(*a8),
            ]);
        }
        rows.finish()
    }
}

/// `spend_by_hour`'s columns, in the order [`HourlySums`] writes them.
pub(super) const COLUMNS: &str =
    "session_id, counterparty, hour, payments, a0, a1, a2, a3, a4, a5, a6, a7, a8";

/// What a bulk load drops (see [`merge`]).
pub(super) const DROP_KEY: &str = "DROP INDEX spend_by_hour_key";

/// Ends a bulk load's way of writing the sums: its batches appended rows of their own (with
/// no key to find a group's row by; adding to rows cost PostgreSQL, which writes a new version
/// of a row each time, a third of its ingest rate at a million events). Here they are merged
/// into one row per group, and the key is built again.
pub(super) async fn merge(db: &mut DbTx, backend: Backend) -> Result<(), sqlx::Error> {
    let sums: String = (0..LIMBS).map(|i| format!(", SUM(a{i}) AS a{i}")).collect();
    for sql in [
        format!(
            "CREATE TEMPORARY TABLE spend_merged AS SELECT session_id, counterparty, hour, \
             SUM(payments) AS payments{sums} FROM spend_by_hour \
             GROUP BY session_id, counterparty, hour HAVING SUM(payments) <> 0"
        ),
        // Emptied, not left full of dead rows for the index build to scan (SQLite's DELETE
        // without WHERE truncates).
        match backend {
            Backend::Postgres => "TRUNCATE spend_by_hour".into(),
            Backend::Sqlite => "DELETE FROM spend_by_hour".into(),
        },
        format!("INSERT INTO spend_by_hour ({COLUMNS}) SELECT * FROM spend_merged"),
        "DROP TABLE spend_merged".into(),
        "CREATE UNIQUE INDEX spend_by_hour_key ON spend_by_hour (session_id, counterparty, hour)"
            .into(),
    ] {
        sqlx::query(&sql).execute(&mut **db).await?;
    }
    Ok(())
}

/// Takes the canonical spending above block `fork` out of `spend_by_hour` (and gives back
/// what its releases took out): a reorg is about to orphan it (in the same transaction).
pub(super) async fn take_out_above(db: &mut DbTx, fork: u64) -> Result<(), StoreError> {
    let events: Vec<String> = SPEND_EVENTS
        .iter()
        .chain([&RELEASE])
        .map(|e| format!("'{e}'"))
        .collect();
    let sql = format!(
        "SELECT session_id, block_timestamp, args, event FROM logs \
         WHERE event IN ({}) AND canonical = 1 AND block_number > $1",
        events.join(", ")
    );
    let rows = sqlx::query(&sql)
        .bind(fork.min(i64::MAX as u64) as i64)
        .fetch_all(&mut **db)
        .await?;
    let logs = rows
        .iter()
        .map(|r| {
            Ok(LogRow {
                session_id: r.try_get("session_id")?,
                block_timestamp: r.try_get::<i64, _>("block_timestamp")?.max(0) as u64,
                args: args_of(r)?,
                event: r.try_get("event")?,
                canonical: true,
                ..LogRow::default()
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let reserved = reserved_at(db, &logs).await?;
    HourlySums::of(&logs, &reserved)
        .negated()
        .write(db, false)
        .await?;
    Ok(())
}

/// A stored row's decoded arguments.
fn args_of(r: &sqlx::any::AnyRow) -> Result<Option<Value>, StoreError> {
    let args: Option<String> = r.try_get("args")?;
    args.map(|a| serde_json::from_str::<Value>(&a))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("args: {e}")))
}

/// A row's `receiptId`.
fn receipt(l: &LogRow) -> Option<String> {
    let id = l.args.as_ref()?.get("receiptId")?.as_str()?;
    Some(id.to_owned())
}

/// The time of the reservation that `release` gives back, when it is among `logs`.
fn reservation_time(logs: &[LogRow], release: &LogRow) -> Option<u64> {
    let id = receipt(release)?;
    logs.iter()
        .find(|l| {
            l.canonical
                && l.event.as_deref() == Some("PaymentReserved")
                && receipt(l).as_ref() == Some(&id)
        })
        .map(|l| l.block_timestamp)
}

/// The times of the reservations that the canonical releases among `logs` give back and that
/// are not among them, read from the store: receipt id → block time.
pub(super) async fn reserved_at(
    db: &mut sqlx::AnyConnection,
    logs: &[LogRow],
) -> Result<HashMap<String, u64>, StoreError> {
    let mut times = HashMap::new();
    for release in logs.iter().filter(|l| {
        l.canonical && l.event.as_deref() == Some(RELEASE) && reservation_time(logs, l).is_none()
    }) {
        let (Some(session), Some(id)) = (&release.session_id, receipt(release)) else {
            continue;
        };
        // A session reserves few authorizations: its reservations, not a JSON index.
        let rows = sqlx::query(
            "SELECT block_timestamp, args FROM logs \
             WHERE session_id = $1 AND event = 'PaymentReserved' AND canonical = 1",
        )
        .bind(session.as_str())
        .fetch_all(&mut *db)
        .await?;
        for r in &rows {
            let reservation = LogRow {
                args: args_of(r)?,
                ..LogRow::default()
            };
            if receipt(&reservation).as_ref() == Some(&id) {
                let time = r.try_get::<i64, _>("block_timestamp")?.max(0) as u64;
                times.insert(id.clone(), time);
            }
        }
    }
    Ok(times)
}

/// `amount` (decimal digits) in [`LIMBS`] limbs; anything else counts as nothing.
fn limbs_of(amount: &str) -> [i64; LIMBS] {
    let mut limbs = [0; LIMBS];
    if amount.len() > 9 * LIMBS || !amount.bytes().all(|b| b.is_ascii_digit()) {
        return limbs;
    }
    let padded = format!("{amount:0>width$}", width = 9 * LIMBS);
    for (limb, digits) in limbs.iter_mut().zip(padded.as_bytes().chunks(9)) {
        // Nine ASCII digits.
        *limb = digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0'));
    }
    limbs
}

/// The total that limb sums stand for, saturating at 2^256 - 1.
fn carried(limbs: impl IntoIterator<Item = i64>) -> U256 {
    let base = U256::from(1_000_000_000u64);
    limbs.into_iter().fold(U256::ZERO, |total, limb| {
        total
            .saturating_mul(base)
            .saturating_add(U256::from(limb.max(0) as u64))
    })
}

/// How a query's sum columns hold the total.
#[derive(Clone, Copy)]
enum Summed {
    /// One `NUMERIC` as text (PostgreSQL).
    Numeric,
    /// [`LIMBS`] limb sums.
    Limbs,
}

impl Store {
    /// Payments and reservations not released ([`SPEND_EVENTS`]) that `filter` selects — of sessions opened
    /// by `owner` in `token` when given — counted and summed per distinct value of `keys`, in
    /// the database. Groups without payments are left out.
    pub async fn payment_sums(
        &self,
        filter: &LogFilter,
        keys: &[Group],
        owner: Option<&str>,
        token: Option<&str>,
    ) -> Result<Vec<Sum>, StoreError> {
        if let Some(sums) = self.hourly_sums(filter, keys, owner, token).await? {
            return Ok(sums);
        }
        let mut filter = filter.clone();
        filter.event = None;
        filter.events = &SPEND_EVENTS;
        // A released reservation spent nothing (as of the query's last block).
        filter.linked = Some(Link {
            present: false,
            event: RELEASE,
            field: "receiptId",
        });
        let to = self.json_arg("logs", "to")?;
        let columns = self.group_columns(keys, "logs.session_id", &to, "logs.block_timestamp")?;
        let amount = self.json_arg("logs", "amount")?;
        let (summed, sums) = match self.backend {
            Backend::Postgres => (
                Summed::Numeric,
                vec![format!("CAST(SUM(CAST({amount} AS NUMERIC)) AS TEXT)")],
            ),
            Backend::Sqlite => (
                Summed::Limbs,
                (0..LIMBS)
                    .map(|i| {
                        format!(
                            "SUM(CAST(substr(replace(printf('%{}s', {amount}), ' ', '0'), {}, 9) \
                             AS INTEGER))",
                            9 * LIMBS,
                            1 + 9 * i
                        )
                    })
                    .collect(),
            ),
        };
        let mut select = columns.clone();
        select.push("COUNT(*)".into());
        select.extend(sums);
        let (join, extra) = self.opened(keys, owner, token, "logs.session_id")?;
        let grouped = positions(columns.len());
        let tail = match grouped.is_empty() {
            true => Tail::Aggregate,
            false => Tail::GroupBy(&grouped),
        };
        let (sql, binds) = self.select(&select.join(", "), &join, &extra, &filter, tail)?;
        let rows = bound(&sql, binds).fetch_all(&self.read).await?;
        sums_of(&rows, columns.len(), summed)
    }

    /// The sums from `spend_by_hour`, when it can answer: canonical payments of whole hours up
    /// to the checkpoint (read in one snapshot with it).
    async fn hourly_sums(
        &self,
        filter: &LogFilter,
        keys: &[Group],
        owner: Option<&str>,
        token: Option<&str>,
    ) -> Result<Option<Vec<Sum>>, StoreError> {
        let counterparty = match &filter.args[..] {
            [] => None,
            [(name, value)] if name == "to" => Some(value),
            _ => return Ok(None),
        };
        let whole_hours = filter.from_time.is_none_or(|t| t % 3600 == 0)
            && filter.to_time.is_none_or(|t| t % 3600 == 3599);
        if filter.include_orphaned
            || filter.from_block.is_some()
            || !whole_hours
            || filter.after.is_some()
            || filter.linked.is_some()
            || !filter.session_events.is_empty()
            || filter.event.is_some()
        {
            return Ok(None);
        }
        let columns = self.group_columns(keys, "s.session_id", "s.counterparty", "s.hour")?;
        let (join, extra) = self.opened(keys, owner, token, "s.session_id")?;
        let mut select = columns.clone();
        select.push("CAST(COALESCE(SUM(s.payments), 0) AS BIGINT)".into());
        select.extend((0..LIMBS).map(|i| format!("CAST(SUM(s.a{i}) AS BIGINT)")));
        let mut sql = format!(
            "SELECT {} FROM spend_by_hour s {join} WHERE 1 = 1",
            select.join(", ")
        );
        let mut binds = Vec::new();
        let mut param = |sql: &mut String, condition: &str, bind: Bind| {
            binds.push(bind);
            sql.push_str(&format!(" AND {condition} ${}", binds.len()));
        };
        if let Some(session) = &filter.session_id {
            param(&mut sql, "s.session_id =", Bind::Text(session.clone()));
        }
        if let Some(counterparty) = counterparty {
            param(
                &mut sql,
                "s.counterparty =",
                Bind::Text(counterparty.clone()),
            );
        }
        if let Some(from) = filter.from_time {
            param(&mut sql, "s.hour >=", Bind::Int(from));
        }
        if let Some(to) = filter.to_time {
            param(&mut sql, "s.hour <=", Bind::Int(to - 3599));
        }
        for (expression, value) in extra {
            param(&mut sql, &format!("{expression} ="), Bind::Text(value));
        }
        if !columns.is_empty() {
            sql.push_str(&format!(" GROUP BY {}", positions(columns.len())));
        }

        let mut db = self.read.begin().await?;
        if self.backend == Backend::Postgres {
            // The checkpoint and the sums from one snapshot.
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                .execute(&mut *db)
                .await?;
        }
        let checkpoint: Option<(i64,)> =
            sqlx::query_as("SELECT block_number FROM checkpoint WHERE id = 1")
                .fetch_optional(&mut *db)
                .await?;
        let checkpoint = checkpoint.map(|(n,)| n as u64);
        if filter.to_block.is_some_and(|b| Some(b) != checkpoint) {
            return Ok(None);
        }
        let rows = bound(&sql, binds).fetch_all(&mut *db).await?;
        db.commit().await?;
        sums_of(&rows, columns.len(), Summed::Limbs).map(Some)
    }

    /// The SQL of each grouped dimension: the `session`, `counterparty` and `time` (unix
    /// seconds) expressions given, owner and token of the session's `SessionOpened` (joined as
    /// `o`, see [`Store::opened`]).
    fn group_columns(
        &self,
        keys: &[Group],
        session: &str,
        counterparty: &str,
        time: &str,
    ) -> Result<Vec<String>, StoreError> {
        keys.iter()
            .map(|key| {
                Ok(match key {
                    Group::Session => session.to_owned(),
                    Group::Owner => self.json_arg("o", "owner")?,
                    Group::Counterparty => counterparty.to_owned(),
                    Group::Token => self.json_arg("o", "token")?,
                    Group::Hour => format!("CAST({time} - {time} % 3600 AS TEXT)"),
                    Group::Day => format!("CAST({time} - {time} % 86400 AS TEXT)"),
                })
            })
            .collect()
    }

    /// The join of each row's session's `SessionOpened` (as `o`, on `session`), when owners or
    /// tokens are grouped or filtered, and those filters (SQL expression = value).
    fn opened(
        &self,
        keys: &[Group],
        owner: Option<&str>,
        token: Option<&str>,
        session: &str,
    ) -> Result<(String, Vec<(String, String)>), StoreError> {
        let mut extra = Vec::new();
        for (name, value) in [("owner", owner), ("token", token)] {
            if let Some(value) = value {
                extra.push((self.json_arg("o", name)?, value.to_owned()));
            }
        }
        let needed = !extra.is_empty()
            || keys
                .iter()
                .any(|k| matches!(k, Group::Owner | Group::Token));
        let join = match needed {
            true => format!(
                "LEFT JOIN logs o ON o.session_id = {session} AND o.event = 'SessionOpened' \
                 AND o.canonical = 1"
            ),
            false => String::new(),
        };
        Ok((join, extra))
    }
}

/// `1, 2, …, n`: the grouped columns by position.
fn positions(n: usize) -> String {
    (1..=n)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sum rows (`keys` key columns, the count, then the sum as `summed`), without empty groups.
fn sums_of(
    rows: &[sqlx::any::AnyRow],
    keys: usize,
    summed: Summed,
) -> Result<Vec<Sum>, StoreError> {
    rows.iter()
        .map(|r| {
            let key = (0..keys)
                .map(|i| Ok(r.try_get::<Option<String>, _>(i)?.unwrap_or_default()))
                .collect::<Result<Vec<_>, StoreError>>()?;
            let count = r.try_get::<i64, _>(keys)?.max(0) as u64;
            let total = match summed {
                Summed::Numeric => {
                    let sum = r
                        .try_get::<Option<String>, _>(keys + 1)?
                        .unwrap_or_default();
                    match sum.parse() {
                        Ok(total) => total,
                        // A sum past 2^256 saturates, as the limbs' does.
                        Err(_) if sum.bytes().all(|b| b.is_ascii_digit()) => U256::MAX,
                        Err(_) => return Err(StoreError::Corrupt(format!("a sum: {sum}"))),
                    }
                }
                Summed::Limbs => carried(
                    (0..LIMBS)
                        .map(|i| Ok(r.try_get::<Option<i64>, _>(keys + 1 + i)?.unwrap_or(0)))
                        .collect::<Result<Vec<_>, StoreError>>()?,
                ),
            };
            Ok((key, total, count))
        })
        .filter(|r| !matches!(r, Ok((_, _, 0))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limbs_carry_back_to_the_amount() {
        for amount in [
            U256::ZERO,
            U256::from(999_999_999u64),
            U256::from(10).pow(U256::from(70)),
            U256::MAX,
        ] {
            assert_eq!(carried(limbs_of(&amount.to_string())), amount);
        }
        assert_eq!(limbs_of("12x"), [0; LIMBS], "not a number");
        assert_eq!(limbs_of(&"9".repeat(82)), [0; LIMBS], "too long");
        let twice: Vec<i64> = limbs_of(&U256::MAX.to_string())
            .iter()
            .map(|l| 2 * l)
            .collect();
        assert_eq!(carried(twice), U256::MAX, "saturates");
    }
}
