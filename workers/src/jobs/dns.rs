//! The DNS-records job (`/v1/dns`).

use common::lookup::DnsType;
use common::messages::JobAnswer;

use super::{Handled, Jobs};
use crate::lookup::dns::DnsLookupError;

/// The `types` records of `name` from the recursive resolvers: every type failing fails the job
/// (502); a name that cannot be asked is rejected.
pub(super) async fn handle(jobs: &Jobs, name: &str, types: &[DnsType]) -> Handled {
    match jobs.lookups().dns(name, types).await {
        Ok(answer) => Handled::answer(JobAnswer::Dns { answer }),
        Err(DnsLookupError::NoAnswer(reason)) => Handled::failed(reason),
        Err(e) => Handled::rejected(e.to_string()),
    }
}
