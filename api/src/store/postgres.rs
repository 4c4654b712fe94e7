//! The fleet's [`Store`](crate::store::Store): Postgres, shared by every front (schema in
//! `migrations/postgres`).
//!
//! Every statement but one is [`SqlStore`]'s, shared with SQLite; here is what Postgres does its
//! own way ([`Dialect`]): native types (`TIMESTAMPTZ` instants), connecting with a bounded wait,
//! and a ledger batch applied about a hundred events per statement instead of one, because many
//! fronts settle into the same database at once.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgQueryResult};
use sqlx::{Connection, PgConnection, PgPool, Postgres, Row};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::store::{Dialect, SqlStore};
use common::messages::LedgerEvent;

/// How long opening a connection (or waiting for a free one) may take: an unreachable Postgres
/// fails start-up, and a request, within seconds instead of sqlx's default 30 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Inserts one chunk of a ledger batch and sums, per key and period, what was actually inserted.
///
/// `ON CONFLICT (event_id) DO NOTHING` skips an event applied before (by this or another front),
/// and `RETURNING` yields only the rows inserted, so only their credits reach `key_usage`
/// (STYLE §7). Ids travel as binary `uuid` (20 bytes instead of 40) and are stored as text.
const INSERT_ENTRIES: &str = r#"
WITH ins AS (
    INSERT INTO ledger_entries (event_id, key_id, period, endpoint, credits, charged_at, front)
    SELECT e.event_id::text, e.key_id, e.period, e.endpoint, e.credits, e.charged_at, e.front
    FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::timestamptz[], $7::text[])
        AS e (event_id, key_id, period, endpoint, credits, charged_at, front)
    ORDER BY e.event_id
    ON CONFLICT (event_id) DO NOTHING
    RETURNING key_id, period, front, credits
)
SELECT key_id, period, front, SUM(credits)::int8 AS credits, COUNT(*) AS entries FROM ins GROUP BY key_id, period, front"#;

/// Adds settled credits to `key_usage`, one row per key and period, in a fixed order.
const ADD_USAGE: &str = r#"
INSERT INTO key_usage (key_id, period, used)
SELECT * FROM UNNEST($1::text[], $2::text[], $3::int8[]) AS u (key_id, period, used)
ORDER BY key_id COLLATE "C", period COLLATE "C"
ON CONFLICT (key_id, period) DO UPDATE SET used = key_usage.used + EXCLUDED.used"#;

/// Adds settled credits to `key_usage_by_front`, one row per key, period and front, in a fixed
/// order (after `key_usage`'s rows).
const ADD_FRONT_USAGE: &str = r#"
INSERT INTO key_usage_by_front (key_id, period, front, used)
SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[]) AS u (key_id, period, front, used)
ORDER BY key_id COLLATE "C", period COLLATE "C", front COLLATE "C"
ON CONFLICT (key_id, period, front) DO UPDATE SET used = key_usage_by_front.used + EXCLUDED.used"#;

/// Most bytes of parameters sent in one statement.
///
/// sqlx does not tune its sockets, so a message larger than the kernel's initial TCP send buffer
/// (Linux `tcp_wmem` default: 16 KiB) goes out in two writes and the second waits for the
/// server's delayed ACK: about 40 ms per statement (measured here: a 420-element `text[]`
/// parameter takes 44 ms, a 380-element one 0.3 ms). So a batch is sent in chunks under this
/// size, inside one transaction.
const STATEMENT_BYTES: usize = 12 * 1024;

/// Wire size of an event's parameters: a 4-byte length per array element, plus the values.
fn event_bytes(e: &LedgerEvent) -> usize {
    7 * 4 + 16 + 8 + 8 + e.key_id.len() + e.period.len() + e.endpoint.len() + e.front.len()
}

/// Splits `items` into runs whose sizes add up to at most `budget` (a larger item goes alone).
fn chunks_by_size<T>(items: &[T], size: impl Fn(&T) -> usize, budget: usize) -> Vec<&[T]> {
    let mut chunks = Vec::new();
    let (mut start, mut used) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let n = size(item);
        if i > start && used + n > budget {
            chunks.push(&items[start..i]);
            (start, used) = (i, 0);
        }
        used += n;
    }
    if start < items.len() {
        chunks.push(&items[start..]);
    }
    chunks
}

/// The fleet store: a pool over one Postgres database.
pub type PgStore = SqlStore<Postgres>;

impl SqlStore<Postgres> {
    /// Connects to the database at a `postgres://` URL with a pool of up to `max_connections`.
    ///
    /// One connection is opened first, outside the pool, so that an unreachable server fails
    /// within [`CONNECT_TIMEOUT`] with its cause ("connection refused", "password authentication
    /// failed", …) rather than the pool's bare "timed out" after its retries.
    ///
    /// # Errors
    /// When the URL is malformed, or the server cannot be reached or refuses the login within
    /// [`CONNECT_TIMEOUT`]. The message names host, port and database, never the password.
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let options = PgConnectOptions::from_str(url)?;
        let target = format!("{}:{}/{}", options.get_host(), options.get_port(), options.get_database().unwrap_or("-"));
        match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect_with(&options)).await {
            Ok(Ok(probe)) => probe.close().await?,
            Ok(Err(e)) => anyhow::bail!("cannot connect to Postgres at {target}: {e}"),
            Err(_) => anyhow::bail!("cannot connect to Postgres at {target}: no connection within {CONNECT_TIMEOUT:?}"),
        }
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| anyhow::anyhow!("Postgres at {target}: {e}"))?;
        Ok(Self::from_pool(pool))
    }
}

impl Dialect for Postgres {
    type Instant = OffsetDateTime;

