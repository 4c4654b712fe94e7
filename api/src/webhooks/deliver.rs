//! The delivery loop: events fanned out to deliveries, due deliveries claimed under a lease and
//! sent, every attempt recorded. It runs in every process that serves the API (standalone, each
//! fleet front) when `webhooks.deliver` is on; the leases and Postgres's `SKIP LOCKED` let any
//! number of them share the work.
//!
//! At least once: a delivery is marked delivered only after a 2xx answer, in the same transaction
//! as its attempt. A process killed mid-attempt leaves its claim, which expires after
//! `webhooks.lease_secs`; then the delivery is attempted again, with the same `webhook-id` (the
//! event id). Receivers deduplicate by `webhook-id`, as Standard Webhooks asks.
//!
//! Order: a webhook gets each subject's events (a watch's) in the order they were recorded — the
//! claim skips a delivery while the same webhook's delivery of an earlier event about the same
//! subject is still pending (`store/webhooks.rs`). Attempts run in their own tasks (at most
//! `webhooks.concurrency`), each recorded when it ends, so a slow endpoint takes up slots of the
//! loop, not the whole loop.
//!
//! Time: what is due, the retry schedule, the leases and disabling follow the injected
//! [`Clock`]; `webhook-timestamp` is the system clock's, because the receiver checks it against
//! its own clock (Standard Webhooks: tolerance of a few minutes).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::guard::{Target, resolve};
use super::{AttemptOutcome, ClaimedDelivery, Clock, WebhookConfig, payload, retry_delay_ms, sign, unix_ms};
use crate::events::{NewEvent, event_id};
use crate::store::Store;

/// Events fanned out per transaction.
const FAN_OUT_BATCH: i64 = 256;
/// Most pinned HTTP clients kept (one per host and checked address).
const MAX_CLIENTS: usize = 256;

/// Starts the delivery loop for `store` when `config.deliver` is on. The loop holds the store
/// weakly and ends once every other holder dropped it (a stopped application).
pub fn spawn(store: &Arc<dyn Store>, config: WebhookConfig, clock: Clock) -> Option<tokio::task::JoinHandle<()>> {
    if !config.deliver {
        return None;
    }
    let deliverer = Arc::new(Deliverer::new(config, clock));
    Some(tokio::spawn(deliverer.run(Arc::downgrade(store))))
}

/// One process's delivery loop.
pub struct Deliverer {
    config: WebhookConfig,
    clock: Clock,
    owner: String,
    claims: std::sync::atomic::AtomicU64,
    clients: Mutex<HashMap<(String, SocketAddr), reqwest::Client>>,
    /// When (the loop's clock, unix ms) ended deliveries were last pruned.
    pruned_at_ms: std::sync::atomic::AtomicI64,
}

/// How often the loop deletes deliveries older than `keep_deliveries_days`, milliseconds.
const PRUNE_EVERY_MS: i64 = 3_600_000;

impl Deliverer {
    /// A loop with its own claim owner id.
    pub fn new(config: WebhookConfig, clock: Clock) -> Self {
        Self {
            config,
            clock,
            owner: format!("deliver-{}", uuid::Uuid::now_v7().simple()),
            claims: std::sync::atomic::AtomicU64::new(0),
            clients: Mutex::new(HashMap::new()),
            pruned_at_ms: std::sync::atomic::AtomicI64::new(i64::MIN),
        }
    }

