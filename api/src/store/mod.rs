//! Key and ledger storage behind one small trait, so standalone mode (SQLite) and the fleet
//! (Postgres) share every code path above it.
//!
//! The SQL is written once, in [`SqlStore`], generic over the two sqlx drivers; what the dialects
//! do differently is the [`Dialect`] trait, implemented here for SQLite and in
//! [`crate::store::postgres`] for Postgres. Queries are checked at run time (`sqlx::query` +
//! `Row::try_get`), not by the `query!` macros, so building needs no database (see
//! `shared/notes/dependencies.md`, "sqlx"). The schemas stay in two migration folders,
//! `migrations/sqlite` and `migrations/postgres`, with the same tables and columns (a test
//! compares them).

pub mod bulk_jobs;
pub mod postgres;
pub mod webhooks;

use futures::future::BoxFuture;
use sqlx::decode::Decode;
use sqlx::encode::Encode;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult, SqliteSynchronous};
use sqlx::types::{Json, Type};
use sqlx::{AssertSqlSafe, ColumnIndex, Database, Executor, IntoArguments, Pool, Row, Sqlite, SqlitePool};
use std::str::FromStr;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use workers::ledger::SettleError;

use crate::events::{EventRecord, NewEvent};
use crate::front::keys::{KeyKind, KeyRecord, KeyState, Plan, fingerprint};
use crate::portal::accounts::{Account, AccountState, Charge, NewAccount, SessionRecord};
use crate::watches::{Lifecycle, NewWatch, WatchCheck, WatchRecord};
use crate::webhooks::{AttemptOutcome, ClaimedDelivery, DeliveryRecord, NewWebhook, WebhookRecord};
use common::messages::LedgerEvent;

/// The error of an account method a store does not implement (test doubles).
fn unsupported<T: Send + 'static>() -> BoxFuture<'static, anyhow::Result<T>> {
    Box::pin(async { anyhow::bail!("this store keeps no accounts") })
}

/// Settings of a key being created.
#[derive(Debug, Clone)]
pub struct NewKey {
    /// Hash of the key (see [`crate::front::keys::generate`]).
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

/// What makes committed ledger transactions durable: flushing the file their commits were written
/// to (`fdatasync`). Running one covers every transaction committed before it began, so the
/// standalone ledger writer runs one sync for all the batches committed while the last sync ran.
pub struct LedgerSync(Box<dyn FnOnce() -> std::io::Result<()> + Send>);

impl LedgerSync {
    /// A sync that runs `flush` (blocking; it runs on Tokio's blocking pool).
    pub fn new(flush: impl FnOnce() -> std::io::Result<()> + Send + 'static) -> Self {
        LedgerSync(Box::new(flush))
    }

    /// Runs the sync.
    ///
    /// # Errors
    /// The flush's error: the transactions it covers may not be durable.
    pub async fn run(self) -> std::io::Result<()> {
        tokio::task::spawn_blocking(self.0).await.unwrap_or_else(|e| Err(std::io::Error::other(e)))
    }
}

impl std::fmt::Debug for LedgerSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LedgerSync")
    }
}

/// Storage of keys, settled usage and ledger entries.
pub trait Store: Send + Sync + 'static {
    /// Applies pending schema migrations.
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>>;
    /// Closes the store's connections once the process is done with it (after the ledger has
    /// drained): the standalone SQLite file is then whole on its own, its write-ahead log
    /// checkpointed into it and removed by SQLite as its last connection closes, so a copy of the
    /// file alone (a backup of a stopped service) holds every charge. Waits for connections in
    /// use to come back; the caller bounds the wait. A store without connections does nothing.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
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
    /// many were new, once they are durable.
    fn apply_ledger(&self, events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>>;
    /// [`Store::apply_ledger`] returning as soon as the transaction is committed, with what makes
    /// it durable: the events are durable once the [`LedgerSync`] has run (`None`: already). The
    /// standalone ledger writer commits its next batch while the last one is synced. The events
    /// are borrowed: the writer keeps its batch to retry it, and a store that writes them as they
    /// are copies nothing first.
    fn commit_ledger<'a>(
        &'a self,
        events: &'a [LedgerEvent],
    ) -> BoxFuture<'a, anyhow::Result<(u64, Option<LedgerSync>)>> {
        Box::pin(async move { Ok((self.apply_ledger(events.to_vec()).await?, None)) })
    }
    /// The shared secret called `name`, created (random, 256 bits, hex) on first use; every
    /// process on this database gets the same value.
    fn shared_secret(&self, name: &str) -> BoxFuture<'_, anyhow::Result<String>>;
    /// Credits of `key_id`'s month settled by every front but `front`, read in one statement (one
    /// snapshot), so a batch of `front`'s charges settling meanwhile cannot skew it.
    fn settled_by_others(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>>;
    /// Credits of a key in a period charged by one front instance and already settled.
    fn settled_by_front(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>>;
    /// For each key of `key_ids` (in any order; an unknown id is left out): the credits of its
    /// `period` that front `front` counts besides its own, as `(key id, credits)`: settled by
    /// every other front, plus held by the key's open bulk jobs and not yet settled (those holds
    /// count for every front, whichever took them). What `crate::front::credits` re-reads every
    /// `fleet.credits_refresh_ms` for the keys a front serves.
    ///
    /// By default a [`Store::settled_by_others`] and a bulk-job read per key; the SQL stores read
    /// up to [`CREDIT_VIEWS_PER_STATEMENT`] keys in one statement (one snapshot per key: a bulk
    /// job's charge settling meanwhile is counted once, in the hold or in the settled credits).
    fn credit_views<'a>(
        &'a self,
        key_ids: &'a [String],
        period: &'a str,
        front: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Vec<(String, i64)>>> {
        Box::pin(async move {
            let mut views = Vec::with_capacity(key_ids.len());
            for key_id in key_ids {
                let settled = self.settled_by_others(key_id, period, front).await?;
                let held = match self.bulk_jobs() {
                    Some(jobs) => jobs.held_credits(key_id, period).await?,
                    None => 0,
                };
                views.push((key_id.clone(), settled + held));
            }
            Ok(views)
        })
    }
    /// Number of ledger entries of a key in a period (tests, `dsa usage`).
    fn ledger_count(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>>;
    /// The key whose id, fingerprint or hash is `reference` (see [`crate::front::keys::lookup_ref`]).
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

    // ---- Bulk jobs (issue 26, [`bulk_jobs`]): one accessor, the methods are its trait's.

    /// The store's bulk jobs; `None` for a store that keeps none (test doubles).
    fn bulk_jobs(&self) -> Option<&dyn bulk_jobs::BulkJobStore> {
        None
    }

    // ---- The account portal (`crate::portal`). Every method has a default that fails, so test
    // doubles that wrap a store for the metered path need not implement them.

    /// Creates an account; `None` when the e-mail address is taken.
    fn create_account(&self, account: NewAccount) -> BoxFuture<'_, anyhow::Result<Option<Account>>> {
        let _ = account;
        unsupported()
    }
    /// The account whose id or (lower-case) e-mail address is `id_or_email`.
    fn find_account(&self, id_or_email: &str) -> BoxFuture<'_, anyhow::Result<Option<Account>>> {
        let _ = id_or_email;
        unsupported()
    }
    /// Every account, oldest first.
    fn list_accounts(&self) -> BoxFuture<'_, anyhow::Result<Vec<Account>>> {
        unsupported()
    }
    /// Sets an account's state; disabling also ends its sessions. False when no such account.
    fn set_account_state(&self, account_id: &str, state: AccountState) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = (account_id, state);
        unsupported()
    }
    /// Sets the operator's cap on an account's active keys of each kind (`None`: the plan's).
    /// False when no such account.
    fn set_account_key_cap(&self, account_id: &str, cap: Option<i64>) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = (account_id, cap);
        unsupported()
    }
    /// Replaces an account's password hash and ends every session of the account.
    fn set_password(&self, account_id: &str, password_hash: &str) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = (account_id, password_hash);
        unsupported()
    }
    /// Stores a new session.
    fn create_session(&self, session: SessionRecord) -> BoxFuture<'_, anyhow::Result<()>> {
        let _ = session;
        unsupported()
    }
    /// The session whose token hashes to `token_hash` (expired or not: the caller decides).
    fn find_session(&self, token_hash: &str) -> BoxFuture<'_, anyhow::Result<Option<SessionRecord>>> {
        let _ = token_hash;
        unsupported()
    }
    /// Records activity on a session (its idle expiry restarts), unix seconds.
    fn touch_session(&self, token_hash: &str, now: i64) -> BoxFuture<'_, anyhow::Result<()>> {
        let _ = (token_hash, now);
        unsupported()
    }
    /// Ends (deletes) a session.
    fn delete_session(&self, token_hash: &str) -> BoxFuture<'_, anyhow::Result<()>> {
        let _ = token_hash;
        unsupported()
    }
    /// Deletes every session idle since before `idle_before` or started before `started_before`
    /// (unix s): expired sessions of people who never came back. Returns how many.
    fn purge_sessions(&self, idle_before: i64, started_before: i64) -> BoxFuture<'_, anyhow::Result<u64>> {
        let _ = (idle_before, started_before);
        unsupported()
    }
    /// Stores a one-time password-reset token (its hash) valid until `expires_at` (unix s).
    fn create_reset_token(
        &self,
        token_hash: &str,
        account_id: &str,
        expires_at: i64,
    ) -> BoxFuture<'_, anyhow::Result<()>> {
        let _ = (token_hash, account_id, expires_at);
        unsupported()
    }
    /// Consumes a reset token: deletes it and returns its account when it was still valid at
    /// `now` (unix s). A second use finds nothing.
    fn take_reset_token(&self, token_hash: &str, now: i64) -> BoxFuture<'_, anyhow::Result<Option<String>>> {
        let _ = (token_hash, now);
        unsupported()
    }
    /// Stores a one-time e-mail verification token for `account_id` (SHA-256 of the link's token).
    fn create_verify_token(
        &self,
        token_hash: &str,
        account_id: &str,
        expires_at: i64,
    ) -> BoxFuture<'_, anyhow::Result<()>> {
        let _ = (token_hash, account_id, expires_at);
        unsupported()
    }
    /// Consumes a verification token: deletes it and, when it was still valid at `now`, marks its
    /// account's address verified and returns the account.
    fn take_verify_token(&self, token_hash: &str, now: i64) -> BoxFuture<'_, anyhow::Result<Option<String>>> {
        let _ = (token_hash, now);
        unsupported()
    }
    /// Creates a key owned by an account.
    fn create_account_key(&self, account_id: &str, key: NewKey) -> BoxFuture<'_, anyhow::Result<KeyRecord>> {
        let _ = (account_id, key);
        unsupported()
    }
    /// The keys of an account, oldest first.
    fn account_keys(&self, account_id: &str) -> BoxFuture<'_, anyhow::Result<Vec<KeyRecord>>> {
        let _ = account_id;
        unsupported()
    }
    /// Gives a key a new secret (hash `new_hash`); the old secret keeps working until
    /// `previous_valid_until` (unix s). The id, and so the month's usage, stay. False when no key
    /// has that id.
    fn roll_key(&self, key_id: &str, new_hash: &str, previous_valid_until: i64) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = (key_id, new_hash, previous_valid_until);
        unsupported()
    }
    /// Credits charged to an account's keys in a period, per UTC day (`YYYY-MM-DD`) and endpoint.
    fn account_daily_usage(
        &self,
        account_id: &str,
        period: &str,
    ) -> BoxFuture<'_, anyhow::Result<Vec<(String, String, i64)>>> {
        let _ = (account_id, period);
        unsupported()
    }
    /// The latest `limit` charges to an account's keys, newest first.
    fn recent_charges(&self, account_id: &str, limit: i64) -> BoxFuture<'_, anyhow::Result<Vec<Charge>>> {
        let _ = (account_id, limit);
        unsupported()
    }

    // --- events (issue 25): the record that watches write and webhook deliveries carry ---------

    /// Records `event` unless an event with its id is already recorded (the id is stable per
    /// occurrence, [`crate::events::event_id`]). Returns whether it was new.
    fn emit_event(&self, event: NewEvent) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = event;
        unsupported()
    }

    /// A key's events in the order they were emitted, those after the cursor `after_seq` (0: from
    /// the first), about `subject` only when given, at most `limit`.
    fn list_events(
        &self,
        key_id: &str,
        subject: Option<&str>,
        after_seq: i64,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<EventRecord>>> {
        let _ = (key_id, subject, after_seq, limit);
        unsupported()
    }

    /// The event whose id is `id`, if it belongs to `key_id`.
    fn find_event(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<Option<EventRecord>>> {
        let _ = (key_id, id);
        unsupported()
    }
    // --- webhooks (issue 25): endpoints, deliveries and attempts (SQL in store/webhooks.rs) ----

    /// Registers a webhook; `None` when its key already has [`crate::webhooks::MAX_WEBHOOKS_PER_KEY`].
    fn create_webhook(&self, webhook: NewWebhook) -> BoxFuture<'_, anyhow::Result<Option<WebhookRecord>>> {
        let _ = webhook;
        unsupported()
    }

    /// A key's webhooks (not deleted), oldest first.
    fn list_webhooks(&self, key_id: &str) -> BoxFuture<'_, anyhow::Result<Vec<WebhookRecord>>> {
        let _ = key_id;
        unsupported()
    }

    /// One of a key's webhooks (not deleted).
    fn find_webhook(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<Option<WebhookRecord>>> {
        let _ = (key_id, id);
        unsupported()
    }

    /// Deletes one of a key's webhooks (nothing more is delivered to it); whether it existed.
    fn delete_webhook(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = (key_id, id);
        unsupported()
    }

    /// Replaces a webhook's secret by `secret`; the old one keeps signing until
    /// `previous_until_ms` (unix ms).
    fn rotate_webhook_secret(
        &self,
        key_id: &str,
        id: &str,
        secret: String,
        previous_until_ms: i64,
    ) -> BoxFuture<'_, anyhow::Result<Option<WebhookRecord>>> {
        let _ = (key_id, id, secret, previous_until_ms);
        unsupported()
    }

    /// Makes a (disabled) webhook active again; its pending deliveries resume.
    fn enable_webhook(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<Option<WebhookRecord>>> {
        let _ = (key_id, id);
        unsupported()
    }

    /// A webhook's deliveries, newest first, those before the cursor `before_seq`, at most `limit`.
    fn list_deliveries(
        &self,
        webhook_id: &str,
        before_seq: i64,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<DeliveryRecord>>> {
        let _ = (webhook_id, before_seq, limit);
        unsupported()
    }

    /// Makes a delivery due at `now_ms` (pending again if it had failed); whether it exists.
    fn retry_delivery(&self, webhook_id: &str, delivery_id: &str, now_ms: i64) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = (webhook_id, delivery_id, now_ms);
        unsupported()
    }

    /// Fans out up to `limit` undispatched events: one delivery per matching active webhook, the
    /// events marked dispatched, in one transaction. Returns the events dispatched.
    fn fan_out_events(&self, now_ms: i64, limit: i64) -> BoxFuture<'_, anyhow::Result<u64>> {
        let _ = (now_ms, limit);
        unsupported()
    }

    /// Deletes deliveries that ended (delivered or given up) before `before_ms`, with their
    /// attempts; pending ones stay whatever their age. Returns the deliveries deleted.
    fn prune_deliveries(&self, before_ms: i64) -> BoxFuture<'_, anyhow::Result<u64>> {
        let _ = before_ms;
        unsupported()
    }

    /// Claims up to `limit` due deliveries of active webhooks for `owner` until `lease_until_ms`.
    fn claim_deliveries(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<ClaimedDelivery>>> {
        let _ = (owner, now_ms, lease_until_ms, limit);
        unsupported()
    }

    /// Records attempts (webhook id, outcome) in one transaction and moves each delivery on (when
    /// the claim is still the attempt's); a webhook failing for `disable_after_ms` is disabled.
    fn record_attempts(
        &self,
        outcomes: Vec<(String, AttemptOutcome)>,
        disable_after_ms: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<webhooks::Recorded>>> {
        let _ = (outcomes, disable_after_ms);
        unsupported()
    }

    /// [`Store::record_attempts`] for one attempt.
    fn record_attempt(
        &self,
        webhook_id: &str,
        outcome: AttemptOutcome,
        disable_after_ms: i64,
    ) -> BoxFuture<'_, anyhow::Result<webhooks::Recorded>> {
        let batch = vec![(webhook_id.to_owned(), outcome)];
        Box::pin(async move {
            let recorded = self.record_attempts(batch, disable_after_ms).await?;
            recorded.into_iter().next().ok_or_else(|| anyhow::anyhow!("no attempt recorded"))
        })
    }

    // --- watches (issue 25): watched names, their due times and the scheduler's leases ---------

    /// Stores a new watch; `None` when the key already watches that domain (one watch per key
    /// and domain).
    fn create_watch(&self, watch: NewWatch) -> BoxFuture<'_, anyhow::Result<Option<WatchRecord>>> {
        let _ = watch;
        unsupported()
    }

    /// The watch `id` of `key_id`.
    fn find_watch(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<Option<WatchRecord>>> {
        let _ = (key_id, id);
        unsupported()
    }

    /// The watch of `key_id` on `domain`.
    fn find_watch_by_domain(&self, key_id: &str, domain: &str) -> BoxFuture<'_, anyhow::Result<Option<WatchRecord>>> {
        let _ = (key_id, domain);
        unsupported()
    }

    /// A key's watches in creation order, those after the id `after` (none: from the first), at
    /// most `limit`.
    fn list_watches(
        &self,
        key_id: &str,
        after: Option<&str>,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<WatchRecord>>> {
        let _ = (key_id, after, limit);
        unsupported()
    }

    /// How many watches a key holds.
    fn count_watches(&self, key_id: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let _ = key_id;
        unsupported()
    }

    /// Deletes the watch `id` of `key_id` (its events stay); false when there is none.
    fn delete_watch(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = (key_id, id);
        unsupported()
    }

    /// Leases up to `limit` watches due at `now` (unix s) whose lease is free or expired, for
    /// `owner` until `until`, earliest due first. Two processes never lease one watch at once.
    fn lease_due_watches(
        &self,
        owner: &str,
        now: i64,
        until: i64,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<WatchRecord>>> {
        let _ = (owner, now, until, limit);
        unsupported()
    }

    /// Writes a re-check's outcome and records its events, in one transaction, and frees the
    /// lease; false (nothing written) when `owner` no longer holds the lease or the watch is gone.
    fn finish_watch_check(
        &self,
        id: &str,
        owner: &str,
        check: WatchCheck,
        events: Vec<NewEvent>,
    ) -> BoxFuture<'_, anyhow::Result<bool>> {
        let _ = (id, owner, check, events);
        unsupported()
    }
}

