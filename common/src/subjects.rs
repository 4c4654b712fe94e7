//! Every NATS subject, JetStream stream, consumer and KV bucket name dsa uses, in one place
//! (house style §5). The definitions themselves are documented in `nats/README.md`.
//!
//! Jobs: one stream, one subject and one durable worker consumer per kind of lookup
//! ([`LookupKind`]): `dsa.jobs.check` → `dsa-workers`, `dsa.jobs.whois` → `dsa-workers-whois`,
//! `dsa.jobs.dns` → `dsa-workers-dns`.

use crate::lookup::LookupKind;

/// Stream of lookup jobs (work-queue retention: a job is deleted once a worker acks it).
pub const JOBS_STREAM: &str = "DSA_JOBS";
/// Subject filter of [`JOBS_STREAM`].
pub const JOBS_SUBJECTS: &str = "dsa.jobs.>";
/// Prefix of every job subject: a kind's jobs go to `dsa.jobs.<kind>` ([`LookupKind::as_str`]).
pub const JOBS_SUBJECT_PREFIX: &str = "dsa.jobs";
/// Durable pull consumer of check jobs (the name predates the other kinds).
pub const WORKERS_CONSUMER: &str = "dsa-workers";
/// Prefix of the durable pull consumer of every other kind: `dsa-workers-<kind>`.
pub const WORKERS_CONSUMER_PREFIX: &str = "dsa-workers";

/// The job subject of `kind` without a deployment prefix (`dsa.jobs.whois`).
#[must_use]
pub fn jobs_subject_of(kind: LookupKind) -> String {
    format!("{JOBS_SUBJECT_PREFIX}.{kind}")
}

/// The workers' durable consumer of `kind` without a deployment prefix (`dsa-workers` for
/// checks, `dsa-workers-<kind>` for the rest).
#[must_use]
pub fn jobs_consumer_of(kind: LookupKind) -> String {
    match kind {
        LookupKind::Check => WORKERS_CONSUMER.to_owned(),
        other => format!("{WORKERS_CONSUMER_PREFIX}-{other}"),
    }
}

/// Stream of ledger (charge) events.
pub const LEDGER_STREAM: &str = "DSA_LEDGER";
/// Subject filter of [`LEDGER_STREAM`].
pub const LEDGER_SUBJECTS: &str = "dsa.ledger.>";
/// Subject of charge events.
pub const LEDGER_CHARGE: &str = "dsa.ledger.charge";
/// Durable pull consumer of the ledger consumer.
pub const LEDGER_CONSUMER: &str = "dsa-ledger";

/// KV bucket holding fleet-wide rate-limit windows (upstream budgets, per-key minute windows).
pub const RATE_BUCKET: &str = "dsa_rate";
/// KV bucket holding demo-mode counters (per session, per client IP and day).
pub const DEMO_BUCKET: &str = "dsa_demo";
/// Fleet-wide verdict cache KV bucket: definitive verdicts by domain, written by workers, read by
/// every worker before it asks a registry.
pub const VERDICT_BUCKET: &str = "dsa_verdicts";
/// Lookup-claims KV bucket: the names some worker is asking a registry about right now (value:
/// the worker and when the claim becomes void), so other workers wait for its verdict instead of
/// asking too.
pub const CLAIM_BUCKET: &str = "dsa_claims";
/// Self-correcting routing KV bucket: per catalogue suffix whose RDAP is demoted, until when
/// WHOIS is asked first (written by the worker that saw RDAP fail or recover, read by every
/// worker before it routes a check and by the fronts for `GET /v1/tlds/{tld}`).
pub const ROUTING_BUCKET: &str = "dsa_routing";

/// Header carrying the inbox a worker must reply to (JetStream has no request-reply of its own).
pub const REPLY_HEADER: &str = "Dsa-Reply-To";

