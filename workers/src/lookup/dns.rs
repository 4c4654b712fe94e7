//! DNS records for `/v1/dns` (spec §2.4, §4.3), asked of recursive resolvers with
//! hickory-resolver.
//!
//! The resolvers are configurable (`[engine.records] resolvers`, default the system's); the
//! resolver's own cache honours TTLs; CNAME chains are followed as resolvers do and reported. The
//! types of one request are asked in parallel. NXDOMAIN for every type is an answer (`rcode`
//! `NXDOMAIN`, empty arrays); a type that fails (SERVFAIL, REFUSED, timeout) is named in
//! [`DnsAnswer::failed`]; when every type fails there is no answer (the front's 502).
//!
//! **DNSSEC** (optional, `engine.records.dnssec_validation`): hickory validates each answer from
//! the trust anchor (the IANA root keys, or `engine.records.trust_anchor`) down, RFC 4035 §5.
//! Records proven `bogus` are dropped and their type is named as failed, as a validating
//! resolver answers SERVFAIL; the answer reports the weakest proof of what it returns.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use common::lookup::{DnsAnswer, DnsRecord, DnsType};
use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::dnssec::{Proof, TrustAnchors};
use hickory_resolver::proto::rr::{Name, RData, Record, RecordType};
use time::OffsetDateTime;

use crate::config::RecordsConfig;

/// Why a DNS lookup gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DnsLookupError {
    /// The name cannot be asked (not a host name).
    #[error("{0}")]
    BadName(String),
    /// Every queried type failed (SERVFAIL, timeout, refused): no definitive answer.
    #[error("no DNS answer: {0}")]
    NoAnswer(String),
    /// The resolver could not be set up.
    #[error("DNS resolver configuration: {0}")]
    Config(String),
}

/// The recursive-resolver client. Cheap to clone.
#[derive(Clone)]
pub struct RecordResolver {
    resolver: TokioResolver,
    deadline: Duration,
    servers: Vec<String>,
    validating: bool,
}

impl std::fmt::Debug for RecordResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordResolver").field("servers", &self.servers).finish_non_exhaustive()
    }
}

fn to_type(t: DnsType) -> RecordType {
    match t {
        DnsType::A => RecordType::A,
        DnsType::Aaaa => RecordType::AAAA,
        DnsType::Mx => RecordType::MX,
        DnsType::Ns => RecordType::NS,
        DnsType::Txt => RecordType::TXT,
        DnsType::Cname => RecordType::CNAME,
        DnsType::Soa => RecordType::SOA,
        DnsType::Caa => RecordType::CAA,
        DnsType::Srv => RecordType::SRV,
    }
}

/// A host name in presentation form: lower case, no trailing dot.
fn host(name: &Name) -> String {
    name.to_ascii().trim_end_matches('.').to_ascii_lowercase()
}

/// Parses `ip` or `ip:port` (`[v6]:port` too), port 53 by default.
fn resolver_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    s.parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, 53))
        .map_err(|_| format!("engine.records.resolvers: {s:?} is not an IP address or ip:port"))
}