/// A Rust type that a dialect binds as a parameter and reads back from a column.
pub trait SqlValue<DB: Database>:
    for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB> + Send + Sync + 'static
{
}

impl<DB: Database, T> SqlValue<DB> for T where
    T: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB> + Send + Sync + 'static
{
}

/// What differs between the store's two SQL dialects, in one place.
///
/// Every other statement is written once, in the [`Store`] implementation of [`SqlStore`]: the
/// two dialects agree on `$N` placeholders (sqlx binds SQLite's `$N` by number), `RETURNING`,
/// `ON CONFLICT … DO NOTHING`, `TRUE`, `CAST(… AS BIGINT)`, and on sqlx's mapping of `bool`
/// (SQLite `INTEGER` 0/1, Postgres `BOOLEAN`) and of [`Json`] (SQLite `TEXT`, Postgres `JSONB`).
/// What remains is below: how an instant is stored, the day of a charge, the migrations, and
/// settling a ledger batch (SQLite event by event; Postgres a hundred events per statement,
/// because many fronts settle into one database at once).
pub trait Dialect: Database {
    /// An instant as stored: RFC 3339 text in UTC (SQLite), `TIMESTAMPTZ` (Postgres).
    type Instant: SqlValue<Self>;

    /// `at` as stored.
    ///
    /// # Errors
    /// When it cannot be formatted (a year past 9999).
    fn instant(at: OffsetDateTime) -> anyhow::Result<Self::Instant>;

    /// A stored instant as the code above the store sees it: RFC 3339 text in UTC (Postgres keeps
    /// microseconds).
    ///
    /// # Errors
    /// When it cannot be formatted.
    fn rfc3339(at: Self::Instant) -> anyhow::Result<String>;

    /// SQL of the UTC day (`YYYY-MM-DD`) of `l.charged_at` (`ledger_entries AS l`).
    const CHARGE_DAY: &'static str;

    /// A scalar subquery of the credits settled for key `key_id`, period `period` and front
    /// `front` (SQL expressions: parameters or columns), NULL when none: one row of
    /// `key_usage_by_front` (Postgres, where each fleet front reads it every
    /// `fleet.credits_refresh_ms`), or the sum of those ledger entries over the index that covers
    /// it (SQLite: a standalone server reads it once per key and month, `dsa mcp` beside
    /// `dsa serve` every refresh, each its own few entries).
    fn settled_by_front_sql(key_id: &str, period: &str, front: &str) -> String;

    /// Rows a statement changed.
    fn rows_affected(done: &Self::QueryResult) -> u64;

    /// Applies pending migrations of `migrations/<dialect>`.
    fn migrate(pool: &Pool<Self>) -> BoxFuture<'_, anyhow::Result<()>>;

    /// [`Store::apply_ledger`] in this dialect, on `store`'s pool or its ledger connection.
    fn apply_ledger(store: &SqlStore<Self>, events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>>;

    /// [`Store::commit_ledger`] in this dialect: by default [`Dialect::apply_ledger`], durable
    /// on return.
    fn commit_ledger<'a>(
        store: &'a SqlStore<Self>,
        events: &'a [LedgerEvent],
    ) -> BoxFuture<'a, anyhow::Result<(u64, Option<LedgerSync>)>> {
        Box::pin(async move { Ok((Self::apply_ledger(store, events.to_vec()).await?, None)) })
    }

    /// The webhook fan-out's condition on `events`, as its partial index states it.
    const UNDISPATCHED: &'static str;

    /// Appended to a queue's `SELECT … LIMIT n` (of one table): skip rows another process holds.
    const SKIP_LOCKED: &'static str;

    /// The same for a `SELECT` over `webhook_deliveries AS d` joined to another table.
    const SKIP_LOCKED_OF_D: &'static str;
}

/// The store over one database of dialect `DB`: [`SqliteStore`] (standalone) or
/// [`crate::store::postgres::PgStore`] (the fleet).
pub struct SqlStore<DB: Database> {
    pool: Pool<DB>,
    /// The standalone ledger writer's own connection, opened on its first batch with the pool's
    /// options and outside the pool (SQLite): one writer on one connection keeps its page cache
    /// and prepared statements warm, where pooled connections in turn each found the database
    /// changed by the others and read their pages again. Reopened after an error.
    ledger_connection: std::sync::Arc<tokio::sync::Mutex<Option<DB::Connection>>>,
    /// The WAL checkpoints run beside the standalone ledger writer ([`LEDGER_EVENTS_PER_CHECKPOINT`]).
    checkpoints: std::sync::Arc<WalCheckpoints>,
    /// The write-ahead log the standalone ledger writer's commits go to (`None`: an in-memory
    /// database), learnt from SQLite when its connection is first opened ([`wal_sync`]).
    ledger_wal: std::sync::Arc<std::sync::OnceLock<Option<std::sync::Arc<WalFile>>>>,
}

