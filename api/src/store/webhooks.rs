//! The SQL of webhooks and their deliveries (issue 25), shared by SQLite and Postgres; the
//! [`Store`](super::Store) methods of the webhooks block call these. Instants are unix ms.
//!
//! Every multi-statement change starts with a write (`UPDATE … RETURNING`, `INSERT`), so that a
//! SQLite transaction never upgrades from read to write (which fails at once when another
//! connection wrote meanwhile), and Postgres's `FOR UPDATE … SKIP LOCKED` lets several fronts fan
//! out and claim at once without taking the same rows.

use sqlx::types::Json;
use sqlx::{ColumnIndex, Executor, IntoArguments, Row};

use super::{Dialect, SqlStore, SqlValue};
use crate::events::EventRecord;
use crate::webhooks::{
    AttemptOutcome, AttemptRecord, ClaimedDelivery, DELIVERY_ID_PREFIX, DeliveryRecord, MAX_WEBHOOKS_PER_KEY,
    NewWebhook, WebhookRecord, new_id, rfc3339_ms,
};

/// What recording an attempt did to the webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recorded {
    /// The attempt moved the delivery (its claim was still ours).
    pub applied: bool,
    /// The webhook was disabled by this attempt (it failed for too long); the caller emits
    /// `webhook.disabled`. The unix ms since which it failed.
    pub disabled_failing_since_ms: Option<i64>,
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
    Option<f64>: SqlValue<DB>,
    bool: SqlValue<DB>,
    Option<bool>: SqlValue<DB>,
    Json<Vec<String>>: SqlValue<DB>,
    Option<Json<Vec<String>>>: SqlValue<DB>,
    Json<serde_json::Value>: SqlValue<DB>,
{
    /// A `webhooks` row (`w.*`).
    fn webhook(row: &DB::Row) -> anyhow::Result<WebhookRecord> {
        let Json(event_types) = row.try_get::<Json<Vec<String>>, _>("event_types")?;
        let previous: Option<String> = row.try_get("previous_secret")?;
        let until: Option<i64> = row.try_get("previous_secret_until_ms")?;
        Ok(WebhookRecord {
            id: row.try_get("id")?,
            key_id: row.try_get("key_id")?,
            url: row.try_get("url")?,
            event_types,
            description: row.try_get("description")?,
            secret: row.try_get("secret")?,
            previous_secret: previous.zip(until),
            state: row.try_get("state")?,
            disabled_reason: row.try_get("disabled_reason")?,
            failing_since_ms: row.try_get("failing_since_ms")?,
            created_at_ms: row.try_get("created_at_ms")?,
        })
    }

    pub(super) async fn wh_create(&self, new: NewWebhook) -> anyhow::Result<Option<WebhookRecord>> {
        let mut tx = self.pool.begin().await?;
        // The write first (see the module's note), then the count: a key over the limit rolls back.
        let row = sqlx::query(
            "INSERT INTO webhooks (id, key_id, url, event_types, description, secret, state, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, 'active', $7) RETURNING *",
        )
        .bind(new_id(crate::webhooks::WEBHOOK_ID_PREFIX))
        .bind(new.key_id.clone())
        .bind(new.url)
        .bind(Json(new.event_types))
        .bind(new.description)
        .bind(new.secret)
        .bind(new.now_ms)
        .fetch_one(&mut *tx)
        .await?;
        let count: i64 =
            sqlx::query("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM webhooks WHERE key_id = $1 AND state <> 'deleted'")
                .bind(new.key_id)
                .fetch_one(&mut *tx)
                .await?
                .try_get("n")?;
        if count > MAX_WEBHOOKS_PER_KEY {
            tx.rollback().await?;
            return Ok(None);
        }
        let webhook = Self::webhook(&row)?;
        tx.commit().await?;
        Ok(Some(webhook))
    }

    pub(super) async fn wh_list(&self, key_id: String) -> anyhow::Result<Vec<WebhookRecord>> {
        let rows =
            sqlx::query("SELECT * FROM webhooks WHERE key_id = $1 AND state <> 'deleted' ORDER BY created_at_ms, id")
                .bind(key_id)
                .fetch_all(&self.pool)
                .await?;
        rows.iter().map(Self::webhook).collect()
    }

    pub(super) async fn wh_find(&self, key_id: String, id: String) -> anyhow::Result<Option<WebhookRecord>> {
        let row = sqlx::query("SELECT * FROM webhooks WHERE id = $1 AND key_id = $2 AND state <> 'deleted'")
            .bind(id)
            .bind(key_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(Self::webhook).transpose()
    }

    pub(super) async fn wh_delete(&self, key_id: String, id: String) -> anyhow::Result<bool> {
        // Kept as `deleted` (its deliveries and their events stay readable by id in the database);
        // nothing is delivered to it any more.
        let done = sqlx::query(
            "UPDATE webhooks SET state = 'deleted', secret = '', previous_secret = NULL \
             WHERE id = $1 AND key_id = $2 AND state <> 'deleted'",
        )
        .bind(id)
        .bind(key_id)
        .execute(&self.pool)
        .await?;
        Ok(DB::rows_affected(&done) > 0)
    }

    pub(super) async fn wh_rotate(
        &self,
        key_id: String,
        id: String,
        secret: String,
        previous_until_ms: i64,
    ) -> anyhow::Result<Option<WebhookRecord>> {
        let row = sqlx::query(
            "UPDATE webhooks SET previous_secret = secret, previous_secret_until_ms = $3, secret = $4 \
             WHERE id = $1 AND key_id = $2 AND state <> 'deleted' RETURNING *",
        )
        .bind(id)
        .bind(key_id)
        .bind(previous_until_ms)
        .bind(secret)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::webhook).transpose()
    }

    pub(super) async fn wh_enable(&self, key_id: String, id: String) -> anyhow::Result<Option<WebhookRecord>> {
        let row = sqlx::query(
            "UPDATE webhooks SET state = 'active', disabled_reason = NULL, failing_since_ms = NULL \
             WHERE id = $1 AND key_id = $2 AND state <> 'deleted' RETURNING *",
        )
        .bind(id)
        .bind(key_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::webhook).transpose()
    }

    pub(super) async fn wh_deliveries(
        &self,
        webhook_id: String,
        before_seq: i64,
        limit: i64,
    ) -> anyhow::Result<Vec<DeliveryRecord>> {
        let rows = sqlx::query(
            "SELECT d.seq, d.id, d.webhook_id, d.event_id, e.type AS event_type, d.state, d.attempts, \
             d.next_attempt_ms, d.delivered_at_ms, d.created_at_ms \
             FROM webhook_deliveries AS d JOIN events AS e ON e.id = d.event_id \
             WHERE d.webhook_id = $1 AND d.seq < $2 ORDER BY d.seq DESC LIMIT $3",
        )
        .bind(webhook_id)
        .bind(before_seq)
        .bind(limit.clamp(0, 100))
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get("id")?;
            let attempts = sqlx::query("SELECT * FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt")
                .bind(id.clone())
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|a| {
                    Ok(AttemptRecord {
                        attempt: a.try_get("attempt")?,
                        at: rfc3339_ms(a.try_get("at_ms")?),
                        status: a.try_get("status")?,
                        error: a.try_get("error")?,
                        latency_ms: a.try_get("latency_ms")?,
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            out.push(DeliveryRecord {
                seq: row.try_get("seq")?,
                id,
                webhook_id: row.try_get("webhook_id")?,
                event_id: row.try_get("event_id")?,
                event_type: row.try_get("event_type")?,
                state: row.try_get("state")?,
                attempts: row.try_get("attempts")?,
                next_attempt_ms: row.try_get("next_attempt_ms")?,
                delivered_at_ms: row.try_get("delivered_at_ms")?,
                created_at_ms: row.try_get("created_at_ms")?,
                attempt_log: attempts,
            });
        }
        Ok(out)
    }

    pub(super) async fn wh_retry(&self, webhook_id: String, delivery_id: String, now_ms: i64) -> anyhow::Result<bool> {
        let done = sqlx::query(
            "UPDATE webhook_deliveries SET state = 'pending', next_attempt_ms = $3 \
             WHERE id = $1 AND webhook_id = $2",
        )
        .bind(delivery_id)
        .bind(webhook_id)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(DB::rows_affected(&done) > 0)
    }

    pub(super) async fn wh_prune(&self, before_ms: i64) -> anyhow::Result<u64> {
        const ENDED: &str = "state <> 'pending' AND COALESCE(delivered_at_ms, last_attempt_ms, created_at_ms) < $1";
        let mut tx = self.pool.begin().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE {ENDED})"
        )))
        .bind(before_ms)
        .execute(&mut *tx)
        .await?;
        let done = sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM webhook_deliveries WHERE {ENDED}")))
            .bind(before_ms)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(DB::rows_affected(&done))
    }

    pub(super) async fn wh_fan_out(&self, now_ms: i64, limit: i64) -> anyhow::Result<u64> {
        // A read first: an idle loop takes no write lock (SQLite has one writer at a time).
        let probe = format!("SELECT seq FROM events WHERE {} LIMIT 1", DB::UNDISPATCHED);
        if sqlx::query(sqlx::AssertSqlSafe(probe)).fetch_optional(&self.pool).await?.is_none() {
            return Ok(0);
        }
        let mut tx = self.pool.begin().await?;
        let sql = format!(
            "UPDATE events SET dispatched = TRUE WHERE seq IN \
             (SELECT seq FROM events WHERE {} ORDER BY seq LIMIT $1{}) RETURNING *",
            DB::UNDISPATCHED,
            DB::SKIP_LOCKED
        );
        let events = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(limit)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(Self::event)
            .collect::<anyhow::Result<Vec<EventRecord>>>()?;
        let mut hooks_of: std::collections::HashMap<String, Vec<WebhookRecord>> = std::collections::HashMap::new();
        for event in &events {
            if !hooks_of.contains_key(&event.key_id) {
                let rows = sqlx::query("SELECT * FROM webhooks WHERE key_id = $1 AND state = 'active'")
                    .bind(event.key_id.clone())
                    .fetch_all(&mut *tx)
                    .await?;
                let hooks = rows.iter().map(Self::webhook).collect::<anyhow::Result<Vec<_>>>()?;
                hooks_of.insert(event.key_id.clone(), hooks);
            }
            let hooks = hooks_of.get(&event.key_id).map(Vec::as_slice).unwrap_or_default();
            for hook in hooks.iter().filter(|h| routes_to(event, h)) {
                sqlx::query(
                    "INSERT INTO webhook_deliveries (id, webhook_id, event_id, next_attempt_ms, created_at_ms) \
                     VALUES ($1, $2, $3, $4, $4) ON CONFLICT (event_id, webhook_id) DO NOTHING",
                )
                .bind(new_id(DELIVERY_ID_PREFIX))
                .bind(hook.id.clone())
                .bind(event.id.clone())
                .bind(now_ms)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(events.len() as u64)
    }

    pub(super) async fn wh_claim(
        &self,
        owner: String,
        now_ms: i64,
        lease_until_ms: i64,
        limit: i64,
    ) -> anyhow::Result<Vec<ClaimedDelivery>> {
        let due = sqlx::query(
            "SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_ms <= $1 \
             AND lease_until_ms <= $1 LIMIT 1",
        )
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await?;
        if due.is_none() {
            return Ok(Vec::new());
        }
        // Order per subject (a watch's events arrive in the order they happened): a delivery is
        // not claimed while the same webhook still has a pending delivery (due later, or being
        // attempted under a lease) of an earlier event (by `events.seq`) about the same subject.
        // A failed (given up) or delivered one no longer holds the later ones back; events
        // without a subject are not ordered. On Postgres the pending row of another front's
        // uncommitted claim or record is still seen as pending: the later delivery waits a round.
        // An earlier event of the subject not fanned out yet (another front's fan-out still in
        // its transaction) holds the later ones back too, until its deliveries exist.
        let sql = format!(
            "UPDATE webhook_deliveries SET lease_owner = $1, lease_until_ms = $2 WHERE id IN \
             (SELECT d.id FROM webhook_deliveries AS d JOIN webhooks AS w ON w.id = d.webhook_id \
              JOIN events AS e ON e.id = d.event_id \
              WHERE d.state = 'pending' AND d.next_attempt_ms <= $3 AND d.lease_until_ms <= $3 AND w.state = 'active' \
              AND NOT EXISTS (SELECT 1 FROM events AS pe JOIN webhook_deliveries AS p \
               ON p.event_id = pe.id AND p.webhook_id = d.webhook_id \
               WHERE pe.subject = e.subject AND pe.seq < e.seq AND p.state = 'pending') \
              AND NOT EXISTS (SELECT 1 FROM events AS u WHERE u.subject = e.subject AND u.seq < e.seq AND {}) \
              ORDER BY d.next_attempt_ms, e.seq LIMIT $4{})",
            DB::UNDISPATCHED,
            DB::SKIP_LOCKED_OF_D
        );
        let done = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(owner.clone())
            .bind(lease_until_ms)
            .bind(now_ms)
            .bind(limit)
            .execute(&self.pool)
            .await?;
        if DB::rows_affected(&done) == 0 {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "SELECT d.id AS delivery_id, d.attempts, d.event_id, e.type AS event_type, e.occurred_at, \
             e.data, w.* FROM webhook_deliveries AS d JOIN events AS e ON e.id = d.event_id \
             JOIN webhooks AS w ON w.id = d.webhook_id WHERE d.lease_owner = $1 AND d.state = 'pending'",
        )
        .bind(owner)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let Json(data): Json<serde_json::Value> = row.try_get("data")?;
                Ok(ClaimedDelivery {
                    id: row.try_get("delivery_id")?,
                    attempts: row.try_get("attempts")?,
                    webhook: Self::webhook(row)?,
                    event_id: row.try_get("event_id")?,
                    event_type: row.try_get("event_type")?,
                    occurred_at: DB::rfc3339(row.try_get("occurred_at")?)?,
                    data,
                })
            })
            .collect()
    }

    pub(super) async fn wh_record(
        &self,
        outcomes: Vec<(String, AttemptOutcome)>,
        disable_after_ms: i64,
    ) -> anyhow::Result<Vec<Recorded>> {
        // One transaction for a round's attempts: one commit (one fsync on SQLite) for all.
        let mut tx = self.pool.begin().await?;
        let mut out = Vec::with_capacity(outcomes.len());
        for (webhook_id, outcome) in outcomes {
            out.push(Self::wh_record_one(&mut tx, webhook_id, outcome, disable_after_ms).await?);
        }
        tx.commit().await?;
        Ok(out)
    }

    async fn wh_record_one(
        tx: &mut DB::Connection,
        webhook_id: String,
        outcome: AttemptOutcome,
        disable_after_ms: i64,
    ) -> anyhow::Result<Recorded> {
        sqlx::query(
            // Numbered in the order recorded: a result that lost its claim (a process that was
            // thought dead) is kept beside the one that counts.
            "INSERT INTO webhook_attempts (delivery_id, attempt, at_ms, status, error, latency_ms) \
             SELECT $1, COALESCE(MAX(attempt), 0) + 1, $2, $3, $4, $5 FROM webhook_attempts WHERE delivery_id = $1 \
             ON CONFLICT (delivery_id, attempt) DO NOTHING",
        )
        .bind(outcome.delivery_id.clone())
        .bind(outcome.at_ms)
        .bind(outcome.status)
        .bind(outcome.error.clone())
        .bind(outcome.latency_ms)
        .execute(&mut *tx)
        .await?;
        let state = if outcome.delivered {
            "delivered"
        } else if outcome.next_attempt_ms.is_some() {
            "pending"
        } else {
            "failed"
        };
        let done = sqlx::query(
            "UPDATE webhook_deliveries SET attempts = $3, state = $4, next_attempt_ms = COALESCE($5, next_attempt_ms), \
             lease_owner = NULL, lease_until_ms = 0, last_status = $6, last_error = $7, last_latency_ms = $8, \
             last_attempt_ms = $9, delivered_at_ms = $10 WHERE id = $1 AND lease_owner = $2",
        )
        .bind(outcome.delivery_id)
        .bind(outcome.lease_owner)
        .bind(outcome.attempt)
        .bind(state.to_owned())
        .bind(outcome.next_attempt_ms)
        .bind(outcome.status)
        .bind(outcome.error)
        .bind(outcome.latency_ms)
        .bind(outcome.at_ms)
        .bind(outcome.delivered.then_some(outcome.at_ms + outcome.latency_ms))
        .execute(&mut *tx)
        .await?;
        let mut recorded = Recorded { applied: DB::rows_affected(&done) > 0, disabled_failing_since_ms: None };
        if outcome.delivered {
            sqlx::query("UPDATE webhooks SET failing_since_ms = NULL WHERE id = $1 AND failing_since_ms IS NOT NULL")
                .bind(webhook_id)
                .execute(&mut *tx)
                .await?;
        } else {
            let row = sqlx::query(
                "UPDATE webhooks SET failing_since_ms = COALESCE(failing_since_ms, $2) WHERE id = $1 \
                 RETURNING failing_since_ms, state",
            )
            .bind(webhook_id.clone())
            .bind(outcome.at_ms)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = row {
                let since: Option<i64> = row.try_get("failing_since_ms")?;
                let state: String = row.try_get("state")?;
                if let Some(since) = since
                    && state == "active"
                    && outcome.at_ms - since >= disable_after_ms
                {
                    let hours = (outcome.at_ms - since) / 3_600_000;
                    sqlx::query("UPDATE webhooks SET state = 'disabled', disabled_reason = $2 WHERE id = $1")
                        .bind(webhook_id)
                        .bind(format!(
                            "Every delivery attempt failed for {hours} hours (since {}); enable it again once the endpoint answers.",
                            rfc3339_ms(since)
                        ))
                        .execute(&mut *tx)
                        .await?;
                    recorded.disabled_failing_since_ms = Some(since);
                }
            }
        }
        Ok(recorded)
    }
}

/// Whether `event` goes to `hook` (an active webhook of the event's key): a test event to the
/// webhook it tests only; a `webhook.disabled` event to the key's other webhooks that take it;
/// every other event to the webhooks whose filter takes its type.
fn routes_to(event: &EventRecord, hook: &WebhookRecord) -> bool {
    match event.event_type.as_str() {
        "webhook.test" => event.subject.as_deref() == Some(hook.id.as_str()),
        "webhook.disabled" => event.subject.as_deref() != Some(hook.id.as_str()) && hook.wants(&event.event_type),
        other => hook.wants(other),
    }
}
