//! Storage of bulk jobs (issue 26; `crate::front::bulk_jobs`): the job rows, one row per entry
//! received, the results, the leases that let any front's runner resume a job whose runner died,
//! and the credit hold every front counts against the key's allowance.
//!
//! Tables `bulk_jobs` and `bulk_job_items` (`migrations/*/0009_bulk_jobs.sql`). Instants are unix
//! milliseconds, so the SQL is the same in both dialects.

use futures::future::BoxFuture;
use sqlx::types::Json;
use sqlx::{ColumnIndex, Executor, IntoArguments, Row};

use crate::events::NewEvent;

use super::{Dialect, SqlStore, SqlValue};

/// States of a job in which it holds credits and its names are being checked.
pub(super) const OPEN: &str = "('queued', 'running')";

/// One bulk job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkJob {
    /// UUID v7.
    pub id: String,
    /// The key that submitted it (and is charged).
    pub key_id: String,
    /// Billing period (`YYYY-MM`) of the hold and of every charge.
    pub period: String,
    /// `uploading`, `queued`, `running`, `done`, `cancelled` or `failed`.
    pub state: String,
    /// Entries received.
    pub received: i64,
    /// Distinct valid names.
    pub total: i64,
    /// Entries rejected.
    pub invalid: i64,
    /// Credits held at submission.
    pub held: i64,
    /// Names with a final result.
    pub checked: i64,
    /// Credits charged.
    pub charged: i64,
    /// The check options, JSON.
    pub options: String,
    /// Why the job failed, if it did.
    pub error: Option<String>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms, when a runner first took it.
    pub started_at: Option<i64>,
    /// Unix ms, when it ended.
    pub finished_at: Option<i64>,
    /// Unix ms, when its results are deleted.
    pub expires_at: Option<i64>,
}

impl BulkJob {
    /// Whether the job still holds credits and checks names.
    pub fn is_open(&self) -> bool {
        matches!(self.state.as_str(), "queued" | "running")
    }

    /// The ledger's `front` of the job's charges: the hold shrinks by what they settle.
    pub fn ledger_front(&self) -> String {
        ledger_front(&self.id)
    }
}

/// The ledger's `front` of a job's charges.
pub fn ledger_front(job_id: &str) -> String {
    format!("bulk-job:{job_id}")
}

/// An entry as received.
#[derive(Debug, Clone)]
pub struct NewItem {
    /// Position in the upload (0-based).
    pub seq: i64,
    /// The entry as sent (bounded by the upload parser).
    pub input: String,
    /// The normalised name; `None` for a rejected entry.
    pub domain: Option<String>,
    /// The registry host that answers for the name (interleaving key).
    pub registry: String,
    /// For a rejected entry: why.
    pub error: Option<String>,
}

/// A name waiting for its check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingItem {
    /// Position in the upload.
    pub seq: i64,
    /// The normalised name.
    pub domain: String,
    /// Checks tried so far without a definitive verdict.
    pub attempts: i64,
}

/// The outcome of one check of a job's name.
#[derive(Debug, Clone)]
pub struct ItemOutcome {
    /// Position in the upload.
    pub seq: i64,
    /// Final: the name gets its result row; not final: one more attempt was used, the name stays
    /// pending for a retry.
    pub last: bool,
    /// The verdict's status (`unknown` when none).
    pub status: String,
    /// Whether the name was charged (its ledger event is durable).
    pub charged: bool,
    /// The result row (JSON).
    pub result: String,
}

