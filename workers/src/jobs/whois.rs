//! The registration-record job (`/v1/whois`).

use common::domain::DomainName;
use common::messages::JobAnswer;

use super::{Handled, Jobs};
use crate::engine::registration::RegistrationError;

/// The record of `domain` (the short WHOIS cache, else the registry): an unsupported suffix is
/// rejected; no definitive answer from any upstream fails the job (502) rather than retrying it,
/// as the front's deadline is short and the engine already tried every method.
pub(super) async fn handle(jobs: &Jobs, domain: &str, parsed: Option<DomainName>) -> Handled {
    let domain = match jobs.domain(domain, parsed) {
        Ok(domain) => domain,
        Err(reason) => return Handled::rejected(reason),
    };
    match jobs.lookups().whois(&domain).await {
        Ok(answer) => Handled::answer(JobAnswer::Whois { answer: Box::new(answer) }),
        Err(RegistrationError::Engine(e)) => Handled::rejected(e.to_string()),
        Err(e) => Handled::failed(e.to_string()),
    }
}