/// Header a front sets (value `1`) on an interactive job it may also send on the direct path
/// ([`DIRECT_SUBJECT_PREFIX`]): the worker that starts the job says so at once with a notice on
/// the job's reply subject ([`STARTED_HEADER`]), so the front knows the job moves and sends no
/// second copy. Jobs without it (background work, older fronts) get no notice.
pub const WANT_STARTED_HEADER: &str = "Dsa-Want-Started";

/// Header (value `1`) marking a message on a job's reply subject as the worker's "started"
/// notice rather than its reply; the payload carries the `job_id` as a reply does.
pub const STARTED_HEADER: &str = "Dsa-Started";

/// Header on a direct copy of a job ([`DIRECT_SUBJECT_PREFIX`]) saying why the front sent it.
/// `not_started` (the jobs stream acked the job, no worker started it in time) and `publish_slow`
/// (no ack yet): the stream may hold the job, and a worker takes such a copy only while its
/// stream delivers nothing (so a busy fleet's queue is not jumped and no job runs twice).
/// `publish_failed` (the stream gave no answer: it does not hold the job) and `reconnected` (the
/// front's connection was made again: the publish or the reply may be lost): a worker with a free
/// slot takes it.
pub const DIRECT_REASON_HEADER: &str = "Dsa-Direct-Reason";

/// Prefix of the direct path: the second way an interactive job reaches a worker when the jobs
/// stream cannot take or deliver it (its stream or consumer electing a leader after a NATS server
/// was lost). A kind's direct jobs go to `dsa.direct.<kind>` with core NATS, outside
/// [`JOBS_SUBJECTS`] on purpose (the jobs stream would capture them), and the workers of that kind
/// take them with a queue subscription ([`Names::direct_queue`]).
pub const DIRECT_SUBJECT_PREFIX: &str = "dsa.direct";

/// Subject of the workers' presence beats: each worker pool announces itself there every few
/// seconds (its random id), so every worker knows how many share the fleet-wide upstream budget
/// and can keep to its own share of a registry's limit while the budget's bucket cannot be
/// written (`workers::fleet::budget`).
pub const WORKER_PRESENCE: &str = "dsa.workers.presence";

/// Subject space of job replies: a front subscribes to `dsa.replies.<front>.*` and names
/// `dsa.replies.<front>.<job id>` in each job's [`REPLY_HEADER`]. Apart from the fronts' inboxes
/// on purpose: a worker may publish here and nowhere under [`FRONT_INBOX`], so it can answer the
/// jobs it was given but cannot forge a front's JetStream answers (publish acks of charges, KV
/// reads of the rate limiter), whose inbox names it would learn from a job's reply subject if
/// both shared one prefix.
pub const JOB_REPLIES: &str = "dsa.replies";

/// Inbox prefix of the fronts (JetStream API answers, publish acks, KV reads). Each role has
/// its own prefix instead of the client default `_INBOX`, so that the server's permissions
/// (`common::nats_auth`) can let a role subscribe to its own inboxes only: with one shared
/// `_INBOX.>` a worker read the ledger's charge deliveries and could publish into its fetch inbox.
pub const FRONT_INBOX: &str = "_INBOX_front";
/// Inbox prefix of the workers (job fetches, JetStream API answers, KV acks).
pub const WORKER_INBOX: &str = "_INBOX_worker";
/// Inbox prefix of the ledger consumer (charge-event fetches, JetStream API answers).
pub const LEDGER_INBOX: &str = "_INBOX_ledger";

