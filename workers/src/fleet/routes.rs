//! Self-correcting routing decisions shared by the fleet over NATS KV (see [`crate::routing`]).

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use time::OffsetDateTime;

use super::{FleetError, js_err};
use crate::routing::{ConsensusHold, Disagreement};

/// Compare-and-set attempts when two workers count a disagreement at once.
const CAS_ATTEMPTS: usize = 4;

/// Self-correcting routing decisions shared by the fleet (see [`crate::routing`]): one key per
/// demoted catalogue suffix (`s.<suffix>`) in the routing bucket holding the Unix time (seconds)
/// until which WHOIS is asked first. A demotion is a put, a promotion a delete. Consensus holds
/// live beside them (`c.<suffix>`, a JSON [`ConsensusHold`], counted with compare-and-set so
/// concurrent disagreements on two workers are both counted). Every decision
/// is also kept in process, and read from there when the bucket does not answer (within
/// [`FleetRoutes::TIMEOUT`]), so a NATS outage falls back to per-process routing.
pub struct FleetRoutes {
    kv: kv::Store,
    local: crate::routing::LocalRoutes,
}

impl std::fmt::Debug for FleetRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetRoutes").finish_non_exhaustive()
    }
}

impl FleetRoutes {
    /// Longest wait for the bucket on one read or write before falling back to this process's state.
    pub const TIMEOUT: Duration = Duration::from_millis(500);

    /// The routing decisions in `bucket`.
    ///
    /// # Errors
    /// When the bucket does not exist (or may not be read).
    pub async fn open(js: &jetstream::Context, bucket: &str) -> Result<Self, FleetError> {
        Ok(Self { kv: js.get_key_value(bucket).await.map_err(js_err)?, local: Default::default() })
    }

    /// The bucket key of a catalogue suffix (KV keys allow `[-_.=/a-zA-Z0-9]`; suffixes are
    /// A-labels, so only an unexpected character is replaced).
    fn key(suffix: &str) -> String {
        let clean: String =
            suffix.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
        format!("s.{clean}")
    }

    /// The bucket key of a suffix's consensus hold.
    fn consensus_key(suffix: &str) -> String {
        Self::key(suffix).replacen("s.", "c.", 1)
    }

    /// The consensus hold of `suffix` in the bucket and its revision (the revision also for a
    /// deleted entry, so that a write can compare and set).
    async fn read_hold(&self, suffix: &str) -> Result<(Option<ConsensusHold>, Option<u64>), String> {
        let entry = tokio::time::timeout(Self::TIMEOUT, self.kv.entry(Self::consensus_key(suffix)))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        let Some(entry) = entry else { return Ok((None, None)) };
        let hold = (entry.operation == kv::Operation::Put)
            .then(|| serde_json::from_slice::<ConsensusHold>(&entry.value).ok())
            .flatten();
        Ok((hold, Some(entry.revision)))
    }

    /// Counts one disagreement in the bucket (compare and set); the record written.
    async fn write_disagreement(
        &self,
        suffix: &str,
        d: &Disagreement,
        until: OffsetDateTime,
    ) -> Result<ConsensusHold, String> {
        let key = Self::consensus_key(suffix);
        let mut last_error = String::new();
        for _ in 0..CAS_ATTEMPTS {
            let (previous, revision) = self.read_hold(suffix).await?;
            let next = ConsensusHold::after(previous.as_ref(), d.clone(), until);
            let value = Bytes::from(serde_json::to_vec(&next).map_err(|e| e.to_string())?);
            let written = match revision {
                Some(revision) => tokio::time::timeout(Self::TIMEOUT, self.kv.update(&key, value, revision))
                    .await
                    .map(|r| r.map(|_| ()).map_err(|e| e.to_string())),
                None => tokio::time::timeout(Self::TIMEOUT, self.kv.create(&key, value))
                    .await
                    .map(|r| r.map(|_| ()).map_err(|e| e.to_string())),
            };
            match written {
                Ok(Ok(())) => return Ok(next),
                // Another worker wrote first: read again and count on top of its record.
                Ok(Err(e)) => last_error = e,
                Err(_) => return Err("timed out".to_owned()),
            }
        }
        Err(last_error)
    }

    async fn read(&self, suffix: &str) -> Result<Option<OffsetDateTime>, String> {
        let entry = tokio::time::timeout(Self::TIMEOUT, self.kv.entry(Self::key(suffix)))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok(entry
            .filter(|e| e.operation == kv::Operation::Put)
            .and_then(|e| std::str::from_utf8(&e.value).ok()?.trim().parse::<i64>().ok())
            .and_then(|secs| OffsetDateTime::from_unix_timestamp(secs).ok()))
    }
}

impl crate::routing::RouteBook for FleetRoutes {
    fn whois_first_until<'a>(
        &'a self,
        suffix: &'a str,
        now: OffsetDateTime,
    ) -> futures::future::BoxFuture<'a, Option<OffsetDateTime>> {
        Box::pin(async move {
            match self.read(suffix).await {
                Ok(until) => until.filter(|until| now < *until),
                Err(e) => {
                    tracing::debug!(error = %e, suffix, "routing bucket unreadable; this process's routing");
                    self.local.get(suffix, now)
                }
            }
        })
    }

    fn demote<'a>(&'a self, suffix: &'a str, until: OffsetDateTime) -> futures::future::BoxFuture<'a, ()> {
        self.local.set(suffix, until);
        Box::pin(async move {
            let value = Bytes::from(until.unix_timestamp().to_string());
            match tokio::time::timeout(Self::TIMEOUT, self.kv.put(Self::key(suffix), value)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, suffix, "routing not shared: bucket refused the demotion"),
                Err(_) => tracing::warn!(suffix, "routing not shared: bucket timed out on the demotion"),
            }
        })
    }

    fn promote<'a>(&'a self, suffix: &'a str) -> futures::future::BoxFuture<'a, ()> {
        self.local.clear(suffix);
        Box::pin(async move {
            match tokio::time::timeout(Self::TIMEOUT, self.kv.delete(Self::key(suffix))).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, suffix, "routing not shared: bucket refused the promotion"),
                Err(_) => tracing::warn!(suffix, "routing not shared: bucket timed out on the promotion"),
            }
        })
    }

    fn consensus_hold<'a>(&'a self, suffix: &'a str) -> futures::future::BoxFuture<'a, Option<ConsensusHold>> {
        Box::pin(async move {
            match self.read_hold(suffix).await {
                Ok((hold, _)) => hold,
                Err(e) => {
                    tracing::debug!(error = %e, suffix, "routing bucket unreadable; this process's consensus holds");
                    self.local.hold(suffix)
                }
            }
        })
    }

    fn disagreed<'a>(
        &'a self,
        suffix: &'a str,
        disagreement: Disagreement,
        until: OffsetDateTime,
    ) -> futures::future::BoxFuture<'a, ConsensusHold> {
        Box::pin(async move {
            match self.write_disagreement(suffix, &disagreement, until).await {
                Ok(hold) => {
                    self.local.keep_hold(suffix, hold.clone());
                    hold
                }
                Err(e) => {
                    tracing::warn!(error = %e, suffix, "consensus hold not shared: the routing bucket refused it");
                    self.local.count_disagreement(suffix, disagreement, until)
                }
            }
        })
    }
}
