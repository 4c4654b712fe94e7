//! The watch scheduler: every `watches.tick_ms`, lease the watches that are due, re-check them on
//! the job bus, write back their state, events and next due time.
//!
//! It runs in `dsa serve` and in every `dsa front`. Processes coordinate through the store only:
//! a watch is leased by one process at a time ([`Store::lease_due_watches`]) until its check is
//! written ([`Store::finish_watch_check`], which also frees the lease) or the lease runs out
//! (`watches.lease_secs`: a killed process's watches go to the others then).
//!
//! Exactly-once in effect: the state, the events and the next due time of one check are written
//! in one transaction, and an event's id is derived from the watch, the ordinal of the change and
//! its target state ([`crate::events::event_id`]). A check repeated after a crash starts from the
//! same stored state and ordinal, so it emits the same ids, which the store ignores; a check
//! whose lease was taken over writes nothing.
//!
//! The monthly fee is charged here at each month's reset, before the first check of the month,
//! straight into the ledger's store with an id derived from the watch and the month
//! ([`super::fee_event_id`]), so a repeated charge is applied once.
//!
//! Re-checks yield to users' lookups: they run on their own job kind (`watch`) with their own few
//! workers (`jobs.watch_workers`, `fleet.watch_concurrency`) behind the same engine, caches and
//! per-registry politeness limits, as background jobs ([`common::priority`]: only the background
//! share of each upstream's budget), and each scheduler runs at most `watches.concurrency` at once.

use std::sync::Arc;
use std::time::Duration;

use common::lookup::WatchObservation;
use common::messages::{LedgerEvent, billing_period};
use futures::StreamExt;
use time::OffsetDateTime;

use super::{Lifecycle, WatchCheck, WatchRecord, WatchesConfig};
use crate::events::{NewEvent, event_id};
use crate::front::dispatch::{BusError, JobBus};
use crate::front::state::Clock;
use crate::store::Store;

/// A running scheduler; dropping it stops it (a check in flight is abandoned: its lease runs out).
#[derive(Debug)]
pub struct Scheduler {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Context {
    store: Arc<dyn Store>,
    bus: Arc<dyn JobBus>,
    clock: Clock,
    config: WatchesConfig,
    owner: String,
}

/// Starts the scheduler of this process (`owner`: a name unique to the process, written into its
/// leases).
pub fn start(
    store: Arc<dyn Store>,
    bus: Arc<dyn JobBus>,
    clock: Clock,
    config: WatchesConfig,
    owner: String,
) -> Scheduler {
    let context = Arc::new(Context { store, bus, clock, config, owner });
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(context.config.tick_ms.max(10)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = context.round().await {
                tracing::warn!(error = %e, "watch scheduler round failed; trying again next tick");
            }
        }
    });
    Scheduler { task }
}

impl Context {
    /// One round: lease what is due, re-check it.
    async fn round(self: &Arc<Self>) -> anyhow::Result<()> {
        let now = (self.clock)().unix_timestamp();
        let until = now + self.config.lease_secs.max(1);
        let leased = self.store.lease_due_watches(&self.owner, now, until, self.config.batch.max(1)).await?;
        if leased.is_empty() {
            return Ok(());
        }
        metrics::counter!("dsa_watch_rechecks_total").increment(leased.len() as u64);
        futures::stream::iter(leased)
            .for_each_concurrent(self.config.concurrency.max(1), |watch| async move {
                let id = watch.id.clone();
                // Background work: its jobs use only the background share of each budget.
                if let Err(e) = common::priority::background(self.recheck(watch)).await {
                    tracing::warn!(watch = %id, error = %e, "watch re-check not written; its lease will run out");
                }
            })
            .await;
        Ok(())
    }

    /// Charges the month's fee when it is due, re-checks the name and writes the outcome.
    async fn recheck(&self, watch: WatchRecord) -> anyhow::Result<()> {
        let now_at = (self.clock)();
        let now = now_at.unix_timestamp();
        let wait = Duration::from_secs_f64(self.config.job_wait_secs.max(0.1));
        if let Some(registry_due) = super::delegation_look(&watch, now, &self.config) {
            // Between registry checks: only the DNS delegation (no registry query, no fee).
            let delegated = match self.bus.watch_delegation(&watch.domain, wait).await {
                Ok(observation) => observation.delegated,
                Err(_) => None,
            };
            if !super::delegation_changed(&watch, delegated, now, &self.config) {
                let check = WatchCheck {
                    state: watch.state,
                    epp_status: watch.epp_status.clone(),
                    expires_at: watch.expires_at,
                    predicted_drop_at: watch.predicted_drop_at,
                    evidence: watch.evidence.clone(),
                    transitions: watch.transitions,
                    expiring_for: watch.expiring_for,
                    last_checked_at: watch.last_checked_at,
                    next_check_at: super::next_look(
                        watch.state,
                        registry_due,
                        now,
                        &self.config,
                        super::look_spread(&watch.id),
                    ),
                    failures: watch.failures,
                    charged_period: watch.charged_period.clone(),
                };
                if !self.store.finish_watch_check(&watch.id, &self.owner, check, Vec::new()).await? {
                    tracing::info!(watch = %watch.id, "watch deleted or its lease taken over meanwhile; nothing written");
                }
                return Ok(());
            }
            metrics::counter!("dsa_watch_delegation_signals_total").increment(1);
            tracing::info!(watch = %watch.id, domain = %watch.domain, ?delegated, "delegation changed; re-checking at the registry now");
        }
        let charged_period = self.charge_month(&watch, now_at).await;
        let observed = self.bus.watch(&watch.domain, wait).await;
        let assessed = match &observed {
            Ok(observation) => super::assess(observation, now_at, &self.config).map(|state| (observation, state)),
            Err(_) => None,
        };
        let (check, events) = match assessed {
            Some((observation, state)) => self.outcome(&watch, observation, state, now_at, charged_period),
            None => {
                let failures = watch.failures + 1;
                let why = match &observed {
                    Ok(observation) => observation.evidence.clone(),
                    Err(BusError::Rejected(reason)) => reason.clone(),
                    Err(e) => e.to_string(),
                };
                tracing::debug!(watch = %watch.id, domain = %watch.domain, %why, "no definitive answer; keeping the state");
                let check = WatchCheck {
                    state: watch.state,
                    epp_status: watch.epp_status.clone(),
                    expires_at: watch.expires_at,
                    predicted_drop_at: watch.predicted_drop_at,
                    evidence: watch.evidence.clone(),
                    transitions: watch.transitions,
                    expiring_for: watch.expiring_for,
                    last_checked_at: watch.last_checked_at,
                    next_check_at: super::retry_at(&watch, failures, now, &self.config),
                    failures,
                    charged_period,
                };
                (check, Vec::new())
            }
        };
        if !self.store.finish_watch_check(&watch.id, &self.owner, check, events).await? {
            tracing::info!(watch = %watch.id, "watch deleted or its lease taken over meanwhile; nothing written");
        }
        Ok(())
    }

