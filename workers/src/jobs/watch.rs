//! The watch re-check job (`/v1/watches`, the front's scheduler): what a watched name's
//! registration looks like now, on the registry's own word.
//!
//! 1. The registration record ([`crate::engine::Engine::registration`]: RDAP, else WHOIS, with
//!    the engine's politeness limits and routing) — not the short WHOIS cache of `/v1/whois`,
//!    whose answer may predate a change the watch exists to see. A registered name's EPP statuses
//!    and expiry date come from here.
//! 2. When the registry says the name is not registered, the availability check confirms it
//!    through the same path as a user's check, straight from the registry ([`super::check`]'s
//!    `fresh`: shared single-flight, consensus where the suffix needs it, reserved markers). Only
//!    its `available` verdict makes the name available: never DNS alone.
//!
//! 3. The DNS delegation ([`crate::engine::Engine::delegation`], the check's pre-check: the
//!    registry's name servers, no registry query) rides along as `delegated`. A job with
//!    `delegation_only` asks only this: the scheduler's cheap look between the slow registry
//!    checks of a name far from expiry, so that a delegation that disappears or appears gets the
//!    name re-checked at the registry soon. DNS never decides a state.
//!
//! The whole job is background work ([`crate::politeness::background`]): its registry and DNS
//! queries use at most the background share of each upstream's budget, so users' checks keep
//! the rest.
//!
//! No definitive answer is not an error: the observation carries `status: None` and the
//! evidence, and the scheduler keeps the watch's state and asks again sooner.

use common::domain::DomainName;
use common::lookup::WatchObservation;
use common::messages::JobAnswer;
use common::verdict::Status;
use time::OffsetDateTime;

use super::{Handled, Jobs};
use crate::engine::registration::RegistrationError;

/// Observes `domain` (see the module documentation), as background work.
pub(super) async fn handle(jobs: &Jobs, domain: &str, parsed: Option<DomainName>, delegation_only: bool) -> Handled {
    crate::politeness::background(observe(jobs, domain, parsed, delegation_only)).await
}

async fn observe(jobs: &Jobs, domain: &str, parsed: Option<DomainName>, delegation_only: bool) -> Handled {
    let domain = match jobs.domain(domain, parsed) {
        Ok(domain) => domain,
        Err(reason) => return Handled::rejected(reason),
    };
    let delegated = match jobs.engine().delegation(&domain).await {
        Ok(delegated) => delegated,
        Err(e) => return Handled::rejected(e.to_string()),
    };
    if delegation_only {
        let evidence = match delegated {
            Some(true) => "DNS: delegated by the registry's name servers",
            Some(false) => "DNS: not delegated by the registry's name servers",
            None => "DNS: no answer from the registry's name servers",
        };
        return Handled::answer(JobAnswer::Watch {
            observation: WatchObservation {
                domain: domain.as_str().to_owned(),
                status: None,
                epp_status: Vec::new(),
                expires_at: None,
                delegated,
                evidence: evidence.to_owned(),
                checked_at: OffsetDateTime::now_utc(),
            },
        });
    }
    let observation = match jobs.engine().registration(&domain).await {
        Err(RegistrationError::Engine(e)) => return Handled::rejected(e.to_string()),
        Err(RegistrationError::NoAnswer(reason)) => WatchObservation {
            domain: domain.as_str().to_owned(),
            status: None,
            epp_status: Vec::new(),
            expires_at: None,
            delegated,
            evidence: reason,
            checked_at: OffsetDateTime::now_utc(),
        },
        Ok(answer) if answer.registered => {
            let pending = answer.record.status.iter().any(|s| s == "pendingDelete" || s == "redemptionPeriod");
            WatchObservation {
                domain: domain.as_str().to_owned(),
                status: Some(if pending { Status::PendingDelete } else { Status::Taken }),
                evidence: format!(
                    "{} from {}: registered{}",
                    answer.provenance.protocol.to_ascii_uppercase(),
                    answer.provenance.server,
                    if answer.record.status.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", answer.record.status.join(", "))
                    }
                ),
                epp_status: answer.record.status,
                expires_at: answer.record.expires_at,
                delegated,
                checked_at: answer.checked_at,
            }
        }
        Ok(answer) => {
            let report = super::check::fresh(jobs, &domain).await;
            let verdict = report.verdict;
            let record = report.record.unwrap_or_default();
            WatchObservation {
                domain: domain.as_str().to_owned(),
                status: verdict.status.is_definitive().then_some(verdict.status),
                epp_status: record.status,
                expires_at: record.expires_at,
                delegated,
                evidence: format!(
                    "{} from {}: not registered; check: {}",
                    answer.provenance.protocol.to_ascii_uppercase(),
                    answer.provenance.server,
                    verdict.evidence
                ),
                checked_at: verdict.checked_at,
            }
        }
    };
    Handled::answer(JobAnswer::Watch { observation })
}