impl RecordResolver {
    /// A resolver over the configured recursive resolvers (or the system's).
    ///
    /// # Errors
    /// [`DnsLookupError::Config`] for a bad resolver address or an unreadable system config.
    pub fn new(config: &RecordsConfig) -> Result<Self, DnsLookupError> {
        let (builder, servers) = if config.resolvers.is_empty() {
            let b = TokioResolver::builder_tokio().map_err(|e| DnsLookupError::Config(e.to_string()))?;
            (b, vec!["system".to_owned()])
        } else {
            let mut name_servers = Vec::new();
            let mut servers = Vec::new();
            for s in &config.resolvers {
                let addr = resolver_addr(s).map_err(DnsLookupError::Config)?;
                let mut udp = ConnectionConfig::udp();
                udp.port = addr.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = addr.port();
                name_servers.push(NameServerConfig::new(addr.ip(), true, vec![udp, tcp]));
                servers.push(addr.to_string());
            }
            let cfg = ResolverConfig::from_name_servers(name_servers);
            (TokioResolver::builder_with_config(cfg, TokioRuntimeProvider::default()), servers)
        };
        let mut builder = builder;
        let opts = builder.options_mut();
        opts.timeout = Duration::from_secs_f64(config.timeout_secs.max(0.01));
        opts.attempts = config.attempts.max(1);
        opts.cache_size = config.cache_size;
        opts.preserve_intermediates = true;
        opts.ndots = 0;
        opts.validate = config.dnssec_validation;
        if config.dnssec_validation
            && let Some(path) = config.trust_anchor.as_deref()
        {
            let anchors = TrustAnchors::from_file(std::path::Path::new(path))
                .map_err(|e| DnsLookupError::Config(format!("engine.records.trust_anchor {path}: {e}")))?;
            builder = builder.with_trust_anchor(std::sync::Arc::new(anchors));
        }
        let resolver = builder.build().map_err(|e| DnsLookupError::Config(e.to_string()))?;
        Ok(Self {
            resolver,
            deadline: Duration::from_secs_f64(config.dns_deadline_secs.max(0.01)),
            servers,
            validating: config.dnssec_validation,
        })
    }

    /// The resolvers asked (addresses, or `system`).
    pub fn servers(&self) -> &[String] {
        &self.servers
    }

    /// Looks up `types` of `name` in parallel.
    ///
    /// # Errors
    /// [`DnsLookupError::BadName`] for a name hickory cannot encode; [`DnsLookupError::NoAnswer`]
    /// when every type failed.
    pub async fn lookup(&self, name: &str, types: &[DnsType]) -> Result<DnsAnswer, DnsLookupError> {
        let fqdn = Name::from_ascii(format!("{}.", name.trim_end_matches('.')))
            .map_err(|e| DnsLookupError::BadName(format!("{name}: {e}")))?;
        let asks = types.iter().map(|&t| {
            let fqdn = fqdn.clone();
            async move {
                let result = tokio::time::timeout(self.deadline, self.resolver.lookup(fqdn, to_type(t))).await;
                (t, result)
            }
        });
        let results = futures::future::join_all(asks).await;
        let mut records = BTreeMap::new();
        let mut failed = BTreeMap::new();
        let mut cname_chain: Vec<String> = Vec::new();
        let mut nxdomain = 0usize;
        let mut weakest: Option<Proof> = None;
        for (t, result) in results {
            let lookup = match result {
                Err(_) => {
                    failed.insert(t, format!("timed out after {:.1} s", self.deadline.as_secs_f64()));
                    records.insert(t, Vec::new());
                    continue;
                }
                Ok(Err(e)) if e.is_nx_domain() => {
                    nxdomain += 1;
                    records.insert(t, Vec::new());
                    continue;
                }
                Ok(Err(e)) if e.is_no_records_found() => {
                    records.insert(t, Vec::new());
                    continue;
                }
                Ok(Err(e)) => {
                    failed.insert(t, e.to_string());
                    records.insert(t, Vec::new());
                    continue;
                }
                Ok(Ok(lookup)) => lookup,
            };
            let wanted = to_type(t);
            if self.validating && lookup.answers().iter().any(|r| r.proof == Proof::Bogus) {
                failed.insert(t, "DNSSEC validation failed (bogus signatures or chain of trust)".to_owned());
                records.insert(t, Vec::new());
                continue;
            }
            let mut list = Vec::new();
            for r in lookup.answers() {
                if self.validating && r.record_type() != RecordType::RRSIG {
                    weakest = Some(weakest.map_or(r.proof, |w: Proof| weaker(w, r.proof)));
                }
                if r.record_type() == RecordType::CNAME && wanted != RecordType::CNAME {
                    if let RData::CNAME(target) = &r.data {
                        let link = format!("{} -> {}", host(&r.name), host(&target.0));
                        if !cname_chain.contains(&link) {
                            cname_chain.push(link);
                        }
                    }
                    continue;
                }
                if r.record_type() == wanted
                    && let Some(rec) = present(r)
                {
                    list.push(rec);
                }
            }
            records.insert(t, list);
        }
        if !failed.is_empty() && failed.len() == types.len() {
            let why: Vec<String> = failed.iter().map(|(t, e)| format!("{t}: {e}")).collect();
            return Err(DnsLookupError::NoAnswer(why.join("; ")));
        }
        let rcode = if nxdomain > 0 && nxdomain + failed.len() == types.len() { "NXDOMAIN" } else { "NOERROR" };
        Ok(DnsAnswer {
            name: name.trim_end_matches('.').to_ascii_lowercase(),
            rcode: rcode.to_owned(),
            records,
            cname_chain,
            failed,
            dnssec: weakest.map(proof_name),
            checked_at: OffsetDateTime::now_utc(),
        })
    }
}

