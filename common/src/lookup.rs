//! Kinds of lookup a worker performs and the answers it sends back: the availability check
//! (spec §2.2), the registration record behind `/v1/whois` (§2.3) and DNS records behind
//! `/v1/dns` (§2.4). These travel over the job bus (in process or NATS), so they are plain data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::record::DomainRecord;

/// A kind of lookup. Each kind has its own job subject and its own worker consumer (with its own
/// concurrency), so a slow WHOIS registry never starves availability checks
/// (see [`crate::subjects::Names::jobs_subject`]).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case", ascii_case_insensitive)]
pub enum LookupKind {
    /// Availability check (`/v1/domains/check`).
    Check,
    /// Registration record (`/v1/whois`).
    Whois,
    /// DNS records (`/v1/dns`).
    Dns,
    /// A watched name's lifecycle re-check (`/v1/watches`): its own queue, so a million watches
    /// never wait in front of a user's check.
    Watch,
}

impl LookupKind {
    /// Every kind, in a fixed order.
    pub const ALL: [LookupKind; 4] = [LookupKind::Check, LookupKind::Whois, LookupKind::Dns, LookupKind::Watch];

    /// The kind's name (`check`, `whois`, `dns`), as used in subjects and `--kinds`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a comma-separated list (`whois,dns`), case-insensitive, duplicates dropped.
    ///
    /// # Errors
    /// A message naming the unknown kind.
    pub fn parse_list(s: &str) -> Result<Vec<LookupKind>, String> {
        let mut kinds = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let kind: LookupKind = part.parse().map_err(|_| {
                format!("unknown lookup kind {:?} (expected check, whois, dns or watch)", part.to_ascii_lowercase())
            })?;
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        if kinds.is_empty() {
            return Err("no lookup kind given (expected check, whois, dns and/or watch)".into());
        }
        Ok(kinds)
    }
}

impl std::fmt::Display for LookupKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a registration answer came from (a dsa extension).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WhoisProvenance {
    /// `rdap` (RFC 9083) or `whois` (RFC 3912, port 43).
    pub protocol: String,
    /// The server asked (RDAP host or WHOIS host).
    pub server: String,
    /// `registry`, or `registrar` when the fuller answer came from the registrar a thin registry
    /// referred to.
    pub authority: String,
    /// The registrar RDAP URL or WHOIS server followed once for fuller data, when one was.
    #[schema(required = true)]
    pub referral: Option<String>,
    /// Why a referral was not followed (SSRF guard, timeout…), when there was one.
    #[schema(required = true)]
    pub referral_skipped: Option<String>,
    /// Fields withheld by the registry (RFC 9537 `redacted` members or "REDACTED FOR PRIVACY"
    /// wordings), as paths of the response (`registrant.org`, `registrant.country`).
    pub redacted: Vec<String>,
    /// The status labels exactly as the registry printed them (before the EPP mapping).
    pub registry_status: Vec<String>,
}

/// A worker's answer to a WHOIS job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoisAnswer {
    /// The domain asked (A-label).
    pub domain: String,
    /// False when the registry says no such domain is registered (then `record` is empty).
    pub registered: bool,
    /// The registration facts, statuses mapped to EPP names, redacted values removed.
    pub record: DomainRecord,
    /// Where the facts came from.
    pub provenance: WhoisProvenance,
    /// When the registry answered (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
}

/// What a watch re-check saw of a name's registration (a worker's answer to a watch job): the
/// registry's own word, never a DNS-only inference. `status` is `None` when no registry gave a
/// definitive answer (the watch keeps its state and is asked again sooner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchObservation {
    /// The domain asked (A-label).
    pub domain: String,
    /// The engine's verdict on the name (`taken`, `pending_delete`, `available`, `reserved`,
    /// `restricted`); `None` without a definitive registry answer.
    pub status: Option<crate::verdict::Status>,
    /// EPP statuses of the registration (RFC 5731 names, e.g. `redemptionPeriod`,
    /// `pendingDelete`), empty when the name is not registered.
    pub epp_status: Vec<String>,
    /// The registry's expiry date, when it publishes one.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// Whether the name is delegated in DNS, when the check looked (an early signal only).
    #[serde(default)]
    pub delegated: Option<bool>,
    /// Short evidence: which registry service answered what, or why none did.
    pub evidence: String,
    /// When the registry answered (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
}

/// The record types `/v1/dns` answers (spec §4.3), in presentation form.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    ToSchema,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "UPPERCASE")]
#[strum(serialize_all = "UPPERCASE", ascii_case_insensitive)]
#[schema(description = "A DNS record type `/v1/dns` answers for, upper case.")]
pub enum DnsType {
    /// IPv4 address (RFC 1035).
    A,
    /// IPv6 address (RFC 3596).
    Aaaa,
    /// Mail exchange (RFC 1035).
    Mx,
    /// Name server (RFC 1035).
    Ns,
    /// Text (RFC 1035).
    Txt,
    /// Canonical name (RFC 1035).
    Cname,
    /// Start of authority (RFC 1035).
    Soa,
    /// Certification authority authorization (RFC 8659).
    Caa,
    /// Service location (RFC 2782).
    Srv,
}

impl DnsType {
    /// The spec's default set: `A,MX,NS,TXT`.
    pub const DEFAULT: [DnsType; 4] = [DnsType::A, DnsType::Mx, DnsType::Ns, DnsType::Txt];

    /// The type's mnemonic, upper case.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a mnemonic, case-insensitive, blanks around it ignored.
    pub fn parse(s: &str) -> Option<DnsType> {
        s.trim().parse().ok()
    }

