//! `GET /v1/dns` (spec §2.4, §4.3): DNS records of a host name from recursive resolvers. Cost: 1
//! credit, spent only for an answer (NXDOMAIN is an answer); when every queried type fails
//! (SERVFAIL, timeout) it is a 502 and nothing is charged.
//!
//! Order: key prelude (400/403/429) → `domain` and `types` (400) → credits (429) → a `dns` job on
//! the bus (502 releases the credit) → commit.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use common::lookup::{DnsRecord, DnsType};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::keyed::{Admitted, Keyed};
use super::{ApiQuery, optional, required};
use crate::front::dispatch::BusError;
use crate::front::error::{ApiError, ErrorBody};
use crate::front::state::AppState;

/// Credits per DNS lookup (spec §8).
pub const DNS_COST: i64 = 1;

/// Longest host name in presentation form without the trailing dot (RFC 1035 §2.3.4: 255 octets
/// on the wire).
const MAX_NAME: usize = 253;

/// Query parameters of `GET /v1/dns` (spec §4.3). `client_key` is the security scheme.
#[derive(Debug, Default, serde::Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DnsQuery {
    /// Host name to resolve: a registrable domain or any name under it (`www.example.com`,
    /// `_sip._tcp.example.com`); U-labels are converted to A-labels. Public names only: not an IP
    /// address, not a special-use or internal name (`localhost`, `.local`, `.internal`, `.test`,
    /// `.onion`, `.arpa`, or a top-level domain outside the public DNS such as `.corp` or `.lan`).
    #[param(required = true, value_type = String, min_length = 1, max_length = 253, example = "example.com")]
    pub domain: Option<String>,
    /// Record types, comma-separated, case-insensitive (default `A,MX,NS,TXT`); allowed A, AAAA,
    /// MX, NS, TXT, CNAME, SOA, CAA, SRV. Duplicates are dropped.
    #[param(value_type = Option<String>, default = "A,MX,NS,TXT", example = "A,AAAA,MX")]
    pub types: Option<String>,
}

/// How the lookup went (a dsa extension, kept in one nested object).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DnsLookupInfo {
    /// Response code: `NOERROR`, or `NXDOMAIN` when the name does not exist (then every array is
    /// empty).
    #[schema(example = "NOERROR")]
    pub rcode: String,
    /// CNAME chain the resolver followed, `owner -> target` per link, in order.
    pub cname_chain: Vec<String>,
    /// Types whose lookup failed (SERVFAIL, timeout, DNSSEC `bogus`), with why; their arrays
    /// are empty.
    pub failed: BTreeMap<String, String>,
    /// DNSSEC proof of the records returned when the service validates DNSSEC: `secure`, `insecure` or `indeterminate` (the
    /// weakest over every record, RFC 4035 §4.3); `null` when validation is off or nothing was
    /// returned. Records that fail validation are never returned.
    #[schema(required = true)]
    pub dnssec: Option<String>,
}

/// The answer to a DNS lookup.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DnsResponse {
    /// Always true here.
    pub success: bool,
    /// The name resolved (lower-case A-labels, no trailing dot).
    pub domain: String,
    /// The types asked, upper case, in request order.
    #[schema(value_type = Vec<common::lookup::DnsType>)]
    pub types_queried: Vec<String>,
    /// One key per queried type, each an array of records (empty when there are none).
    pub records: BTreeMap<String, Vec<DnsRecord>>,
    /// Credits charged (1).
    pub credits_cost: i64,
    /// Credits left this month.
    pub credits_remaining: i64,
    /// When the records were obtained (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub checked_at: OffsetDateTime,
    /// How the answer was obtained (our addition).
    pub lookup: DnsLookupInfo,
}