    /// Charges the fee of the current month when it has not been (idempotent by its id); returns
    /// the last month charged.
    async fn charge_month(&self, watch: &WatchRecord, now: OffsetDateTime) -> String {
        let period = billing_period(now);
        if watch.charged_period == period {
            return period;
        }
        if self.config.monthly_fee <= 0 {
            return period;
        }
        let event = LedgerEvent {
            event_id: super::fee_event_id(&watch.id, &period),
            key_id: watch.key_id.clone(),
            period: period.clone(),
            endpoint: super::FEE_ENDPOINT.to_owned(),
            credits: self.config.monthly_fee,
            charged_at: now,
            front: self.owner.clone(),
            request_id: None,
        };
        match self.store.apply_ledger(vec![event]).await {
            Ok(_) => period,
            Err(e) => {
                tracing::warn!(watch = %watch.id, error = %e, "monthly watch fee not charged; trying at the next check");
                watch.charged_period.clone()
            }
        }
    }

    /// The write-back and events of a definitive observation.
    fn outcome(
        &self,
        watch: &WatchRecord,
        observation: &WatchObservation,
        state: Lifecycle,
        now_at: OffsetDateTime,
        charged_period: String,
    ) -> (WatchCheck, Vec<NewEvent>) {
        let now = now_at.unix_timestamp();
        let expires_at = observation.expires_at.map(OffsetDateTime::unix_timestamp);
        let changed = state != watch.state;
        let predicted_drop_at = if changed || !matches!(state, Lifecycle::Redemption | Lifecycle::PendingDelete) {
            // The earliest the name can have entered this state: the previous check (which saw
            // another state), or, on the first look, as long ago as the state can last.
            let entered_after = match (watch.state, state) {
                (Lifecycle::Unknown, Lifecycle::Redemption) => now - super::REDEMPTION_DAYS * 86_400,
                (Lifecycle::Unknown, Lifecycle::PendingDelete) => now - super::PENDING_DELETE_DAYS * 86_400,
                _ => watch.last_checked_at.unwrap_or(now),
            };
            super::predicted_drop(state, expires_at, entered_after, None)
        } else {
            watch.predicted_drop_at
        };
        let ordinal = watch.transitions + 1;
        let emissions =
            super::transition_events(&watch.id, watch.state, state, ordinal, expires_at, watch.expiring_for);
        let expiring_for =
            if emissions.iter().any(|e| e.event_type == "domain.expiring") { expires_at } else { watch.expiring_for };
        let data = serde_json::json!({
            "watch_id": watch.id,
            "domain": watch.domain,
            "from": watch.state.as_str(),
            "to": state.as_str(),
            "epp_status": observation.epp_status,
            "expires_at": expires_at.map(super::rfc3339),
            "predicted_drop_at": predicted_drop_at.map(super::rfc3339),
            "evidence": observation.evidence,
            "checked_at": super::rfc3339(now),
        });
        let events = emissions
            .into_iter()
            .filter(|e| watch.events.iter().any(|wanted| wanted == e.event_type))
            .map(|e| {
                let parts: Vec<&str> = e.id_parts.iter().map(String::as_str).collect();
                NewEvent {
                    id: event_id(&parts),
                    key_id: watch.key_id.clone(),
                    event_type: e.event_type.to_owned(),
                    subject: Some(watch.id.clone()),
                    occurred_at: now_at,
                    data: data.clone(),
                }
            })
            .collect::<Vec<_>>();
        if changed && watch.state != Lifecycle::Unknown {
            tracing::info!(watch = %watch.id, domain = %watch.domain, from = watch.state.as_str(), to = state.as_str(), "watched name changed state");
        }
        let check = WatchCheck {
            state,
            epp_status: observation.epp_status.clone(),
            expires_at,
            predicted_drop_at,
            evidence: observation.evidence.clone(),
            transitions: if changed { ordinal } else { watch.transitions },
            expiring_for,
            last_checked_at: Some(now),
            next_check_at: super::next_look(
                state,
                super::next_check(state, expires_at, predicted_drop_at, now, &self.config),
                now,
                &self.config,
                super::look_spread(&watch.id),
            ),
            failures: 0,
            charged_period,
        };
        (check, events)
    }
}
