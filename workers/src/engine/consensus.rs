//! Consensus before "available" (issue 28): a second, independent signal where one registry
//! answer is not enough.
//!
//! Registry RDAP servers do answer 404 for registered names (`rdap.nic.io` and `rdap.nic.co` on
//! 2026-09-14, browser-use/browser-harness#723). A delegated name is caught by the DNS
//! pre-check; a registered name without a delegation (held, suspended, in redemption without NS)
//! plus a false 404 would be a false "available". Where consensus is required (see
//! [`crate::book::VerdictBook::consensus`]), an "available" from the first registry method is
//! given only when a second signal agrees:
//!
//! 1. the suffix's other registry service (WHOIS after RDAP, RDAP after WHOIS), when the chain
//!    has it: its own "available" agrees; taken, pending delete or reserved disagrees;
//! 2. else (or when it gives no definitive answer) the TLD's authoritative name servers asked
//!    directly, recursion off ([`crate::probe::dns`]): no delegation agrees, a delegation
//!    disagrees. When the pre-check of this very check already heard "not delegated", that
//!    answer is used and no query is sent. (This signal cannot catch a registered name without
//!    a delegation; the other registry service can, which is why it is asked first.)
//!
//! Signals that disagree give `unknown` (the front's 502, not charged), are counted
//! (`dsa_consensus_disagreements_total{suffix}`), logged at warn with both signals, and switch
//! consensus on for the suffix for `engine.consensus.hold_secs` in the route book (fleet-wide in
//! a fleet). Where consensus is not required, one "available" in `audit_one_in` is confirmed all
//! the same (an audit), which is how dsa notices a registry that starts lying; an audit that
//! finds no second signal leaves the answer as it was.

use std::sync::atomic::Ordering;

use common::catalogue::{LookupMethod, TldEntry};
use common::domain::DomainName;
use common::verdict::{Method, Status, Verdict};
use time::OffsetDateTime;

use super::{Engine, Failure, Precheck, Step};
use crate::routing::Disagreement;

/// The first signal: the registry method that said "available", and what the DNS pre-check of
/// the same check heard.
#[derive(Debug, Clone, Copy)]
pub(super) struct First<'a> {
    /// The registry method that answered "available".
    pub method: LookupMethod,
    /// The name server that said "not delegated" in this check's pre-check, if one did.
    pub not_delegated: Option<&'a str>,
}

/// What a second signal said.
enum Second {
    /// It agrees that the name is free (the method, and its words for the evidence).
    Agrees(Method, String),
    /// It says the name is registered (the method, and its words).
    Disagrees(Method, String),
}

/// Why consensus runs for one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Required: no confirmation, no "available".
    Required,
    /// Sampled: a disagreement counts, no confirmation leaves the answer as it was.
    Audit,
}

/// Lower-case name of a verdict method, for words in logs and evidence.
fn method_name(method: Method) -> &'static str {
    match method {
        Method::Dns => "dns",
        Method::Rdap => "rdap",
        Method::Whois => "whois",
        Method::Policy => "policy",
        Method::Cache => "cache",
    }
}

impl Engine {
    /// Confirms (or not) the "available" verdict `verdict` given by `first.method`, where the
    /// suffix requires consensus or the audit samples this answer (see the module
    /// documentation). Returns the verdict to give and, for an unknown one, whether a retry may
    /// give a definitive answer.
    pub(super) async fn confirm(
        &self,
        domain: &DomainName,
        entry: &TldEntry,
        first: First<'_>,
        mut verdict: Verdict,
        steps: &mut Vec<Step>,
    ) -> (Verdict, bool) {
        let Some(mode) = self.consensus_mode(entry).await else {
            return (verdict, false);
        };
        let (second, failures) = self.second_signal(domain, entry, first, steps).await;
        match second {
            Some(Second::Agrees(method, words)) => {
                metrics::counter!("dsa_consensus_checks_total", "outcome" => "agreed").increment(1);
                verdict.confirmed_by = Some(method);
                verdict.evidence = format!("{}; confirmed by {words}", verdict.evidence);
                (verdict, false)
            }
            Some(Second::Disagrees(method, words)) => {
                metrics::counter!("dsa_consensus_checks_total", "outcome" => "disagreed").increment(1);
                let first_words = format!("{} said available ({})", method_name(verdict.method), verdict.evidence);
                let second_words = format!("{} said registered ({words})", method_name(method));
                self.disagreement(domain, entry, &first_words, &second_words).await;
                let evidence =
                    format!("the registry's signals disagree, so no answer is given: {first_words}; {second_words}");
                (self.verdict(domain, Status::Unknown, verdict.method, false, evidence), false)
            }
            None if mode == Mode::Audit => {
                metrics::counter!("dsa_consensus_checks_total", "outcome" => "unconfirmed_audit").increment(1);
                (verdict, false)
            }
            None => {
                metrics::counter!("dsa_consensus_checks_total", "outcome" => "unconfirmed").increment(1);
                let why = if failures.is_empty() {
                    "no second signal is available for this suffix".to_owned()
                } else {
                    failures.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join("; ")
                };
                let evidence = format!(
                    "{} said available, but .{} needs a second signal before \"available\" and none answered: {why}",
                    method_name(verdict.method),
                    entry.suffix
                );
                let retryable = failures.iter().any(|f| f.retryable);
                (self.verdict(domain, Status::Unknown, verdict.method, false, evidence), retryable)
            }
        }
    }

