//! The request id: one id per HTTP request, carried with every job and ledger event the request
//! causes, so the logs of a front, a worker and the ledger consumer can be joined on it.
//!
//! The front takes the client's `x-request-id` when it is a well-formed id ([`RequestId::parse`])
//! and makes a new one otherwise; it answers with the id in the same header. Across the bus the id
//! rides in the [`NATS_HEADER`] header of a job or a ledger event. Inside a process the id of the
//! request (or job) being served is task-local ([`scope`], [`current`]), so code far from the
//! handler can attach it without threading it through every call.

use std::fmt;
use std::future::Future;

use serde::{Deserialize, Serialize};

/// The HTTP header a client may set and the front always answers with.
pub const HTTP_HEADER: &str = "x-request-id";

/// The NATS header that carries the request id on a job or a ledger event.
pub const NATS_HEADER: &str = "Dsa-Request-Id";

/// Longest request id accepted from a client, in bytes.
pub const MAX_LEN: usize = 64;

/// A request id: 1 to [`MAX_LEN`] bytes of ASCII letters, digits, `-`, `_`, `.` or `:` (so it is
/// safe in a log line, a header and a metric-free label).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RequestId(String);

impl RequestId {
    /// A new id (UUID v7, time-ordered, 32 hex digits).
    #[must_use]
    pub fn generate() -> Self {
        Self(uuid::Uuid::now_v7().simple().to_string())
    }

    /// `raw` as an id when it is well formed; `None` for anything else (too long, empty, or with
    /// bytes outside the allowed set), so a hostile header never reaches a log line verbatim.
    #[must_use]
    pub fn parse(raw: &str) -> Option<Self> {
        let ok = !raw.is_empty()
            && raw.len() <= MAX_LEN
            && raw.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
        ok.then(|| Self(raw.to_owned()))
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Reads an optional request id leniently, for messages on the bus: a malformed id (not a string,
/// or a string [`RequestId::parse`] refuses) reads as `None`. The id only joins log lines, so it
/// must never make a job or a ledger event unreadable (a poison message that is terminated).
///
/// # Errors
/// Only those of the underlying deserialiser (malformed JSON); never for the id's value.
pub fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<RequestId>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Option::<Raw>::deserialize(d)? {
        Some(Raw::Text(text)) => RequestId::parse(&text),
        Some(Raw::Other(_)) | None => None,
    })
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for RequestId {
    type Error = String;

    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(&raw).ok_or_else(|| "malformed request id".to_owned())
    }
}

impl From<RequestId> for String {
    fn from(id: RequestId) -> Self {
        id.0
    }
}

tokio::task_local! {
    static CURRENT: RequestId;
}

/// Runs `work` with `id` as the current request id of its task.
pub async fn scope<F: Future>(id: RequestId, work: F) -> F::Output {
    CURRENT.scope(id, work).await
}

/// The request id of the task running now, if it runs inside [`scope`].
#[must_use]
pub fn current() -> Option<RequestId> {
    CURRENT.try_with(Clone::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_ids_are_refused() {
        assert!(RequestId::parse("0192f0c4-7e1b-7c3a-9f00-2b1f6c1a9e55").is_some());
        assert!(RequestId::parse("").is_none());
        assert!(RequestId::parse(&"a".repeat(MAX_LEN + 1)).is_none());
        assert!(RequestId::parse("a\nfake log line").is_none());
        assert!(RequestId::parse("ü").is_none());
        assert!(serde_json::from_str::<RequestId>("\"a b\"").is_err());
    }

    #[test]
    fn a_generated_id_parses_and_round_trips() {
        let id = RequestId::generate();
        assert_eq!(RequestId::parse(id.as_str()), Some(id.clone()));
        let json = serde_json::to_string(&id).expect("serialises");
        assert_eq!(serde_json::from_str::<RequestId>(&json).ok(), Some(id));
    }

    #[tokio::test]
    async fn the_current_id_is_task_local() {
        assert_eq!(current(), None);
        let id = RequestId::generate();
        let seen = scope(id.clone(), async { current() }).await;
        assert_eq!(seen, Some(id));
        assert_eq!(current(), None);
    }
}