/// Ledger events the standalone writer applies between two WAL checkpoints: about SQLite's own
/// rhythm (an automatic checkpoint once the WAL holds 1,000 pages; a batch writes about one page
/// per event, its table and index leaves).
pub const LEDGER_EVENTS_PER_CHECKPOINT: u64 = 1000;

/// The standalone ledger writer's WAL checkpoints, run on a pooled connection beside it (SQLite
/// "Write-Ahead Logging", §"Checkpointing": a passive checkpoint and a writer run at once).
#[derive(Debug, Default)]
struct WalCheckpoints {
    /// Events applied since the last checkpoint began.
    events_since: std::sync::atomic::AtomicU64,
    /// A checkpoint is running (one at a time).
    running: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// A checkpoint beside the writer finished: the writer copies the frames it committed
    /// meanwhile before its next batch ([`checkpoint_the_tail`]), so that batch restarts the WAL.
    tail_due: std::sync::atomic::AtomicBool,
    /// Checkpoints completed (tests).
    completed: std::sync::atomic::AtomicU64,
}

impl<DB: Database> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            ledger_connection: self.ledger_connection.clone(),
            checkpoints: self.checkpoints.clone(),
            ledger_wal: self.ledger_wal.clone(),
        }
    }
}

impl<DB: Database> std::fmt::Debug for SqlStore<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore").field("pool", &self.pool).finish()
    }
}

impl<DB: Database> SqlStore<DB> {
    /// The store over `pool` (each dialect's `connect` sets the pool up).
    pub(crate) fn from_pool(pool: Pool<DB>) -> Self {
        Self {
            pool,
            ledger_connection: std::sync::Arc::default(),
            checkpoints: std::sync::Arc::default(),
            ledger_wal: std::sync::Arc::default(),
        }
    }

    /// The connection pool (readiness checks; tests read the schema through it).
    pub fn pool(&self) -> &Pool<DB> {
        &self.pool
    }
}

/// SQLite's soft heap limit in the standalone process, bytes (`PRAGMA soft_heap_limit`): what all
/// connections' page caches may hold together before SQLite recycles pages rather than allocate.
pub const SQLITE_SOFT_HEAP_LIMIT: i64 = 8 << 20;

/// The standalone store: one SQLite file (WAL journal).
pub type SqliteStore = SqlStore<Sqlite>;

impl SqlStore<Sqlite> {
    /// Opens (creating if needed) the database at a sqlx SQLite URL.
    ///
    /// # Errors
    /// When the URL is malformed or the file cannot be opened.
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a commit is on disk before the ledger confirms a charge (a client may have its
            // 200); NORMAL in WAL mode may lose the last commits in a power loss (SQLite manual,
            // "PRAGMA synchronous").
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(std::time::Duration::from_secs(10))
            .foreign_keys(true)
            // One bound for the page caches of every connection together (a process-wide
            // setting): each connection's own cache holds up to about 2 MiB, and SQLite's memory
            // comes from the C allocator, outside jemalloc's purging, so caches that filled while
            // a large bulk job was uploaded and worked stayed resident (issue 26). Over this
            // limit SQLite reuses its least recently used cache pages instead of allocating.
            .pragma("soft_heap_limit", SQLITE_SOFT_HEAP_LIMIT.to_string());
        let pool = SqlitePoolOptions::new().max_connections(max_connections.max(1)).connect_with(options).await?;
        Ok(Self::from_pool(pool))
    }
}

impl Dialect for Sqlite {
    type Instant = String;

    fn instant(at: OffsetDateTime) -> anyhow::Result<String> {
        Ok(at.to_offset(time::UtcOffset::UTC).format(&Rfc3339)?)
    }

    fn rfc3339(at: String) -> anyhow::Result<String> {
        Ok(at)
    }

    const UNDISPATCHED: &'static str = "dispatched = 0";
    // One writer at a time: nothing to skip.
    const SKIP_LOCKED: &'static str = "";
    const SKIP_LOCKED_OF_D: &'static str = "";

    // charged_at is RFC 3339 in UTC, so its first 10 characters are the UTC day.
    const CHARGE_DAY: &'static str = "substr(l.charged_at, 1, 10)";

    fn settled_by_front_sql(key_id: &str, period: &str, front: &str) -> String {
        format!(
            "(SELECT SUM(e.credits) FROM ledger_entries e WHERE e.key_id = {key_id} AND e.period = {period} AND e.front = {front})"
        )
    }

    fn rows_affected(done: &SqliteQueryResult) -> u64 {
        done.rows_affected()
    }

    fn migrate(pool: &SqlitePool) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::migrate!("../migrations/sqlite").run(pool).await?;
            Ok(())
        })
    }

    fn apply_ledger(store: &SqlStore<Self>, events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>> {
        Box::pin(async move {
            let (applied, sync) = Self::commit_ledger(store, &events).await?;
            if let Some(sync) = sync {
                sync.run().await?;
            }
            Ok(applied)
        })
    }

    fn commit_ledger<'a>(
        store: &'a SqlStore<Self>,
        events: &'a [LedgerEvent],
    ) -> BoxFuture<'a, anyhow::Result<(u64, Option<LedgerSync>)>> {
        Box::pin(async move {
            if events.is_empty() {
                return Ok((0, None));
            }
            let mut connection = store.ledger_connection.lock().await;
            let open = match connection.take() {
                Some(open) => open,
                None => {
                    let mut open =
                        sqlx::ConnectOptions::connect(&ledger_writer_options(&store.pool.connect_options())).await?;
                    if store.ledger_wal.get().is_none() {
                        let wal = write_ahead_log(&mut open).await?;
                        let _ = store.ledger_wal.set(wal.map(|path| std::sync::Arc::new(WalFile::new(path))));
                    }
                    open
                }
            };
            let open = connection.insert(open);
            if store.checkpoints.tail_due.swap(false, std::sync::atomic::Ordering::AcqRel) {
                checkpoint_the_tail(open).await;
            }
            let applied = apply_sqlite_ledger(open, events).await;
            if applied.is_err() {
                // A connection in an unknown state is not used again. Closed before the error is
                // returned (dropped, it would close later on its own thread): the next batch's
                // connection never runs beside it, and an in-memory database shared by the pool
                // and this connection is gone once the pool is closed too.
                if let Some(failed) = connection.take() {
                    let _ = sqlx::Connection::close(failed).await;
                }
            }
            drop(connection);
            if applied.is_ok() {
                checkpoint_beside_the_writer(store, events.len());
            }
            Ok((applied?, store.ledger_wal.get().cloned().flatten().map(wal_sync)))
        })
    }
}

/// The write-ahead log of the database `connection` is open on: `<database>-wal`, or `None` for
/// an in-memory database (SQLite's `PRAGMA database_list` names no file).
///
/// # Errors
/// A file database not in WAL mode (the store always opens it in WAL mode): its commits would
/// not be made durable by [`wal_sync`].
async fn write_ahead_log(connection: &mut sqlx::SqliteConnection) -> anyhow::Result<Option<std::path::PathBuf>> {
    let file: String = sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
        .fetch_one(&mut *connection)
        .await?;
    if file.is_empty() {
        return Ok(None);
    }
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&mut *connection).await?;
    anyhow::ensure!(mode.eq_ignore_ascii_case("wal"), "the database {file} is in journal mode {mode}, not WAL");
    Ok(Some(std::path::PathBuf::from(format!("{file}-wal"))))
}

/// The sync that makes the standalone ledger writer's commits durable: `fdatasync` of the
/// database's write-ahead log (`wal`), where a WAL-mode commit writes its frames.
///
/// The writer's connection commits without syncing (`synchronous = NORMAL`,
/// [`ledger_writer_options`]), so its next transaction need not wait for the disk; the handlers
/// of a batch are answered only after a sync that began once their commit was written. A crash
/// loses no confirmed charge: a commit's frames and the WAL's header were all written before
/// that sync began, and SQLite's recovery keeps every transaction up to the last valid commit
/// frame (SQLite "Write-Ahead Logging"; "PRAGMA synchronous": NORMAL in WAL mode keeps the
/// database consistent and may lose only the last transactions, those not yet synced).
fn wal_sync(wal: std::sync::Arc<WalFile>) -> LedgerSync {
    LedgerSync::new(move || wal.sync())
}

/// The standalone ledger writer's write-ahead log, kept open between syncs ([`wal_sync`]):
/// opening and closing it for each sync were two system calls and a path lookup per commit.
#[derive(Debug)]
pub(crate) struct WalFile {
    path: std::path::PathBuf,
    open: std::sync::Mutex<Option<std::fs::File>>,
}

impl WalFile {
    fn new(path: std::path::PathBuf) -> Self {
        Self { path, open: std::sync::Mutex::new(None) }
    }

    /// `fdatasync` of the WAL. The file kept open is used while it still has a name: should
    /// SQLite have deleted the WAL (it does when its last connection closes) and made it again,
    /// the file flushed is the one at the path, which the commit went to; a WAL gone from the
    /// path is an error (`NotFound`), never a sync of the deleted file.
    fn sync(&self) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Taken out: kept again only after a sync that succeeded (after any error the next sync
        // opens the path afresh; the ledger stops charging after a failed sync anyway).
        let file = match open.take() {
            Some(file) if file.metadata()?.nlink() > 0 => file,
            _ => std::fs::File::open(&self.path)?,
        };
        file.sync_data()?;
        *open = Some(file);
        Ok(())
    }
}

/// The standalone ledger writer's connection options: the pool's, and
/// * **no automatic checkpoint** (`PRAGMA wal_autocheckpoint = 0`): SQLite runs one on the
///   connection whose commit takes the WAL past 1,000 pages, inside that commit, so every charge of
///   that batch waited while pages were copied into the database file and it was synced. The
///   writer's checkpoints run on a pooled connection beside it instead
///   ([`checkpoint_beside_the_writer`]);
/// * **statement journals in memory** (`PRAGMA temp_store = MEMORY`): a multi-row insert's
///   statement journal went to a temporary file once over 64 KiB (thousands of `pwrite`s a second
///   under load). It holds the pages one statement changes, at most a 512-row run's.
/// * **commits without a sync of their own** (`synchronous = NORMAL`): the ledger writer flushes
///   the WAL itself, beside its next transaction ([`wal_sync`]), and answers a batch only then;
/// * **a WAL of at most [`WAL_SIZE_LIMIT`] left after a restart** (`PRAGMA journal_size_limit`):
///   a WAL restarted from its start is overwritten in place (no new size to sync with each
///   commit), and one that grew larger (before [`checkpoint_the_tail`]) is cut back.
fn ledger_writer_options(pool: &SqliteConnectOptions) -> SqliteConnectOptions {
    pool.clone()
        .pragma("wal_autocheckpoint", "0")
        .pragma("temp_store", "memory")
        .pragma("journal_size_limit", WAL_SIZE_LIMIT.to_string())
        .synchronous(SqliteSynchronous::Normal)
}

/// Bytes of WAL file the ledger writer keeps when the WAL restarts (`PRAGMA journal_size_limit`):
/// room for a few checkpoint intervals of charges ([`LEDGER_EVENTS_PER_CHECKPOINT`], about 4 KiB
/// each when they commit one by one).
pub const WAL_SIZE_LIMIT: u64 = 64 * 1024 * 1024;