/// The names with a per-test (or per-deployment) prefix, so tests on one server never share a
/// stream: `prefix = ""` gives the names above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// Jobs stream name.
    pub jobs_stream: String,
    /// Job subject filter.
    pub jobs_subjects: String,
    /// Per kind of lookup, its job subject and its workers' durable consumer (derived from the
    /// kind's name, so a new kind needs no entry here): [`Names::jobs_subject`],
    /// [`Names::jobs_consumer`].
    jobs: std::collections::BTreeMap<LookupKind, (String, String)>,
    /// Ledger stream name.
    pub ledger_stream: String,
    /// Ledger subject filter.
    pub ledger_subjects: String,
    /// Charge subject.
    pub ledger_charge: String,
    /// Ledger consumer.
    pub ledger_consumer: String,
    /// Rate-limit KV bucket.
    pub rate_bucket: String,
    /// Demo-mode KV bucket.
    pub demo_bucket: String,
    /// Fleet-wide verdict cache KV bucket.
    pub verdict_bucket: String,
    /// Lookup-claims KV bucket.
    pub claim_bucket: String,
    /// Self-correcting routing KV bucket.
    pub routing_bucket: String,
    /// Subject space of job replies ([`JOB_REPLIES`]).
    pub job_replies: String,
    /// Subject filter of the direct path (`dsa.direct.>`, [`DIRECT_SUBJECT_PREFIX`]); one kind's
    /// subject is [`Names::direct_subject`].
    pub direct_subjects: String,
    /// Subject of the workers' presence beats ([`WORKER_PRESENCE`]).
    pub worker_presence: String,
    /// Inbox prefix of the fronts.
    pub front_inbox: String,
    /// Inbox prefix of the workers.
    pub worker_inbox: String,
    /// Inbox prefix of the ledger consumer.
    pub ledger_inbox: String,
}

impl Names {
    /// Names under `prefix` (letters, digits, `_` and `-` only; empty for production names).
    pub fn with_prefix(prefix: &str) -> Self {
        let p = prefix.trim();
        let upper = p.to_ascii_uppercase().replace('-', "_");
        let lower = p.to_ascii_lowercase();
        let stream = |base: &str| if p.is_empty() { base.to_owned() } else { format!("{upper}_{base}") };
        let subject = |base: &str| if p.is_empty() { base.to_owned() } else { format!("{lower}.{base}") };
        let consumer = |base: &str| if p.is_empty() { base.to_owned() } else { format!("{lower}-{base}") };
        let bucket =
            |base: &str| if p.is_empty() { base.to_owned() } else { format!("{lower}_{base}").replace('-', "_") };
        // `_INBOX_front` → `_INBOX_t_42_front`: one token, never a prefix of another role's.
        let inbox = |base: &str| match base.strip_prefix("_INBOX_") {
            Some(role) if !p.is_empty() => format!("_INBOX_{}_{role}", lower.replace('-', "_")),
            _ => base.to_owned(),
        };
        Self {
            jobs_stream: stream(JOBS_STREAM),
            jobs_subjects: subject(JOBS_SUBJECTS),
            jobs: LookupKind::ALL
                .into_iter()
                .map(|kind| (kind, (subject(&jobs_subject_of(kind)), consumer(&jobs_consumer_of(kind)))))
                .collect(),
            ledger_stream: stream(LEDGER_STREAM),
            ledger_subjects: subject(LEDGER_SUBJECTS),
            ledger_charge: subject(LEDGER_CHARGE),
            ledger_consumer: consumer(LEDGER_CONSUMER),
            rate_bucket: bucket(RATE_BUCKET),
            demo_bucket: bucket(DEMO_BUCKET),
            verdict_bucket: bucket(VERDICT_BUCKET),
            claim_bucket: bucket(CLAIM_BUCKET),
            routing_bucket: bucket(ROUTING_BUCKET),
            job_replies: subject(JOB_REPLIES),
            direct_subjects: subject(&format!("{DIRECT_SUBJECT_PREFIX}.>")),
            worker_presence: subject(WORKER_PRESENCE),
            front_inbox: inbox(FRONT_INBOX),
            worker_inbox: inbox(WORKER_INBOX),
            ledger_inbox: inbox(LEDGER_INBOX),
        }
    }
}

