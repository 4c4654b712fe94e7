//! Watches (issue 25): a key follows a registrable domain through its lifecycle and gets one
//! event per change.
//!
//! ```text
//! POST /v1/watches ──► watches row (state unknown, due now), monthly fee charged (ledger)
//!                            │
//!   scheduler (every dsa serve / dsa front) ── lease due rows in the store ──► watch job on the
//!   bus (own queue: yields to users' lookups) ──► workers::jobs::watch: registration record
//!   (RDAP/WHOIS), the availability check when the registry says "not registered"
//!                            │
//!   assess ──► lifecycle state ──► events (stable ids) + next due time, one transaction
//! ```
//!
//! This module holds what the store, the routes and the scheduler share: the settings
//! ([`WatchesConfig`]), the stored record ([`WatchRecord`]), the lifecycle states ([`Lifecycle`]),
//! how an observation becomes a state ([`assess`]), which events a change emits
//! ([`transition_events`]) and when to look again ([`next_check`]). The loop itself is
//! [`scheduler`].
//!
//! The lifecycle follows the gTLD one (ICANN's Expired Registration Recovery Policy and RFC 3915):
//! a registered name reaches its expiry date, may sit in the auto-renew grace period (still
//! registered), is deleted into the redemption grace period (30 days, EPP `redemptionPeriod`),
//! then `pendingDelete` (5 days), then is purged and free. Registries differ in the lengths; the
//! scheduler only uses them to predict the *earliest* drop, and tightens its checks around it.

pub mod scheduler;

use common::lookup::WatchObservation;
use common::verdict::Status;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Prefix of a watch id (`wch_` + 32 hex digits of a UUID v7, so ids sort by creation).
pub const WATCH_ID_PREFIX: &str = "wch_";

/// The event types a watch can emit (the default subscription is all of them).
pub const EVENT_TYPES: [&str; 4] = ["domain.available", "domain.registered", "domain.expiring", "domain.state_changed"];

/// The ledger's endpoint name of a watch's monthly fee.
pub const FEE_ENDPOINT: &str = "watch";

/// RFC 3915 §3.1: the redemption grace period lasts 30 days.
pub const REDEMPTION_DAYS: i64 = 30;
/// RFC 3915 §3.1: the pending-delete period lasts 5 days.
pub const PENDING_DELETE_DAYS: i64 = 5;

/// Watch settings (`[watches]`): the fee and the scheduler's rhythm. Intervals are seconds of the
/// process's clock.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WatchesConfig {
    /// Run the re-check scheduler in this process (`dsa serve`, `dsa front`). Several processes
    /// may run it: leases in the store keep any two from re-checking one watch at once.
    pub scheduler: bool,
    /// Credits a watch costs per month, charged at creation and at each month's reset.
    pub monthly_fee: i64,
    /// Most watches one key may hold.
    pub max_per_key: i64,
    /// `domain.expiring` fires this many days before the registry's expiry date.
    pub expiring_days: i64,
    /// How often the scheduler looks for due watches, milliseconds.
    pub tick_ms: u64,
    /// Most watches one scheduler leases per tick.
    pub batch: i64,
    /// Re-checks one scheduler runs at once.
    pub concurrency: usize,
    /// How long a lease holds, seconds: a process that dies mid-check leaves its watches to the
    /// others after this.
    pub lease_secs: i64,
    /// How long one re-check may wait for a worker, seconds.
    pub job_wait_secs: f64,
    /// Longest gap between checks of a registered name far from expiry.
    pub registered_interval_secs: i64,
    /// Gap between checks of a name near expiry, in redemption, pending delete outside the drop
    /// window, or free (≤ 2 registry queries a day at the default).
    pub near_interval_secs: i64,
    /// Gap between checks inside the drop window.
    pub drop_interval_secs: i64,
    /// The drop window opens this long before the predicted earliest drop.
    pub drop_window_before_secs: i64,
    /// ... and closes this long after it (then the checks fall back to `near_interval_secs`).
    pub drop_window_after_secs: i64,
    /// First retry after a re-check without a definitive answer (doubling up to
    /// `near_interval_secs`; inside the drop window, `drop_interval_secs`).
    pub retry_secs: i64,
    /// Gap between checks of a reserved or restricted name.
    pub reserved_interval_secs: i64,
    /// Gap between DNS looks at a registered name far from expiry, between its registry checks:
    /// only whether the registry's name servers delegate it (no registry query). A delegation
    /// that disappears sends the name to the registry at once, when its last registry check is at
    /// least `near_interval_secs` old (so a name registered but never delegated stays within the
    /// near pace). 0: no DNS looks.
    pub delegation_interval_secs: i64,
}