/// Notes `events` applied by the standalone ledger writer and, every
/// [`LEDGER_EVENTS_PER_CHECKPOINT`], starts a passive WAL checkpoint on a pooled connection (its
/// own thread) unless one is running. A checkpoint that fails is logged and the next one retries.
fn checkpoint_beside_the_writer(store: &SqlStore<Sqlite>, events: usize) {
    use std::sync::atomic::Ordering;
    let checkpoints = &store.checkpoints;
    let events = events as u64;
    if checkpoints.events_since.fetch_add(events, Ordering::AcqRel) + events < LEDGER_EVENTS_PER_CHECKPOINT
        || checkpoints.running.swap(true, Ordering::AcqRel)
    {
        return;
    }
    checkpoints.events_since.store(0, Ordering::Release);
    /// Clears `running` however the checkpoint's task ends.
    struct Running(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Running {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }
    let running = Running(checkpoints.running.clone());
    let (pool, checkpoints) = (store.pool.clone(), store.checkpoints.clone());
    tokio::spawn(async move {
        let _running = running;
        // (busy, WAL pages, pages checkpointed): SQLite's answer to the pragma.
        match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)").fetch_one(&pool).await {
            Ok((_, wal, copied)) => {
                checkpoints.tail_due.store(true, Ordering::Release);
                checkpoints.completed.fetch_add(1, Ordering::AcqRel);
                tracing::debug!(wal, copied, "WAL checkpoint beside the ledger writer");
            }
            Err(e) => tracing::warn!(error = %e, "WAL checkpoint failed; the next one retries"),
        }
    });
}

/// The second half of a checkpoint beside the writer, on the writer's own connection between two
/// batches: a passive checkpoint of the frames committed while the first half ran (a few hundred
/// at most), so that every frame of the WAL is in the database file when the writer's next
/// transaction begins, and that transaction writes from the start of the WAL again.
///
/// Why: SQLite restarts the WAL only at a write transaction that begins with every frame
/// checkpointed (SQLite "Write-Ahead Logging", §"Avoiding Excessively Large WAL Files"). Under a
/// steady flow of charges a checkpoint beside the writer never reaches the WAL's end (the writer
/// appended meanwhile), so the WAL was never restarted: it grew by 4 KiB per charge for as long
/// as the flow lasted (324 MB in a 5-second closed-loop run of the check bench), and every sync
/// of it also had to write the file's new size. Here no other writer exists, so the checkpoint
/// reaches the end unless a reader still reads an older snapshot (then the next one will).
/// A failure is logged; the next checkpoint retries.
async fn checkpoint_the_tail(connection: &mut sqlx::SqliteConnection) {
    match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)").fetch_one(&mut *connection).await {
        Ok((_, wal, copied)) => tracing::debug!(wal, copied, "WAL tail checkpointed by the ledger writer"),
        Err(e) => tracing::warn!(error = %e, "WAL tail checkpoint failed; the next one retries"),
    }
}

/// Applies `events` in one transaction on `connection` (the standalone ledger writer's):
/// [`Store::apply_ledger`]'s contract.
async fn apply_sqlite_ledger(connection: &mut sqlx::SqliteConnection, events: &[LedgerEvent]) -> anyhow::Result<u64> {
    // A batch in as few multi-row statements with bound parameters as its length allows: runs of
    // up to [`LARGEST_RUN`] events, each one `INSERT … VALUES (…), (…)` whose row count is a power
    // of two, the run padded to it by repeating its last event (a batch of 37: one statement of
    // 32 + 4 + 1 events and 27 repeats). Every text is prepared once on the writer's connection and
    // cached by sqlx (at most 10 texts). ON CONFLICT skips an event already applied, or repeated in
    // the batch (a padding row included); the trigger `ledger_entries_add_usage` (migration 0010)
    // adds each inserted entry's credits to its usage. Not one statement per event (each a round
    // trip to sqlx's SQLite thread), nor one JSON array unnested by `json_each` (SQLite re-read
    // each event's object once per column: a fifth of a cached check's instructions, issue 29).
    //
    // A batch of one run (up to 512 events: every batch but under a flood) is one statement,
    // which SQLite applies atomically in a transaction of its own, trigger included: no `BEGIN`
    // and `COMMIT` of ours (each a round trip to sqlx's SQLite thread), and no statement journal
    // (inside an explicit transaction SQLite copies every page a multi-row statement changes
    // into one, so that the statement alone can be undone: a tenth of the ledger's instructions
    // when batches were cut into runs 32 + 4 + 1, each its own statement).
    let runs: Vec<&[LedgerEvent]> = events.chunks(LARGEST_RUN).collect();
    if let [run] = runs.as_slice() {
        return Ok(ledger_insert(run)?.execute(&mut *connection).await?.rows_affected());
    }
    let mut tx = sqlx::Connection::begin(connection).await?;
    let mut applied = 0_u64;
    for run in runs {
        // The statement's own rows: a trigger's changes are not counted (SQLite, `changes()`).
        applied += ledger_insert(run)?.execute(&mut *tx).await?.rows_affected();
    }
    tx.commit().await?;
    Ok(applied)
}

/// The insert of one run of ledger events (1 to [`LARGEST_RUN`], [`ledger_insert_sql`]) with its
/// parameters bound, padded to a power of two rows by repeating its last event (which the
/// statement's ON CONFLICT skips).
///
/// # Errors
/// When a charge time cannot be written as RFC 3339.
fn ledger_insert(
    run: &[LedgerEvent],
) -> anyhow::Result<sqlx::query::Query<'static, Sqlite, sqlx::sqlite::SqliteArguments>> {
    let rows = run.len().next_power_of_two();
    let mut query = sqlx::query(AssertSqlSafe(ledger_insert_sql(rows)));
    let padding = run.last().into_iter().cycle().take(rows - run.len());
    for e in run.iter().chain(padding) {
        query = query
            .bind(e.event_id.to_string())
            .bind(e.key_id.as_str())
            .bind(e.period.as_str())
            .bind(e.endpoint.as_str())
            .bind(e.credits)
            .bind(Sqlite::instant(e.charged_at)?)
            .bind(e.front.as_str());
    }
    Ok(query)
}

/// The longest run of rows in one ledger statement, a power of two: the standalone ledger's
/// largest batch (512), 3,584 parameters (SQLite takes up to 32,766). A longer batch is split.
const LARGEST_RUN: usize = 512;

/// `INSERT INTO ledger_entries … VALUES` with `rows` rows of seven parameters, `rows` a power of
/// two up to [`LARGEST_RUN`] (every text is built on first use).
fn ledger_insert_sql(rows: usize) -> &'static str {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        (0..=LARGEST_RUN.ilog2())
            .map(|log| {
                let values = vec!["(?, ?, ?, ?, ?, ?, ?)"; 1_usize << log].join(", ");
                format!(
                    "INSERT INTO ledger_entries (event_id, key_id, period, endpoint, credits, charged_at, front) \
                     VALUES {values} ON CONFLICT (event_id) DO NOTHING"
                )
            })
            .collect()
    });
    debug_assert!(rows.is_power_of_two() && rows <= LARGEST_RUN, "a run of {rows} rows");
    texts.get(rows.max(1).ilog2() as usize).map_or("", String::as_str)
}

/// Keys whose credit views ([`Store::credit_views`]) one statement reads.
pub const CREDIT_VIEWS_PER_STATEMENT: usize = 128;

/// [`Store::credit_views`]'s statement for `keys` key ids: `$1` the period, `$2` the front, `$3…`
/// the ids; one row per known key with its credits `settled` by the other fronts and `held` by its
/// open bulk jobs and not yet settled, each in one snapshot (one statement).
fn credit_views_sql<DB: Dialect>(keys: usize) -> String {
    let ids = (0..keys).map(|i| format!("${}", i + 3)).collect::<Vec<_>>().join(", ");
    let by_front = DB::settled_by_front_sql("k.id", "$1", "$2");
    let by_job = DB::settled_by_front_sql("j.key_id", "j.period", "'bulk-job:' || j.id");
    let open = bulk_jobs::OPEN;
    format!(
        "SELECT k.id AS key_id, \
         CAST(COALESCE((SELECT s.used FROM key_usage s WHERE s.key_id = k.id AND s.period = $1), 0) \
              - COALESCE({by_front}, 0) AS BIGINT) AS settled, \
         CAST(COALESCE((SELECT SUM(j.held - COALESCE({by_job}, 0)) FROM bulk_jobs j \
              WHERE j.key_id = k.id AND j.period = $1 AND j.state IN {open}), 0) AS BIGINT) AS held \
         FROM client_keys k WHERE k.id IN ({ids})"
    )
}

/// Now, unix seconds (the roll grace is checked against the database host's wall clock).
pub(crate) fn unix_now() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

/// The two kinds of one-time token: the same columns, each in its own table.
#[derive(Debug, Clone, Copy)]
enum OneTimeToken {
    /// `password_resets`.
    PasswordReset,
    /// `email_verifications`: using it marks the account's address verified.
    EmailVerification,
}

impl OneTimeToken {
    fn insert(self) -> &'static str {
        match self {
            Self::PasswordReset => {
                "INSERT INTO password_resets (token_hash, account_id, expires_at) VALUES ($1, $2, $3)"
            }
            Self::EmailVerification => {
                "INSERT INTO email_verifications (token_hash, account_id, expires_at) VALUES ($1, $2, $3)"
            }
        }
    }

    /// DELETE … RETURNING: of two concurrent uses, only one gets the row.
    fn take(self) -> &'static str {
        match self {
            Self::PasswordReset => "DELETE FROM password_resets WHERE token_hash = $1 RETURNING account_id, expires_at",
            Self::EmailVerification => {
                "DELETE FROM email_verifications WHERE token_hash = $1 RETURNING account_id, expires_at"
            }
        }
    }

    /// What a valid use changes besides deleting the token (its account's id is `$1`).
    fn on_use(self) -> Option<&'static str> {
        match self {
            Self::PasswordReset => None,
            Self::EmailVerification => Some("UPDATE accounts SET email_verified = TRUE WHERE id = $1"),
        }
    }
}

