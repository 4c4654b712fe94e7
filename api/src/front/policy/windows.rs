//! Per-key request counters in windows aligned to the UTC minute: in this process
//! ([`MinuteWindows`]) or leased from the fleet's KV bucket ([`RateWindows::Fleet`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_nats::jetstream::kv;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use time::OffsetDateTime;

use super::KV_WAIT_MS;
use crate::front::error::ApiError;

/// The rate-limit state of one request, for the response headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateState {
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left in this window.
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset_secs: u64,
}

impl RateState {
    /// Adds `RateLimit-Policy` and `RateLimit` (IETF draft structured fields) to `headers`.
    pub fn apply(&self, headers: &mut HeaderMap) {
        // These two headers go on every metered answer: names made once, digits written into
        // stack buffers, each value one allocation handed over without a copy.
        static POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
        static STATE: HeaderName = HeaderName::from_static("ratelimit");
        let (mut limit, mut remaining, mut reset) = (itoa::Buffer::new(), itoa::Buffer::new(), itoa::Buffer::new());
        let policy = ["\"per-minute\";q=", limit.format(self.limit), ";w=60"].concat();
        if let Ok(v) = HeaderValue::from_maybe_shared(bytes::Bytes::from(policy)) {
            headers.insert(POLICY.clone(), v);
        }
        let state =
            ["\"per-minute\";r=", remaining.format(self.remaining), ";t=", reset.format(self.reset_secs)].concat();
        if let Ok(v) = HeaderValue::from_maybe_shared(bytes::Bytes::from(state)) {
            headers.insert(STATE.clone(), v);
        }
    }
}

/// Per-key request counters in minute windows (one process).
#[derive(Debug, Default)]
pub struct MinuteWindows {
    counters: Mutex<HashMap<String, (i64, u32)>>,
}

impl MinuteWindows {
    /// Counts one request of `key_id` at `now` against `limit` per minute.
    ///
    /// # Errors
    /// [`ApiError::TooManyRequests`] with the seconds to the next window when over the limit.
    pub fn hit(&self, key_id: &str, limit: u32, now: OffsetDateTime) -> Result<RateState, (ApiError, RateState)> {
        let unix = now.unix_timestamp();
        let window = unix.div_euclid(60);
        let reset_secs = u64::try_from(60 - unix.rem_euclid(60)).unwrap_or(60);
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        if counters.len() > 100_000 {
            counters.retain(|_, (w, _)| *w == window);
        }
        let entry = counters.entry(key_id.to_owned()).or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        if entry.1 >= limit {
            let state = RateState { limit, remaining: 0, reset_secs };
            return Err((
                ApiError::TooManyRequests {
                    message: format!(
                        "Rate limit of {limit} requests per minute exceeded; retry after the next minute window."
                    ),
                    retry_after_secs: Some(reset_secs),
                },
                state,
            ));
        }
        entry.1 += 1;
        Ok(RateState { limit, remaining: limit - entry.1, reset_secs })
    }
}

/// Where per-key minute windows are counted: in this process (standalone) or in the NATS KV
/// bucket shared by every front (fleet).
///
/// In the fleet a front does not ask the bucket on every request: it leases a block of the
/// window's requests (compare-and-set adds the block to the window's counter in KV) and spends it
/// locally. The fleet-wide count can therefore never exceed the limit; the cost is that requests
/// leased by one front and not used there are lost to the others for that minute — at most
/// (block − 1) per front, block = limit / 20 (1 to 100).
pub enum RateWindows {
    /// One process.
    Local(MinuteWindows),
    /// The fleet's KV bucket.
    Fleet(Box<FleetWindows>),
}

/// State of [`RateWindows::Fleet`].
pub struct FleetWindows {
    store: async_nats::jetstream::kv::Store,
    client: async_nats::Client,
    /// (key id, window) → (requests leased and not yet spent here, window count in KV after the lease).
    leases: Mutex<HashMap<(String, i64), Arc<Lease>>>,
    /// Until when the bucket is taken to be in trouble (it timed out or failed): requests that
    /// would ask it are let through at once instead of each waiting for it in turn (a NATS
    /// server lost and the bucket's stream electing a leader: seconds). Milliseconds after
    /// `epoch`; 0: no trouble seen.
    trouble_until_ms: AtomicU64,
    epoch: tokio::time::Instant,
}