impl Default for WatchesConfig {
    fn default() -> Self {
        Self {
            scheduler: true,
            monthly_fee: 20,
            max_per_key: 1000,
            expiring_days: 30,
            tick_ms: 1000,
            batch: 200,
            concurrency: 4,
            lease_secs: 120,
            job_wait_secs: 10.0,
            registered_interval_secs: 7 * 86_400,
            near_interval_secs: 12 * 3600,
            drop_interval_secs: 30,
            drop_window_before_secs: 6 * 3600,
            drop_window_after_secs: 2 * 86_400,
            retry_secs: 300,
            reserved_interval_secs: 7 * 86_400,
            delegation_interval_secs: 6 * 3600,
        }
    }
}

/// Where a watched name is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// Not checked yet (a new watch).
    Unknown,
    /// Registered, its expiry date more than `expiring_days` away (or not published).
    Registered,
    /// Registered, its expiry date within `expiring_days` (or passed: auto-renew grace).
    Expiring,
    /// Deleted by the registrar, restorable by the holder (EPP `redemptionPeriod`, 30 days).
    Redemption,
    /// About to be purged (EPP `pendingDelete`, 5 days); not restorable.
    PendingDelete,
    /// The registry says the name is not registered.
    Available,
    /// The registry reserves or blocks the name.
    Reserved,
    /// Only eligible registrants may register it.
    Restricted,
}

impl Lifecycle {
    /// The stored and public name (`pending_delete`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Registered => "registered",
            Self::Expiring => "expiring",
            Self::Redemption => "redemption",
            Self::PendingDelete => "pending_delete",
            Self::Available => "available",
            Self::Reserved => "reserved",
            Self::Restricted => "restricted",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Unknown,
            Self::Registered,
            Self::Expiring,
            Self::Redemption,
            Self::PendingDelete,
            Self::Available,
            Self::Reserved,
            Self::Restricted,
        ]
        .into_iter()
        .find(|l| l.as_str() == s)
    }

    /// Whether a registration exists in this state.
    pub fn is_registered(self) -> bool {
        matches!(self, Self::Registered | Self::Expiring | Self::Redemption | Self::PendingDelete)
    }
}

/// A watch as stored. Instants are unix seconds (UTC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchRecord {
    /// `wch_…`.
    pub id: String,
    /// The key that owns it.
    pub key_id: String,
    /// Registrable domain (A-label).
    pub domain: String,
    /// Event types emitted for it.
    pub events: Vec<String>,
    /// The owner's note.
    pub note: String,
    /// Lifecycle state at the last definitive check.
    pub state: Lifecycle,
    /// EPP statuses at the last definitive check.
    pub epp_status: Vec<String>,
    /// Registry expiry date, when published.
    pub expires_at: Option<i64>,
    /// Predicted earliest drop, when it can be computed.
    pub predicted_drop_at: Option<i64>,
    /// Evidence of the last definitive check.
    pub evidence: String,
    /// State changes recorded so far (the ordinal in event ids).
    pub transitions: i64,
    /// The expiry date `domain.expiring` was emitted for.
    pub expiring_for: Option<i64>,
    /// Last definitive check.
    pub last_checked_at: Option<i64>,
    /// Next re-check due.
    pub next_check_at: i64,
    /// Re-checks in a row without a definitive answer.
    pub failures: i64,
    /// Last billing month whose fee was charged (`YYYY-MM`).
    pub charged_period: String,
    /// Creation.
    pub created_at: i64,
}

/// A watch to store ([`crate::store::Store::create_watch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWatch {
    /// `wch_…`.
    pub id: String,
    /// Owner.
    pub key_id: String,
    /// Registrable domain (A-label).
    pub domain: String,
    /// Event types to emit.
    pub events: Vec<String>,
    /// Note.
    pub note: String,
    /// First check due (now).
    pub next_check_at: i64,
    /// The month whose fee the creation charges.
    pub charged_period: String,
    /// Now.
    pub created_at: i64,
}