    /// Whether this "available" under `entry` must be confirmed (required), may be (an audit
    /// sample), or not at all.
    async fn consensus_mode(&self, entry: &TldEntry) -> Option<Mode> {
        let state = self.book().consensus(entry, false).await;
        if state.required.is_some() {
            return Some(Mode::Required);
        }
        let every = u64::from(self.config().consensus.audit_one_in);
        if !state.allowed || every == 0 {
            return None;
        }
        // The `every`-th unconfirmed answer of this process, and every `every` after it.
        let seen = self.inner.unconfirmed.fetch_add(1, Ordering::Relaxed) + 1;
        seen.is_multiple_of(every).then_some(Mode::Audit)
    }

    /// Asks the second signals in order until one answers definitively; the failures of those
    /// that did not.
    async fn second_signal(
        &self,
        domain: &DomainName,
        entry: &TldEntry,
        first: First<'_>,
        steps: &mut Vec<Step>,
    ) -> (Option<Second>, Vec<Failure>) {
        let mut failures = Vec::new();
        let config = self.config();
        let other = match first.method {
            LookupMethod::Rdap if config.whois.enabled => Some(LookupMethod::Whois),
            LookupMethod::Whois if config.rdap.enabled => Some(LookupMethod::Rdap),
            _ => None,
        }
        .filter(|m| entry.methods.contains(m));
        if let Some(other) = other {
            let answer = match other {
                LookupMethod::Whois => self.ask_whois(domain, entry, steps).await,
                _ => self.ask_rdap(domain, entry, steps).await,
            };
            match answer {
                Ok((v, _)) if v.status == Status::Available => {
                    return (Some(Second::Agrees(v.method, v.evidence)), failures);
                }
                Ok((v, _)) => {
                    let status = match v.status {
                        Status::PendingDelete => "pending delete",
                        Status::Reserved => "reserved",
                        _ => "taken",
                    };
                    let words = format!("{status}: {}", v.evidence);
                    return (Some(Second::Disagrees(v.method, words)), failures);
                }
                Err(f) => failures.push(f),
            }
        }
        if !config.dns.enabled {
            return (None, failures);
        }
        if let Some(host) = first.not_delegated {
            let words = format!("DNS: not delegated (asked {host} in this check's pre-check)");
            return (Some(Second::Agrees(Method::Dns, words)), failures);
        }
        match tokio::time::timeout(self.dns_budget(), self.dns_precheck(domain, entry, steps)).await {
            Ok(Precheck::Taken(v)) => (Some(Second::Disagrees(Method::Dns, v.evidence)), failures),
            Ok(Precheck::NotDelegated(host)) => {
                let words = format!("DNS: not delegated (asked {host})");
                (Some(Second::Agrees(Method::Dns, words)), failures)
            }
            Ok(Precheck::Nothing) => {
                failures.push(Failure::new(Method::Dns, "DNS: no authoritative name server answered", true));
                (None, failures)
            }
            Err(_) => {
                failures.push(Failure::new(Method::Dns, "DNS: no answer within its budget", true));
                (None, failures)
            }
        }
    }

    /// Records a disagreement under `entry`'s suffix: counted, consensus required there for
    /// `hold_secs` (fleet-wide in a fleet), the name's cached verdicts forgotten, and a warn
    /// line naming the suffix, both signals and the deadline.
    async fn disagreement(&self, domain: &DomainName, entry: &TldEntry, first: &str, second: &str) {
        let now = OffsetDateTime::now_utc();
        let hold = time::Duration::seconds(i64::try_from(self.config().consensus.hold_secs).unwrap_or(i64::MAX));
        let until = now.checked_add(hold).unwrap_or(now);
        let record =
            Disagreement { at: now, domain: domain.as_str().to_owned(), first: first.into(), second: second.into() };
        let hold = self.routes().disagreed(&entry.suffix, record, until).await;
        self.book().forget(domain).await;
        metrics::counter!("dsa_consensus_disagreements_total", "suffix" => entry.suffix.clone()).increment(1);
        tracing::warn!(
            suffix = %entry.suffix,
            domain = domain.as_str(),
            first,
            second,
            until = %hold.until,
            disagreements = hold.disagreements,
            "two signals disagree about a name: answering unknown, and requiring a second signal before \
             \"available\" for this suffix until the given time (check the registry's RDAP and WHOIS answers \
             for this name; engine.consensus.suffixes makes the setting permanent)"
        );
    }
}
