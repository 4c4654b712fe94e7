//! The registration record behind `/v1/whois` (spec §2.3), asked with the engine's own probes,
//! routing, politeness limits and bootstrap: RDAP first (RFC 9083/9224) where the suffix has it,
//! WHOIS port 43 (RFC 3912) otherwise or when RDAP gives no definitive answer. No DNS pre-check:
//! a delegation says nothing about the record's fields.
//!
//! A thin registry's answer (no registrant, a registrar `related` link or WHOIS referral) is
//! completed once from the registrar under the SSRF guards of [`referral`].

pub mod fields;
pub mod referral;

use common::catalogue::{LookupMethod, TldEntry};
use common::domain::DomainName;
use common::lookup::{WhoisAnswer, WhoisProvenance};
use common::record::DomainRecord;
use time::OffsetDateTime;

use super::{Engine, EngineError, observe};
use crate::parse::rdap::{RdapClass, read_rdap};
use crate::parse::whois::{WhoisClass, decode, read_whois};
use crate::probe::Protocol;

/// Why there is no registration answer.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// The suffix is unsupported (a client error).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// No definitive answer from any upstream (timeout, refused, rate-limited, unparsable).
    #[error("no definitive registration answer: {0}")]
    NoAnswer(String),
}

struct Found {
    registered: bool,
    record: DomainRecord,
    protocol: &'static str,
    server: String,
    redacted: Vec<String>,
    /// Registrar RDAP link or WHOIS server, for a thin answer.
    referral: Option<Referral>,
}

enum Referral {
    Rdap(String),
    Whois(String),
}

impl Engine {
    /// The registration record of `domain` (see the module documentation), bounded by
    /// `records.whois_deadline_secs`.
    ///
    /// # Errors
    /// [`RegistrationError::Engine`] for an unsupported suffix; [`RegistrationError::NoAnswer`]
    /// when no upstream gave a definitive answer.
    pub async fn registration(&self, domain: &DomainName) -> Result<WhoisAnswer, RegistrationError> {
        let entry = self.entry(domain)?.clone();
        let deadline = std::time::Duration::from_secs_f64(self.config().records.whois_deadline_secs.max(0.01));
        match tokio::time::timeout(deadline, self.registration_inner(domain, &entry)).await {
            Ok(r) => r,
            Err(_) => {
                Err(RegistrationError::NoAnswer(format!("no definitive answer within {:.1} s", deadline.as_secs_f64())))
            }
        }
    }

    async fn registration_inner(
        &self,
        domain: &DomainName,
        entry: &TldEntry,
    ) -> Result<WhoisAnswer, RegistrationError> {
        let mut last_error = String::from("no registry method for this suffix");
        let mut found = None;
        for method in &entry.methods {
            let outcome = match method {
                LookupMethod::Rdap if self.config().rdap.enabled => self.record_rdap(domain, entry).await,
                LookupMethod::Whois if self.config().whois.enabled => self.record_whois(domain, entry).await,
                _ => continue,
            };
            match outcome {
                Ok(f) => {
                    found = Some(f);
                    break;
                }
                Err(e) => last_error = e,
            }
        }
        let Some(mut f) = found else { return Err(RegistrationError::NoAnswer(last_error)) };
        let mut provenance = WhoisProvenance {
            protocol: f.protocol.to_owned(),
            server: f.server.clone(),
            authority: "registry".into(),
            referral: None,
            referral_skipped: None,
            redacted: Vec::new(),
            registry_status: Vec::new(),
        };
        let thin = f.record.registrant.org.is_none() && f.record.registrant.country.is_none();
        if f.registered
            && thin
            && f.redacted.is_empty()
            && let Some(referral) = f.referral.take()
        {
            self.follow(domain, referral, &mut f, &mut provenance).await;
        }
        let mut record = f.record;
        let mut redacted = f.redacted;
        provenance.registry_status = fields::finish(&mut record, &mut redacted, f.protocol == "rdap");
        provenance.redacted = redacted;
        Ok(WhoisAnswer {
            domain: domain.as_str().to_owned(),
            registered: f.registered,
            record,
            provenance,
            checked_at: OffsetDateTime::now_utc(),
        })
    }

