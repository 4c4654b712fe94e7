//! Every NATS subject, JetStream stream, consumer and KV bucket name dsa uses, in one place
//! (house style §5). The definitions themselves are documented in `nats/README.md`.

/// Stream of lookup jobs (work-queue retention: a job is deleted once a worker acks it).
pub const JOBS_STREAM: &str = "DSA_JOBS";
/// Subject filter of [`JOBS_STREAM`].
pub const JOBS_SUBJECTS: &str = "dsa.jobs.>";
/// Subject of availability-check jobs.
pub const JOBS_CHECK: &str = "dsa.jobs.check";
/// Durable pull consumer of the worker pool.
pub const WORKERS_CONSUMER: &str = "dsa-workers";

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

/// Header carrying the inbox a worker must reply to (JetStream has no request-reply of its own).
pub const REPLY_HEADER: &str = "Dsa-Reply-To";

/// The names with a per-test (or per-deployment) prefix, so tests on one server never share a
/// stream: `prefix = ""` gives the names above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// Jobs stream name.
    pub jobs_stream: String,
    /// Job subject filter.
    pub jobs_subjects: String,
    /// Check-job subject.
    pub jobs_check: String,
    /// Workers' consumer.
    pub workers_consumer: String,
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
        Self {
            jobs_stream: stream(JOBS_STREAM),
            jobs_subjects: subject(JOBS_SUBJECTS),
            jobs_check: subject(JOBS_CHECK),
            workers_consumer: consumer(WORKERS_CONSUMER),
            ledger_stream: stream(LEDGER_STREAM),
            ledger_subjects: subject(LEDGER_SUBJECTS),
            ledger_charge: subject(LEDGER_CHARGE),
            ledger_consumer: consumer(LEDGER_CONSUMER),
            rate_bucket: bucket(RATE_BUCKET),
            demo_bucket: bucket(DEMO_BUCKET),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_keep_names_apart() {
        let plain = Names::with_prefix("");
        assert_eq!(plain.jobs_stream, "DSA_JOBS");
        assert_eq!(plain.jobs_check, "dsa.jobs.check");
        let t = Names::with_prefix("t-42");
        assert_eq!(t.jobs_stream, "T_42_DSA_JOBS");
        assert_eq!(t.jobs_check, "t-42.dsa.jobs.check");
        assert_eq!(t.jobs_subjects, "t-42.dsa.jobs.>");
        assert_eq!(t.workers_consumer, "t-42-dsa-workers");
        assert_eq!(t.rate_bucket, "t_42_dsa_rate");
        assert_eq!(t.demo_bucket, "t_42_dsa_demo");
    }
}