    /// Runs until the store is dropped: claims due deliveries while fewer than
    /// `webhooks.concurrency` attempts are in flight, each attempt in its own task, and records
    /// attempts as they complete (those completed together in one transaction), so that a slow
    /// endpoint holds up only its own attempts, never the claims and deliveries to other webhooks.
    /// Once the store is gone it claims nothing more; the attempts in flight finish unrecorded
    /// (their claims expire and the deliveries are attempted again, same `webhook-id`).
    pub async fn run(self: Arc<Self>, store: Weak<dyn Store>) {
        let idle = Duration::from_millis(self.config.poll_ms.max(10));
        let concurrency = self.config.concurrency.max(1);
        let mut in_flight: tokio::task::JoinSet<(ClaimedDelivery, AttemptOutcome)> = tokio::task::JoinSet::new();
        let mut next_look = tokio::time::Instant::now();
        // The claim token of each delivery whose attempt is in flight.
        let mut claims: HashMap<String, String> = HashMap::new();
        // The delivery of each attempt task.
        let mut tasks: HashMap<tokio::task::Id, String> = HashMap::new();
        loop {
            let Some(strong) = store.upgrade() else { return };
            let room = concurrency.saturating_sub(in_flight.len());
            if room > 0 && tokio::time::Instant::now() >= next_look {
                match self.claim(&*strong, room).await {
                    Ok((token, claimed, more)) => {
                        let total = claimed.len();
                        let mut fresh = 0;
                        for delivery in claimed {
                            // Claimed again while its attempt is in flight here (the lease ran out
                            // on the clock: tests move it by hours): the attempt goes on, and is
                            // recorded under the newest claim; no second attempt.
                            if let Some(current) = claims.get_mut(&delivery.id) {
                                current.clone_from(&token);
                                continue;
                            }
                            fresh += 1;
                            claims.insert(delivery.id.clone(), token.clone());
                            let this = self.clone();
                            let token = token.clone();
                            let id = delivery.id.clone();
                            let task = in_flight.spawn(async move { this.attempt(&token, delivery).await });
                            tasks.insert(task.id(), id);
                        }
                        // More may be due at once only when the claim was full of new ones.
                        let now = tokio::time::Instant::now();
                        next_look = if more && fresh == total { now } else { now + idle };
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "webhook delivery loop");
                        next_look = tokio::time::Instant::now() + idle;
                    }
                }
            }
            drop(strong);
            let room = concurrency.saturating_sub(in_flight.len());
            let first = if in_flight.is_empty() {
                tokio::time::sleep_until(next_look).await;
                continue;
            } else if room == 0 {
                in_flight.join_next_with_id().await
            } else {
                tokio::select! {
                    done = in_flight.join_next_with_id() => done,
                    () = tokio::time::sleep_until(next_look) => continue,
                }
            };
            // The attempts done by now, recorded together.
            let mut done = Vec::new();
            for joined in first.into_iter().chain(std::iter::from_fn(|| in_flight.try_join_next_with_id())) {
                match joined {
                    Ok((task, (delivery, mut outcome))) => {
                        tasks.remove(&task);
                        if let Some(token) = claims.remove(&delivery.id) {
                            outcome.lease_owner = token;
                        }
                        done.push((delivery, outcome));
                    }
                    // Its claim expires; the delivery is attempted again.
                    Err(e) => {
                        if let Some(delivery) = tasks.remove(&e.id()) {
                            claims.remove(&delivery);
                        }
                        tracing::warn!(error = %e, "webhook attempt task");
                    }
                }
            }
            let Some(strong) = store.upgrade() else { return };
            if let Err(e) = self.record(&*strong, done).await {
                tracing::warn!(error = %e, "webhook delivery loop: recording attempts");
            }
            drop(strong);
            // A delivery recorded may let the next event of its subject go: look again at once.
            next_look = tokio::time::Instant::now();
        }
    }

    fn now_ms(&self) -> i64 {
        unix_ms((self.clock)())
    }

    /// Fans out new events and claims at most `room` due deliveries under a new claim token.
    /// Returns the token, the deliveries, and whether there may be more to claim at once.
    async fn claim(&self, store: &dyn Store, room: usize) -> anyhow::Result<(String, Vec<ClaimedDelivery>, bool)> {
        self.prune(store).await;
        let fanned = store.fan_out_events(self.now_ms(), FAN_OUT_BATCH).await?;
        let now = self.now_ms();
        let lease_ms = (self.config.lease_secs.max(self.config.timeout_secs + 1.0) * 1000.0) as i64;
        let claim = self.claims.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = format!("{}-{claim}", self.owner);
        let limit = self.config.batch.max(1).min(room.max(1));
        let claimed = store.claim_deliveries(&token, now, now + lease_ms, limit as i64).await?;
        let more = claimed.len() >= limit || fanned >= FAN_OUT_BATCH as u64;
        Ok((token, claimed, more))
    }

    /// At most once an hour (the loop's clock): deletes deliveries that ended more than
    /// `keep_deliveries_days` ago, so the tables do not grow without end. Every loop may do it;
    /// the deletes are idempotent.
    async fn prune(&self, store: &dyn Store) {
        use std::sync::atomic::Ordering;
        let now = self.now_ms();
        let last = self.pruned_at_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) < PRUNE_EVERY_MS {
            return;
        }
        self.pruned_at_ms.store(now, Ordering::Relaxed);
        let keep_ms = (self.config.keep_deliveries_days.max(0.0) * 86_400_000.0) as i64;
        match store.prune_deliveries(now.saturating_sub(keep_ms)).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deliveries = n, "webhook deliveries past their keeping time deleted"),
            Err(e) => tracing::warn!(error = %e, "webhook deliveries not pruned; trying again in an hour"),
        }
    }

    /// Records attempts (one transaction), and tells the owners of webhooks they disabled.
    async fn record(&self, store: &dyn Store, attempts: Vec<(ClaimedDelivery, AttemptOutcome)>) -> anyhow::Result<()> {
        if attempts.is_empty() {
            return Ok(());
        }
        let disable_after_ms = (self.config.disable_after_hours * 3_600_000.0) as i64;
        let batch = attempts.iter().map(|(d, o)| (d.webhook.id.clone(), o.clone())).collect();
        let recorded = store.record_attempts(batch, disable_after_ms).await?;
        for ((delivery, _), recorded) in attempts.iter().zip(recorded) {
            if let Some(since) = recorded.disabled_failing_since_ms {
                self.disabled(store, delivery, since).await?;
            }
        }
        Ok(())
    }

    /// Attempts one delivery; what the attempt came to.
    async fn attempt(&self, token: &str, delivery: ClaimedDelivery) -> (ClaimedDelivery, AttemptOutcome) {
        let at_ms = self.now_ms();
        let started = std::time::Instant::now();
        let attempt = delivery.attempts + 1;
        let (status, error) = match self.send(&delivery, at_ms).await {
            Ok((status, error)) => (Some(i64::from(status)), error),
            Err(error) => (None, Some(error)),
        };
        let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let delivered = error.is_none() && status.is_some_and(|s| (200..300).contains(&s));
        let end_ms = self.now_ms();
        let next_attempt_ms = if delivered { None } else { retry_delay_ms(attempt).map(|d| end_ms + d) };
        metrics::counter!("dsa_webhook_attempts_total", "result" => if delivered { "delivered" } else { "failed" })
            .increment(1);
        tracing::debug!(delivery = %delivery.id, attempt, ?status, ?error, "webhook attempt");
        let outcome = AttemptOutcome {
            delivery_id: delivery.id.clone(),
            lease_owner: token.to_owned(),
            attempt,
            at_ms,
            status,
            error,
            latency_ms,
            delivered,
            next_attempt_ms,
        };
        (delivery, outcome)
    }

    /// Tells the owner that a webhook was disabled: a `webhook.disabled` event (stable id per
    /// failing streak).
    async fn disabled(&self, store: &dyn Store, delivery: &ClaimedDelivery, since: i64) -> anyhow::Result<()> {
        let hook = &delivery.webhook;
        tracing::warn!(webhook = %hook.id, key = %hook.key_id, "webhook disabled: its endpoint failed for too long");
        store
            .emit_event(NewEvent {
                id: event_id(&["webhook.disabled", &hook.id, &since.to_string()]),
                key_id: hook.key_id.clone(),
                event_type: "webhook.disabled".into(),
                subject: Some(hook.id.clone()),
                occurred_at: (self.clock)(),
                data: serde_json::json!({
                    "webhook_id": hook.id,
                    "url": hook.url,
                    "failing_since": super::rfc3339_ms(since),
                    "reason": "Every delivery attempt failed for longer than the allowed time.",
                }),
            })
            .await?;
        Ok(())
    }

    /// Sends one attempt; the status, with an error text when it is not a success, or why no
    /// answer came.
    async fn send(&self, delivery: &ClaimedDelivery, now_ms: i64) -> Result<(u16, Option<String>), String> {
        let timeout = Duration::from_secs_f64(self.config.timeout_secs.max(0.05));
        let target = resolve(&delivery.webhook.url, self.config.test_only_allow_loopback, timeout).await?;
        let body = payload(&delivery.event_type, &delivery.occurred_at, &delivery.data);
        let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default();
        let signatures = delivery
            .webhook
            .signing_secrets(now_ms)
            .into_iter()
            .map(|secret| sign(secret, &delivery.event_id, timestamp, &body))
            .collect::<anyhow::Result<Vec<_>>>()
            .map_err(|e| format!("signing: {e}"))?
            .join(" ");
        let client = self.client(&target, timeout)?;
        let exchange = async {
            let mut response = client
                .post(target.url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header("webhook-id", &delivery.event_id)
                .header("webhook-timestamp", timestamp.to_string())
                .header("webhook-signature", signatures)
                .body(body)
                .send()
                .await
                .map_err(|e| describe(&e, timeout))?;
            let status = response.status();
            // Read at most the cap, then stop (the rest is never buffered).
            let mut read = 0usize;
            let mut cut = false;
            while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e, timeout))? {
                read += chunk.len();
                if read > self.config.max_response_bytes {
                    cut = true;
                    break;
                }
            }
            let error = if status.is_redirection() {
                Some(format!("HTTP {}: redirects are not followed", status.as_u16()))
            } else if !status.is_success() {
                Some(format!("HTTP {}", status.as_u16()))
            } else {
                None
            };
            if cut {
                tracing::debug!(url = %target.url, "webhook answer cut at {} bytes", self.config.max_response_bytes);
            }
            Ok((status.as_u16(), error))
        };
        tokio::time::timeout(timeout, exchange).await.map_err(|_| no_answer(timeout))?
    }

    /// The HTTP client pinned to a target's checked address (cached per host and address).
    fn client(&self, target: &Target, timeout: Duration) -> Result<reqwest::Client, String> {
        let key = (target.host.clone(), target.addr);
        let mut clients = self.clients.lock().map_err(|_| "client cache poisoned".to_owned())?;
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = reqwest::Client::builder()
            .resolve(&target.host, target.addr)
            // A proxy would resolve the host again and undo the pinned address.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("dsa-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        clients.insert(key, client.clone());
        Ok(client)
    }
}

fn no_answer(timeout: Duration) -> String {
    format!("no answer within {:.1} s", timeout.as_secs_f64())
}

/// An attempt's failure as the owner reads it in the deliveries list.
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        no_answer(timeout)
    } else if e.is_connect() {
        "could not connect to the endpoint".into()
    } else {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            text = format!("{text}: {s}");
            source = s.source();
        }
        text
    }
}
