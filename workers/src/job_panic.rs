//! A panic in one job never takes a worker away (house rule 15; issue 32).
//!
//! The readers of registry answers run over hostile bytes (a port-43 server, anyone on its
//! cleartext path, a registrar named by a referral); a bug there (a slice inside a character,
//! an index out of range) panics. Unguarded, the panic unwinds through whatever runs the job:
//! in standalone mode the in-process worker task is gone for good (64 crafted answers left a
//! front with no check worker at all, answering every later check 502 while `/readyz` said
//! ready); in the fleet the job is never answered nor acked, a single-flight entry shared by
//! other jobs of the name stays poisoned, and the lookup claim stays held.
//!
//! [`contain`] runs a job's work and turns a panic into [`Panicked`], logged at error level with
//! the job's kind and domain and counted in `dsa_job_panics_total{kind}`; the caller answers as
//! it would for a registry that gave no definitive answer: an `unknown` verdict for a check
//! ([`Panicked::verdict`]), a failed lookup for `/v1/whois` and `/v1/dns` — HTTP 502 at the
//! front, never charged. Used at the one job boundary of both buses
//! ([`crate::jobs::Jobs::run`], run by standalone's in-process workers and the fleet's pool),
//! around the registry read of a check (so a fleet claim is released), by
//! [`crate::fleet::pull`](mod@crate::fleet::pull) as the last line of a pull loop, and by
//! [`crate::singleflight`], so that every waiter of a shared run gets the answer too.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use common::lookup::LookupKind;
use common::verdict::{Method, Status, Verdict};
use futures::FutureExt;

/// A job's work panicked. Its `Display` is the text users see (a 502's error, an `unknown`
/// verdict's evidence): it names no internals; the panic message goes to the log only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dsa could not read the registry's answer (an internal error, reported to the operator)")]
pub struct Panicked {
    message: String,
}

impl Panicked {
    /// From a panic's payload (`&str` or `String` for `panic!` with a message).
    pub fn from_payload(payload: &(dyn Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Self { message }
    }

    /// The panic's message, for the log.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Logs the panic at error level with the job's `kind` and `domain` (or DNS name) and counts
    /// it in `dsa_job_panics_total{kind}`.
    pub fn report(&self, kind: LookupKind, domain: &str) {
        tracing::error!(kind = %kind, domain, panic = %self.message, "a job panicked; answered unknown, the worker lives on");
        metrics::counter!("dsa_job_panics_total", "kind" => kind.as_str()).increment(1);
    }

    /// The verdict of a check whose job panicked: `unknown` (the front answers 502 and charges
    /// nothing), not authoritative, evidence in users' words.
    pub fn verdict(&self, domain: &str) -> Verdict {
        Verdict {
            domain: domain.to_owned(),
            status: Status::Unknown,
            // No method gave an answer; the engine reports RDAP then too (`Engine::decide`).
            method: Method::Rdap,
            authoritative: false,
            checked_at: time::OffsetDateTime::now_utc(),
            evidence: self.to_string(),
            confirmed_by: None,
        }
    }
}

/// Runs `work`, catching a panic as [`Panicked`] without reporting it (the caller knows what to
/// log, e.g. only once for a run shared by many waiters).
///
/// `AssertUnwindSafe`: after a panic nothing of the job's own state is used again, and the code
/// that panics on hostile bytes (the readers) is pure and holds no lock, so what jobs share
/// (caches, limiters, the single-flight map, whose lock recovers from poisoning) is not left
/// half-updated.
///
/// The work is boxed: a job's future can be large (a DNSSEC-validating lookup), and wrapping it
/// inline would grow every future around it; on the heap it costs one allocation per job.
pub async fn catch<F: Future>(work: F) -> Result<F::Output, Panicked> {
    AssertUnwindSafe(Box::pin(work)).catch_unwind().await.map_err(|payload| Panicked::from_payload(payload.as_ref()))
}

/// Runs a job's `work`; a panic is reported ([`Panicked::report`], with `kind` and `domain`) and
/// returned as [`Panicked`] for the caller to answer.
pub async fn contain<F: Future>(kind: LookupKind, domain: &str, work: F) -> Result<F::Output, Panicked> {
    let caught = catch(work).await;
    if let Err(panicked) = &caught {
        panicked.report(kind, domain);
    }
    caught
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_job_is_caught_with_its_message_and_a_calm_one_passes() {
        let caught = contain(LookupKind::Check, "f.io", async { panic!("byte index 9 is not a char boundary") }).await;
        let panicked: Panicked = caught.expect_err("the panic is caught");
        assert_eq!(panicked.message(), "byte index 9 is not a char boundary");
        assert!(!panicked.to_string().contains("byte index"), "users never see the panic text");
        let formatted = catch(async { panic!("{} {}", "formatted", 1) }).await.expect_err("caught");
        assert_eq!(formatted.message(), "formatted 1");
        assert_eq!(contain(LookupKind::Dns, "x", async { 7 }).await, Ok(7));
    }

    #[test]
    fn the_verdict_of_a_panicked_check_is_unknown_and_names_the_domain() {
        let v = Panicked::from_payload(&"x").verdict("f.io");
        assert_eq!((v.status, v.domain.as_str(), v.authoritative), (Status::Unknown, "f.io", false));
        assert!(!v.status.is_definitive());
    }
}