impl Names {
    /// The job subject of a kind of lookup.
    pub fn jobs_subject(&self, kind: LookupKind) -> &str {
        self.jobs.get(&kind).map_or("", |(subject, _)| subject.as_str())
    }

    /// The durable worker consumer of a kind of lookup (filtered on [`Names::jobs_subject`]).
    pub fn jobs_consumer(&self, kind: LookupKind) -> &str {
        self.jobs.get(&kind).map_or("", |(_, consumer)| consumer.as_str())
    }

    /// The direct-path subject of a kind of lookup (`dsa.direct.check`, under the prefix), inside
    /// [`Names::direct_subjects`].
    pub fn direct_subject(&self, kind: LookupKind) -> String {
        let filter = &self.direct_subjects;
        format!("{}.{kind}", filter.strip_suffix(".>").unwrap_or(filter))
    }

    /// The queue group in which a kind's workers take its direct jobs (one worker gets each): the
    /// kind's consumer name, which already says "the workers of this kind" under the prefix.
    pub fn direct_queue(&self, kind: LookupKind) -> &str {
        self.jobs_consumer(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_keep_names_apart() {
        let plain = Names::with_prefix("");
        assert_eq!(plain.jobs_stream, "DSA_JOBS");
        assert_eq!(plain.jobs_subject(LookupKind::Check), "dsa.jobs.check");
        let t = Names::with_prefix("t-42");
        assert_eq!(t.jobs_stream, "T_42_DSA_JOBS");
        assert_eq!(t.jobs_subject(LookupKind::Check), "t-42.dsa.jobs.check");
        assert_eq!(t.jobs_subjects, "t-42.dsa.jobs.>");
        assert_eq!(t.jobs_consumer(LookupKind::Check), "t-42-dsa-workers");
        assert_eq!(plain.jobs_consumer(LookupKind::Dns), "dsa-workers-dns");
        assert_eq!(t.rate_bucket, "t_42_dsa_rate");
        assert_eq!(t.demo_bucket, "t_42_dsa_demo");
        assert_eq!(t.routing_bucket, "t_42_dsa_routing");
        assert_eq!(t.jobs_subject(LookupKind::Dns), "t-42.dsa.jobs.dns");
        assert_eq!(t.jobs_consumer(LookupKind::Whois), "t-42-dsa-workers-whois");
        assert_eq!(plain.jobs_consumer(LookupKind::Check), "dsa-workers");
        assert_eq!(plain.worker_inbox, "_INBOX_worker");
        assert_eq!(t.ledger_inbox, "_INBOX_t_42_ledger");
        assert_eq!(plain.job_replies, "dsa.replies");
        assert_eq!(t.job_replies, "t-42.dsa.replies");
    }

    #[test]
    fn the_direct_path_is_outside_the_jobs_stream_and_prefixed() {
        let plain = Names::with_prefix("");
        assert_eq!(plain.direct_subjects, "dsa.direct.>");
        assert_eq!(plain.direct_subject(LookupKind::Check), "dsa.direct.check");
        assert_eq!(plain.direct_queue(LookupKind::Whois), "dsa-workers-whois");
        assert_eq!(plain.worker_presence, "dsa.workers.presence");
        let t = Names::with_prefix("t-42");
        assert_eq!(t.direct_subjects, "t-42.dsa.direct.>");
        assert_eq!(t.direct_subject(LookupKind::Dns), "t-42.dsa.direct.dns");
        assert_eq!(t.direct_queue(LookupKind::Check), "t-42-dsa-workers");
        assert_eq!(t.worker_presence, "t-42.dsa.workers.presence");
        // The jobs stream captures `dsa.jobs.>`: a direct job must never land in it.
        for names in [&plain, &t] {
            let jobs = names.jobs_subjects.strip_suffix('>').unwrap_or(&names.jobs_subjects);
            for kind in LookupKind::ALL {
                assert!(!names.direct_subject(kind).starts_with(jobs), "{}", names.direct_subject(kind));
            }
        }
    }
}
