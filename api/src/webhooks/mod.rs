//! Webhooks (issue 25): a key's events delivered to HTTPS endpoints, signed as the Standard
//! Webhooks specification says (`standard-webhooks/standard-webhooks`, `spec/standard-webhooks.md`).
//!
//! ```text
//! Store::emit_event ─► events (dispatched = false)
//!                         │  deliver::fan_out: one transaction per batch (Postgres: FOR UPDATE SKIP LOCKED)
//!                         ▼
//!                webhook_deliveries (one per event × matching webhook, unique) ──► deliver::run
//!                         │  claim due deliveries under a lease (expires: a killed process's claim returns)
//!                         ▼
//!                POST url (guard: https, public unicast, pinned address, no redirect, 10 s, capped body)
//!                         │  webhook-id = event id (the same on every retry), webhook-timestamp, webhook-signature
//!                         ▼
//!                2xx: delivered · else: next attempt after RETRY_SCHEDULE_SECS (± jitter), failed after the last
//! ```
//!
//! * [`guard`] — which URLs may be registered and reached (the registrar referral's SSRF rules);
//! * [`deliver`] — the fan-out and the delivery loop, on an injectable clock;
//! * the HTTP endpoints are in `front/routes/webhooks.rs`, the SQL in `store/webhooks.rs`.

pub mod deliver;
pub mod guard;

use std::sync::Arc;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use time::OffsetDateTime;

/// The clock of the delivery loop (what is due, when to retry, when to disable): the state's
/// clock, so tests pass hours in seconds.
pub type Clock = Arc<dyn Fn() -> OffsetDateTime + Send + Sync>;

/// The event types a webhook may subscribe to (an empty filter means all of them).
pub const EVENT_TYPES: &[&str] = &[
    "domain.available",
    "domain.registered",
    "domain.expiring",
    "domain.state_changed",
    "job.finished",
    "webhook.test",
    "webhook.disabled",
];

/// Prefix of a webhook's id.
pub const WEBHOOK_ID_PREFIX: &str = "wh_";
/// Prefix of a delivery's id.
pub const DELIVERY_ID_PREFIX: &str = "dlv_";
/// Prefix of a signing secret (Standard Webhooks).
pub const SECRET_PREFIX: &str = "whsec_";
/// Bytes of a signing secret (the specification asks for 24 to 64).
pub const SECRET_BYTES: usize = 32;
/// Most webhooks (not deleted) one key may have.
pub const MAX_WEBHOOKS_PER_KEY: i64 = 20;
/// Longest URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 2048;
/// Longest description accepted, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 200;

/// The waits before the 2nd, 3rd, … attempt of a delivery, in seconds: 5 s, 5 min, 30 min, 2 h,
/// 5 h, 10 h, 10 h (the schedule Standard Webhooks suggests, one more 10 h wait). Eight attempts
/// over about 27.6 hours; each wait varies by up to ±10 % (jitter).
pub const RETRY_SCHEDULE_SECS: &[i64] = &[5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];

/// Webhook settings (`[webhooks]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookConfig {
    /// Whether this process runs the delivery loop (standalone, and every fleet front).
    pub deliver: bool,
    /// Seconds one delivery attempt may take (connect, send, answer).
    pub timeout_secs: f64,
    /// Bytes of an endpoint's answer read at most; the rest is not read (the attempt still
    /// counts by its status).
    pub max_response_bytes: usize,
    /// Milliseconds between two looks for due deliveries when there was nothing to do.
    pub poll_ms: u64,
    /// Most deliveries claimed at once by one loop (also at most the free attempt slots).
    pub batch: usize,
    /// Attempts in flight at once in one loop. Each attempt is recorded as soon as it ends, and
    /// the loop claims more while others are in flight, so a slow endpoint takes up slots, not
    /// the whole loop.
    pub concurrency: usize,
    /// Seconds a claim on a delivery lasts; a process killed mid-attempt leaves a claim that
    /// expires after this, then another loop (or the restarted one) retries. Longer than
    /// `timeout_secs`.
    pub lease_secs: f64,
    /// Hours an endpoint may fail without one success before it is disabled.
    pub disable_after_hours: f64,
    /// Hours the previous secret still signs after a rotation.
    pub rotation_overlap_hours: f64,
    /// Days a delivery that ended (delivered, or given up after its last attempt) stays listed
    /// with its attempts; older ones are deleted (pending deliveries never are).
    pub keep_deliveries_days: f64,
    /// TESTS ONLY: accept `http://` URLs on loopback addresses (127.0.0.0/8, ::1). Every other
    /// non-public address stays refused. Production leaves it off.
    pub test_only_allow_loopback: bool,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            deliver: true,
            timeout_secs: 10.0,
            max_response_bytes: 64 * 1024,
            poll_ms: 500,
            batch: 64,
            concurrency: 32,
            lease_secs: 60.0,
            disable_after_hours: 120.0,
            rotation_overlap_hours: 24.0,
            keep_deliveries_days: 30.0,
            test_only_allow_loopback: false,
        }
    }
}

/// A webhook as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookRecord {
    /// `wh_…`.
    pub id: String,
    /// The key that owns it.
    pub key_id: String,
    /// Where deliveries go.
    pub url: String,
    /// Event types delivered; empty: all.
    pub event_types: Vec<String>,
    /// The owner's note.
    pub description: String,
    /// The current signing secret (`whsec_…`).
    pub secret: String,
    /// The previous secret and until when (unix ms) it still signs.
    pub previous_secret: Option<(String, i64)>,
    /// `active`, `disabled` or `deleted`.
    pub state: String,
    /// Why it was disabled.
    pub disabled_reason: Option<String>,
    /// First failed attempt since the last success (unix ms).
    pub failing_since_ms: Option<i64>,
    /// When it was created (unix ms).
    pub created_at_ms: i64,
}