/// How long the bucket is left alone after it timed out or failed.
const KV_TROUBLE_MS: u64 = 1_000;

/// Counts a request let through without the bucket's count (`dsa_rate_windows_let_through_total`):
/// `disconnected` (no NATS connection), `bucket_failed`, `bucket_timeout` (this request asked the
/// bucket), `bucket_trouble` (the bucket failed within the last second: not asked),
/// `lease_busy` (another request of the key was asking it), `contended` (32 lost compare-and-sets).
fn let_through(reason: &'static str, state: RateState) -> Result<RateState, (ApiError, RateState)> {
    metrics::counter!("dsa_rate_windows_let_through_total", "reason" => reason).increment(1);
    Ok(state)
}

/// Requests leased for one key and window and not yet spent here, and the window's count in KV
/// after the lease.
type Lease = tokio::sync::Mutex<(u32, u32)>;

impl std::fmt::Debug for RateWindows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RateWindows::Local(_) => "RateWindows::Local",
            RateWindows::Fleet(..) => "RateWindows::Fleet",
        })
    }
}

fn over_limit(limit: u32, reset_secs: u64) -> (ApiError, RateState) {
    (
        ApiError::TooManyRequests {
            message: format!("Rate limit of {limit} requests per minute exceeded; retry after the next minute window."),
            retry_after_secs: Some(reset_secs),
        },
        RateState { limit, remaining: 0, reset_secs },
    )
}

impl RateWindows {
    /// In-process windows.
    pub fn local() -> Self {
        RateWindows::Local(MinuteWindows::default())
    }

    /// Windows in the fleet's KV bucket.
    ///
    /// # Errors
    /// When the bucket does not exist.
    pub async fn fleet(
        client: async_nats::Client,
        js: &async_nats::jetstream::Context,
        bucket: &str,
    ) -> anyhow::Result<Self> {
        let store = js.get_key_value(bucket).await.map_err(|e| anyhow::anyhow!("rate-limit bucket {bucket}: {e}"))?;
        Ok(RateWindows::Fleet(Box::new(FleetWindows {
            store,
            client,
            leases: Mutex::new(HashMap::new()),
            trouble_until_ms: AtomicU64::new(0),
            epoch: tokio::time::Instant::now(),
        })))
    }

    /// Counts one request of `key_id` at `now` against `limit` per minute.
    ///
    /// # Errors
    /// 429 with the header state when over the limit. In the fleet, a KV failure lets the request
    /// through (the monthly allowance still holds) and is logged.
    pub async fn hit(&self, key_id: &str, limit: u32, now: OffsetDateTime) -> Result<RateState, (ApiError, RateState)> {
        match self {
            RateWindows::Local(w) => w.hit(key_id, limit, now),
            RateWindows::Fleet(f) => f.hit(key_id, limit, now).await,
        }
    }
}

impl FleetWindows {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether the bucket failed or timed out within the last [`KV_TROUBLE_MS`].
    fn in_trouble(&self) -> bool {
        self.now_ms() < self.trouble_until_ms.load(Ordering::Relaxed)
    }

    /// Notes that the bucket failed or timed out: requests are let through without asking it for
    /// [`KV_TROUBLE_MS`].
    fn trouble(&self) {
        self.trouble_until_ms.fetch_max(self.now_ms().saturating_add(KV_TROUBLE_MS), Ordering::Relaxed);
    }