/// A host name for `/v1/dns`: trimmed, trailing dot dropped, lower case, U-labels to A-labels;
/// letters, digits, `-` and `_` per label (underscore labels such as `_sip._tcp` are used by SRV
/// and TXT names), at least two labels, a top-level label that is not numeric, 63 octets per label
/// and 253 in all.
///
/// # Errors
/// A message for the client (400).
pub fn parse_dns_name(input: &str) -> Result<String, String> {
    let trimmed = input.trim().trim_end_matches('.');
    let bad = |why: &str| format!("Invalid domain {input:?}: {why}.");
    if trimmed.is_empty() {
        return Err(bad("empty"));
    }
    if trimmed.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>().is_ok() {
        return Err(bad("an IP address is not a domain name"));
    }
    let mut labels = Vec::new();
    for label in trimmed.split('.') {
        let label = if label.is_ascii() {
            label.to_ascii_lowercase()
        } else {
            idna::domain_to_ascii(label).map_err(|_| bad("a label is not a valid internationalised name"))?
        };
        if label.is_empty() {
            return Err(bad("empty label"));
        }
        if label.len() > 63 {
            return Err(bad("a label is longer than 63 characters"));
        }
        if !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(bad("only letters, digits, '-' and '_' are allowed in a label"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(bad("a label starts or ends with '-'"));
        }
        labels.push(label);
    }
    if labels.len() < 2 {
        return Err(bad("a domain needs a name and a top-level domain"));
    }
    let tld = labels.last().map(String::as_str).unwrap_or_default();
    if tld.chars().all(|c| c.is_ascii_digit()) || tld.contains('_') {
        return Err(bad("the top-level label is not a TLD"));
    }
    let name = labels.join(".");
    if name.len() > MAX_NAME {
        return Err(bad("longer than 253 characters"));
    }
    Ok(name)
}

/// Handler of `GET /v1/dns` (spec §4.3, §2.4), behind the [`require_key`](super::keyed::require_key)
/// prelude.
#[utoipa::path(
    get,
    path = "/v1/dns",
    tag = "dns",
    operation_id = "lookupDns",
    summary = "Look up a host name's DNS records",
    description = "The records of `domain` for each requested type (default A, MX, NS and TXT; also AAAA, CNAME, SOA, CAA and SRV), asked of recursive resolvers, with each record's TTL. Only public names are answered: internal and special-use names are refused with a 400. Costs 1 credit; a 502 is not charged.",
    params(DnsQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The records of every queried type (an empty array when there are none). \
A name that does not exist is an answer: `lookup.rcode` is `NXDOMAIN` and every array is empty (charged). \
A type whose lookup failed while others answered is named in `lookup.failed`.",
            body = DnsResponse, headers(
                ("RateLimit-Policy" = String, description = "The key's per-minute quota, e.g. `\"per-minute\";q=60;w=60`."),
                ("RateLimit" = String, description = "Requests left in this window and seconds until it resets."),
                ("X-Request-Id" = String, description = "Request identifier (also in the logs).")),
            example = json!({"success": true, "domain": "example.com", "types_queried": ["A", "MX", "NS", "TXT", "SOA", "CAA"],
                "records": {
                    "A": [{"type": "A", "ttl": 300, "value": "192.0.2.10"}],
                    "MX": [{"type": "MX", "ttl": 3600, "target": "mail.example.com", "priority": 10}, {"type": "MX", "ttl": 3600, "target": "mail2.example.com", "priority": 20}],
                    "NS": [{"type": "NS", "ttl": 3600, "target": "ns1.example.com"}, {"type": "NS", "ttl": 3600, "target": "ns2.example.com"}],
                    "TXT": [{"type": "TXT", "ttl": 300, "value": "v=spf1 -all", "parts": ["v=spf1 -all"]}, {"type": "TXT", "ttl": 300, "value": "part one part two", "parts": ["part one ", "part two"]}],
                    "SOA": [{"type": "SOA", "ttl": 300, "mname": "ns1.example.com", "rname": "hostmaster.example.com", "serial": 2026112301, "refresh": 7200, "retry": 3600, "expire": 1209600, "minimum": 300}],
                    "CAA": [{"type": "CAA", "ttl": 300, "flags": 0, "tag": "issue", "value": "letsencrypt.org"}]},
                "credits_cost": 1, "credits_remaining": 499, "checked_at": "2026-11-23T06:52:02.967675545Z",
                "lookup": {"rcode": "NOERROR", "cname_chain": [], "failed": {}, "dnssec": null}})),
        (status = 400, description = "Missing `client_key` or `domain`, an invalid host name (garbage, an IP address, over-long), a name that is not public (special-use or internal: `localhost`, `.local`, `.internal`, `.test`, `.example`, `.invalid`, `.onion`, `.alt`, `.arpa`, or a top-level domain outside the public DNS such as `.corp` or `.lan`; the message says why), or a record type that is not allowed (named in the message). Not charged.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended (`Invalid or disabled client key.`), or the request's origin is not allowed for the key.", body = ErrorBody),
        (status = 429, description = "Per-minute limit (`Retry-After`: the next window) or monthly credits (`Monthly credit limit reached`).", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
        (status = 502, description = "Every queried type failed (SERVFAIL or timeout from every resolver), or no worker answered in time; retry with exponential backoff. Not charged.", body = ErrorBody),
    )
)]
pub async fn dns(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    admitted: Admitted,
    ApiQuery(query): ApiQuery<DnsQuery>,
) -> Result<Json<DnsResponse>, ApiError> {
    let input = required(&query.domain, "domain")?;
    let name = parse_dns_name(input).map_err(ApiError::BadRequest)?;
    if let Some(why) = common::public_name::refusal(&name, state.book().catalogue()) {
        return Err(ApiError::BadRequest(format!(
            "Unsupported domain {name:?}: {why}; only public names are looked up."
        )));
    }
    let types = DnsType::parse_list(optional(&query.types).unwrap_or("")).map_err(ApiError::BadRequest)?;
    // The lookup's deadline (plus a second for the bus) bounds the whole request from its
    // admission, as for WHOIS: the key lookup and the credit reservation (database steps) spend
    // from it, the resolver gets what is left.
    let until =
        admitted.deadline(std::time::Duration::from_secs_f64(state.book().config().records.dns_deadline_secs + 1.0));
    let reservation = tokio::time::timeout_at(until, state.credits().reserve(&key, "dns", DNS_COST, state.now()))
        .await
        .map_err(|_| ApiError::Unavailable)??;
    let left = until.saturating_duration_since(tokio::time::Instant::now());
    let answer = match state.bus().dns(name.clone(), types.clone(), left).await {
        Ok(a) => a,
        Err(BusError::Rejected(reason)) => return Err(ApiError::BadRequest(reason)),
        Err(e) => {
            metrics::counter!("dsa_lookups_total", "kind" => "dns", "outcome" => "no_answer").increment(1);
            return Err(ApiError::Upstream(e.to_string()));
        }
    };
    metrics::counter!("dsa_lookups_total", "kind" => "dns", "outcome" => "answer").increment(1);
    let mut records: BTreeMap<String, Vec<DnsRecord>> = BTreeMap::new();
    for t in &types {
        records.insert(t.as_str().to_owned(), answer.records.get(t).cloned().unwrap_or_default());
    }
    let credits_remaining = reservation.commit().await?;
    Ok(Json(DnsResponse {
        success: true,
        domain: name,
        types_queried: types.iter().map(|t| t.as_str().to_owned()).collect(),
        records,
        credits_cost: DNS_COST,
        credits_remaining,
        checked_at: answer.checked_at,
        lookup: DnsLookupInfo {
            rcode: answer.rcode,
            cname_chain: answer.cname_chain,
            failed: answer.failed.into_iter().map(|(t, why)| (t.as_str().to_owned(), why)).collect(),
            dnssec: answer.dnssec,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_for_dns() {
        assert_eq!(parse_dns_name("WWW.Example.COM.").expect("ok"), "www.example.com");
        assert_eq!(parse_dns_name("_sip._tcp.example.com").expect("ok"), "_sip._tcp.example.com");
        assert_eq!(parse_dns_name("bücher.de").expect("ok"), "xn--bcher-kva.de");
        for bad in ["", "com", "1.2.3.4", "[::1]", "::1", "exa mple.com", "a..b.com", "-a.com", "a.123", "<script>.com"]
        {
            assert!(parse_dns_name(bad).is_err(), "{bad:?} must be refused");
        }
        let long = format!("{}.com", vec!["a".repeat(60); 5].join("."));
        assert!(parse_dns_name(&long).is_err());
        assert!(parse_dns_name(&format!("{}.com", "a".repeat(64))).is_err());
    }
}