/// What one re-check writes back ([`crate::store::Store::finish_watch_check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchCheck {
    /// New state.
    pub state: Lifecycle,
    /// EPP statuses.
    pub epp_status: Vec<String>,
    /// Expiry date.
    pub expires_at: Option<i64>,
    /// Predicted earliest drop.
    pub predicted_drop_at: Option<i64>,
    /// Evidence.
    pub evidence: String,
    /// State changes recorded so far.
    pub transitions: i64,
    /// The expiry date `domain.expiring` was emitted for.
    pub expiring_for: Option<i64>,
    /// Last definitive check.
    pub last_checked_at: Option<i64>,
    /// Next re-check due.
    pub next_check_at: i64,
    /// Re-checks in a row without a definitive answer.
    pub failures: i64,
    /// Last month charged.
    pub charged_period: String,
}

/// A new watch id.
pub fn new_watch_id() -> String {
    format!("{WATCH_ID_PREFIX}{}", uuid::Uuid::now_v7().simple())
}

/// The ledger event id of a watch's fee for a month: the same in every process and on every
/// retry, so the month is charged once (the ledger applies an id once). A UUID built from the
/// first 16 bytes of a SHA-256 of the parts (version and variant bits set as for random ones).
pub fn fee_event_id(watch_id: &str, period: &str) -> uuid::Uuid {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(b"dsa watch fee v1")
        .chain_update((watch_id.len() as u64).to_be_bytes())
        .chain_update(watch_id.as_bytes())
        .chain_update(period.as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// What a definitive observation says the state is at `now`; `None` without a definitive registry
/// answer (the watch keeps its state). DNS alone never makes a name available: the worker only
/// reports `available` on the registry's word (engine house rule).
pub fn assess(observation: &WatchObservation, now: OffsetDateTime, config: &WatchesConfig) -> Option<Lifecycle> {
    let has = |status: &str| observation.epp_status.iter().any(|s| s.eq_ignore_ascii_case(status));
    Some(match observation.status? {
        Status::Unknown => return None,
        Status::Available => Lifecycle::Available,
        Status::Reserved => Lifecycle::Reserved,
        Status::Restricted => Lifecycle::Restricted,
        Status::Taken | Status::PendingDelete => {
            // RFC 3915 §3.3: a name in redemption carries `pendingDelete` with the RGP status
            // `redemptionPeriod` (or `pendingRestore` while a restore is pending); once
            // `pendingDelete` stands alone, only the purge remains.
            if has("redemptionPeriod") || has("pendingRestore") {
                Lifecycle::Redemption
            } else if has("pendingDelete") || observation.status == Some(Status::PendingDelete) {
                Lifecycle::PendingDelete
            } else if observation
                .expires_at
                .is_some_and(|at| at - now <= time::Duration::days(config.expiring_days.max(0)))
            {
                Lifecycle::Expiring
            } else {
                Lifecycle::Registered
            }
        }
    })
}

/// The predicted earliest drop after a check in `state` at `now` (unix s): the shortest path
/// through the remaining periods from the earliest moment the name can have entered `state`
/// (`entered_after`: the previous check, when the state was different then).
pub fn predicted_drop(
    state: Lifecycle,
    expires_at: Option<i64>,
    entered_after: i64,
    previous: Option<i64>,
) -> Option<i64> {
    const DAY: i64 = 86_400;
    let predicted = match state {
        // A registered name far from expiry is usually renewed: no prediction until it nears it.
        Lifecycle::Expiring => expires_at.map(|at| at + (REDEMPTION_DAYS + PENDING_DELETE_DAYS) * DAY),
        Lifecycle::Redemption => Some(entered_after + (REDEMPTION_DAYS + PENDING_DELETE_DAYS) * DAY),
        Lifecycle::PendingDelete => Some(entered_after + PENDING_DELETE_DAYS * DAY),
        _ => None,
    };
    match (state, predicted, previous) {
        // Staying in one state, the estimate only becomes more precise when a later entry is
        // known; keep the earliest.
        (Lifecycle::Redemption | Lifecycle::PendingDelete, Some(p), Some(q)) => Some(p.min(q)),
        _ => predicted,
    }
}

/// When to look at a watch again after a check at `now` (unix s) found `state`.
pub fn next_check(
    state: Lifecycle,
    expires_at: Option<i64>,
    predicted_drop_at: Option<i64>,
    now: i64,
    config: &WatchesConfig,
) -> i64 {
    let near = config.near_interval_secs.max(1);
    let in_drop_window = predicted_drop_at.is_some_and(|drop| {
        now >= drop - config.drop_window_before_secs && now <= drop + config.drop_window_after_secs
    });
    let gap = match state {
        Lifecycle::Unknown => config.retry_secs,
        Lifecycle::Registered => {
            let far = config.registered_interval_secs.max(near);
            match expires_at {
                // Look again when it enters the expiring window (not before the near gap).
                Some(at) => (at - config.expiring_days * 86_400 - now).clamp(near, far),
                None => far,
            }
        }
        // Still registered (auto-renew grace can outlast the earliest-drop estimate): no drop
        // window until the registrar deletes the name.
        Lifecycle::Expiring => match predicted_drop_at.map(|drop| drop - config.drop_window_before_secs - now) {
            Some(left) if left > 0 => left.min(near),
            _ => near,
        },
        Lifecycle::Redemption | Lifecycle::PendingDelete => {
            if in_drop_window {
                config.drop_interval_secs
            } else {
                // Outside the window, never sleep past its opening.
                let until_window = predicted_drop_at.map(|drop| drop - config.drop_window_before_secs - now);
                match until_window {
                    Some(left) if left > 0 => left.min(near),
                    _ => near,
                }
            }
        }
        Lifecycle::Available => near,
        Lifecycle::Reserved | Lifecycle::Restricted => config.reserved_interval_secs.max(near),
    };
    now + gap.max(1)
}

/// Whether a registered name's due time at `now` is a DNS look rather than a registry check:
/// its registry check (`next_check` from its last definitive check) is not due yet and DNS looks
/// are on. Returns when the registry check is due.
pub fn delegation_look(watch: &WatchRecord, now: i64, config: &WatchesConfig) -> Option<i64> {
    if config.delegation_interval_secs <= 0 || watch.state != Lifecycle::Registered || watch.failures > 0 {
        return None;
    }
    let last = watch.last_checked_at?;
    let registry_due = next_check(watch.state, watch.expires_at, watch.predicted_drop_at, last, config);
    (registry_due > now).then_some(registry_due)
}

/// When to look next at a watch whose registry check is due at `registry_due`: sooner, for a DNS
/// look, when the name is registered far from expiry.
///
/// The DNS look comes up to a tenth of `delegation_interval_secs` early, by an offset fixed per
/// watch (`spread`, from [`look_spread`]): watches created together would otherwise fall due at
/// the same second every interval (a burst of DNS queries and a scheduler round that waits for
/// all of them); with their own offsets they drift further apart at every look. Never later than
/// the interval.
pub fn next_look(state: Lifecycle, registry_due: i64, now: i64, config: &WatchesConfig, spread: u64) -> i64 {
    let interval = config.delegation_interval_secs;
    if state == Lifecycle::Registered && interval > 0 {
        let early = spread % (interval.unsigned_abs() / 10 + 1);
        registry_due.min(now + interval - i64::try_from(early).unwrap_or(0))
    } else {
        registry_due
    }
}

/// A watch's fixed offset for [`next_look`]: the 64-bit FNV-1a hash of its id, the same in every
/// process and version.
pub fn look_spread(watch_id: &str) -> u64 {
    watch_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// Whether a DNS look's answer calls for a registry check now: the delegation contradicts the
/// state (a registered name not delegated, or the reverse) and the last registry check is at
/// least `near_interval_secs` old.
pub fn delegation_changed(watch: &WatchRecord, delegated: Option<bool>, now: i64, config: &WatchesConfig) -> bool {
    let contradicts = delegated.is_some_and(|d| d != watch.state.is_registered());
    contradicts && watch.last_checked_at.is_none_or(|last| now - last >= config.near_interval_secs)
}

/// When to try again after a re-check without a definitive answer (`failures` in a row, this one
/// included).
pub fn retry_at(watch: &WatchRecord, failures: i64, now: i64, config: &WatchesConfig) -> i64 {
    let in_drop_window = watch.predicted_drop_at.is_some_and(|drop| {
        now >= drop - config.drop_window_before_secs && now <= drop + config.drop_window_after_secs
    });
    let cap = if in_drop_window { config.drop_interval_secs } else { config.near_interval_secs };
    let exponent = u32::try_from((failures - 1).clamp(0, 20)).unwrap_or(20);
    let gap = config.retry_secs.max(1).saturating_mul(1_i64 << exponent).min(cap.max(1));
    now + gap
}

/// One event a transition emits: its type and its ids' parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emission {
    /// Event type.
    pub event_type: &'static str,
    /// The parts of its stable id ([`crate::events::event_id`]).
    pub id_parts: Vec<String>,
}

/// The events a change from `from` to `to` emits, as the `ordinal`-th change of `watch_id`
/// (`from` = [`Lifecycle::Unknown`]: the first look, which sets the baseline and emits nothing).
/// `domain.expiring` is emitted once per expiry date, when `to` is expiring and the date has not
/// been announced yet.
pub fn transition_events(
    watch_id: &str,
    from: Lifecycle,
    to: Lifecycle,
    ordinal: i64,
    expires_at: Option<i64>,
    expiring_for: Option<i64>,
) -> Vec<Emission> {
    let mut out = Vec::new();
    if from == Lifecycle::Unknown {
        return out;
    }
    let ordinal = ordinal.to_string();
    let mut emit = |event_type: &'static str| {
        out.push(Emission {
            event_type,
            id_parts: vec![watch_id.to_owned(), ordinal.clone(), to.as_str().to_owned(), event_type.to_owned()],
        });
    };
    if from != to {
        emit("domain.state_changed");
        if to == Lifecycle::Available {
            emit("domain.available");
        }
        if to.is_registered() && !from.is_registered() {
            emit("domain.registered");
        }
    }
    if to == Lifecycle::Expiring
        && let Some(at) = expires_at
        && expiring_for != Some(at)
    {
        out.push(Emission {
            event_type: "domain.expiring",
            id_parts: vec![watch_id.to_owned(), "expiring".into(), at.to_string()],
        });
    }
    out
}

/// An instant as RFC 3339 (UTC), for the API and event data.
pub fn rfc3339(unix: i64) -> String {
    use time::format_description::well_known::Rfc3339;
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| unix.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observation(status: Option<Status>, epp: &[&str], expires: Option<OffsetDateTime>) -> WatchObservation {
        WatchObservation {
            domain: "example.com".into(),
            status,
            epp_status: epp.iter().map(|s| (*s).to_owned()).collect(),
            expires_at: expires,
            delegated: None,
            evidence: String::new(),
            checked_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    /// Watches created together get DNS looks spread over the last tenth of the interval, each
    /// at its own fixed offset, never later than the interval; a registry check due sooner wins.
    #[test]
    fn delegation_looks_of_watches_created_together_are_spread() {
        let config = WatchesConfig::default();
        let (now, interval) = (1_800_000_000_i64, config.delegation_interval_secs);
        let far = now + 30 * 86_400;
        let looks: Vec<i64> = (0..100)
            .map(|i| next_look(Lifecycle::Registered, far, now, &config, look_spread(&format!("wch_{i:04}"))))
            .collect();
        for look in &looks {
            assert!((now + interval - interval / 10..=now + interval).contains(look), "{look} outside the spread");
        }
        let distinct: std::collections::BTreeSet<_> = looks.iter().collect();
        assert!(distinct.len() >= 90, "100 watches share {} look times", distinct.len());
        let spread = looks.iter().max().copied().unwrap_or(0) - looks.iter().min().copied().unwrap_or(0);
        assert!(spread > interval / 20, "looks within {spread} s of each other");
        // Stable: the same watch, the same offset.
        assert_eq!(look_spread("wch_0001"), look_spread("wch_0001"));
        assert_eq!(next_look(Lifecycle::Registered, now + 60, now, &config, u64::MAX), now + 60);
        assert_eq!(next_look(Lifecycle::Available, far, now, &config, 12345), far);
        let off = WatchesConfig { delegation_interval_secs: 0, ..WatchesConfig::default() };
        assert_eq!(next_look(Lifecycle::Registered, far, now, &off, 12345), far);
    }

    #[test]
    fn observations_become_states() {
        let config = WatchesConfig::default();
        let now = time::macros::datetime!(2026-01-01 00:00 UTC);
        let far = Some(now + time::Duration::days(90));
        let near = Some(now + time::Duration::days(10));
        let cases = [
            (observation(Some(Status::Taken), &["clientTransferProhibited"], far), Some(Lifecycle::Registered)),
            (observation(Some(Status::Taken), &[], near), Some(Lifecycle::Expiring)),
            (observation(Some(Status::Taken), &[], None), Some(Lifecycle::Registered)),
            (
                observation(Some(Status::PendingDelete), &["pendingDelete", "redemptionPeriod"], far),
                Some(Lifecycle::Redemption),
            ),
            (observation(Some(Status::Taken), &["pendingDelete"], far), Some(Lifecycle::PendingDelete)),
            (observation(Some(Status::Available), &[], None), Some(Lifecycle::Available)),
            (observation(Some(Status::Unknown), &[], None), None),
            (observation(None, &[], None), None),
        ];
        for (obs, want) in cases {
            assert_eq!(assess(&obs, now, &config), want, "{obs:?}");
        }
    }

    #[test]
    fn transitions_emit_stable_events_once_per_change() {
        let first = transition_events("w", Lifecycle::Unknown, Lifecycle::Registered, 1, None, None);
        assert!(first.is_empty(), "the first look is the baseline");
        let same = transition_events("w", Lifecycle::Registered, Lifecycle::Registered, 1, None, None);
        assert!(same.is_empty());
        let free = transition_events("w", Lifecycle::PendingDelete, Lifecycle::Available, 4, None, None);
        let types: Vec<_> = free.iter().map(|e| e.event_type).collect();
        assert_eq!(types, ["domain.state_changed", "domain.available"]);
        assert_eq!(free, transition_events("w", Lifecycle::PendingDelete, Lifecycle::Available, 4, None, None));
        let taken = transition_events("w", Lifecycle::Available, Lifecycle::Registered, 5, None, None);
        assert_eq!(
            taken.iter().map(|e| e.event_type).collect::<Vec<_>>(),
            ["domain.state_changed", "domain.registered"]
        );
        let expiring = transition_events("w", Lifecycle::Registered, Lifecycle::Expiring, 2, Some(100), None);
        assert_eq!(
            expiring.iter().map(|e| e.event_type).collect::<Vec<_>>(),
            ["domain.state_changed", "domain.expiring"]
        );
        assert!(transition_events("w", Lifecycle::Expiring, Lifecycle::Expiring, 2, Some(100), Some(100)).is_empty());
    }

    #[test]
    fn checks_tighten_around_the_drop() {
        let config = WatchesConfig::default();
        let now = 1_000_000_000;
        let day = 86_400;
        // Far from expiry: once a week at most, and never past the expiring window's opening.
        assert_eq!(next_check(Lifecycle::Registered, Some(now + 400 * day), None, now, &config), now + 7 * day);
        assert_eq!(
            next_check(Lifecycle::Registered, Some(now + 33 * day), None, now, &config),
            now + 3 * day,
            "wakes when the expiring window opens"
        );
        // Pending delete: twice a day until the drop window, then every 30 s.
        let drop = now + 3 * day;
        assert_eq!(next_check(Lifecycle::PendingDelete, None, Some(drop), now, &config), now + 12 * 3600);
        let at = drop - 3600;
        assert_eq!(next_check(Lifecycle::PendingDelete, None, Some(drop), at, &config), at + 30);
        let before = drop - 6 * 3600 - 100;
        assert_eq!(next_check(Lifecycle::PendingDelete, None, Some(drop), before, &config), before + 100);
        // A name still registered past its expiry waits in auto-renew grace at the near pace.
        assert_eq!(next_check(Lifecycle::Expiring, None, Some(drop), at, &config), at + 12 * 3600);
    }

    #[test]
    fn fee_ids_are_stable_per_watch_and_month() {
        assert_eq!(fee_event_id("wch_1", "2026-11"), fee_event_id("wch_1", "2026-11"));
        assert_ne!(fee_event_id("wch_1", "2026-11"), fee_event_id("wch_1", "2026-12"));
        assert_ne!(fee_event_id("wch_1", "2026-11"), fee_event_id("wch_2", "2026-11"));
    }
}
