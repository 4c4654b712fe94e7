//! Key and ledger storage behind one small trait, so standalone mode (SQLite) and the fleet
//! (Postgres) share every code path above it.

use futures::future::BoxFuture;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};
use std::str::FromStr;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::keys::{KeyKind, KeyRecord, KeyState, Plan, fingerprint};
use common::messages::LedgerEvent;

/// Settings of a key being created.
#[derive(Debug, Clone)]
pub struct NewKey {
    /// Hash of the key (see [`crate::keys::generate`]).
    pub key_hash: String,
    /// Embed or server.
    pub kind: KeyKind,
    /// Plan (sets the allowance).
    pub plan: Plan,
    /// Whether responses carry pricing.
    pub pricing_enabled: bool,
    /// Whether responses carry a purchase button.
    pub show_purchase_button: bool,
    /// Default commission, percent.
    pub default_commission_percent: Option<f64>,
    /// Purchase URL.
    pub purchase_url: Option<String>,
    /// Allowed origins.
    pub allowed_origins: Vec<String>,
    /// Label.
    pub label: String,
}

/// A change to a key's settings (`dsa keys set`): `None` leaves a setting as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyUpdate {
    /// New plan; also sets the monthly allowance to the plan's credits (spec §8).
    pub plan: Option<Plan>,
    /// Whether responses carry pricing.
    pub pricing_enabled: Option<bool>,
    /// Whether responses carry a purchase button.
    pub show_purchase_button: Option<bool>,
    /// Default commission, percent; `Some(None)` removes it.
    pub default_commission_percent: Option<Option<f64>>,
    /// Purchase URL; `Some(None)` removes it.
    pub purchase_url: Option<Option<String>>,
    /// The whole allowed-origins list (replaces the current one).
    pub allowed_origins: Option<Vec<String>>,
    /// Label.
    pub label: Option<String>,
}

