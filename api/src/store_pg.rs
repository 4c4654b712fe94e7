//! The fleet's [`Store`]: Postgres, shared by every front (schema in `migrations/postgres`).
//!
//! Same tables and semantics as [`crate::store::SqliteStore`]; the differences are Postgres's:
//! native types (`BOOLEAN`, `TIMESTAMPTZ`, `JSONB`), and a ledger batch applied about a hundred
//! events per statement instead of one, because many fronts settle into the same database at once.
//!
//! Queries are checked at run time (`sqlx::query` + `Row::try_get`), not by the `query!` macros,
//! so building needs no database (see `shared/notes/dependencies.md`, "sqlx").

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::types::Json;
use sqlx::{Connection, PgConnection, PgPool, Row};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::accounts::{Account, AccountState, Charge, NewAccount, SessionRecord};
use crate::keys::{KeyKind, KeyRecord, KeyState, Plan, fingerprint};
use crate::store::{KeyUpdate, NewKey, Store, unix_now};
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
    RETURNING key_id, period, credits
)
SELECT key_id, period, SUM(credits)::int8 AS credits, COUNT(*) AS entries FROM ins GROUP BY key_id, period"#;

/// Adds settled credits to `key_usage`, one row per key and period, in a fixed order.
const ADD_USAGE: &str = r#"
INSERT INTO key_usage (key_id, period, used)
SELECT * FROM UNNEST($1::text[], $2::text[], $3::int8[]) AS u (key_id, period, used)
ORDER BY key_id COLLATE "C", period COLLATE "C"
ON CONFLICT (key_id, period) DO UPDATE SET used = key_usage.used + EXCLUDED.used"#;

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
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
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
        Ok(Self { pool })
    }

    /// The connection pool (readiness checks, tests).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Inserts a key, owned by `account_id` or by nobody (an operator key).
    async fn insert_key(&self, account_id: Option<String>, key: NewKey) -> anyhow::Result<KeyRecord> {
        let row = sqlx::query(
                "INSERT INTO client_keys (id, key_hash, fingerprint, kind, state, plan, monthly_allowance, \
                 pricing_enabled, show_purchase_button, default_commission_percent, purchase_url, allowed_origins, \
                 label, created_at, account_id) VALUES ($1, $2, $3, $4, 'active', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
                 RETURNING *",
            )
            .bind(uuid::Uuid::now_v7().to_string())
            .bind(&key.key_hash)
            .bind(fingerprint(&key.key_hash))
            .bind(key.kind.as_str())
            .bind(key.plan.as_str())
            .bind(key.plan.monthly_credits())
            .bind(key.pricing_enabled)
            .bind(key.show_purchase_button)
            .bind(key.default_commission_percent)
            .bind(&key.purchase_url)
            .bind(Json(&key.allowed_origins))
            .bind(&key.label)
            .bind(OffsetDateTime::now_utc())
            .bind(account_id)
            .fetch_one(&self.pool)
            .await?;
        row_to_key(&row)
    }
}

fn row_to_key(row: &PgRow) -> anyhow::Result<KeyRecord> {
    let kind: String = row.try_get("kind")?;
    let state: String = row.try_get("state")?;
    let plan: String = row.try_get("plan")?;
    let hash: String = row.try_get("key_hash")?;
    let created_at: OffsetDateTime = row.try_get("created_at")?;
    let Json(allowed_origins) = row.try_get::<Json<Vec<String>>, _>("allowed_origins")?;
    Ok(KeyRecord {
        id: row.try_get("id")?,
        fingerprint: fingerprint(&hash),
        kind: KeyKind::parse(&kind).ok_or_else(|| anyhow::anyhow!("bad key kind {kind}"))?,
        state: KeyState::parse(&state).ok_or_else(|| anyhow::anyhow!("bad key state {state}"))?,
        plan: Plan::parse(&plan).ok_or_else(|| anyhow::anyhow!("bad plan {plan}"))?,
        monthly_allowance: row.try_get("monthly_allowance")?,
        pricing_enabled: row.try_get("pricing_enabled")?,
        show_purchase_button: row.try_get("show_purchase_button")?,
        default_commission_percent: row.try_get("default_commission_percent")?,
        purchase_url: row.try_get("purchase_url")?,
        allowed_origins,
        label: row.try_get("label")?,
        // Same text as SQLite's column: RFC 3339, UTC (Postgres keeps microseconds).
        created_at: created_at.to_offset(time::UtcOffset::UTC).format(&Rfc3339)?,
        account_id: row.try_get("account_id")?,
    })
}