/// The weaker of two proofs: bogus < indeterminate < insecure < secure.
fn weaker(a: Proof, b: Proof) -> Proof {
    let rank = |p: Proof| match p {
        Proof::Bogus => 0,
        Proof::Indeterminate => 1,
        Proof::Insecure => 2,
        Proof::Secure => 3,
    };
    if rank(b) < rank(a) { b } else { a }
}

/// A proof's name in lower case, as the answer reports it.
fn proof_name(p: Proof) -> String {
    match p {
        Proof::Secure => "secure",
        Proof::Insecure => "insecure",
        Proof::Indeterminate => "indeterminate",
        Proof::Bogus => "bogus",
    }
    .to_owned()
}

/// One record in presentation form, or `None` for a type we do not present.
fn present(r: &Record) -> Option<DnsRecord> {
    let mut out = DnsRecord { record_type: r.record_type().to_string(), ttl: r.ttl, ..DnsRecord::default() };
    match &r.data {
        RData::A(a) => out.value = Some(a.0.to_string()),
        RData::AAAA(a) => out.value = Some(a.0.to_string()),
        RData::MX(mx) => {
            out.target = Some(host(&mx.exchange));
            out.priority = Some(mx.preference);
        }
        RData::NS(ns) => out.target = Some(host(&ns.0)),
        RData::CNAME(c) => out.target = Some(host(&c.0)),
        RData::TXT(txt) => {
            let parts: Vec<String> = txt.txt_data.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
            out.value = Some(parts.concat());
            out.parts = Some(parts);
        }
        RData::SOA(soa) => {
            out.mname = Some(host(&soa.mname));
            out.rname = Some(host(&soa.rname));
            out.serial = Some(soa.serial);
            out.refresh = Some(soa.refresh);
            out.retry = Some(soa.retry);
            out.expire = Some(soa.expire);
            out.minimum = Some(soa.minimum);
        }
        RData::CAA(caa) => {
            out.flags = Some(caa.flags());
            out.tag = Some(caa.tag.clone());
            out.value = Some(String::from_utf8_lossy(&caa.value).into_owned());
        }
        RData::SRV(srv) => {
            out.priority = Some(srv.priority);
            out.weight = Some(srv.weight);
            out.port = Some(srv.port);
            out.target = Some(host(&srv.target));
        }
        _ => return None,
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_addresses_parse() {
        assert_eq!(resolver_addr("192.0.2.1").expect("ip"), "192.0.2.1:53".parse::<SocketAddr>().expect("addr"));
        assert_eq!(resolver_addr("127.0.0.1:5353").expect("ip:port").port(), 5353);
        assert_eq!(resolver_addr("[::1]:53").expect("v6").port(), 53);
        assert!(resolver_addr("dns.example").is_err());
    }
}