/// Bulk job storage, implemented by both SQL stores.
pub trait BulkJobStore: Send + Sync {
    /// Creates a job in state `uploading`.
    fn create_job<'a>(
        &'a self,
        id: &'a str,
        key_id: &'a str,
        period: &'a str,
        options: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, anyhow::Result<()>>;
    /// Stores a chunk of entries; a name already stored for the job is skipped.
    fn add_items<'a>(&'a self, job_id: &'a str, items: Vec<NewItem>) -> BoxFuture<'a, anyhow::Result<()>>;
    /// Distinct valid names and rejected entries stored for the job.
    fn item_counts<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<(i64, i64)>>;
    /// Opens an uploaded job: state `queued`, `held` credits held. False when it was not uploading.
    fn open_job<'a>(
        &'a self,
        job_id: &'a str,
        received: i64,
        total: i64,
        invalid: i64,
        held: i64,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;
    /// Deletes a job and its entries (a refused submission).
    fn delete_job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<()>>;
    /// A job by id.
    fn job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<Option<BulkJob>>>;
    /// A key's jobs, newest first, at most `limit`.
    fn jobs_of_key<'a>(&'a self, key_id: &'a str, limit: i64) -> BoxFuture<'a, anyhow::Result<Vec<BulkJob>>>;
    /// Takes (or renews) the lease of up to `max` open jobs for `owner` until `now_ms + lease_ms`:
    /// jobs it already holds and jobs whose lease ran out (a dead runner's), oldest first.
    fn claim<'a>(
        &'a self,
        owner: &'a str,
        now_ms: i64,
        lease_ms: i64,
        max: i64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<BulkJob>>>;
    /// Registries with names still pending in the job.
    fn pending_registries<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<String>>>;
    /// Pending names of one registry of the job after `after_seq`, upload order.
    fn pending<'a>(
        &'a self,
        job_id: &'a str,
        registry: &'a str,
        after_seq: i64,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<PendingItem>>>;
    /// Pending names per registry (the ETA).
    fn pending_by_registry<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<(String, i64)>>>;
    /// Writes outcomes in one transaction: a final outcome is written once (a name already done
    /// is skipped) and numbered for the results cursor; the job's counters follow. Returns how
    /// many results were written.
    fn record<'a>(&'a self, job_id: &'a str, outcomes: Vec<ItemOutcome>) -> BoxFuture<'a, anyhow::Result<u64>>;
    /// Ends an open job with no name pending: state `done`. False when it was not open or names
    /// are still pending.
    /// `event` (its `job.finished`) is recorded in the same transaction, once by its id.
    fn complete<'a>(
        &'a self,
        job_id: &'a str,
        now_ms: i64,
        expires_at: i64,
        event: NewEvent,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;
    /// Cancels a key's job that is not over yet, recording `event` (its `job.finished`) in the
    /// same transaction. False when there is none or it is over (nothing recorded).
    fn cancel<'a>(
        &'a self,
        job_id: &'a str,
        key_id: &'a str,
        now_ms: i64,
        expires_at: i64,
        event: NewEvent,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;
    /// Final results per verdict status.
    fn counts_by_status<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<(String, i64)>>>;
    /// Results after cursor `after` (exclusive), in the order written: `(cursor, row JSON)`.
    fn results<'a>(
        &'a self,
        job_id: &'a str,
        after: i64,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<(i64, String)>>>;
    /// Rejected entries `(input, reason)`, upload order, at most `limit`.
    fn invalid_entries<'a>(
        &'a self,
        job_id: &'a str,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<(String, String)>>>;
    /// Credits held by a key's open jobs in a period and not yet settled as charges.
    fn held_credits<'a>(&'a self, key_id: &'a str, period: &'a str) -> BoxFuture<'a, anyhow::Result<i64>>;
    /// Deletes jobs whose results expired before `now_ms`, and fails uploads abandoned since
    /// before `stale_upload_ms` (a front that died mid-upload). Returns how many jobs changed.
    fn purge<'a>(&'a self, now_ms: i64, stale_upload_ms: i64) -> BoxFuture<'a, anyhow::Result<u64>>;
}