impl KeyUpdate {
    /// Whether the update changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Storage of keys, settled usage and ledger entries.
pub trait Store: Send + Sync + 'static {
    /// Applies pending schema migrations.
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>>;
    /// The key whose hash is `key_hash`.
    fn find_key(&self, key_hash: &str) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>>;
    /// Creates a key.
    fn create_key(&self, key: NewKey) -> BoxFuture<'_, anyhow::Result<KeyRecord>>;
    /// Every key, oldest first.
    fn list_keys(&self) -> BoxFuture<'_, anyhow::Result<Vec<KeyRecord>>>;
    /// Sets a key's state (by id or fingerprint); false when no such key.
    fn set_key_state(&self, id_or_fingerprint: &str, state: KeyState) -> BoxFuture<'_, anyhow::Result<bool>>;
    /// Settled credits used by a key in a period (`YYYY-MM`).
    fn settled_usage(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>>;
    /// Applies ledger events in one transaction; an event id seen before is skipped. Returns how
    /// many were new.
    fn apply_ledger(&self, events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>>;
    /// The shared secret called `name`, created (random, 256 bits, hex) on first use; every
    /// process on this database gets the same value.
    fn shared_secret(&self, name: &str) -> BoxFuture<'_, anyhow::Result<String>>;
    /// Credits of `key_id`'s month settled by every front but `front`, read in one statement (one
    /// snapshot), so a batch of `front`'s charges settling meanwhile cannot skew it.
    fn settled_by_others(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>>;
    /// Credits of a key in a period charged by one front instance and already settled.
    fn settled_by_front(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>>;
    /// Number of ledger entries of a key in a period (tests, `dsa usage`).
    fn ledger_count(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>>;
    /// The key whose id, fingerprint or hash is `reference` (see [`crate::keys::lookup_ref`]).
    ///
    /// # Errors
    /// When a fingerprint matches more than one key (8 hex digits can collide): the message
    /// asks for the id.
    fn find_key_by_ref(&self, reference: &str) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>>;
    /// Changes a key's settings in one statement and returns the updated key; `None` when no key
    /// has that id.
    fn update_key(&self, id: &str, update: KeyUpdate) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>>;
    /// Credits a key was charged in a period (`YYYY-MM`) per endpoint, from the ledger entries,
    /// by endpoint name.
    fn usage_by_endpoint(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<Vec<(String, i64)>>>;
}

/// The standalone store: one SQLite file (WAL journal).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at a sqlx SQLite URL.
    ///
    /// # Errors
    /// When the URL is malformed or the file cannot be opened.
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(std::time::Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(max_connections.max(1)).connect_with(options).await?;
        Ok(Self { pool })
    }
}

fn row_to_key(row: &sqlx::sqlite::SqliteRow) -> anyhow::Result<KeyRecord> {
    let kind: String = row.try_get("kind")?;
    let state: String = row.try_get("state")?;
    let plan: String = row.try_get("plan")?;
    let origins: String = row.try_get("allowed_origins")?;
    let hash: String = row.try_get("key_hash")?;
    Ok(KeyRecord {
        id: row.try_get("id")?,
        fingerprint: fingerprint(&hash),
        kind: KeyKind::parse(&kind).ok_or_else(|| anyhow::anyhow!("bad key kind {kind}"))?,
        state: KeyState::parse(&state).ok_or_else(|| anyhow::anyhow!("bad key state {state}"))?,
        plan: Plan::parse(&plan).ok_or_else(|| anyhow::anyhow!("bad plan {plan}"))?,
        monthly_allowance: row.try_get("monthly_allowance")?,
        pricing_enabled: row.try_get::<i64, _>("pricing_enabled")? != 0,
        show_purchase_button: row.try_get::<i64, _>("show_purchase_button")? != 0,
        default_commission_percent: row.try_get("default_commission_percent")?,
        purchase_url: row.try_get("purchase_url")?,
        allowed_origins: serde_json::from_str(&origins)?,
        label: row.try_get("label")?,
        created_at: row.try_get("created_at")?,
    })
}

impl Store for SqliteStore {
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::migrate!("../migrations/sqlite").run(&self.pool).await?;
            Ok(())
        })
    }

    fn find_key(&self, key_hash: &str) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        let key_hash = key_hash.to_owned();
        Box::pin(async move {
            let row = sqlx::query("SELECT * FROM client_keys WHERE key_hash = ?")
                .bind(key_hash)
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref().map(row_to_key).transpose()
        })
    }

    fn create_key(&self, key: NewKey) -> BoxFuture<'_, anyhow::Result<KeyRecord>> {
        Box::pin(async move {
            let id = uuid::Uuid::now_v7().to_string();
            let now = OffsetDateTime::now_utc().format(&Rfc3339)?;
            sqlx::query(
                "INSERT INTO client_keys (id, key_hash, fingerprint, kind, state, plan, monthly_allowance, \
                 pricing_enabled, show_purchase_button, default_commission_percent, purchase_url, allowed_origins, \
                 label, created_at) VALUES (?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&id)
            .bind(&key.key_hash)
            .bind(fingerprint(&key.key_hash))
            .bind(key.kind.as_str())
            .bind(key.plan.as_str())
            .bind(key.plan.monthly_credits())
            .bind(i64::from(key.pricing_enabled))
            .bind(i64::from(key.show_purchase_button))
            .bind(key.default_commission_percent)
            .bind(&key.purchase_url)
            .bind(serde_json::to_string(&key.allowed_origins)?)
            .bind(&key.label)
            .bind(now)
            .execute(&self.pool)
            .await?;
            let row = sqlx::query("SELECT * FROM client_keys WHERE id = ?").bind(&id).fetch_one(&self.pool).await?;
            row_to_key(&row)
        })
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
            let done = sqlx::query("UPDATE client_keys SET state = ? WHERE id = ? OR fingerprint = ?")
                .bind(state.as_str())
                .bind(&who)
                .bind(&who)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn settled_usage(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let (key_id, period) = (key_id.to_owned(), period.to_owned());
        Box::pin(async move {
            let used: Option<i64> = sqlx::query_scalar("SELECT used FROM key_usage WHERE key_id = ? AND period = ?")
                .bind(key_id)
                .bind(period)
                .fetch_optional(&self.pool)
                .await?;
            Ok(used.unwrap_or(0))
        })
    }

    fn apply_ledger(&self, events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let mut applied = 0;
            for e in &events {
                let inserted = sqlx::query(
                    "INSERT INTO ledger_entries (event_id, key_id, period, endpoint, credits, charged_at, front) \
                     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING",
                )
                .bind(e.event_id.to_string())
                .bind(&e.key_id)
                .bind(&e.period)
                .bind(&e.endpoint)
                .bind(e.credits)
                .bind(e.charged_at.format(&Rfc3339)?)
                .bind(&e.front)
                .execute(&mut *tx)
                .await?;
                if inserted.rows_affected() == 1 {
                    applied += 1;
                    sqlx::query(
                        "INSERT INTO key_usage (key_id, period, used) VALUES (?, ?, ?) \
                         ON CONFLICT (key_id, period) DO UPDATE SET used = used + excluded.used",
                    )
                    .bind(&e.key_id)
                    .bind(&e.period)
                    .bind(e.credits)
                    .execute(&mut *tx)
                    .await?;
                }
            }
            tx.commit().await?;
            Ok(applied)
        })
    }