impl<DB: Dialect> SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'n> &'n str: ColumnIndex<DB::Row>,
    // sqlx implements `Encode` for `Option<T>` once per driver, not for every database.
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
        .bind(key.kind.as_str().to_owned())
        .bind(key.plan.as_str().to_owned())
        .bind(key.plan.monthly_credits())
        .bind(key.pricing_enabled)
        .bind(key.show_purchase_button)
        .bind(key.default_commission_percent)
        .bind(key.purchase_url)
        .bind(Json(key.allowed_origins))
        .bind(key.label)
        .bind(DB::instant(OffsetDateTime::now_utc())?)
        .bind(account_id)
        .fetch_one(&self.pool)
        .await?;
        Self::key(&row)
    }

    /// Stores a one-time token of `kind`.
    async fn create_token(
        &self,
        kind: OneTimeToken,
        token_hash: String,
        account_id: String,
        expires_at: i64,
    ) -> anyhow::Result<()> {
        sqlx::query(kind.insert()).bind(token_hash).bind(account_id).bind(expires_at).execute(&self.pool).await?;
        Ok(())
    }

    /// Consumes a one-time token of `kind`: deletes it and, when it was still valid at `now` (unix
    /// s), applies its use and returns its account, in one transaction.
    async fn take_token(&self, kind: OneTimeToken, token_hash: String, now: i64) -> anyhow::Result<Option<String>> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(kind.take()).bind(token_hash).fetch_optional(&mut *tx).await?;
        let account = match row {
            Some(row) if row.try_get::<i64, _>("expires_at")? > now => Some(row.try_get::<String, _>("account_id")?),
            _ => None,
        };
        if let (Some(account), Some(statement)) = (&account, kind.on_use()) {
            sqlx::query(statement).bind(account).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(account)
    }

    /// A `client_keys` row.
    fn key(row: &DB::Row) -> anyhow::Result<KeyRecord> {
        let kind: String = row.try_get("kind")?;
        let state: String = row.try_get("state")?;
        let plan: String = row.try_get("plan")?;
        let hash: String = row.try_get("key_hash")?;
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
            created_at: DB::rfc3339(row.try_get("created_at")?)?,
            account_id: row.try_get("account_id")?,
            parsed_purchase_url: Default::default(),
        })
    }

    /// An `accounts` row.
    fn account(row: &DB::Row) -> anyhow::Result<Account> {
        let state: String = row.try_get("state")?;
        Ok(Account {
            id: row.try_get("id")?,
            email: row.try_get("email")?,
            display_name: row.try_get("display_name")?,
            password_hash: row.try_get("password_hash")?,
            state: AccountState::parse(&state).ok_or_else(|| anyhow::anyhow!("bad account state {state}"))?,
            key_cap: row.try_get("key_cap")?,
            email_verified: row.try_get("email_verified")?,
            created_at: DB::rfc3339(row.try_get("created_at")?)?,
        })
    }

    /// An `account_sessions` row.
    fn session(row: &DB::Row) -> anyhow::Result<SessionRecord> {
        Ok(SessionRecord {
            token_hash: row.try_get("token_hash")?,
            account_id: row.try_get("account_id")?,
            csrf_token: row.try_get("csrf_token")?,
            created_at: row.try_get("created_at")?,
            last_seen_at: row.try_get("last_seen_at")?,
        })
    }

    /// A `watches` row.
    fn watch(row: &DB::Row) -> anyhow::Result<WatchRecord> {
        let state: String = row.try_get("state")?;
        let Json(events) = row.try_get::<Json<Vec<String>>, _>("events")?;
        let Json(epp_status) = row.try_get::<Json<Vec<String>>, _>("epp_status")?;
        Ok(WatchRecord {
            id: row.try_get("id")?,
            key_id: row.try_get("key_id")?,
            domain: row.try_get("domain")?,
            events,
            note: row.try_get("note")?,
            state: Lifecycle::parse(&state).ok_or_else(|| anyhow::anyhow!("bad watch state {state}"))?,
            epp_status,
            expires_at: row.try_get("expires_at")?,
            predicted_drop_at: row.try_get("predicted_drop_at")?,
            evidence: row.try_get("evidence")?,
            transitions: row.try_get("transitions")?,
            expiring_for: row.try_get("expiring_for")?,
            last_checked_at: row.try_get("last_checked_at")?,
            next_check_at: row.try_get("next_check_at")?,
            failures: row.try_get("failures")?,
            charged_period: row.try_get("charged_period")?,
            created_at: row.try_get("created_at")?,
        })
    }

    /// An `events` row.
    fn event(row: &DB::Row) -> anyhow::Result<EventRecord> {
        let Json(data): Json<serde_json::Value> = row.try_get("data")?;
        Ok(EventRecord {
            seq: row.try_get("seq")?,
            id: row.try_get("id")?,
            key_id: row.try_get("key_id")?,
            event_type: row.try_get("type")?,
            subject: row.try_get("subject")?,
            occurred_at: DB::rfc3339(row.try_get("occurred_at")?)?,
            data,
        })
    }
}

impl<DB: Dialect> SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'n> &'n str: ColumnIndex<DB::Row>,
    String: SqlValue<DB>,
    i64: SqlValue<DB>,
{
    /// Credits: the SQL expression `credits` with `$1` the key id, `$2` the period and `$3` the
    /// front, read in one statement.
    fn credits_of(
        &self,
        credits: String,
        key_id: &str,
        period: &str,
        front: &str,
    ) -> impl Future<Output = anyhow::Result<i64>> + Send + 'static {
        let (pool, key_id, period, front) = (self.pool.clone(), key_id.to_owned(), period.to_owned(), front.to_owned());
        async move {
            let row = sqlx::query(AssertSqlSafe(format!("SELECT CAST({credits} AS BIGINT) AS credits")))
                .bind(key_id)
                .bind(period)
                .bind(front)
                .fetch_one(&pool)
                .await?;
            Ok(row.try_get("credits")?)
        }
    }
}

