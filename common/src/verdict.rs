//! The availability verdict: what the engine concluded about one domain and on what evidence.
//!
//! Spec §2.2 exposes only `available` (bool) and `message` (`Available`/`Taken`); everything else
//! here travels in one nested object of the public response so the spec's top-level fields stay
//! exactly as documented.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Registration status of a domain.
///
/// Only `available` is reported as `available: true`. A check that reaches no definitive answer
/// is answered with a 502, never with a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The registry said the name is not registered and not blocked.
    Available,
    /// The name is registered (delegated in DNS, or the registry holds an object for it).
    Taken,
    /// The name is registered but in redemption / pending delete (RFC 3915 grace periods).
    PendingDelete,
    /// The registry reserves or blocks the name (premium-blocked, reserved list, name collision…).
    Reserved,
    /// The zone only accepts eligible registrants (e.g. `.gov.af`, `.edu.af`, brand TLDs).
    Restricted,
    /// No definitive answer (upstream down, rate limited, unrecognised text).
    Unknown,
}

impl Status {
    /// Whether this status is a definitive answer (everything but [`Status::Unknown`]).
    pub fn is_definitive(self) -> bool {
        self != Status::Unknown
    }

    /// Whether the public `available` field is true: only for [`Status::Available`].
    pub fn is_available(self) -> bool {
        self == Status::Available
    }

    /// The spec's `message` value (§2.2): `Available` or `Taken` (every definitive non-available
    /// status reads as taken to an end user: it cannot be registered now).
    pub fn message(self) -> &'static str {
        if self.is_available() { "Available" } else { "Taken" }
    }
}

/// How the verdict was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The TLD's authoritative name servers (a delegation exists).
    Dns,
    /// The registry's RDAP service (RFC 9083).
    Rdap,
    /// The registry's WHOIS service (RFC 3912).
    Whois,
    /// The zone's registration policy alone (restricted zones).
    Policy,
    /// A cached earlier verdict.
    Cache,
}

/// The engine's answer for one domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Normalised registrable domain (A-label, lower case).
    pub domain: String,
    /// The decided status.
    pub status: Status,
    /// Where the evidence came from.
    pub method: Method,
    /// Whether the evidence came from the registry itself (its RDAP/WHOIS service or the TLD's
    /// authoritative name servers) rather than a cache or a policy rule.
    pub authoritative: bool,
    /// When the evidence was obtained (UTC). A cached verdict keeps its original time.
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
    /// Short human-readable evidence (e.g. `RDAP 404 from rdap.verisign.com`,
    /// `WHOIS marker "No match for"`), or the reason for an unknown verdict.
    pub evidence: String,
    /// For an `available` verdict where the suffix requires consensus (or one sampled for an
    /// audit): the second, independent signal that agreed with `method` — the other registry
    /// service (`whois` after `rdap`, `rdap` after `whois`) or the TLD's authoritative name
    /// servers (`dns`: no delegation). `None` when one registry answer decided. Absent from old
    /// messages (serde default), so workers and fronts of different versions interoperate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_by: Option<Method>,
}