    fn shared_secret(&self, name: &str) -> BoxFuture<'_, anyhow::Result<String>> {
        let name = name.to_owned();
        Box::pin(async move {
            let candidate = hex::encode(rand::random::<[u8; 32]>());
            sqlx::query("INSERT INTO shared_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING")
                .bind(&name)
                .bind(candidate)
                .execute(&self.pool)
                .await?;
            Ok(sqlx::query_scalar("SELECT value FROM shared_secrets WHERE name = ?")
                .bind(&name)
                .fetch_one(&self.pool)
                .await?)
        })
    }

    fn settled_by_others(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let (key_id, period, front) = (key_id.to_owned(), period.to_owned(), front.to_owned());
        Box::pin(async move {
            Ok(sqlx::query_scalar(
                "SELECT COALESCE((SELECT used FROM key_usage WHERE key_id = ?1 AND period = ?2), 0) \
                 - COALESCE((SELECT SUM(credits) FROM ledger_entries WHERE key_id = ?1 AND period = ?2 AND front = ?3), 0)",
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
            Ok(sqlx::query_scalar(
                "SELECT COALESCE(SUM(credits), 0) FROM ledger_entries WHERE key_id = ? AND period = ? AND front = ?",
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
            Ok(sqlx::query_scalar("SELECT COUNT(*) FROM ledger_entries WHERE key_id = ? AND period = ?")
                .bind(key_id)
                .bind(period)
                .fetch_one(&self.pool)
                .await?)
        })
    }

    fn find_key_by_ref(&self, reference: &str) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        let reference = reference.to_owned();
        Box::pin(async move {
            let rows = sqlx::query("SELECT * FROM client_keys WHERE id = ? OR fingerprint = ? OR key_hash = ? LIMIT 2")
                .bind(&reference)
                .bind(&reference)
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
            // One UPDATE whatever the fields: the two-valued options ("change it", "to what") are
            // a flag and a value, so "remove the purchase URL" and "leave it" stay distinct.
            let origins = update.allowed_origins.as_ref().map(serde_json::to_string).transpose()?;
            let done = sqlx::query(
                "UPDATE client_keys SET \
                 plan = COALESCE(?, plan), \
                 monthly_allowance = COALESCE(?, monthly_allowance), \
                 pricing_enabled = COALESCE(?, pricing_enabled), \
                 show_purchase_button = COALESCE(?, show_purchase_button), \
                 default_commission_percent = CASE WHEN ? THEN ? ELSE default_commission_percent END, \
                 purchase_url = CASE WHEN ? THEN ? ELSE purchase_url END, \
                 allowed_origins = COALESCE(?, allowed_origins), \
                 label = COALESCE(?, label) \
                 WHERE id = ?",
            )
            .bind(update.plan.map(Plan::as_str))
            .bind(update.plan.map(Plan::monthly_credits))
            .bind(update.pricing_enabled.map(i64::from))
            .bind(update.show_purchase_button.map(i64::from))
            .bind(update.default_commission_percent.is_some())
            .bind(update.default_commission_percent.flatten())
            .bind(update.purchase_url.is_some())
            .bind(update.purchase_url.flatten())
            .bind(origins)
            .bind(update.label)
            .bind(&id)
            .execute(&self.pool)
            .await?;
            if done.rows_affected() == 0 {
                return Ok(None);
            }
            let row = sqlx::query("SELECT * FROM client_keys WHERE id = ?").bind(&id).fetch_one(&self.pool).await?;
            row_to_key(&row).map(Some)
        })
    }

    fn usage_by_endpoint(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<Vec<(String, i64)>>> {
        let (key_id, period) = (key_id.to_owned(), period.to_owned());
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT endpoint, SUM(credits) AS credits FROM ledger_entries WHERE key_id = ? AND period = ? \
                 GROUP BY endpoint ORDER BY endpoint",
            )
            .bind(key_id)
            .bind(period)
            .fetch_all(&self.pool)
            .await?;
            rows.iter().map(|row| Ok((row.try_get("endpoint")?, row.try_get("credits")?))).collect()
        })
    }
}