fn row_to_account(row: &PgRow) -> anyhow::Result<Account> {
    let state: String = row.try_get("state")?;
    let created_at: OffsetDateTime = row.try_get("created_at")?;
    Ok(Account {
        id: row.try_get("id")?,
        email: row.try_get("email")?,
        display_name: row.try_get("display_name")?,
        password_hash: row.try_get("password_hash")?,
        state: AccountState::parse(&state).ok_or_else(|| anyhow::anyhow!("bad account state {state}"))?,
        key_cap: row.try_get("key_cap")?,
        email_verified: row.try_get("email_verified")?,
        created_at: created_at.to_offset(time::UtcOffset::UTC).format(&Rfc3339)?,
    })
}

fn row_to_session(row: &PgRow) -> anyhow::Result<SessionRecord> {
    Ok(SessionRecord {
        token_hash: row.try_get("token_hash")?,
        account_id: row.try_get("account_id")?,
        csrf_token: row.try_get("csrf_token")?,
        created_at: row.try_get("created_at")?,
        last_seen_at: row.try_get("last_seen_at")?,
    })
}

impl Store for PgStore {
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            // sqlx holds an advisory lock while migrating, so fronts starting together are safe.
            sqlx::migrate!("../migrations/postgres").run(&self.pool).await?;
            Ok(())
        })
    }

    fn find_key(&self, key_hash: &str) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        let key_hash = key_hash.to_owned();
        Box::pin(async move {
            // The current secret, or a rolled key's old secret within its grace period.
            let row = sqlx::query(
                "SELECT k.*, a.state AS account_state FROM client_keys k LEFT JOIN accounts a ON a.id = k.account_id \
                 WHERE k.key_hash = $1 OR (k.previous_key_hash = $1 AND k.previous_valid_until > $2) LIMIT 1",
            )
            .bind(key_hash)
            .bind(unix_now())
            .fetch_optional(&self.pool)
            .await?;
            // A disabled account disables its keys (issue 32): they answer as disabled keys do.
            let mut key = row.as_ref().map(row_to_key).transpose()?;
            if let (Some(key), Some(row)) = (&mut key, &row)
                && row
                    .try_get::<Option<String>, _>("account_state")?
                    .is_some_and(|s| s != AccountState::Active.as_str())
            {
                key.state = KeyState::Disabled;
            }
            Ok(key)
        })
    }

    fn create_key(&self, key: NewKey) -> BoxFuture<'_, anyhow::Result<KeyRecord>> {
        Box::pin(self.insert_key(None, key))
    }

    fn list_keys(&self) -> BoxFuture<'_, anyhow::Result<Vec<KeyRecord>>> {
        Box::pin(async move {
            let rows = sqlx::query("SELECT * FROM client_keys ORDER BY created_at, id").fetch_all(&self.pool).await?;
            rows.iter().map(row_to_key).collect()
        })
    }

    fn set_key_state(&self, id_or_fingerprint: &str, state: KeyState) -> BoxFuture<'_, anyhow::Result<bool>> {
        let who = id_or_fingerprint.to_owned();
        Box::pin(async move {
            let done = sqlx::query("UPDATE client_keys SET state = $1 WHERE id = $2 OR fingerprint = $2")
                .bind(state.as_str())
                .bind(&who)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn settled_usage(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let (key_id, period) = (key_id.to_owned(), period.to_owned());
        Box::pin(async move {
            let used: Option<i64> = sqlx::query_scalar("SELECT used FROM key_usage WHERE key_id = $1 AND period = $2")
                .bind(key_id)
                .bind(period)
                .fetch_optional(&self.pool)
                .await?;
            Ok(used.unwrap_or(0))
        })
    }

    fn apply_ledger(&self, mut events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>> {
        Box::pin(async move {
            if events.is_empty() {
                return Ok(0);
            }
            // One transaction: every entry and its usage, or nothing. Locks are taken in a
            // fixed order, so concurrent overlapping batches (several fronts, a redelivery)
            // cannot deadlock: every ledger row by ascending event id (sorted here, across
            // chunks), then every usage row by ascending key and period (the BTreeMap's order,
            // and ADD_USAGE's ORDER BY).
            events.sort_unstable_by_key(|e| e.event_id);
            // A duplicate inside the batch would be skipped by ON CONFLICT anyway; not sending it
            // is cheaper.
            events.dedup_by_key(|e| e.event_id);
            let mut tx = self.pool.begin().await?;
            let mut applied = 0u64;
            let mut settled: BTreeMap<(String, String), i64> = BTreeMap::new();
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
                    let key = (row.try_get("key_id")?, row.try_get("period")?);
                    *settled.entry(key).or_default() += row.try_get::<i64, _>("credits")?;
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
            tx.commit().await?;
            Ok(applied)
        })
    }

    fn shared_secret(&self, name: &str) -> BoxFuture<'_, anyhow::Result<String>> {
        let name = name.to_owned();
        Box::pin(async move {
            let candidate = hex::encode(rand::random::<[u8; 32]>());
            sqlx::query("INSERT INTO shared_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
                .bind(&name)
                .bind(candidate)
                .execute(&self.pool)
                .await?;
            Ok(sqlx::query_scalar("SELECT value FROM shared_secrets WHERE name = $1")
                .bind(&name)
                .fetch_one(&self.pool)
                .await?)
        })
    }

    fn settled_by_others(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let (key_id, period, front) = (key_id.to_owned(), period.to_owned(), front.to_owned());
        Box::pin(async move {
            // One statement: one snapshot of both tables (READ COMMITTED takes it per statement).
            Ok(sqlx::query_scalar(
                "SELECT (COALESCE((SELECT used FROM key_usage WHERE key_id = $1 AND period = $2), 0) \
                 - COALESCE((SELECT SUM(credits) FROM ledger_entries WHERE key_id = $1 AND period = $2 AND front = $3), 0))::int8",
            )
            .bind(key_id)
            .bind(period)
            .bind(front)
            .fetch_one(&self.pool)
            .await?)
        })
    }

    fn settled_by_front(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let (key_id, period, front) = (key_id.to_owned(), period.to_owned(), front.to_owned());
        Box::pin(async move {
            // Served by the (key_id, period, front) index.
            Ok(sqlx::query_scalar(
                "SELECT COALESCE(SUM(credits), 0)::int8 FROM ledger_entries \
                 WHERE key_id = $1 AND period = $2 AND front = $3",
            )
            .bind(key_id)
            .bind(period)
            .bind(front)
            .fetch_one(&self.pool)
            .await?)
        })
    }

    fn ledger_count(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let (key_id, period) = (key_id.to_owned(), period.to_owned());
        Box::pin(async move {
            Ok(sqlx::query_scalar("SELECT COUNT(*) FROM ledger_entries WHERE key_id = $1 AND period = $2")
                .bind(key_id)
                .bind(period)
                .fetch_one(&self.pool)
                .await?)
        })
    }

    fn find_key_by_ref(&self, reference: &str) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        let reference = reference.to_owned();
        Box::pin(async move {
            let rows =
                sqlx::query("SELECT * FROM client_keys WHERE id = $1 OR fingerprint = $1 OR key_hash = $1 LIMIT 2")
                    .bind(&reference)
                    .fetch_all(&self.pool)
                    .await?;
            match rows.as_slice() {
                [] => Ok(None),
                [row] => row_to_key(row).map(Some),
                _ => anyhow::bail!("fingerprint {reference} matches more than one key; give the key's id instead"),
            }
        })
    }

    fn update_key(&self, id: &str, update: KeyUpdate) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        let id = id.to_owned();
        Box::pin(async move {
            // One UPDATE whatever the fields, as in SQLite: the two-valued options ("change it",
            // "to what") are a flag and a value, so "remove the purchase URL" and "leave it" stay
            // distinct. The explicit casts type the parameters when they are bound as NULL.
            let row = sqlx::query(
                "UPDATE client_keys SET \
                 plan = COALESCE($1::text, plan), \
                 monthly_allowance = COALESCE($2::int8, monthly_allowance), \
                 pricing_enabled = COALESCE($3::boolean, pricing_enabled), \
                 show_purchase_button = COALESCE($4::boolean, show_purchase_button), \
                 default_commission_percent = CASE WHEN $5::boolean THEN $6::float8 ELSE default_commission_percent END, \
                 purchase_url = CASE WHEN $7::boolean THEN $8::text ELSE purchase_url END, \
                 allowed_origins = COALESCE($9::jsonb, allowed_origins), \
                 label = COALESCE($10::text, label) \
                 WHERE id = $11 RETURNING *",
            )
            .bind(update.plan.map(Plan::as_str))
            .bind(update.plan.map(Plan::monthly_credits))
            .bind(update.pricing_enabled)
            .bind(update.show_purchase_button)
            .bind(update.default_commission_percent.is_some())
            .bind(update.default_commission_percent.flatten())
            .bind(update.purchase_url.is_some())
            .bind(update.purchase_url.flatten())
            .bind(update.allowed_origins.map(Json))
            .bind(update.label)
            .bind(&id)
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(row_to_key).transpose()
        })
    }

    fn usage_by_endpoint(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<Vec<(String, i64)>>> {
        let (key_id, period) = (key_id.to_owned(), period.to_owned());
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT endpoint, SUM(credits)::int8 AS credits FROM ledger_entries WHERE key_id = $1 AND period = $2 \
                 GROUP BY endpoint ORDER BY endpoint COLLATE \"C\"",
            )
            .bind(key_id)
            .bind(period)
            .fetch_all(&self.pool)
            .await?;
            rows.iter().map(|row| Ok((row.try_get("endpoint")?, row.try_get("credits")?))).collect()
        })
    }

    fn create_account(&self, account: NewAccount) -> BoxFuture<'_, anyhow::Result<Option<Account>>> {
        Box::pin(async move {
            let row = sqlx::query(
                "INSERT INTO accounts (id, email, display_name, password_hash, state, email_verified) \
                 VALUES ($1, $2, $3, $4, 'active', $5) ON CONFLICT (email) DO NOTHING RETURNING *",
            )
            .bind(uuid::Uuid::now_v7().to_string())
            .bind(&account.email)
            .bind(&account.display_name)
            .bind(&account.password_hash)
            .bind(account.email_verified)
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(row_to_account).transpose()
        })
    }

    fn find_account(&self, id_or_email: &str) -> BoxFuture<'_, anyhow::Result<Option<Account>>> {
        let who = id_or_email.to_owned();
        Box::pin(async move {
            let row = sqlx::query("SELECT * FROM accounts WHERE id = $1 OR email = $1")
                .bind(who)
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref().map(row_to_account).transpose()
        })
    }

    fn list_accounts(&self) -> BoxFuture<'_, anyhow::Result<Vec<Account>>> {
        Box::pin(async move {
            let rows = sqlx::query("SELECT * FROM accounts ORDER BY created_at, id").fetch_all(&self.pool).await?;
            rows.iter().map(row_to_account).collect()
        })
    }

    fn set_account_state(&self, account_id: &str, state: AccountState) -> BoxFuture<'_, anyhow::Result<bool>> {
        let account_id = account_id.to_owned();
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let done = sqlx::query("UPDATE accounts SET state = $1 WHERE id = $2")
                .bind(state.as_str())
                .bind(&account_id)
                .execute(&mut *tx)
                .await?;
            if state != AccountState::Active {
                sqlx::query("DELETE FROM account_sessions WHERE account_id = $1")
                    .bind(&account_id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn set_account_key_cap(&self, account_id: &str, cap: Option<i64>) -> BoxFuture<'_, anyhow::Result<bool>> {
        let account_id = account_id.to_owned();
        Box::pin(async move {
            let done = sqlx::query("UPDATE accounts SET key_cap = $1 WHERE id = $2")
                .bind(cap)
                .bind(account_id)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn set_password(&self, account_id: &str, password_hash: &str) -> BoxFuture<'_, anyhow::Result<bool>> {
        let (account_id, password_hash) = (account_id.to_owned(), password_hash.to_owned());
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let done = sqlx::query("UPDATE accounts SET password_hash = $1 WHERE id = $2")
                .bind(&password_hash)
                .bind(&account_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM account_sessions WHERE account_id = $1")
                .bind(&account_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn create_session(&self, session: SessionRecord) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO account_sessions (token_hash, account_id, csrf_token, created_at, last_seen_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&session.token_hash)
            .bind(&session.account_id)
            .bind(&session.csrf_token)
            .bind(session.created_at)
            .bind(session.last_seen_at)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn find_session(&self, token_hash: &str) -> BoxFuture<'_, anyhow::Result<Option<SessionRecord>>> {
        let token_hash = token_hash.to_owned();
        Box::pin(async move {
            let row = sqlx::query("SELECT * FROM account_sessions WHERE token_hash = $1")
                .bind(token_hash)
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref().map(row_to_session).transpose()
        })
    }

    fn touch_session(&self, token_hash: &str, now: i64) -> BoxFuture<'_, anyhow::Result<()>> {
        let token_hash = token_hash.to_owned();
        Box::pin(async move {
            sqlx::query("UPDATE account_sessions SET last_seen_at = $1 WHERE token_hash = $2")
                .bind(now)
                .bind(token_hash)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
    }

    fn delete_session(&self, token_hash: &str) -> BoxFuture<'_, anyhow::Result<()>> {
        let token_hash = token_hash.to_owned();
        Box::pin(async move {
            sqlx::query("DELETE FROM account_sessions WHERE token_hash = $1")
                .bind(token_hash)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
    }

    fn purge_sessions(&self, idle_before: i64, started_before: i64) -> BoxFuture<'_, anyhow::Result<u64>> {
        Box::pin(async move {
            let done = sqlx::query("DELETE FROM account_sessions WHERE last_seen_at < $1 OR created_at < $2")
                .bind(idle_before)
                .bind(started_before)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected())
        })
    }

    fn create_reset_token(
        &self,
        token_hash: &str,
        account_id: &str,
        expires_at: i64,
    ) -> BoxFuture<'_, anyhow::Result<()>> {
        let (token_hash, account_id) = (token_hash.to_owned(), account_id.to_owned());
        Box::pin(async move {
            sqlx::query("INSERT INTO password_resets (token_hash, account_id, expires_at) VALUES ($1, $2, $3)")
                .bind(token_hash)
                .bind(account_id)
                .bind(expires_at)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
    }

    fn take_reset_token(&self, token_hash: &str, now: i64) -> BoxFuture<'_, anyhow::Result<Option<String>>> {
        let token_hash = token_hash.to_owned();
        Box::pin(async move {
            let row: Option<(String, i64)> =
                sqlx::query_as("DELETE FROM password_resets WHERE token_hash = $1 RETURNING account_id, expires_at")
                    .bind(token_hash)
                    .fetch_optional(&self.pool)
                    .await?;
            Ok(row.filter(|(_, expires_at)| *expires_at > now).map(|(account, _)| account))
        })
    }

    fn create_verify_token(
        &self,
        token_hash: &str,
        account_id: &str,
        expires_at: i64,
    ) -> BoxFuture<'_, anyhow::Result<()>> {
        let (token_hash, account_id) = (token_hash.to_owned(), account_id.to_owned());
        Box::pin(async move {
            sqlx::query("INSERT INTO email_verifications (token_hash, account_id, expires_at) VALUES ($1, $2, $3)")
                .bind(token_hash)
                .bind(account_id)
                .bind(expires_at)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
    }

    fn take_verify_token(&self, token_hash: &str, now: i64) -> BoxFuture<'_, anyhow::Result<Option<String>>> {
        let token_hash = token_hash.to_owned();
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let row: Option<(String, i64)> = sqlx::query_as(
                "DELETE FROM email_verifications WHERE token_hash = $1 RETURNING account_id, expires_at",
            )
            .bind(token_hash)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(account) = row.filter(|(_, expires_at)| *expires_at > now).map(|(account, _)| account) else {
                tx.commit().await?;
                return Ok(None);
            };
            sqlx::query("UPDATE accounts SET email_verified = TRUE WHERE id = $1")
                .bind(&account)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(account))
        })
    }

    fn create_account_key(&self, account_id: &str, key: NewKey) -> BoxFuture<'_, anyhow::Result<KeyRecord>> {
        Box::pin(self.insert_key(Some(account_id.to_owned()), key))
    }

    fn account_keys(&self, account_id: &str) -> BoxFuture<'_, anyhow::Result<Vec<KeyRecord>>> {
        let account_id = account_id.to_owned();
        Box::pin(async move {
            let rows = sqlx::query("SELECT * FROM client_keys WHERE account_id = $1 ORDER BY created_at, id")
                .bind(account_id)
                .fetch_all(&self.pool)
                .await?;
            rows.iter().map(row_to_key).collect()
        })
    }

    fn roll_key(&self, key_id: &str, new_hash: &str, previous_valid_until: i64) -> BoxFuture<'_, anyhow::Result<bool>> {
        let (key_id, new_hash) = (key_id.to_owned(), new_hash.to_owned());
        Box::pin(async move {
            let done = sqlx::query(
                "UPDATE client_keys SET previous_key_hash = key_hash, previous_valid_until = $1, \
                 key_hash = $2, fingerprint = $3 WHERE id = $4",
            )
            .bind(previous_valid_until)
            .bind(&new_hash)
            .bind(fingerprint(&new_hash))
            .bind(key_id)
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn account_daily_usage(
        &self,
        account_id: &str,
        period: &str,
    ) -> BoxFuture<'_, anyhow::Result<Vec<(String, String, i64)>>> {
        let (account_id, period) = (account_id.to_owned(), period.to_owned());
        Box::pin(async move {
            let rows: Vec<(String, String, i64)> = sqlx::query_as(
                "SELECT to_char(l.charged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, l.endpoint, \
                 SUM(l.credits)::int8 FROM ledger_entries l JOIN client_keys k ON k.id = l.key_id \
                 WHERE k.account_id = $1 AND l.period = $2 GROUP BY day, l.endpoint ORDER BY day, l.endpoint",
            )
            .bind(account_id)
            .bind(period)
            .fetch_all(&self.pool)
            .await?;
            Ok(rows)
        })
    }

    fn recent_charges(&self, account_id: &str, limit: i64) -> BoxFuture<'_, anyhow::Result<Vec<Charge>>> {
        let account_id = account_id.to_owned();
        Box::pin(async move {
            let rows: Vec<(OffsetDateTime, String, String, i64)> = sqlx::query_as(
                "SELECT l.charged_at, k.id, l.endpoint, l.credits \
                 FROM ledger_entries l JOIN client_keys k ON k.id = l.key_id \
                 WHERE k.account_id = $1 ORDER BY l.charged_at DESC, l.event_id DESC LIMIT $2",
            )
            .bind(account_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
            rows.into_iter()
                .map(|(at, key_id, endpoint, credits)| {
                    Ok(Charge {
                        charged_at: at.to_offset(time::UtcOffset::UTC).format(&Rfc3339)?,
                        key_id,
                        endpoint,
                        credits,
                    })
                })
                .collect()
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
        };
        let batch = vec![e; 500];
        let chunks = chunks_by_size(&batch, event_bytes, STATEMENT_BYTES);
        assert!((4..=8).contains(&chunks.len()), "{} chunks", chunks.len());
    }
}
