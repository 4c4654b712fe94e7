//! The DNS-records job (`/v1/dns`).

use common::lookup::DnsType;
use common::messages::JobAnswer;

use super::{Handled, Jobs};
use crate::lookup::dns::DnsLookupError;

/// The `types` records of `name` from the recursive resolvers: every type failing fails the job
/// (502); a name that cannot be asked is rejected.
///
/// A name that is not public (special-use or internal: `localhost`, `.internal`, `.local`,
/// `.arpa`, a top-level domain outside the catalogue such as `.corp`; `common::public_name`) is
/// rejected here too, not only by the front's `/v1/dns`: a job that did not come through a
/// front's checks (a forged or leaked front credential on the jobs stream or the direct path)
/// never makes a worker ask its resolvers about a private network's names.
pub(super) async fn handle(jobs: &Jobs, name: &str, types: &[DnsType]) -> Handled {
    let asked = name.trim_end_matches('.').to_ascii_lowercase();
    if let Some(why) = common::public_name::refusal(&asked, jobs.engine().catalogue()) {
        return Handled::rejected(format!("Unsupported domain {asked:?}: {why}; only public names are looked up."));
    }
    match jobs.lookups().dns(&asked, types).await {
        Ok(answer) => Handled::answer(JobAnswer::Dns { answer }),
        Err(DnsLookupError::NoAnswer(reason)) => Handled::failed(reason),
        Err(e) => Handled::rejected(e.to_string()),
    }
}
