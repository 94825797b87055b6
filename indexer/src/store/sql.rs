//! Building blocks of the store's statements: a `SELECT`'s ending, bound parameters, and rows
//! in PostgreSQL's binary `COPY` format.

/// How a `SELECT` over logs ends.
pub(super) enum Tail<'a> {
    /// In chain order, at most `limit` rows.
    Ordered,
    /// Grouped by these (comma-separated) expressions or positions.
    GroupBy(&'a str),
    /// One aggregate row.
    Aggregate,
}

/// A query parameter.
pub(super) enum Bind {
    Text(String),
    Int(u64),
}

/// `sql` with `binds` bound in order.
pub(super) fn bound(
    sql: &str,
    binds: Vec<Bind>,
) -> sqlx::query::Query<'_, sqlx::Any, sqlx::any::AnyArguments<'_>> {
    let mut q = sqlx::query(sql);
    for b in binds {
        q = match b {
            Bind::Text(t) => q.bind(t),
            Bind::Int(n) => q.bind(n.min(i64::MAX as u64) as i64),
        };
    }
    q
}

/// A nullable `TEXT`.
pub(super) fn text(v: &Option<String>) -> Field<'_> {
    v.as_deref().map_or(Field::Null, Field::Text)
}

/// A field of a binary `COPY` row.
pub(super) enum Field<'a> {
    /// A `BIGINT`.
    Int(i64),
    /// A `TEXT`.
    Text(&'a str),
    /// A `BYTEA`.
    Bytes(&'a [u8]),
    Null,
}

/// Rows in PostgreSQL's binary `COPY` format: a signature, flags and header extension (none),
/// then per row its field count and each field as its length and bytes (length -1: NULL), all
/// integers big-endian; -1 as the field count ends it.
pub(super) struct BinaryCopy(Vec<u8>);

impl BinaryCopy {
    pub(super) fn new(capacity: usize) -> Self {
        let mut out = Vec::with_capacity(capacity + 19);
        out.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        out.extend_from_slice(&0_i32.to_be_bytes());
        out.extend_from_slice(&0_i32.to_be_bytes());
        BinaryCopy(out)
    }

    pub(super) fn row<const N: usize>(&mut self, fields: [Field<'_>; N]) {
        let out = &mut self.0;
        out.extend_from_slice(&(N as i16).to_be_bytes());
        for field in fields {
            let bytes: &[u8] = match field {
                Field::Int(n) => {
                    out.extend_from_slice(&8_i32.to_be_bytes());
                    out.extend_from_slice(&n.to_be_bytes());
                    continue;
                }
                Field::Null => {
                    out.extend_from_slice(&(-1_i32).to_be_bytes());
                    continue;
                }
                Field::Text(t) => t.as_bytes(),
                Field::Bytes(b) => b,
            };
            // A field's length is an i32; no log field comes near 2 GiB.
            out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
            out.extend_from_slice(bytes);
        }
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        self.0.extend_from_slice(&(-1_i16).to_be_bytes());
        self.0
    }
}