impl WebhookRecord {
    /// Whether the webhook takes events of `event_type`.
    pub fn wants(&self, event_type: &str) -> bool {
        self.event_types.is_empty() || self.event_types.iter().any(|t| t == event_type)
    }

    /// The secrets that sign a message at `now_ms`: the current one, and the previous one during
    /// a rotation's overlap.
    pub fn signing_secrets(&self, now_ms: i64) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let Some((previous, until)) = &self.previous_secret
            && *until > now_ms
        {
            secrets.push(previous.as_str());
        }
        secrets
    }
}

/// A webhook being registered.
#[derive(Debug, Clone)]
pub struct NewWebhook {
    /// The owning key.
    pub key_id: String,
    /// Checked URL.
    pub url: String,
    /// Event types (checked against [`EVENT_TYPES`]).
    pub event_types: Vec<String>,
    /// Note.
    pub description: String,
    /// `whsec_…`.
    pub secret: String,
    /// Now, unix ms.
    pub now_ms: i64,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AttemptRecord {
    /// 1 for the first attempt.
    pub attempt: i64,
    /// When it started, RFC 3339 UTC.
    pub at: String,
    /// The endpoint's HTTP status, when it answered.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// Why it failed, when it did not get a 2xx answer.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Milliseconds from the start of the attempt to its end.
    pub latency_ms: i64,
}

/// A delivery as stored, with its attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    /// Cursor position.
    pub seq: i64,
    /// `dlv_…`.
    pub id: String,
    /// The webhook.
    pub webhook_id: String,
    /// The event (its id is the `webhook-id` header).
    pub event_id: String,
    /// The event's type.
    pub event_type: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    /// Attempts made.
    pub attempts: i64,
    /// When the next attempt is due (pending), unix ms.
    pub next_attempt_ms: i64,
    /// When it was delivered, unix ms.
    pub delivered_at_ms: Option<i64>,
    /// When it was created, unix ms.
    pub created_at_ms: i64,
    /// Every attempt, oldest first.
    pub attempt_log: Vec<AttemptRecord>,
}

/// A delivery claimed by a loop, with what it needs to send it.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    /// `dlv_…`.
    pub id: String,
    /// Attempts made before this one.
    pub attempts: i64,
    /// The webhook.
    pub webhook: WebhookRecord,
    /// The event id (`webhook-id`).
    pub event_id: String,
    /// The event's type.
    pub event_type: String,
    /// When the event happened, RFC 3339.
    pub occurred_at: String,
    /// The event's payload.
    pub data: serde_json::Value,
}

/// What one attempt came to.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    /// The delivery.
    pub delivery_id: String,
    /// The claim it was made under (a result whose claim was lost is still recorded as an
    /// attempt, but does not move the delivery).
    pub lease_owner: String,
    /// 1-based number of this attempt.
    pub attempt: i64,
    /// When it started, unix ms.
    pub at_ms: i64,
    /// HTTP status, when the endpoint answered.
    pub status: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
    /// Duration, ms.
    pub latency_ms: i64,
    /// Whether it succeeded (a 2xx).
    pub delivered: bool,
    /// When to try again (None: give up, or delivered).
    pub next_attempt_ms: Option<i64>,
}

/// A new signing secret: `whsec_` + base64 of [`SECRET_BYTES`] random bytes.
pub fn new_secret() -> String {
    let bytes: [u8; SECRET_BYTES] = rand::random();
    format!("{SECRET_PREFIX}{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A new id with `prefix` (32 hex digits of a v7 UUID: time-ordered, unique).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::now_v7().simple())
}

/// The Standard Webhooks signature of a message: `v1,` + base64 of HMAC-SHA256 keyed with the
/// secret's bytes (base64 after `whsec_`) over `"{msg_id}.{timestamp}.{body}"`.
///
/// # Errors
/// When the secret is not `whsec_` + base64.
pub fn sign(secret: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> anyhow::Result<String> {
    let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    let key = base64::engine::general_purpose::STANDARD.decode(encoded)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key)?;
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())))
}

/// The body of a delivery: `{"type", "timestamp", "data"}` (Standard Webhooks' payload shape),
/// the same bytes on every attempt.
pub fn payload(event_type: &str, occurred_at: &str, data: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"type": event_type, "timestamp": occurred_at, "data": data}))
        .unwrap_or_default()
}

/// The wait before attempt `attempts + 1` after `attempts` failed ones (ms, with ±10 % jitter),
/// or `None` when the schedule is used up.
pub fn retry_delay_ms(attempts: i64) -> Option<i64> {
    let index = usize::try_from(attempts.checked_sub(1)?).ok()?;
    let base = *RETRY_SCHEDULE_SECS.get(index)? * 1000;
    let jitter = rand::random_range(-(base / 10)..=base / 10);
    Some(base + jitter)
}

/// Unix milliseconds of `at`.
pub fn unix_ms(at: OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// RFC 3339 (UTC, milliseconds) of unix ms.
pub fn rfc3339_ms(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification (and of its reference libraries).
    #[test]
    fn signs_as_the_specification_example() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let signature = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).expect("sign");
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn the_schedule_spans_more_than_a_day() {
        let total: i64 = RETRY_SCHEDULE_SECS.iter().sum();
        assert!(total * 9 / 10 > 24 * 3600, "{total}");
        assert!(retry_delay_ms(0).is_none());
        let first = retry_delay_ms(1).expect("a retry");
        assert!((4_500..=5_500).contains(&first), "{first}");
        assert!(retry_delay_ms(RETRY_SCHEDULE_SECS.len() as i64 + 1).is_none());
    }
}
