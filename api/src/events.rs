//! Events: what happened to something a key follows, written once and read by everyone who cares.
//!
//! ```text
//! watch re-check ──► state change ──► Store::emit_event (stable id, INSERT … ON CONFLICT DO NOTHING)
//!                                        │
//!                     events table ◄─────┘  (seq, id, key, type, subject, occurred_at, data, dispatched)
//!                        │                      │
//!   GET /v1/watches/{id}/events           webhook dispatcher: undispatched events → deliveries
//! ```
//!
//! An event's id is derived from the occurrence it records ([`event_id`]), never drawn at random
//! at emission: a re-check that is repeated after a crash emits the same id again, which the store
//! ignores, so every occurrence is recorded once and every delivery of it carries one
//! `webhook-id` (Standard Webhooks: "the same ID for every retry of the same message").
//!
//! Event types are the field's terms, dot-separated as Standard Webhooks recommends
//! (`domain.available`, `domain.registered`, `domain.expiring`, `domain.state_changed`,
//! `job.finished`, `webhook.test`, `webhook.disabled`); their payloads are JSON objects, described for users in
//! the OpenAPI document.

use serde::Serialize;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

/// Prefix of every event id (`evt_` + 32 lower-case hex digits).
pub const EVENT_ID_PREFIX: &str = "evt_";

/// The stable id of one occurrence, from the parts that identify it (for a watch's state change:
/// the watch id, the transition's ordinal and its target state). The same parts give the same id
/// in every process and after every restart; parts are length-prefixed, so `["ab", "c"]` and
/// `["a", "bc"]` differ.
pub fn event_id(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    hash.update(b"dsa event v1");
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    format!("{EVENT_ID_PREFIX}{}", hex::encode(&digest[..16]))
}

/// An event to record ([`crate::store::Store::emit_event`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Stable id ([`event_id`]).
    pub id: String,
    /// The key the event belongs to (its watches, its webhooks).
    pub key_id: String,
    /// Event type, e.g. `domain.available`.
    pub event_type: String,
    /// What the event is about (a watch id); `None` for the key itself.
    pub subject: Option<String>,
    /// When it happened (UTC).
    pub occurred_at: OffsetDateTime,
    /// The payload: a JSON object.
    pub data: serde_json::Value,
}

/// A recorded event, as the store returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRecord {
    /// Position in the order of emission (a cursor: later events have larger values).
    #[serde(skip)]
    pub seq: i64,
    /// Stable id.
    pub id: String,
    /// The key the event belongs to.
    #[serde(skip)]
    pub key_id: String,
    /// Event type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// What the event is about (a watch id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// When it happened, RFC 3339 in UTC.
    pub occurred_at: String,
    /// The payload.
    pub data: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_id_is_stable_and_separates_its_parts() {
        let id = event_id(&["w1", "3", "available"]);
        assert_eq!(id, event_id(&["w1", "3", "available"]));
        assert!(id.starts_with(EVENT_ID_PREFIX) && id.len() == EVENT_ID_PREFIX.len() + 32, "{id}");
        assert_ne!(event_id(&["ab", "c"]), event_id(&["a", "bc"]));
        assert_ne!(id, event_id(&["w1", "4", "available"]));
    }
}