    async fn hit(&self, key_id: &str, limit: u32, now: OffsetDateTime) -> Result<RateState, (ApiError, RateState)> {
        let unix = now.unix_timestamp();
        let window = unix.div_euclid(60);
        let reset_secs = u64::try_from(60 - unix.rem_euclid(60)).unwrap_or(60);
        let through = RateState { limit, remaining: limit, reset_secs };
        let lease = {
            let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
            if leases.len() > 10_000 {
                leases.retain(|(_, w), _| *w == window);
            }
            leases.entry((key_id.to_owned(), window)).or_default().clone()
        };
        let wait = std::time::Duration::from_millis(KV_WAIT_MS);
        // One lease per key and window: requests of other keys never wait on this one, and a
        // request of this key waits for the one asking the bucket at most as long as that one
        // may wait for the bucket (then it is let through, like a request the bucket fails).
        let Ok(mut slot) = tokio::time::timeout(wait, lease.lock()).await else {
            return let_through("lease_busy", through);
        };
        if slot.0 > 0 {
            slot.0 -= 1;
            return Ok(RateState { limit, remaining: limit.saturating_sub(slot.1) + slot.0, reset_secs });
        }
        if self.client.connection_state() != async_nats::connection::State::Connected {
            return let_through("disconnected", through);
        }
        if self.in_trouble() {
            return let_through("bucket_trouble", through);
        }
        let key = format!("min.{}.{window}", key_id.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
        let block = (limit / 20).clamp(1, 100);
        for _ in 0..32 {
            let entry = match tokio::time::timeout(wait, self.store.entry(key.clone())).await {
                Ok(Ok(e)) => e,
                Ok(Err(e)) => {
                    self.trouble();
                    tracing::warn!(error = %e, "rate-limit bucket unavailable; requests let through for a second");
                    return let_through("bucket_failed", through);
                }
                Err(_) => {
                    self.trouble();
                    tracing::warn!("rate-limit bucket timed out; requests let through for a second");
                    return let_through("bucket_timeout", through);
                }
            };
            let (count, revision) = match &entry {
                Some(e) => (
                    std::str::from_utf8(&e.value).ok().and_then(|s| s.parse::<u32>().ok()).unwrap_or(0),
                    Some(e.revision),
                ),
                None => (0, None),
            };
            let take = block.min(limit.saturating_sub(count));
            if take == 0 {
                return Err(over_limit(limit, reset_secs));
            }
            let value = bytes::Bytes::from((count + take).to_string());
            // Ok(true): stored; Ok(false): another front won the compare-and-set; Err: the
            // bucket failed (no quorum, no leader) with the reason.
            let stored: Result<Result<bool, String>, _> = match revision {
                Some(rev) => tokio::time::timeout(wait, self.store.update(&key, value, rev)).await.map(|r| match r {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(false),
                    Err(e) => Err(e.to_string()),
                }),
                None => tokio::time::timeout(wait, self.store.create(&key, value)).await.map(|r| match r {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => Ok(false),
                    Err(e) => Err(e.to_string()),
                }),
            };
            match stored {
                Err(_) => {
                    self.trouble();
                    tracing::warn!("rate-limit bucket timed out; requests let through for a second");
                    return let_through("bucket_timeout", through);
                }
                Ok(Err(e)) => {
                    self.trouble();
                    tracing::warn!(error = %e, "rate-limit bucket refused a write; requests let through for a second");
                    return let_through("bucket_failed", through);
                }
                Ok(Ok(true)) => {
                    *slot = (take - 1, count + take);
                    return Ok(RateState { limit, remaining: limit - (count + take) + slot.0, reset_secs });
                }
                Ok(Ok(false)) => {} // another front won the compare-and-set: read again
            }
        }
        tracing::warn!("rate-limit window contended; request let through");
        let_through("contended", through)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn minute_windows_reset_on_the_minute() {
        let w = MinuteWindows::default();
        let t = datetime!(2026-11-22 10:00:50 UTC);
        assert_eq!(w.hit("k", 2, t).map(|s| s.remaining).ok(), Some(1));
        assert_eq!(w.hit("k", 2, t).map(|s| s.remaining).ok(), Some(0));
        let (err, state) = w.hit("k", 2, t).expect_err("third is over");
        assert!(matches!(err, ApiError::TooManyRequests { retry_after_secs: Some(10), .. }));
        assert_eq!(state.reset_secs, 10);
        assert!(w.hit("other", 2, t).is_ok(), "per key");
        assert_eq!(w.hit("k", 2, datetime!(2026-11-22 10:01:00 UTC)).map(|s| s.remaining).ok(), Some(1));
    }
}