    /// Parses the `types` parameter: comma-separated, case-insensitive, duplicates dropped, request
    /// order kept; empty means the default set.
    ///
    /// # Errors
    /// A message naming the first type that is not allowed.
    pub fn parse_list(s: &str) -> Result<Vec<DnsType>, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let t = DnsType::parse(part).ok_or_else(|| {
                format!("Unsupported DNS record type {part:?}; allowed: A, AAAA, MX, NS, TXT, CNAME, SOA, CAA, SRV.")
            })?;
            if !out.contains(&t) {
                out.push(t);
            }
        }
        if out.is_empty() {
            out = DnsType::DEFAULT.to_vec();
        }
        Ok(out)
    }
}

impl std::fmt::Display for DnsType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One DNS record in presentation form: every record has `type` and `ttl`; the other members
/// depend on the type, and members that do not apply are omitted. Host names are lower case without the
/// trailing dot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DnsRecord {
    /// Record type (`A`, `MX`, …): one of the types asked for.
    #[serde(rename = "type")]
    #[schema(value_type = DnsType, example = "A")]
    pub record_type: String,
    /// Time to live, seconds.
    pub ttl: u32,
    /// A/AAAA: the address; TXT: the character-strings joined; CAA: the property value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub value: Option<String>,
    /// MX exchange, NS/CNAME host, SRV target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub target: Option<String>,
    /// MX preference, SRV priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub priority: Option<u16>,
    /// TXT: the character-strings as published (RFC 1035 §3.3.14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub parts: Option<Vec<String>>,
    /// SRV weight (RFC 2782).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub weight: Option<u16>,
    /// SRV port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub port: Option<u16>,
    /// SOA primary name server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub mname: Option<String>,
    /// SOA responsible mailbox (domain-name form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rname: Option<String>,
    /// SOA serial (unsigned 32-bit, RFC 1035 §3.3.13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = "uint32", minimum = 0, maximum = 4_294_967_295_u64)]
    pub serial: Option<u32>,
    /// SOA refresh, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub refresh: Option<i32>,
    /// SOA retry, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub retry: Option<i32>,
    /// SOA expire, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub expire: Option<i32>,
    /// SOA minimum (negative-caching TTL, RFC 2308), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = "uint32", minimum = 0, maximum = 4_294_967_295_u64)]
    pub minimum: Option<u32>,
    /// CAA flags (RFC 8659 §4.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub flags: Option<u8>,
    /// CAA property tag (`issue`, `issuewild`, `iodef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub tag: Option<String>,
}

/// A worker's answer to a DNS job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsAnswer {
    /// The name asked (lower case A-labels, no trailing dot).
    pub name: String,
    /// Response code of the lookups (`NOERROR`, `NXDOMAIN`).
    pub rcode: String,
    /// Records per queried type (every queried type has a key; empty when none).
    pub records: BTreeMap<DnsType, Vec<DnsRecord>>,
    /// CNAME chain followed before the records (owner → target, in order), when there was one.
    pub cname_chain: Vec<String>,
    /// Types whose lookup failed (SERVFAIL, timeout…), with why.
    pub failed: BTreeMap<DnsType, String>,
    /// How DNSSEC validation proved the records returned (RFC 4035 §4.3 states, lower case):
    /// `secure`, `insecure` or `indeterminate` — the weakest over every record returned; `None`
    /// when validation is off (`engine.records.dnssec_validation`) or nothing was returned.
    /// `bogus` records are never returned: their type is in [`Self::failed`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dnssec: Option<String>,
    /// When the lookups finished (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
}

/// The result of a lookup job other than the check: an answer, a client error, or no definitive
/// answer from any upstream (502, not charged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LookupOutcome<T> {
    /// The answer.
    Answer {
        /// It.
        answer: T,
    },
    /// The job cannot be done (unsupported TLD, bad name): 400.
    Rejected {
        /// Why.
        reason: String,
    },
    /// No definitive answer from any upstream: 502, no charge.
    Failed {
        /// Why.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_types_parse() {
        assert_eq!(LookupKind::parse_list("WHOIS, dns,whois").expect("ok"), vec![LookupKind::Whois, LookupKind::Dns]);
        assert!(LookupKind::parse_list("ftp").is_err());
        assert!(LookupKind::parse_list(" , ").is_err());
        assert_eq!(DnsType::parse_list("").expect("ok"), DnsType::DEFAULT.to_vec());
        assert_eq!(DnsType::parse_list("mx,a,MX").expect("ok"), vec![DnsType::Mx, DnsType::A]);
        let e = DnsType::parse_list("A,PTR").expect_err("PTR is not allowed");
        assert!(e.contains("\"PTR\""), "{e}");
        assert_eq!(serde_json::to_string(&DnsType::Aaaa).expect("json"), "\"AAAA\"");
        // One derive names each variant for serde and for as_str/parse alike.
        for t in [
            DnsType::A,
            DnsType::Aaaa,
            DnsType::Mx,
            DnsType::Ns,
            DnsType::Txt,
            DnsType::Cname,
            DnsType::Soa,
            DnsType::Caa,
            DnsType::Srv,
        ] {
            assert_eq!(serde_json::to_value(t).expect("json"), t.as_str());
            assert_eq!(DnsType::parse(&format!(" {} ", t.as_str().to_ascii_lowercase())), Some(t));
        }
        for kind in LookupKind::ALL {
            assert_eq!(serde_json::to_value(kind).expect("json"), kind.as_str());
        }
        assert_eq!(
            LookupKind::parse_list("Ftp").expect_err("unknown"),
            "unknown lookup kind \"ftp\" (expected check, whois, dns or watch)"
        );
    }
}
