//! Registration facts read from a WHOIS (RFC 3912) or RDAP (RFC 9083) answer.
//!
//! The shape follows the spec's WHOIS object (§2.3); every field is optional because registries
//! publish very different subsets (many ccTLDs hide the registrant, thin registries omit dates).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Who holds the name, as far as the registry publishes it (spec §2.3 `registrant`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registrant {
    /// Organisation name, when published.
    pub org: Option<String>,
    /// Two-letter country code (ISO 3166-1 alpha-2, upper case), when published.
    pub country: Option<String>,
}

/// The registration facts of one domain, as read from a registry answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainRecord {
    /// The domain the answer is about, lower case A-label, when the answer names it.
    pub domain: Option<String>,
    /// Registry status labels as printed (EPP statuses such as `clientTransferProhibited`, or RDAP
    /// statuses such as `client transfer prohibited`, or a registry's own words).
    pub status: Vec<String>,
    /// Sponsoring registrar's name.
    pub registrar: Option<String>,
    /// Registrant organisation and country.
    pub registrant: Registrant,
    /// Delegated name servers, lower-case host names without a trailing dot.
    pub nameservers: Vec<String>,
    /// Creation (registration) time, UTC.
    #[serde(with = "time::serde::rfc3339::option")]
    pub created_at: Option<OffsetDateTime>,
    /// Last update time, UTC.
    #[serde(with = "time::serde::rfc3339::option")]
    pub updated_at: Option<OffsetDateTime>,
    /// Expiry time, UTC.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// Whether the delegation is DNSSEC-signed, when the answer says.
    pub dnssec: Option<bool>,
    /// Registrar WHOIS server given as a referral (thin registries); informational only — dsa never
    /// asks a registrar for availability.
    pub registrar_whois_server: Option<String>,
}