    fn instant(at: OffsetDateTime) -> anyhow::Result<OffsetDateTime> {
        Ok(at)
    }

    fn rfc3339(at: OffsetDateTime) -> anyhow::Result<String> {
        Ok(at.to_offset(time::UtcOffset::UTC).format(&Rfc3339)?)
    }

    const CHARGE_DAY: &'static str = "to_char(l.charged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')";

    fn settled_by_front_sql(key_id: &str, period: &str, front: &str) -> String {
        // One row of the table the ledger consumer keeps (migration 0011), not a sum over the
        // front's entries of the month, which grew with every charge.
        format!(
            "(SELECT u.used FROM key_usage_by_front u WHERE u.key_id = {key_id} AND u.period = {period} AND u.front = {front})"
        )
    }

    const UNDISPATCHED: &'static str = "NOT dispatched";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const SKIP_LOCKED_OF_D: &'static str = " FOR UPDATE OF d SKIP LOCKED";

    fn rows_affected(done: &PgQueryResult) -> u64 {
        done.rows_affected()
    }

    fn migrate(pool: &PgPool) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            // sqlx holds an advisory lock while migrating, so fronts starting together are safe.
            sqlx::migrate!("../migrations/postgres").run(pool).await?;
            Ok(())
        })
    }

    fn apply_ledger(store: &SqlStore<Self>, mut events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>> {
        let pool = store.pool();
        Box::pin(async move {
            if events.is_empty() {
                return Ok(0);
            }
            // One transaction: every entry and its usage, or nothing. Locks are taken in a
            // fixed order, so concurrent overlapping batches (several fronts, a redelivery)
            // cannot deadlock: every ledger row by ascending event id (sorted here, across
            // chunks), then every usage row by ascending key and period (the BTreeMap's order,
            // and ADD_USAGE's ORDER BY), then every per-front usage row by ascending key, period
            // and front (ADD_FRONT_USAGE's).
            events.sort_unstable_by_key(|e| e.event_id);
            // A duplicate inside the batch would be skipped by ON CONFLICT anyway; not sending it
            // is cheaper.
            events.dedup_by_key(|e| e.event_id);
            let mut tx = pool.begin().await?;
            let mut applied = 0u64;
            let mut settled: BTreeMap<(String, String), i64> = BTreeMap::new();
            let mut by_front: BTreeMap<(String, String, String), i64> = BTreeMap::new();
            for chunk in chunks_by_size(&events, event_bytes, STATEMENT_BYTES) {
                let rows = sqlx::query(INSERT_ENTRIES)
                    .bind(chunk.iter().map(|e| e.event_id).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|e| e.key_id.as_str()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|e| e.period.as_str()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|e| e.endpoint.as_str()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|e| e.credits).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|e| e.charged_at).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|e| e.front.as_str()).collect::<Vec<_>>())
                    .fetch_all(&mut *tx)
                    .await?;
                for row in rows {
                    let (key_id, period): (String, String) = (row.try_get("key_id")?, row.try_get("period")?);
                    let credits = row.try_get::<i64, _>("credits")?;
                    *settled.entry((key_id.clone(), period.clone())).or_default() += credits;
                    *by_front.entry((key_id, period, row.try_get("front")?)).or_default() += credits;
                    applied += u64::try_from(row.try_get::<i64, _>("entries")?)?;
                }
            }
            let usage: Vec<_> = settled.into_iter().collect();
            let usage_bytes = |((k, p), _): &((String, String), i64)| 3 * 4 + k.len() + p.len() + 8;
            for chunk in chunks_by_size(&usage, usage_bytes, STATEMENT_BYTES) {
                sqlx::query(ADD_USAGE)
                    .bind(chunk.iter().map(|((k, _), _)| k.as_str()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|((_, p), _)| p.as_str()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|(_, used)| *used).collect::<Vec<_>>())
                    .execute(&mut *tx)
                    .await?;
            }
            let by_front: Vec<_> = by_front.into_iter().collect();
            let front_bytes =
                |((k, p, f), _): &((String, String, String), i64)| 4 * 4 + k.len() + p.len() + f.len() + 8;
            for chunk in chunks_by_size(&by_front, front_bytes, STATEMENT_BYTES) {
                sqlx::query(ADD_FRONT_USAGE)
                    .bind(chunk.iter().map(|((k, _, _), _)| k.as_str()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|((_, p, _), _)| p.as_str()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|((_, _, f), _)| f.as_str()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|(_, used)| *used).collect::<Vec<_>>())
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(applied)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_under_the_budget() {
        let sizes = [4, 4, 4, 10, 1, 1, 30, 2];
        let chunks = chunks_by_size(&sizes, |n| *n, 10);
        assert_eq!(chunks, [&[4, 4][..], &[4][..], &[10][..], &[1, 1][..], &[30][..], &[2][..]]);
        assert!(chunks_by_size(&[] as &[usize], |n| *n, 10).is_empty());
        assert_eq!(chunks_by_size(&sizes, |n| *n, 1000), [&sizes[..]]);
    }

    #[test]
    fn a_typical_batch_of_500_goes_in_a_handful_of_statements() {
        let e = LedgerEvent {
            event_id: uuid::Uuid::now_v7(),
            key_id: uuid::Uuid::now_v7().to_string(),
            period: "2026-11".into(),
            endpoint: "check".into(),
            credits: 1,
            charged_at: OffsetDateTime::now_utc(),
            front: "front-7f3a".into(),
            request_id: None,
        };
        let batch = vec![e; 500];
        let chunks = chunks_by_size(&batch, event_bytes, STATEMENT_BYTES);
        assert!((4..=8).contains(&chunks.len()), "{} chunks", chunks.len());
    }
}