impl<DB: Dialect> SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'n> &'n str: ColumnIndex<DB::Row>,
    String: SqlValue<DB>,
    Option<String>: SqlValue<DB>,
    i64: SqlValue<DB>,
    Option<i64>: SqlValue<DB>,
{
    fn bulk_job(row: &DB::Row) -> anyhow::Result<BulkJob> {
        Ok(BulkJob {
            id: row.try_get("id")?,
            key_id: row.try_get("key_id")?,
            period: row.try_get("period")?,
            state: row.try_get("state")?,
            received: row.try_get("received")?,
            total: row.try_get("total")?,
            invalid: row.try_get("invalid")?,
            held: row.try_get("held")?,
            checked: row.try_get("checked")?,
            charged: row.try_get("charged")?,
            options: row.try_get("options")?,
            error: row.try_get("error")?,
            created_at: row.try_get("created_at")?,
            started_at: row.try_get("started_at")?,
            finished_at: row.try_get("finished_at")?,
            expires_at: row.try_get("expires_at")?,
        })
    }
}

/// Rows bound per multi-row `INSERT` (6 parameters each: well under both databases' limits).
const INSERT_ROWS: usize = 500;

/// Records `event` in `tx` (`ON CONFLICT DO NOTHING` on its id, as `Store::emit_event`): the
/// events written in the same transaction as the state they record (a watch's check, a job's end).
pub(super) async fn insert_event<DB: Dialect>(tx: &mut sqlx::Transaction<'_, DB>, event: NewEvent) -> anyhow::Result<()>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    String: SqlValue<DB>,
    Option<String>: SqlValue<DB>,
    Json<serde_json::Value>: SqlValue<DB>,
{
    anyhow::ensure!(event.data.is_object(), "an event's data is a JSON object");
    sqlx::query(
        "INSERT INTO events (id, key_id, type, subject, occurred_at, data) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(event.id)
    .bind(event.key_id)
    .bind(event.event_type)
    .bind(event.subject)
    .bind(DB::instant(event.occurred_at)?)
    .bind(Json(event.data))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

impl<DB: Dialect> BulkJobStore for SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'n> &'n str: ColumnIndex<DB::Row>,
    String: SqlValue<DB>,
    Option<String>: SqlValue<DB>,
    i64: SqlValue<DB>,
    Option<i64>: SqlValue<DB>,
    Json<serde_json::Value>: SqlValue<DB>,
{
    fn create_job<'a>(
        &'a self,
        id: &'a str,
        key_id: &'a str,
        period: &'a str,
        options: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO bulk_jobs (id, key_id, period, state, options, created_at) \
                 VALUES ($1, $2, $3, 'uploading', $4, $5)",
            )
            .bind(id.to_owned())
            .bind(key_id.to_owned())
            .bind(period.to_owned())
            .bind(options.to_owned())
            .bind(now_ms)
            .execute(self.pool())
            .await?;
            Ok(())
        })
    }

    fn add_items<'a>(&'a self, job_id: &'a str, items: Vec<NewItem>) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            let mut tx = self.pool().begin().await?;
            for chunk in items.chunks(INSERT_ROWS) {
                // Placeholders only; every value is bound. A rejected entry is stored as `invalid`
                // with its reason in `result`; NULL domains never collide in the unique index.
                let mut sql = String::from(
                    "INSERT INTO bulk_job_items (job_id, seq, input, domain, registry, state, result) VALUES ",
                );
                for i in 0..chunk.len() {
                    let b = i * 6;
                    if i > 0 {
                        sql.push_str(", ");
                    }
                    sql.push_str(&format!(
                        "($1, ${}, ${}, ${}, ${}, ${}, ${})",
                        b + 2,
                        b + 3,
                        b + 4,
                        b + 5,
                        b + 6,
                        b + 7
                    ));
                }
                sql.push_str(" ON CONFLICT DO NOTHING");
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(job_id.to_owned());
                for item in chunk {
                    let state = if item.domain.is_some() { "pending" } else { "invalid" };
                    query = query
                        .bind(item.seq)
                        .bind(item.input.clone())
                        .bind(item.domain.clone())
                        .bind(item.registry.clone())
                        .bind(state.to_owned())
                        .bind(item.error.clone());
                }
                query.execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    fn item_counts<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<(i64, i64)>> {
        Box::pin(async move {
            let row = sqlx::query(
                "SELECT CAST(COALESCE(SUM(CASE WHEN domain IS NULL THEN 0 ELSE 1 END), 0) AS BIGINT) AS valid, \
                 CAST(COALESCE(SUM(CASE WHEN domain IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS invalid \
                 FROM bulk_job_items WHERE job_id = $1",
            )
            .bind(job_id.to_owned())
            .fetch_one(self.pool())
            .await?;
            Ok((row.try_get("valid")?, row.try_get("invalid")?))
        })
    }

    fn open_job<'a>(
        &'a self,
        job_id: &'a str,
        received: i64,
        total: i64,
        invalid: i64,
        held: i64,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        Box::pin(async move {
            let done = sqlx::query(
                "UPDATE bulk_jobs SET state = 'queued', received = $2, total = $3, invalid = $4, held = $5 \
                 WHERE id = $1 AND state = 'uploading'",
            )
            .bind(job_id.to_owned())
            .bind(received)
            .bind(total)
            .bind(invalid)
            .bind(held)
            .execute(self.pool())
            .await?;
            Ok(DB::rows_affected(&done) == 1)
        })
    }

    fn delete_job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            let mut tx = self.pool().begin().await?;
            sqlx::query("DELETE FROM bulk_job_items WHERE job_id = $1")
                .bind(job_id.to_owned())
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM bulk_jobs WHERE id = $1").bind(job_id.to_owned()).execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<Option<BulkJob>>> {
        Box::pin(async move {
            let row = sqlx::query("SELECT * FROM bulk_jobs WHERE id = $1")
                .bind(job_id.to_owned())
                .fetch_optional(self.pool())
                .await?;
            row.as_ref().map(Self::bulk_job).transpose()
        })
    }

    fn jobs_of_key<'a>(&'a self, key_id: &'a str, limit: i64) -> BoxFuture<'a, anyhow::Result<Vec<BulkJob>>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT * FROM bulk_jobs WHERE key_id = $1 AND state <> 'uploading' \
                 ORDER BY created_at DESC, id DESC LIMIT $2",
            )
            .bind(key_id.to_owned())
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
            rows.iter().map(Self::bulk_job).collect()
        })
    }

    fn claim<'a>(
        &'a self,
        owner: &'a str,
        now_ms: i64,
        lease_ms: i64,
        max: i64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<BulkJob>>> {
        Box::pin(async move {
            // The lease conditions are repeated outside the subquery: in Postgres, two runners
            // racing for one row see it re-checked against the winner's version after the row
            // lock, so only one of them gets it.
            let statement = format!(
                "UPDATE bulk_jobs SET lease_owner = $1, lease_until = $3, state = 'running', \
                 started_at = COALESCE(started_at, $2) \
                 WHERE id IN (SELECT id FROM bulk_jobs WHERE state IN {OPEN} \
                   AND (lease_owner = $1 OR lease_until < $2) ORDER BY created_at, id LIMIT $4) \
                 AND state IN {OPEN} AND (lease_owner = $1 OR lease_until < $2) RETURNING *"
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(owner.to_owned())
                .bind(now_ms)
                .bind(now_ms + lease_ms)
                .bind(max)
                .fetch_all(self.pool())
                .await?;
            let mut jobs = rows.iter().map(Self::bulk_job).collect::<anyhow::Result<Vec<_>>>()?;
            jobs.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            Ok(jobs)
        })
    }

    fn pending_registries<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<String>>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT DISTINCT registry FROM bulk_job_items WHERE job_id = $1 AND state = 'pending' ORDER BY registry",
            )
            .bind(job_id.to_owned())
            .fetch_all(self.pool())
            .await?;
            rows.iter().map(|r| Ok(r.try_get("registry")?)).collect()
        })
    }

    fn pending<'a>(
        &'a self,
        job_id: &'a str,
        registry: &'a str,
        after_seq: i64,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<PendingItem>>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT seq, domain, attempts FROM bulk_job_items \
                 WHERE job_id = $1 AND state = 'pending' AND registry = $2 AND seq > $3 ORDER BY seq LIMIT $4",
            )
            .bind(job_id.to_owned())
            .bind(registry.to_owned())
            .bind(after_seq)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
            rows.iter()
                .map(|r| {
                    let domain: Option<String> = r.try_get("domain")?;
                    Ok(PendingItem {
                        seq: r.try_get("seq")?,
                        domain: domain.unwrap_or_default(),
                        attempts: r.try_get("attempts")?,
                    })
                })
                .collect()
        })
    }

    fn pending_by_registry<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<(String, i64)>>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT registry, CAST(COUNT(*) AS BIGINT) AS n FROM bulk_job_items \
                 WHERE job_id = $1 AND state = 'pending' GROUP BY registry",
            )
            .bind(job_id.to_owned())
            .fetch_all(self.pool())
            .await?;
            rows.iter().map(|r| Ok((r.try_get("registry")?, r.try_get("n")?))).collect()
        })
    }

    fn record<'a>(&'a self, job_id: &'a str, outcomes: Vec<ItemOutcome>) -> BoxFuture<'a, anyhow::Result<u64>> {
        Box::pin(async move {
            let mut tx = self.pool().begin().await?;
            let (mut written, mut charged) = (0_i64, 0_i64);
            for outcome in outcomes {
                if outcome.last {
                    // Written once: a name already done (a runner that died after writing, a
                    // second runner on an expired lease) is skipped.
                    let done = sqlx::query(
                        "UPDATE bulk_job_items SET state = 'done', status = $3, charged = $4, result = $5, \
                         attempts = attempts + 1, \
                         done_seq = (SELECT COALESCE(MAX(done_seq), 0) + 1 FROM bulk_job_items WHERE job_id = $1) \
                         WHERE job_id = $1 AND seq = $2 AND state = 'pending'",
                    )
                    .bind(job_id.to_owned())
                    .bind(outcome.seq)
                    .bind(outcome.status)
                    .bind(i64::from(outcome.charged))
                    .bind(outcome.result)
                    .execute(&mut *tx)
                    .await?;
                    if DB::rows_affected(&done) == 1 {
                        written += 1;
                        charged += i64::from(outcome.charged);
                    }
                } else {
                    sqlx::query(
                        "UPDATE bulk_job_items SET attempts = attempts + 1 \
                         WHERE job_id = $1 AND seq = $2 AND state = 'pending'",
                    )
                    .bind(job_id.to_owned())
                    .bind(outcome.seq)
                    .execute(&mut *tx)
                    .await?;
                }
            }
            if written > 0 {
                sqlx::query("UPDATE bulk_jobs SET checked = checked + $2, charged = charged + $3 WHERE id = $1")
                    .bind(job_id.to_owned())
                    .bind(written)
                    .bind(charged)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(u64::try_from(written).unwrap_or(0))
        })
    }

    fn complete<'a>(
        &'a self,
        job_id: &'a str,
        now_ms: i64,
        expires_at: i64,
        event: NewEvent,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        Box::pin(async move {
            let statement = format!(
                "UPDATE bulk_jobs SET state = 'done', finished_at = $2, expires_at = $3, lease_owner = NULL \
                 WHERE id = $1 AND state IN {OPEN} \
                 AND NOT EXISTS (SELECT 1 FROM bulk_job_items WHERE job_id = $1 AND state = 'pending')"
            );
            let mut tx = self.pool().begin().await?;
            let done = sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(job_id.to_owned())
                .bind(now_ms)
                .bind(expires_at)
                .execute(&mut *tx)
                .await?;
            if DB::rows_affected(&done) != 1 {
                tx.rollback().await?;
                return Ok(false);
            }
            insert_event(&mut tx, event).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    fn cancel<'a>(
        &'a self,
        job_id: &'a str,
        key_id: &'a str,
        now_ms: i64,
        expires_at: i64,
        event: NewEvent,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        Box::pin(async move {
            let statement = format!(
                "UPDATE bulk_jobs SET state = 'cancelled', finished_at = $3, expires_at = $4, lease_owner = NULL \
                 WHERE id = $1 AND key_id = $2 AND state IN {OPEN}"
            );
            let mut tx = self.pool().begin().await?;
            let done = sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(job_id.to_owned())
                .bind(key_id.to_owned())
                .bind(now_ms)
                .bind(expires_at)
                .execute(&mut *tx)
                .await?;
            if DB::rows_affected(&done) != 1 {
                tx.rollback().await?;
                return Ok(false);
            }
            insert_event(&mut tx, event).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    fn counts_by_status<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, anyhow::Result<Vec<(String, i64)>>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT status, CAST(COUNT(*) AS BIGINT) AS n FROM bulk_job_items \
                 WHERE job_id = $1 AND state = 'done' GROUP BY status",
            )
            .bind(job_id.to_owned())
            .fetch_all(self.pool())
            .await?;
            rows.iter()
                .map(|r| {
                    let status: Option<String> = r.try_get("status")?;
                    Ok((status.unwrap_or_else(|| "unknown".into()), r.try_get("n")?))
                })
                .collect()
        })
    }

    fn results<'a>(
        &'a self,
        job_id: &'a str,
        after: i64,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<(i64, String)>>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT done_seq, result FROM bulk_job_items \
                 WHERE job_id = $1 AND done_seq > $2 ORDER BY done_seq LIMIT $3",
            )
            .bind(job_id.to_owned())
            .bind(after)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
            rows.iter()
                .map(|r| {
                    let result: Option<String> = r.try_get("result")?;
                    Ok((r.try_get("done_seq")?, result.unwrap_or_default()))
                })
                .collect()
        })
    }

    fn invalid_entries<'a>(
        &'a self,
        job_id: &'a str,
        limit: i64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<(String, String)>>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT input, result FROM bulk_job_items WHERE job_id = $1 AND state = 'invalid' ORDER BY seq LIMIT $2",
            )
            .bind(job_id.to_owned())
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
            rows.iter()
                .map(|r| {
                    let reason: Option<String> = r.try_get("result")?;
                    Ok((r.try_get("input")?, reason.unwrap_or_default()))
                })
                .collect()
        })
    }

    fn held_credits<'a>(&'a self, key_id: &'a str, period: &'a str) -> BoxFuture<'a, anyhow::Result<i64>> {
        Box::pin(async move {
            // Each open job holds what it was given minus its charges already settled: a charge
            // moves from the hold into the settled total, never counted in both or neither once
            // settled (one statement, one snapshot).
            let settled = DB::settled_by_front_sql("j.key_id", "j.period", "'bulk-job:' || j.id");
            let statement = format!(
                "SELECT CAST(COALESCE(SUM(j.held - COALESCE({settled}, 0)), 0) AS BIGINT) AS held \
                 FROM bulk_jobs j WHERE j.key_id = $1 AND j.period = $2 AND j.state IN {OPEN}"
            );
            let row = sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(key_id.to_owned())
                .bind(period.to_owned())
                .fetch_one(self.pool())
                .await?;
            Ok(row.try_get::<i64, _>("held")?.max(0))
        })
    }

    fn purge<'a>(&'a self, now_ms: i64, stale_upload_ms: i64) -> BoxFuture<'a, anyhow::Result<u64>> {
        Box::pin(async move {
            let mut changed = 0;
            let failed = sqlx::query(
                "UPDATE bulk_jobs SET state = 'failed', error = 'The upload did not finish.', finished_at = $1, \
                 expires_at = $1 WHERE state = 'uploading' AND created_at < $2",
            )
            .bind(now_ms)
            .bind(stale_upload_ms)
            .execute(self.pool())
            .await?;
            changed += DB::rows_affected(&failed);
            let expired =
                sqlx::query("SELECT id FROM bulk_jobs WHERE expires_at IS NOT NULL AND expires_at < $1 LIMIT 100")
                    .bind(now_ms)
                    .fetch_all(self.pool())
                    .await?;
            for row in expired {
                let id: String = row.try_get("id")?;
                self.delete_job(&id).await?;
                changed += 1;
            }
            Ok(changed)
        })
    }
}
