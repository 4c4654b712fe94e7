//! The fleet-wide upstream budget: one GCRA arrival time per upstream host in the `dsa_rate` KV
//! bucket, so N workers together stay within one registry's limit. It is the
//! [`UpstreamBudget`] a worker's politeness layer holds in fleet mode.

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;

use super::{FleetError, js_err};
use crate::config::HostLimit;
use crate::politeness::UpstreamBudget;

/// A fleet-wide rate limit for upstream hosts held in a JetStream KV bucket (GCRA: one key per
/// host holding its theoretical arrival time, updated with compare-and-set), so N workers
/// together stay within one registry's limit.
#[derive(Clone)]
pub struct FleetBudget {
    kv: kv::Store,
}

impl std::fmt::Debug for FleetBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetBudget").finish_non_exhaustive()
    }
}

impl FleetBudget {
    /// The budget in `bucket`.
    ///
    /// # Errors
    /// When the bucket does not exist.
    pub async fn open(js: &jetstream::Context, bucket: &str) -> Result<Self, FleetError> {
        Ok(Self { kv: js.get_key_value(bucket).await.map_err(js_err)? })
    }

    /// Waits until `host` may be queried again under `per_second` with `burst`, at most
    /// `max_wait`. Returns false when no slot came in time (or the bucket is unreachable).
    pub async fn acquire(&self, host: &str, per_second: f64, burst: u32, max_wait: Duration) -> bool {
        let key = format!("up.{}", host.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
        let interval = 1.0 / per_second.max(0.001);
        let tolerance = interval * f64::from(burst.max(1).saturating_sub(1));
        let give_up = std::time::Instant::now() + max_wait;
        loop {
            let now = unix_now();
            let entry = match self.kv.entry(key.clone()).await {
                Ok(e) => e,
                Err(_) => return false,
            };
            let (tat, revision) = match &entry {
                Some(e) if e.operation == kv::Operation::Put => (
                    std::str::from_utf8(&e.value).ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0),
                    Some(e.revision),
                ),
                Some(e) => (0.0, Some(e.revision)),
                None => (0.0, None),
            };
            let start = tat.max(now);
            let wait = start - tolerance - now;
            if wait > 0.0 {
                let until = std::time::Instant::now() + Duration::from_secs_f64(wait);
                if until > give_up {
                    return false;
                }
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
                continue;
            }
            let value = Bytes::from(format!("{:.6}", start + interval));
            let stored = match revision {
                Some(rev) => self.kv.update(&key, value, rev).await.is_ok(),
                None => self.kv.create(&key, value).await.is_ok(),
            };
            if stored {
                return true;
            }
            if std::time::Instant::now() > give_up {
                return false;
            }
            // Lost the compare-and-set race: read again.
        }
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

impl UpstreamBudget for FleetBudget {
    fn acquire<'a>(&'a self, host: &'a str, limit: &'a HostLimit, max_wait: Duration) -> BoxFuture<'a, bool> {
        FleetBudget::acquire(self, host, limit.per_second, limit.burst, max_wait).boxed()
    }
}