    async fn follow(&self, domain: &DomainName, referral: Referral, f: &mut Found, provenance: &mut WhoisProvenance) {
        let config = &self.config().records.referral;
        if !config.follow {
            provenance.referral_skipped = Some("referrals disabled (records.referral.follow = false)".into());
            return;
        }
        if self.config().overrides_only {
            let host = match &referral {
                Referral::Rdap(link) => {
                    url::Url::parse(link).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                }
                Referral::Whois(server) => Some(server.split(':').next().unwrap_or_default().to_ascii_lowercase()),
            };
            let host = host.unwrap_or_default();
            if !config.test_only_allow.contains_key(&host) {
                // The SSRF guard's own verdict for an address literal; any other host would
                // leave loopback, which overrides_only forbids.
                let literal = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
                provenance.referral_skipped = Some(match literal {
                    Ok(ip) if !referral::is_public_unicast(ip) => {
                        format!("referral host {host} is {ip}, which is not a public unicast address")
                    }
                    _ => format!("referral to {host} not followed: overrides_only"),
                });
                return;
            }
        }
        let (link, fetched) = match referral {
            Referral::Rdap(link) => {
                let body = referral::fetch_rdap(&link, config).await;
                let read = body.map(|b| {
                    let reading = read_rdap(200, &b);
                    (reading.class, reading.record, fields::rdap_redactions(&b))
                });
                (
                    link,
                    read.and_then(|(class, record, red)| match class {
                        RdapClass::Registered | RdapClass::PendingDelete => Ok((record, red)),
                        other => Err(format!("registrar answer is {other:?}")),
                    }),
                )
            }
            Referral::Whois(server) => {
                let raw = referral::fetch_whois(&server, domain.as_str(), config).await;
                let read = raw.map(|raw| {
                    let reading = read_whois(&raw, Some(&server), domain.suffix(), None);
                    (reading.class, reading.record, fields::whois_redactions(&decode(&raw, None)))
                });
                (
                    format!("whois://{server}"),
                    read.and_then(|(class, record, red)| match class {
                        WhoisClass::Registered => Ok((record, red)),
                        other => Err(format!("registrar answer is {other:?}")),
                    }),
                )
            }
        };
        match fetched {
            Ok((record, red)) => {
                fields::merge_registrar(&mut f.record, record);
                for r in red {
                    if !f.redacted.contains(&r) {
                        f.redacted.push(r);
                    }
                }
                provenance.authority = "registrar".into();
                provenance.referral = Some(link);
            }
            Err(why) => provenance.referral_skipped = Some(why),
        }
    }

    async fn record_rdap(&self, domain: &DomainName, entry: &TldEntry) -> Result<Found, String> {
        let Some(base) = self.rdap_base(domain, entry) else {
            return Err("no RDAP base URL".into());
        };
        let host = url::Url::parse(base).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
        let permit = self.inner.politeness.acquire(Protocol::Rdap, &host).await.map_err(|e| e.to_string())?;
        let started = std::time::Instant::now();
        let answer = self.inner.rdap.lookup(base, domain.as_str(), &self.inner.rdap_hosts).await;
        observe(Protocol::Rdap, started, answer.is_ok());
        let answer = match answer {
            Ok(a) => {
                permit.succeeded();
                a
            }
            Err(e) => {
                permit.failed();
                return Err(e.to_string());
            }
        };
        let reading = read_rdap(answer.status, &answer.body);
        let registered = match reading.class {
            // A reserved name's object exists too: its record is the registry's.
            RdapClass::Registered | RdapClass::PendingDelete | RdapClass::Reserved => true,
            RdapClass::NotFound => false,
            RdapClass::Unknown => return Err(format!("RDAP {}: {}", answer.host, reading.detail)),
        };
        Ok(Found {
            registered,
            redacted: if registered { fields::rdap_redactions(&answer.body) } else { Vec::new() },
            referral: fields::registrar_rdap_link(&answer.body).map(Referral::Rdap),
            record: if registered { reading.record } else { DomainRecord::default() },
            protocol: "rdap",
            server: answer.host,
        })
    }

    async fn record_whois(&self, domain: &DomainName, entry: &TldEntry) -> Result<Found, String> {
        let Some(server) = &entry.whois else {
            return Err("no WHOIS server".into());
        };
        if self.config().overrides_only && !self.config().whois.addr_overrides.contains_key(&server.host) {
            return Err(format!("WHOIS {} skipped: not in whois.addr_overrides (overrides_only)", server.host));
        }
        let host = server.host.clone();
        let permit = self.inner.politeness.acquire(Protocol::Whois, &host).await.map_err(|e| e.to_string())?;
        let started = std::time::Instant::now();
        let raw = self.inner.whois.query(server, domain.as_str()).await;
        observe(Protocol::Whois, started, raw.is_ok());
        let raw = match raw {
            Ok(raw) => raw,
            Err(e) => {
                permit.failed();
                return Err(e.to_string());
            }
        };
        let reading = read_whois(&raw, Some(&host), domain.suffix(), server.charset.as_deref());
        let registered = match reading.class {
            WhoisClass::Registered => true,
            WhoisClass::Available => false,
            WhoisClass::Reserved => {
                permit.succeeded();
                let mut record = DomainRecord { status: vec!["reserved".into()], ..DomainRecord::default() };
                record.domain = Some(domain.as_str().to_owned());
                return Ok(Found {
                    registered: false,
                    record,
                    protocol: "whois",
                    server: host,
                    redacted: Vec::new(),
                    referral: None,
                });
            }
            WhoisClass::RateLimited => {
                permit.failed();
                return Err(format!("WHOIS {host}: rate limited"));
            }
            WhoisClass::Unknown => {
                permit.succeeded();
                return Err(format!("WHOIS {host}: no marker matched ({} bytes)", raw.len()));
            }
        };
        permit.succeeded();
        let text = decode(&raw, server.charset.as_deref());
        let mut record = reading.record;
        if record.dnssec.is_none() {
            record.dnssec = fields::whois_dnssec(&text);
        }
        let referral = record
            .registrar_whois_server
            .clone()
            .filter(|s| !s.eq_ignore_ascii_case(&host) && !s.is_empty())
            .map(Referral::Whois);
        Ok(Found {
            registered,
            redacted: if registered { fields::whois_redactions(&text) } else { Vec::new() },
            referral: if registered { referral } else { None },
            record: if registered { record } else { DomainRecord::default() },
            protocol: "whois",
            server: host,
        })
    }
}