impl<DB: Dialect> Store for SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'n> &'n str: ColumnIndex<DB::Row>,
    // sqlx implements `Encode` for `Option<T>` once per driver, not for every database.
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
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        DB::migrate(&self.pool)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // The ledger writer's own connection first (it is outside the pool), then the pool;
            // SQLite checkpoints and removes the WAL when the last one closes.
            let ledger = self.ledger_connection.lock().await.take();
            if let Some(ledger) = ledger
                && let Err(e) = sqlx::Connection::close(ledger).await
            {
                tracing::warn!(error = %e, "closing the ledger writer's connection failed");
            }
            self.pool.close().await;
        })
    }

    fn bulk_jobs(&self) -> Option<&dyn bulk_jobs::BulkJobStore> {
        Some(self)
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
            let Some(row) = row else { return Ok(None) };
            let mut key = Self::key(&row)?;
            // A disabled account disables its keys (issue 32): they answer as disabled keys do.
            if row.try_get::<Option<String>, _>("account_state")?.is_some_and(|s| s != AccountState::Active.as_str()) {
                key.state = KeyState::Disabled;
            }
            Ok(Some(key))
        })
    }

    fn create_key(&self, key: NewKey) -> BoxFuture<'_, anyhow::Result<KeyRecord>> {
        Box::pin(self.insert_key(None, key))
    }

    fn list_keys(&self) -> BoxFuture<'_, anyhow::Result<Vec<KeyRecord>>> {
        Box::pin(async move {
            let rows = sqlx::query("SELECT * FROM client_keys ORDER BY created_at, id").fetch_all(&self.pool).await?;
            rows.iter().map(Self::key).collect()
        })
    }

    fn set_key_state(&self, id_or_fingerprint: &str, state: KeyState) -> BoxFuture<'_, anyhow::Result<bool>> {
        let who = id_or_fingerprint.to_owned();
        Box::pin(async move {
            let done = sqlx::query("UPDATE client_keys SET state = $1 WHERE id = $2 OR fingerprint = $2")
                .bind(state.as_str().to_owned())
                .bind(who)
                .execute(&self.pool)
                .await?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn settled_usage(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let (key_id, period) = (key_id.to_owned(), period.to_owned());
        Box::pin(async move {
            let row = sqlx::query("SELECT used FROM key_usage WHERE key_id = $1 AND period = $2")
                .bind(key_id)
                .bind(period)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|row| row.try_get("used")).transpose()?.unwrap_or(0))
        })
    }

    fn apply_ledger(&self, events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>> {
        DB::apply_ledger(self, events)
    }

    fn commit_ledger<'a>(
        &'a self,
        events: &'a [LedgerEvent],
    ) -> BoxFuture<'a, anyhow::Result<(u64, Option<LedgerSync>)>> {
        DB::commit_ledger(self, events)
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
            let row = sqlx::query("SELECT value FROM shared_secrets WHERE name = $1")
                .bind(name)
                .fetch_one(&self.pool)
                .await?;
            Ok(row.try_get("value")?)
        })
    }

    fn settled_by_others(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        // One statement: one snapshot of both tables (Postgres's READ COMMITTED takes it per
        // statement).
        let minus_front = format!(
            "COALESCE((SELECT used FROM key_usage WHERE key_id = $1 AND period = $2), 0) - COALESCE({}, 0)",
            DB::settled_by_front_sql("$1", "$2", "$3")
        );
        Box::pin(self.credits_of(minus_front, key_id, period, front))
    }

    fn settled_by_front(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let of_front = format!("COALESCE({}, 0)", DB::settled_by_front_sql("$1", "$2", "$3"));
        Box::pin(self.credits_of(of_front, key_id, period, front))
    }

    fn credit_views<'a>(
        &'a self,
        key_ids: &'a [String],
        period: &'a str,
        front: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Vec<(String, i64)>>> {
        Box::pin(async move {
            let mut views = Vec::with_capacity(key_ids.len());
            for chunk in key_ids.chunks(CREDIT_VIEWS_PER_STATEMENT) {
                // Padded to a power of two with the last id (a repeated id matches once), so the
                // statement has one of few texts (prepared once each per connection).
                let width = chunk.len().next_power_of_two();
                let mut query = sqlx::query(AssertSqlSafe(credit_views_sql::<DB>(width)))
                    .bind(period.to_owned())
                    .bind(front.to_owned());
                for i in 0..width {
                    query = query.bind(chunk[i.min(chunk.len() - 1)].clone());
                }
                for row in query.fetch_all(&self.pool).await? {
                    let settled: i64 = row.try_get("settled")?;
                    let held: i64 = row.try_get("held")?;
                    views.push((row.try_get("key_id")?, settled + held.max(0)));
                }
            }
            Ok(views)
        })
    }

    fn ledger_count(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let (key_id, period) = (key_id.to_owned(), period.to_owned());
        Box::pin(async move {
            let row = sqlx::query(
                "SELECT CAST(COUNT(*) AS BIGINT) AS entries FROM ledger_entries WHERE key_id = $1 AND period = $2",
            )
            .bind(key_id)
            .bind(period)
            .fetch_one(&self.pool)
            .await?;
            Ok(row.try_get("entries")?)
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
                [row] => Self::key(row).map(Some),
                _ => anyhow::bail!("fingerprint {reference} matches more than one key; give the key's id instead"),
            }
        })
    }

    fn update_key(&self, id: &str, update: KeyUpdate) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        let id = id.to_owned();
        Box::pin(async move {
            // One UPDATE whatever the fields: the two-valued options ("change it", "to what") are
            // a flag and a value, so "remove the purchase URL" and "leave it" stay distinct. sqlx
            // sends each parameter's type, so a NULL needs no cast.
            let row = sqlx::query(
                "UPDATE client_keys SET \
                 plan = COALESCE($1, plan), \
                 monthly_allowance = COALESCE($2, monthly_allowance), \
                 pricing_enabled = COALESCE($3, pricing_enabled), \
                 show_purchase_button = COALESCE($4, show_purchase_button), \
                 default_commission_percent = CASE WHEN $5 THEN $6 ELSE default_commission_percent END, \
                 purchase_url = CASE WHEN $7 THEN $8 ELSE purchase_url END, \
                 allowed_origins = COALESCE($9, allowed_origins), \
                 label = COALESCE($10, label) \
                 WHERE id = $11 RETURNING *",
            )
            .bind(update.plan.map(|plan| plan.as_str().to_owned()))
            .bind(update.plan.map(Plan::monthly_credits))
            .bind(update.pricing_enabled)
            .bind(update.show_purchase_button)
            .bind(update.default_commission_percent.is_some())
            .bind(update.default_commission_percent.flatten())
            .bind(update.purchase_url.is_some())
            .bind(update.purchase_url.flatten())
            .bind(update.allowed_origins.map(Json))
            .bind(update.label)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(Self::key).transpose()
        })
    }

    fn usage_by_endpoint(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<Vec<(String, i64)>>> {
        let (key_id, period) = (key_id.to_owned(), period.to_owned());
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT endpoint, CAST(SUM(credits) AS BIGINT) AS credits FROM ledger_entries \
                 WHERE key_id = $1 AND period = $2 GROUP BY endpoint",
            )
            .bind(key_id)
            .bind(period)
            .fetch_all(&self.pool)
            .await?;
            let mut usage = rows
                .iter()
                .map(|row| Ok((row.try_get("endpoint")?, row.try_get("credits")?)))
                .collect::<anyhow::Result<Vec<(String, i64)>>>()?;
            // By endpoint name, byte by byte: the same order whatever the database's collation.
            usage.sort();
            Ok(usage)
        })
    }

    fn create_account(&self, account: NewAccount) -> BoxFuture<'_, anyhow::Result<Option<Account>>> {
        Box::pin(async move {
            let row = sqlx::query(
                "INSERT INTO accounts (id, email, display_name, password_hash, state, created_at, email_verified) \
                 VALUES ($1, $2, $3, $4, 'active', $5, $6) ON CONFLICT (email) DO NOTHING RETURNING *",
            )
            .bind(uuid::Uuid::now_v7().to_string())
            .bind(account.email)
            .bind(account.display_name)
            .bind(account.password_hash)
            .bind(DB::instant(OffsetDateTime::now_utc())?)
            .bind(account.email_verified)
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(Self::account).transpose()
        })
    }

    fn find_account(&self, id_or_email: &str) -> BoxFuture<'_, anyhow::Result<Option<Account>>> {
        let who = id_or_email.to_owned();
        Box::pin(async move {
            let row = sqlx::query("SELECT * FROM accounts WHERE id = $1 OR email = $1")
                .bind(who)
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref().map(Self::account).transpose()
        })
    }

    fn list_accounts(&self) -> BoxFuture<'_, anyhow::Result<Vec<Account>>> {
        Box::pin(async move {
            let rows = sqlx::query("SELECT * FROM accounts ORDER BY created_at, id").fetch_all(&self.pool).await?;
            rows.iter().map(Self::account).collect()
        })
    }

    fn set_account_state(&self, account_id: &str, state: AccountState) -> BoxFuture<'_, anyhow::Result<bool>> {
        let account_id = account_id.to_owned();
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let done = sqlx::query("UPDATE accounts SET state = $1 WHERE id = $2")
                .bind(state.as_str().to_owned())
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
            Ok(DB::rows_affected(&done) > 0)
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
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn set_password(&self, account_id: &str, password_hash: &str) -> BoxFuture<'_, anyhow::Result<bool>> {
        let (account_id, password_hash) = (account_id.to_owned(), password_hash.to_owned());
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let done = sqlx::query("UPDATE accounts SET password_hash = $1 WHERE id = $2")
                .bind(password_hash)
                .bind(&account_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM account_sessions WHERE account_id = $1")
                .bind(&account_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn create_session(&self, session: SessionRecord) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO account_sessions (token_hash, account_id, csrf_token, created_at, last_seen_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(session.token_hash)
            .bind(session.account_id)
            .bind(session.csrf_token)
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
            row.as_ref().map(Self::session).transpose()
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
            Ok(DB::rows_affected(&done))
        })
    }

    fn create_reset_token(
        &self,
        token_hash: &str,
        account_id: &str,
        expires_at: i64,
    ) -> BoxFuture<'_, anyhow::Result<()>> {
        let (token_hash, account_id) = (token_hash.to_owned(), account_id.to_owned());
        Box::pin(self.create_token(OneTimeToken::PasswordReset, token_hash, account_id, expires_at))
    }

    fn take_reset_token(&self, token_hash: &str, now: i64) -> BoxFuture<'_, anyhow::Result<Option<String>>> {
        Box::pin(self.take_token(OneTimeToken::PasswordReset, token_hash.to_owned(), now))
    }

    fn create_verify_token(
        &self,
        token_hash: &str,
        account_id: &str,
        expires_at: i64,
    ) -> BoxFuture<'_, anyhow::Result<()>> {
        let (token_hash, account_id) = (token_hash.to_owned(), account_id.to_owned());
        Box::pin(self.create_token(OneTimeToken::EmailVerification, token_hash, account_id, expires_at))
    }

    fn take_verify_token(&self, token_hash: &str, now: i64) -> BoxFuture<'_, anyhow::Result<Option<String>>> {
        Box::pin(self.take_token(OneTimeToken::EmailVerification, token_hash.to_owned(), now))
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
            rows.iter().map(Self::key).collect()
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
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn account_daily_usage(
        &self,
        account_id: &str,
        period: &str,
    ) -> BoxFuture<'_, anyhow::Result<Vec<(String, String, i64)>>> {
        let (account_id, period) = (account_id.to_owned(), period.to_owned());
        Box::pin(async move {
            // The one statement with a dialect's fragment in it (a constant, never input).
            let statement = format!(
                "SELECT {day} AS day, l.endpoint AS endpoint, CAST(SUM(l.credits) AS BIGINT) AS credits \
                 FROM ledger_entries l JOIN client_keys k ON k.id = l.key_id \
                 WHERE k.account_id = $1 AND l.period = $2 GROUP BY day, l.endpoint",
                day = DB::CHARGE_DAY
            );
            let rows =
                sqlx::query(AssertSqlSafe(statement)).bind(account_id).bind(period).fetch_all(&self.pool).await?;
            let mut usage = rows
                .iter()
                .map(|row| Ok((row.try_get("day")?, row.try_get("endpoint")?, row.try_get("credits")?)))
                .collect::<anyhow::Result<Vec<(String, String, i64)>>>()?;
            usage.sort();
            Ok(usage)
        })
    }

    fn recent_charges(&self, account_id: &str, limit: i64) -> BoxFuture<'_, anyhow::Result<Vec<Charge>>> {
        let account_id = account_id.to_owned();
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT l.charged_at AS charged_at, k.id AS key_id, l.endpoint AS endpoint, l.credits AS credits \
                 FROM ledger_entries l JOIN client_keys k ON k.id = l.key_id \
                 WHERE k.account_id = $1 ORDER BY l.charged_at DESC, l.event_id DESC LIMIT $2",
            )
            .bind(account_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| {
                    Ok(Charge {
                        charged_at: DB::rfc3339(row.try_get("charged_at")?)?,
                        key_id: row.try_get("key_id")?,
                        endpoint: row.try_get("endpoint")?,
                        credits: row.try_get("credits")?,
                    })
                })
                .collect()
        })
    }

    fn emit_event(&self, event: NewEvent) -> BoxFuture<'_, anyhow::Result<bool>> {
        Box::pin(async move {
            anyhow::ensure!(event.data.is_object(), "an event's data is a JSON object");
            let done = sqlx::query(
                "INSERT INTO events (id, key_id, type, subject, occurred_at, data) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(event.id)
            .bind(event.key_id)
            .bind(event.event_type)
            .bind(event.subject)
            .bind(DB::instant(event.occurred_at)?)
            .bind(Json(event.data))
            .execute(&self.pool)
            .await?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn list_events(
        &self,
        key_id: &str,
        subject: Option<&str>,
        after_seq: i64,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<EventRecord>>> {
        let (key_id, subject) = (key_id.to_owned(), subject.map(str::to_owned));
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT * FROM events WHERE key_id = $1 AND ($2 IS NULL OR subject = $2) AND seq > $3 \
                 ORDER BY seq LIMIT $4",
            )
            .bind(key_id)
            .bind(subject)
            .bind(after_seq)
            .bind(limit.clamp(0, 1000))
            .fetch_all(&self.pool)
            .await?;
            rows.iter().map(Self::event).collect()
        })
    }

    fn find_event(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<Option<EventRecord>>> {
        let (key_id, id) = (key_id.to_owned(), id.to_owned());
        Box::pin(async move {
            let row = sqlx::query("SELECT * FROM events WHERE id = $1 AND key_id = $2")
                .bind(id)
                .bind(key_id)
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref().map(Self::event).transpose()
        })
    }
    // --- webhooks (issue 25) ---------------------------------------------------------------------

    fn create_webhook(&self, webhook: NewWebhook) -> BoxFuture<'_, anyhow::Result<Option<WebhookRecord>>> {
        Box::pin(self.wh_create(webhook))
    }

    fn list_webhooks(&self, key_id: &str) -> BoxFuture<'_, anyhow::Result<Vec<WebhookRecord>>> {
        Box::pin(self.wh_list(key_id.to_owned()))
    }

    fn find_webhook(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<Option<WebhookRecord>>> {
        Box::pin(self.wh_find(key_id.to_owned(), id.to_owned()))
    }

    fn delete_webhook(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<bool>> {
        Box::pin(self.wh_delete(key_id.to_owned(), id.to_owned()))
    }

    fn rotate_webhook_secret(
        &self,
        key_id: &str,
        id: &str,
        secret: String,
        previous_until_ms: i64,
    ) -> BoxFuture<'_, anyhow::Result<Option<WebhookRecord>>> {
        Box::pin(self.wh_rotate(key_id.to_owned(), id.to_owned(), secret, previous_until_ms))
    }

    fn enable_webhook(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<Option<WebhookRecord>>> {
        Box::pin(self.wh_enable(key_id.to_owned(), id.to_owned()))
    }

    fn list_deliveries(
        &self,
        webhook_id: &str,
        before_seq: i64,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<DeliveryRecord>>> {
        Box::pin(self.wh_deliveries(webhook_id.to_owned(), before_seq, limit))
    }

    fn retry_delivery(&self, webhook_id: &str, delivery_id: &str, now_ms: i64) -> BoxFuture<'_, anyhow::Result<bool>> {
        Box::pin(self.wh_retry(webhook_id.to_owned(), delivery_id.to_owned(), now_ms))
    }

    fn fan_out_events(&self, now_ms: i64, limit: i64) -> BoxFuture<'_, anyhow::Result<u64>> {
        Box::pin(self.wh_fan_out(now_ms, limit))
    }

    fn prune_deliveries(&self, before_ms: i64) -> BoxFuture<'_, anyhow::Result<u64>> {
        Box::pin(self.wh_prune(before_ms))
    }

    fn claim_deliveries(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<ClaimedDelivery>>> {
        Box::pin(self.wh_claim(owner.to_owned(), now_ms, lease_until_ms, limit))
    }

    fn record_attempts(
        &self,
        outcomes: Vec<(String, AttemptOutcome)>,
        disable_after_ms: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<webhooks::Recorded>>> {
        Box::pin(self.wh_record(outcomes, disable_after_ms))
    }

    fn create_watch(&self, watch: NewWatch) -> BoxFuture<'_, anyhow::Result<Option<WatchRecord>>> {
        Box::pin(async move {
            let row = sqlx::query(
                "INSERT INTO watches (id, key_id, domain, events, note, next_check_at, charged_period, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (key_id, domain) DO NOTHING RETURNING *",
            )
            .bind(watch.id)
            .bind(watch.key_id)
            .bind(watch.domain)
            .bind(Json(watch.events))
            .bind(watch.note)
            .bind(watch.next_check_at)
            .bind(watch.charged_period)
            .bind(watch.created_at)
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(Self::watch).transpose()
        })
    }

    fn find_watch(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<Option<WatchRecord>>> {
        let (key_id, id) = (key_id.to_owned(), id.to_owned());
        Box::pin(async move {
            let row = sqlx::query("SELECT * FROM watches WHERE id = $1 AND key_id = $2")
                .bind(id)
                .bind(key_id)
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref().map(Self::watch).transpose()
        })
    }

    fn find_watch_by_domain(&self, key_id: &str, domain: &str) -> BoxFuture<'_, anyhow::Result<Option<WatchRecord>>> {
        let (key_id, domain) = (key_id.to_owned(), domain.to_owned());
        Box::pin(async move {
            let row = sqlx::query("SELECT * FROM watches WHERE key_id = $1 AND domain = $2")
                .bind(key_id)
                .bind(domain)
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref().map(Self::watch).transpose()
        })
    }

    fn list_watches(
        &self,
        key_id: &str,
        after: Option<&str>,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<WatchRecord>>> {
        let (key_id, after) = (key_id.to_owned(), after.unwrap_or("").to_owned());
        Box::pin(async move {
            let rows = sqlx::query("SELECT * FROM watches WHERE key_id = $1 AND id > $2 ORDER BY id LIMIT $3")
                .bind(key_id)
                .bind(after)
                .bind(limit.clamp(0, 1000))
                .fetch_all(&self.pool)
                .await?;
            rows.iter().map(Self::watch).collect()
        })
    }

    fn count_watches(&self, key_id: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        let key_id = key_id.to_owned();
        Box::pin(async move {
            let row = sqlx::query("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM watches WHERE key_id = $1")
                .bind(key_id)
                .fetch_one(&self.pool)
                .await?;
            Ok(row.try_get("n")?)
        })
    }

    fn delete_watch(&self, key_id: &str, id: &str) -> BoxFuture<'_, anyhow::Result<bool>> {
        let (key_id, id) = (key_id.to_owned(), id.to_owned());
        Box::pin(async move {
            let done = sqlx::query("DELETE FROM watches WHERE id = $1 AND key_id = $2")
                .bind(id)
                .bind(key_id)
                .execute(&self.pool)
                .await?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn lease_due_watches(
        &self,
        owner: &str,
        now: i64,
        until: i64,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Vec<WatchRecord>>> {
        let owner = owner.to_owned();
        Box::pin(async move {
            // The lease condition is repeated outside the subquery: in Postgres, of two fronts
            // leasing at once, the second re-reads the row after the first's commit (READ
            // COMMITTED re-evaluates the UPDATE's WHERE on the new version) and skips it; SQLite
            // runs one writer at a time.
            let rows = sqlx::query(
                "UPDATE watches SET lease_owner = $1, lease_until = $2 \
                 WHERE id IN (SELECT id FROM watches WHERE next_check_at <= $3 \
                     AND (lease_until IS NULL OR lease_until <= $3) ORDER BY next_check_at LIMIT $4) \
                 AND next_check_at <= $3 AND (lease_until IS NULL OR lease_until <= $3) RETURNING *",
            )
            .bind(owner)
            .bind(until)
            .bind(now)
            .bind(limit.clamp(0, 10_000))
            .fetch_all(&self.pool)
            .await?;
            rows.iter().map(Self::watch).collect()
        })
    }

    fn finish_watch_check(
        &self,
        id: &str,
        owner: &str,
        check: WatchCheck,
        events: Vec<NewEvent>,
    ) -> BoxFuture<'_, anyhow::Result<bool>> {
        let (id, owner) = (id.to_owned(), owner.to_owned());
        Box::pin(async move {
            let mut tx = self.pool.begin().await?;
            let done = sqlx::query(
                "UPDATE watches SET state = $1, epp_status = $2, expires_at = $3, predicted_drop_at = $4, \
                 evidence = $5, transitions = $6, expiring_for = $7, last_checked_at = $8, next_check_at = $9, \
                 failures = $10, charged_period = $11, lease_owner = NULL, lease_until = NULL \
                 WHERE id = $12 AND lease_owner = $13",
            )
            .bind(check.state.as_str().to_owned())
            .bind(Json(check.epp_status))
            .bind(check.expires_at)
            .bind(check.predicted_drop_at)
            .bind(check.evidence)
            .bind(check.transitions)
            .bind(check.expiring_for)
            .bind(check.last_checked_at)
            .bind(check.next_check_at)
            .bind(check.failures)
            .bind(check.charged_period)
            .bind(id)
            .bind(owner)
            .execute(&mut *tx)
            .await?;
            if DB::rows_affected(&done) == 0 {
                tx.rollback().await?;
                return Ok(false);
            }
            for event in events {
                bulk_jobs::insert_event(&mut tx, event).await?;
            }
            tx.commit().await?;
            Ok(true)
        })
    }
}

/// The ledger consumer's view of the store ([`workers::ledger`]): [`Store::apply_ledger`], with
/// the store's failures sorted into data it refuses (the event is terminated) and trouble of its
/// own (the event is redelivered).
impl workers::ledger::LedgerStore for dyn Store {
    fn settle(&self, events: Vec<LedgerEvent>) -> BoxFuture<'_, Result<u64, SettleError>> {
        Box::pin(async move {
            self.apply_ledger(events)
                .await
                .map_err(|e| if refused_as_data(&e) { SettleError::Refused(e) } else { SettleError::Unavailable(e) })
        })
    }
}

/// Whether the database refused the data, so that it can never be applied (a key that does not
/// exist, a value out of range or breaking a CHECK), rather than failed (connection lost, pool
/// timed out, a serialisation failure).
fn refused_as_data(error: &anyhow::Error) -> bool {
    use sqlx::error::ErrorKind;
    error.chain().any(|cause| {
        cause.downcast_ref::<sqlx::Error>().and_then(sqlx::Error::as_database_error).is_some_and(|db| {
            matches!(db.kind(), ErrorKind::ForeignKeyViolation | ErrorKind::NotNullViolation | ErrorKind::CheckViolation)
                // SQLSTATE class 22, data exception (PostgreSQL manual, Appendix A).
                || db.code().is_some_and(|code| code.starts_with("22"))
        })
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Issue 32: a charge answered 200 must survive a power loss, so every connection of the
    /// standalone store commits with `synchronous = FULL` (2), not NORMAL (1).
    #[tokio::test]
    async fn sqlite_commits_are_synchronous_full() {
        let dir = std::env::temp_dir().join(format!("dsa-sync-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let store = SqliteStore::connect(&format!("sqlite://{}", dir.join("dsa.db").display()), 2).await.expect("open");
        let level: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&store.pool).await.expect("pragma");
        assert_eq!(level, 2, "PRAGMA synchronous");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A new server key on the Free plan in `store`.
    async fn free_key(store: &SqliteStore) -> KeyRecord {
        let (_, key_hash) = crate::front::keys::generate(KeyKind::Server);
        store
            .create_key(NewKey {
                key_hash,
                kind: KeyKind::Server,
                plan: Plan::Free,
                pricing_enabled: false,
                show_purchase_button: false,
                default_commission_percent: None,
                purchase_url: None,
                allowed_origins: Vec::new(),
                label: String::new(),
            })
            .await
            .expect("key")
    }

    /// A charge of `credits` on `key_id` for November 2026's `check`, with a fresh event id
    /// (the ledger writer's tests use it too).
    pub(crate) fn charge(key_id: &str, credits: i64) -> LedgerEvent {
        LedgerEvent {
            event_id: uuid::Uuid::now_v7(),
            key_id: key_id.to_owned(),
            period: "2026-11".into(),
            endpoint: "check".into(),
            credits,
            charged_at: OffsetDateTime::now_utc(),
            front: "front-1".into(),
            request_id: None,
        }
    }

    /// Issue 29: the standalone ledger writer's connection commits without a sync of its own
    /// (NORMAL: the writer flushes the WAL itself, [`Store::commit_ledger`]), never checkpoints
    /// inside a commit and keeps statement journals in memory; its WAL is copied into the
    /// database file by checkpoints beside it, every [`LEDGER_EVENTS_PER_CHECKPOINT`] events.
    #[tokio::test]
    async fn the_ledger_writer_checkpoints_beside_itself() {
        let dir = std::env::temp_dir().join(format!("dsa-checkpoint-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("dsa.db");
        let store = SqliteStore::connect(&format!("sqlite://{}", file.display()), 2).await.expect("open");
        store.migrate().await.expect("migrate");
        let key = free_key(&store).await;
        // Everything so far in the database file: from here only a checkpoint makes it grow.
        let _: (i64, i64, i64) =
            sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)").fetch_one(&store.pool).await.expect("checkpoint");
        let before = std::fs::metadata(&file).expect("file").len();
        let events = |n: usize| -> Vec<LedgerEvent> { (0..n).map(|_| charge(&key.id, 1)).collect() };
        assert_eq!(store.apply_ledger(events(600)).await.expect("apply"), 600);
        assert_eq!(store.checkpoints.completed.load(std::sync::atomic::Ordering::Acquire), 0);
        {
            let mut writer = store.ledger_connection.lock().await;
            let writer = writer.as_mut().expect("the writer's connection");
            for (pragma, expected) in [
                ("synchronous", 1),
                ("wal_autocheckpoint", 0),
                ("temp_store", 2),
                ("journal_size_limit", WAL_SIZE_LIMIT as i64),
            ] {
                let value: i64 = sqlx::query_scalar(AssertSqlSafe(format!("PRAGMA {pragma}")))
                    .fetch_one(&mut *writer)
                    .await
                    .expect("pragma");
                assert_eq!(value, expected, "PRAGMA {pragma} on the ledger writer's connection");
            }
        }
        assert_eq!(std::fs::metadata(&file).expect("file").len(), before, "no checkpoint before 1,000 events");
        assert_eq!(store.apply_ledger(events(600)).await.expect("apply"), 600);
        let waited = std::time::Instant::now();
        while store.checkpoints.completed.load(std::sync::atomic::Ordering::Acquire) == 0 {
            assert!(waited.elapsed() < std::time::Duration::from_secs(10), "no checkpoint after 1,200 events");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(std::fs::metadata(&file).expect("file").len() > before, "the ledger's pages are in the database file");
        assert_eq!(store.settled_usage(&key.id, "2026-11").await.expect("usage"), 1200);
        // A commit comes with the sync of the database's WAL; a sync of a WAL that is not there
        // fails (its commits are not confirmed), never passes silently.
        let (applied, sync) = store.commit_ledger(&events(3)).await.expect("commit");
        assert_eq!(applied, 3);
        sync.expect("a file database's commit needs its WAL synced").run().await.expect("sync");
        let wal = store.ledger_wal.get().cloned().flatten().expect("learnt");
        assert_eq!(wal.path, dir.join("dsa.db-wal"));
        let gone = wal_sync(std::sync::Arc::new(WalFile::new(dir.join("no-such.db-wal"))));
        assert_eq!(gone.run().await.expect_err("no WAL").kind(), std::io::ErrorKind::NotFound);
        // The WAL is kept open between syncs, but a WAL deleted from under it is not synced as if
        // it were still there: the next sync fails until a WAL is at the path again.
        let kept = std::sync::Arc::new(WalFile::new(dir.join("kept.db-wal")));
        std::fs::write(&kept.path, b"frames").expect("write");
        wal_sync(kept.clone()).run().await.expect("sync");
        wal_sync(kept.clone()).run().await.expect("sync of the file kept open");
        std::fs::remove_file(&kept.path).expect("remove");
        let deleted = wal_sync(kept.clone()).run().await.expect_err("the WAL was deleted");
        assert_eq!(deleted.kind(), std::io::ErrorKind::NotFound);
        std::fs::write(&kept.path, b"new frames").expect("write");
        wal_sync(kept.clone()).run().await.expect("sync of the new WAL");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 29: under a steady flow of charges the WAL restarts after each checkpoint (the
    /// writer checkpoints the tail the checkpoint beside it left, [`checkpoint_the_tail`]) rather
    /// than growing by a few KiB per charge for as long as the flow lasts. Without the tail
    /// checkpoint, 16,000 charges in batches of 4 left a WAL of 94 MiB, every commit appended;
    /// with it, 6.4 MiB (17 MiB on a loaded machine), most commits written over old frames.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_ledger_wal_restarts_under_a_steady_flow_of_charges() {
        let dir = std::env::temp_dir().join(format!("dsa-wal-restart-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("dsa.db");
        let store = SqliteStore::connect(&format!("sqlite://{}", file.display()), 2).await.expect("open");
        store.migrate().await.expect("migrate");
        let key = free_key(&store).await;
        let wal = dir.join("dsa.db-wal");
        let (mut largest, mut frames_written, mut in_place) = (0_u64, 0_u64, 0_u32);
        for _ in 0..4_000 {
            let batch: Vec<_> = (0..4).map(|_| charge(&key.id, 1)).collect();
            let before = std::fs::metadata(&wal).map_or(0, |m| m.len());
            let (applied, _sync) = store.commit_ledger(&batch).await.expect("commit");
            assert_eq!(applied, 4);
            let after = std::fs::metadata(&wal).map_or(0, |m| m.len());
            frames_written += after.saturating_sub(before);
            // A commit that left the file's size alone wrote over frames already checkpointed: the
            // WAL had restarted. A WAL that never restarts grows with every commit.
            in_place += u32::from(after == before && before > 0);
            largest = largest.max(after);
        }
        let completed = store.checkpoints.completed.load(std::sync::atomic::Ordering::Acquire);
        println!(
            "[wal] 16,000 charges in batches of 4: {completed} checkpoints, WAL at most {:.1} MiB (the file grew by {:.1} MiB in all), {in_place} of 4,000 commits written over checkpointed frames",
            largest as f64 / 1048576.0,
            frames_written as f64 / 1048576.0
        );
        assert!(completed >= 4, "checkpoints ran beside the writer: {completed}");
        // Measured: 2,000+ commits in place and at most 6–17 MiB (17 on a loaded machine, where the
        // checkpoints beside the writer lag; once 1,396 in place and 62 MiB, with the rest of the
        // crate's tests sharing two cores); without the tail checkpoint none and 94 MiB. The
        // commits written in place are what tells a WAL that restarts; the size bound only
        // catches one that grows without end.
        assert!(in_place >= 1_000, "the WAL restarted: only {in_place} commits were written in place");
        assert!(largest < 80 * 1024 * 1024, "the WAL restarted: it reached {largest} bytes");
        assert_eq!(store.settled_usage(&key.id, "2026-11").await.expect("usage"), 16_000);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 29: a front's own settled charges are summed over the ledger index that covers
    /// them (`key_id, period, front, credits`, migration 0011), reading that front's entries
    /// only, not every entry of the key's month, nor the table; the index replaced the
    /// `(key_id, period)` one, so a charge still updates one index.
    #[tokio::test]
    async fn a_fronts_settled_part_is_read_from_its_covering_index() {
        let store = SqliteStore::connect("sqlite::memory:", 1).await.expect("open");
        store.migrate().await.expect("migrate");
        let statement = format!(
            "EXPLAIN QUERY PLAN SELECT CAST(COALESCE({}, 0) AS BIGINT)",
            Sqlite::settled_by_front_sql("'k'", "'2026-11'", "'front-1'")
        );
        let plan: Vec<(i64, i64, i64, String)> =
            sqlx::query_as(AssertSqlSafe(statement)).fetch_all(&store.pool).await.expect("plan");
        let plan: Vec<&str> = plan.iter().map(|(_, _, _, detail)| detail.as_str()).collect();
        assert!(
            plan.iter().any(|d| d
                .contains("USING COVERING INDEX ledger_entries_key_period_front (key_id=? AND period=? AND front=?)")),
            "{plan:?}"
        );
        let indexes: Vec<(String,)> = sqlx::query_as(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ledger_entries' AND sql IS NOT NULL",
        )
        .fetch_all(&store.pool)
        .await
        .expect("indexes");
        assert_eq!(indexes, [("ledger_entries_key_period_front".to_owned(),)], "one index beside the primary key");
        let key = free_key(&store).await;
        let mut theirs = charge(&key.id, 5);
        theirs.front = "front-2".into();
        assert_eq!(store.apply_ledger(vec![charge(&key.id, 2), charge(&key.id, 3), theirs]).await.expect("apply"), 3);
        assert_eq!(store.settled_by_front(&key.id, "2026-11", "front-1").await.expect("mine"), 5);
        assert_eq!(store.settled_by_others(&key.id, "2026-11", "front-1").await.expect("theirs"), 5);
        assert_eq!(store.settled_by_others(&key.id, "2026-11", "front-3").await.expect("all"), 10);
    }

    /// Issue 29: a front's credit views of many keys come from one statement per
    /// [`CREDIT_VIEWS_PER_STATEMENT`] keys and equal the per-key reads (the others' settled
    /// credits plus the open bulk jobs' unsettled holds); an unknown id is left out.
    #[tokio::test]
    async fn credit_views_of_many_keys_equal_the_per_key_reads() {
        let store = SqliteStore::connect("sqlite::memory:", 1).await.expect("open");
        store.migrate().await.expect("migrate");
        let mut keys = Vec::new();
        let mut events = Vec::new();
        for i in 0..(CREDIT_VIEWS_PER_STATEMENT as i64 + 3) {
            let key = free_key(&store).await;
            let mut theirs = charge(&key.id, 1 + i % 4);
            theirs.front = "front-2".into();
            events.extend([charge(&key.id, 2), theirs]);
            keys.push(key.id);
        }
        // An open job of the first key holding 10 credits, 3 of them settled; a finished one.
        for (id, state) in [("job-open", "running"), ("job-done", "done")] {
            sqlx::query("INSERT INTO bulk_jobs (id, key_id, period, state, held, created_at) VALUES (?, ?, '2026-11', ?, 10, 0)")
                .bind(id)
                .bind(&keys[0])
                .bind(state)
                .execute(&store.pool)
                .await
                .expect("job");
            let mut settled = charge(&keys[0], 3);
            settled.front = format!("bulk-job:{id}");
            events.push(settled);
        }
        store.apply_ledger(events).await.expect("apply");
        let mut asked = keys.clone();
        asked.push("no-such-key".into());
        let views: std::collections::HashMap<String, i64> =
            store.credit_views(&asked, "2026-11", "front-1").await.expect("views").into_iter().collect();
        assert_eq!(views.len(), keys.len(), "one view per known key");
        for key_id in &keys {
            let settled = store.settled_by_others(key_id, "2026-11", "front-1").await.expect("settled");
            let held = store.bulk_jobs().expect("jobs").held_credits(key_id, "2026-11").await.expect("held");
            assert_eq!(views[key_id], settled + held, "{key_id}");
        }
        // The first key: front-2's 1, both jobs' settled 3 + 3, the open job's unsettled 7.
        assert_eq!(views[&keys[0]], 1 + 6 + 7);
        let one = store.credit_views(&keys[..1], "2026-11", "front-2").await.expect("one");
        assert_eq!(one, [(keys[0].clone(), 2 + 6 + 7)]);
    }

    /// Issue 26: SQLite's page caches are bounded together (a soft heap limit), so a large bulk
    /// job does not leave every connection's cache full and resident.
    #[tokio::test]
    async fn sqlite_page_caches_share_one_soft_limit() {
        let store = SqliteStore::connect("sqlite::memory:", 1).await.expect("open");
        let limit: i64 = sqlx::query_scalar("PRAGMA soft_heap_limit").fetch_one(&store.pool).await.expect("pragma");
        assert_eq!(limit, SQLITE_SOFT_HEAP_LIMIT);
    }

    /// An in-memory database has no WAL to flush: its commits come with no sync.
    #[tokio::test]
    async fn an_in_memory_ledger_needs_no_sync() {
        let store = SqliteStore::connect("sqlite::memory:", 1).await.expect("open");
        store.migrate().await.expect("migrate");
        let key = free_key(&store).await;
        let (applied, sync) = store.commit_ledger(&[charge(&key.id, 2)]).await.expect("commit");
        assert_eq!((applied, sync.is_none()), (1, true));
        assert_eq!(store.settled_usage(&key.id, "2026-11").await.expect("usage"), 2);
    }

    /// The ledger consumer's seam ([`workers::ledger::LedgerStore`]): a redelivered event settles
    /// nothing twice, an event the database refuses as data (a key that does not exist) is
    /// `Refused` (terminated), and a store that cannot be reached is `Unavailable` (redelivered).
    #[tokio::test]
    async fn settling_sorts_refusals_from_failures() {
        use workers::ledger::LedgerStore;
        let sqlite = SqliteStore::connect("sqlite::memory:", 1).await.expect("open");
        sqlite.migrate().await.expect("migrate");
        let key = free_key(&sqlite).await;
        let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(sqlite.clone());
        let event = charge(&key.id, 1);
        assert_eq!(store.settle(vec![event.clone()]).await.expect("settled"), 1);
        assert_eq!(store.settle(vec![event]).await.expect("absorbed"), 0, "a redelivery settles nothing");
        assert_eq!(store.settled_usage(&key.id, "2026-11").await.expect("usage"), 1);
        let refused = store.settle(vec![charge("no-such-key", 1)]).await;
        assert!(matches!(refused, Err(SettleError::Refused(_))), "{refused:?}");
        sqlite.pool().close().await;
        let failed = store.settle(vec![charge(&key.id, 1)]).await;
        assert!(matches!(failed, Err(SettleError::Unavailable(_))), "{failed:?}");
    }

    /// Every run's statement has a power of two rows, up to the longest text.
    #[test]
    fn ledger_statement_texts_are_powers_of_two() {
        assert_eq!(ledger_insert_sql(1).matches('?').count(), 7);
        assert_eq!(ledger_insert_sql(4).matches('?').count(), 28);
        assert_eq!(ledger_insert_sql(LARGEST_RUN).matches('?').count(), 7 * LARGEST_RUN);
    }

    /// The standalone ledger's batch (multi-row statements padded to a power of two rows on the
    /// writer's own connection, issue 29) applies each event once: a redelivered batch and duplicates
    /// inside one settle nothing twice, also across runs of a batch larger than the longest run,
    /// each period has its own usage row, a batch naming an unknown key fails whole (and the
    /// writer's connection is usable after it), and the stored row keeps every field.
    #[tokio::test]
    async fn sqlite_ledger_batches_apply_each_event_once() {
        let store = SqliteStore::connect("sqlite::memory:", 1).await.expect("open");
        store.migrate().await.expect("migrate");
        let key = free_key(&store).await;
        let period = "2026-11";
        let event =
            |credits: i64, endpoint: &str| LedgerEvent { endpoint: endpoint.into(), ..charge(&key.id, credits) };
        assert_eq!(store.apply_ledger(Vec::new()).await.expect("empty"), 0);
        let batch: Vec<_> = (1..=10).map(|i| event(i, "check")).collect();
        assert_eq!(store.apply_ledger(batch.clone()).await.expect("apply"), 10);
        assert_eq!(store.settled_usage(&key.id, period).await.expect("usage"), 55);
        assert_eq!(store.apply_ledger(batch.clone()).await.expect("replay"), 0, "a redelivery");
        assert_eq!(store.settled_usage(&key.id, period).await.expect("usage"), 55);

        let fresh: Vec<_> = (0..3).map(|_| event(100, "whois")).collect();
        let mut mixed = vec![fresh[0].clone(), fresh[0].clone(), batch[3].clone()];
        mixed.extend([fresh[1].clone(), fresh[2].clone(), fresh[1].clone()]);
        assert_eq!(store.apply_ledger(mixed).await.expect("mixed"), 3);
        assert_eq!(store.settled_usage(&key.id, period).await.expect("usage"), 355);
        assert_eq!(store.ledger_count(&key.id, period).await.expect("count"), 13);

        let mut next = event(7, "check");
        next.period = "2026-12".into();
        assert_eq!(store.apply_ledger(vec![next]).await.expect("next month"), 1);
        assert_eq!(store.settled_usage(&key.id, "2026-12").await.expect("usage"), 7);
        assert_eq!(store.settled_usage(&key.id, period).await.expect("usage"), 355);

        let mut ghost = event(1, "check");
        ghost.key_id = "no-such-key".into();
        assert!(store.apply_ledger(vec![event(1, "check"), ghost]).await.is_err(), "an unknown key fails the batch");
        assert_eq!(store.settled_usage(&key.id, period).await.expect("usage"), 355);

        // 700 events (runs of 512 and 188, the second padded to 256 rows), each of the first 100
        // twice, one in the last run repeating one of the first.
        let large: Vec<_> = (0..600).map(|_| event(1, "bulk")).collect();
        let mut sent = large.clone();
        sent.extend(large[..99].iter().cloned());
        sent.push(large[0].clone());
        assert_eq!(sent.len(), 700);
        assert_eq!(store.apply_ledger(sent).await.expect("large"), 600);
        assert_eq!(store.settled_usage(&key.id, period).await.expect("usage"), 955);

        let one = event(3, "dns");
        store.apply_ledger(vec![one.clone()]).await.expect("one");
        let row: (String, String, String, i64, String, String) = sqlx::query_as(
            "SELECT key_id, period, endpoint, credits, charged_at, front FROM ledger_entries WHERE event_id = $1",
        )
        .bind(one.event_id.to_string())
        .fetch_one(&store.pool)
        .await
        .expect("row");
        let at = Sqlite::instant(one.charged_at).expect("instant");
        assert_eq!(row, (key.id.clone(), period.to_owned(), "dns".to_owned(), 3, at, "front-1".to_owned()));
    }
}
