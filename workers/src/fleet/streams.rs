//! Every JetStream stream, consumer and KV bucket of the fleet, declared in one place.
//!
//! The names come from [`common::subjects::Names`]; the definitions (retention, limits, ack
//! timing) are built here by one function each, used both by [`declare`] (which creates them at
//! start, idempotently) and by the test that keeps `nats/*.json` (the same definitions in the
//! server's own format, for operators using the `nats` CLI) equal to the code.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, kv, stream};
use common::lookup::LookupKind;
use common::nats_auth::FleetRole;
use common::subjects::Names;

use super::{FleetError, js_err};

/// Deliveries of one job at most (then it is dropped; the front has long given up).
pub const JOB_MAX_DELIVER: i64 = 5;

/// Timing of the JetStream consumers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// How long a worker may hold a job without a sign of life before JetStream redelivers it
    /// (workers send progress acks every half of it while probing), seconds.
    pub job_ack_wait_secs: f64,
    /// How long the ledger consumer may hold a batch before redelivery, seconds.
    pub ledger_ack_wait_secs: f64,
    /// Most messages the jobs stream holds (then new publishes are refused).
    pub jobs_max_msgs: i64,
    /// Most bytes the jobs stream holds (then new publishes are refused).
    pub jobs_max_bytes: i64,
    /// Replicas of every stream and KV bucket (their consumers follow their stream): 1 on a
    /// single server, 3 on a three-server cluster so that the fleet keeps working when one server
    /// is lost. Applied when a stream or bucket is created; an existing one keeps its own.
    pub replicas: usize,
    /// Replicas of the ledger stream `DSA_LEDGER`, at least [`Tuning::replicas`] (1 on a single
    /// server; 3 in a production cluster, so an acked charge survives the loss of a server).
    /// Applied when the stream is created; an existing stream keeps its own.
    pub ledger_replicas: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            job_ack_wait_secs: 3.0,
            ledger_ack_wait_secs: 10.0,
            jobs_max_msgs: JOBS_MAX_MSGS,
            jobs_max_bytes: JOBS_MAX_BYTES,
            replicas: 1,
            ledger_replicas: 1,
        }
    }
}

/// Default bound on the jobs waiting in the jobs stream: at about 200 bytes a job, far more than
/// any pool drains within a check deadline, so only a runaway backlog reaches it.
pub const JOBS_MAX_MSGS: i64 = 100_000;
/// Default bound on the bytes of the jobs stream (64 MiB).
pub const JOBS_MAX_BYTES: i64 = 64 * 1024 * 1024;
/// Longest a verdict stays in the fleet-wide verdict bucket, seconds; each read also applies the
/// engine's per-status freshness (`engine.cache`: taken-like verdicts hours, available minutes).
pub const VERDICT_BUCKET_MAX_AGE_SECS: u64 = 86_400;
/// Longest a lookup claim stays in the claims bucket, seconds. A claim carries its own deadline
/// (its maker's start plus `engine.check_deadline_secs`), after which another worker takes it
/// over; this bound only clears claims that were never released (a crashed worker).
pub const CLAIM_BUCKET_MAX_AGE_SECS: u64 = 300;
/// Longest a routing decision stays in the routing bucket, seconds. Each entry carries its own
/// deadline (`engine.routing.prefer_whois_secs` after the demotion), checked on read; this bound
/// only clears entries nobody promoted back, and caps a longer hold at one hour.
pub const ROUTING_BUCKET_MAX_AGE_SECS: u64 = 3_600;

/// Duplicate window of the jobs stream (a re-published job id within it is not a new job).
pub const JOB_DUPLICATE_WINDOW_SECS: u64 = 120;
/// Duplicate window of the ledger stream.
pub const LEDGER_DUPLICATE_WINDOW_SECS: u64 = 600;

/// The jobs stream: lookup jobs of every kind, deleted once acked (work queue).
pub fn jobs_stream(names: &Names, tuning: Tuning) -> stream::Config {
    stream::Config {
        name: names.jobs_stream.clone(),
        subjects: vec![names.jobs_subjects.clone()],
        retention: stream::RetentionPolicy::WorkQueue,
        storage: stream::StorageType::File,
        duplicate_window: Duration::from_secs(JOB_DUPLICATE_WINDOW_SECS),
        max_age: Duration::from_secs(600),
        // A full stream refuses new jobs (the front answers at once) rather than dropping jobs
        // already accepted.
        max_messages: tuning.jobs_max_msgs,
        max_bytes: tuning.jobs_max_bytes,
        discard: stream::DiscardPolicy::New,
        num_replicas: tuning.replicas.max(1),
        ..Default::default()
    }
}

/// The durable pull consumer of one kind of lookup on the jobs stream, filtered on its subject.
pub fn jobs_consumer(names: &Names, kind: LookupKind, tuning: Tuning) -> consumer::pull::Config {
    let name = names.jobs_consumer(kind).to_owned();
    consumer::pull::Config {
        durable_name: Some(name),
        filter_subject: names.jobs_subject(kind).to_owned(),
        ack_policy: consumer::AckPolicy::Explicit,
        ack_wait: Duration::from_secs_f64(tuning.job_ack_wait_secs.max(0.5)),
        max_deliver: JOB_MAX_DELIVER,
        max_ack_pending: 10_000,
        ..Default::default()
    }
}

/// The ledger stream: charge events, deleted once applied to Postgres (work queue).
pub fn ledger_stream(names: &Names, tuning: Tuning) -> stream::Config {
    stream::Config {
        name: names.ledger_stream.clone(),
        subjects: vec![names.ledger_subjects.clone()],
        retention: stream::RetentionPolicy::WorkQueue,
        storage: stream::StorageType::File,
        duplicate_window: Duration::from_secs(LEDGER_DUPLICATE_WINDOW_SECS),
        max_age: Duration::from_secs(7 * 86_400),
        num_replicas: tuning.ledger_replicas.max(tuning.replicas).max(1),
        ..Default::default()
    }
}

/// The ledger's durable pull consumer (redelivers until the Postgres commit acks).
pub fn ledger_consumer(names: &Names, tuning: Tuning) -> consumer::pull::Config {
    consumer::pull::Config {
        durable_name: Some(names.ledger_consumer.clone()),
        ack_policy: consumer::AckPolicy::Explicit,
        ack_wait: Duration::from_secs_f64(tuning.ledger_ack_wait_secs.max(0.5)),
        max_deliver: -1,
        max_ack_pending: 20_000,
        ..Default::default()
    }
}

/// The KV buckets: fleet-wide rate windows, demo counters, the verdict cache, lookup claims and
/// the routing decisions, each with [`Tuning::replicas`] replicas.
pub fn buckets(names: &Names, tuning: Tuning) -> [kv::Config; 5] {
    let bucket = |name: &str, max_age_secs: u64, storage| kv::Config {
        bucket: name.to_owned(),
        history: 1,
        max_age: Duration::from_secs(max_age_secs),
        storage,
        num_replicas: tuning.replicas.max(1),
        ..Default::default()
    };
    [
        bucket(&names.rate_bucket, 300, stream::StorageType::File),
        bucket(&names.demo_bucket, 86_400, stream::StorageType::File),
        // A cache: memory is enough, and a restarted server just starts cold.
        bucket(&names.verdict_bucket, VERDICT_BUCKET_MAX_AGE_SECS, stream::StorageType::Memory),
        // Claims live seconds; a restarted server forgets them and the next worker claims anew.
        bucket(&names.claim_bucket, CLAIM_BUCKET_MAX_AGE_SECS, stream::StorageType::Memory),
        // Short-lived decisions: a restarted server forgets them and RDAP leads again.
        bucket(&names.routing_bucket, ROUTING_BUCKET_MAX_AGE_SECS, stream::StorageType::Memory),
    ]
}

/// Creates (idempotently) the streams, consumers and KV buckets of `names`, every role's (an
/// operator's or a test's connection). The definitions are documented in `nats/README.md` and
/// kept in `nats/*.json`.
///
/// # Errors
/// When JetStream refuses a definition.
pub async fn declare(js: &jetstream::Context, names: &Names, tuning: Tuning) -> Result<(), FleetError> {
    for role in [FleetRole::Front, FleetRole::Worker, FleetRole::Ledger] {
        declare_role(js, names, tuning, role).await?;
    }
    Ok(())
}

/// Creates (idempotently) what `role` uses: the streams it publishes to or reads, its own
/// consumers, its KV buckets. Each role declares its own consumers only, since the NATS
/// permissions (`common::nats_auth`) let no role create another role's.
///
/// # Errors
/// When JetStream refuses a definition.
pub async fn declare_role(
    js: &jetstream::Context,
    names: &Names,
    tuning: Tuning,
    role: FleetRole,
) -> Result<(), FleetError> {
    if matches!(role, FleetRole::Front | FleetRole::Worker) {
        let jobs = js.get_or_create_stream(jobs_stream(names, tuning)).await.map_err(js_err)?;
        if role == FleetRole::Worker {
            declare_jobs_consumers(&jobs, names, tuning).await?;
        }
    }
    if matches!(role, FleetRole::Front | FleetRole::Ledger) {
        let ledger = js.get_or_create_stream(ledger_stream(names, tuning)).await.map_err(js_err)?;
        if role == FleetRole::Ledger {
            ledger
                .get_or_create_consumer(&names.ledger_consumer, ledger_consumer(names, tuning))
                .await
                .map_err(js_err)?;
        }
    }
    for config in buckets(names, tuning) {
        let used = match role {
            FleetRole::Front => {
                [&names.rate_bucket, &names.demo_bucket, &names.routing_bucket].contains(&&config.bucket)
            }
            FleetRole::Worker => config.bucket != names.demo_bucket,
            FleetRole::Ledger => false,
        };
        if used && js.get_key_value(&config.bucket).await.is_err() {
            js.create_key_value(config).await.map_err(js_err)?;
        }
    }
    Ok(())
}

/// The workers' consumers of the jobs stream, one per kind of lookup.
async fn declare_jobs_consumers(jobs: &stream::Stream, names: &Names, tuning: Tuning) -> Result<(), FleetError> {
    for kind in LookupKind::ALL {
        let config = jobs_consumer(names, kind, tuning);
        let name = names.jobs_consumer(kind).to_owned();
        let filter = &config.filter_subject;
        // A consumer from before the kinds existed has no filter and would overlap the others on
        // this work-queue stream: replace it.
        if let Ok(mut existing) = jobs.get_consumer::<consumer::pull::Config>(&name).await
            && let Ok(info) = existing.info().await
            && &info.config.filter_subject != filter
        {
            jobs.delete_consumer(&name).await.map_err(|e| {
                FleetError::JetStream(format!(
                    "consumer {name} has filter {:?}, not {filter:?} (from before the lookup kinds?) and could not be \
                     replaced: {e}; delete it once with `nats consumer rm {} {name}`",
                    info.config.filter_subject, names.jobs_stream
                ))
            })?;
        }
        jobs.get_or_create_consumer(&name, config).await.map_err(js_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use serde_json::Value;

    use super::*;

    fn nats_dir() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../nats"))
    }

    fn file(name: &str) -> serde_json::Map<String, Value> {
        let path = nats_dir().join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match serde_json::from_str(&text) {
            Ok(Value::Object(map)) => map,
            other => panic!("{name} is not a JSON object: {other:?}"),
        }
    }

    /// `declared` (the code's definition in the server's JSON format) and `default` (the same
    /// type's default) against the file: every key of the file has the declared value, and every
    /// field the code sets away from its default is in the file.
    fn assert_same(name: &str, declared: Value, default: Value) {
        let (Value::Object(declared), Value::Object(default)) = (declared, default) else {
            panic!("{name}: not serialised as objects");
        };
        let on_disk = file(name);
        for (key, want) in &on_disk {
            let mut got = declared.get(key).cloned().unwrap_or(Value::Null);
            // The server stores 0 replicas (the client's default) as 1.
            if key == "num_replicas" && got == 0 {
                got = Value::from(1);
            }
            assert_eq!(&got, want, "{name}: `{key}` is {want} in the file but the code declares {got}");
        }
        for (key, got) in &declared {
            if default.get(key) != Some(got) {
                assert!(on_disk.contains_key(key), "{name}: the code sets `{key}` = {got}, the file lacks it");
            }
        }
    }

    fn json(v: impl serde::Serialize) -> Value {
        serde_json::to_value(v).expect("serialisable")
    }

    #[test]
    fn nats_files_equal_what_the_code_declares() {
        let names = Names::with_prefix("");
        let tuning = Tuning::default();
        let mut expected_files = BTreeSet::new();
        let mut check = |file: &str, declared: Value, default: Value| {
            assert_same(file, declared, default);
            expected_files.insert(file.to_owned());
        };
        check("jobs-stream.json", json(jobs_stream(&names, tuning)), json(stream::Config::default()));
        check("ledger-stream.json", json(ledger_stream(&names, tuning)), json(stream::Config::default()));
        let pull_default = json(consumer::pull::Config::default());
        for kind in LookupKind::ALL {
            let file = match kind {
                LookupKind::Check => "workers-consumer.json",
                LookupKind::Whois => "whois-workers-consumer.json",
                LookupKind::Dns => "dns-workers-consumer.json",
                LookupKind::Watch => "watch-workers-consumer.json",
            };
            let declared = json(jobs_consumer(&names, kind, tuning));
            check(file, declared, pull_default.clone());
        }
        check("ledger-consumer.json", json(ledger_consumer(&names, tuning)), pull_default.clone());
        for bucket in buckets(&names, tuning) {
            let file = match bucket.bucket.as_str() {
                b if b == names.rate_bucket => "rate-bucket.json",
                b if b == names.demo_bucket => "demo-bucket.json",
                b if b == names.verdict_bucket => "verdict-bucket.json",
                b if b == names.claim_bucket => "claim-bucket.json",
                b if b == names.routing_bucket => "routing-bucket.json",
                other => panic!("bucket {other} has no file in nats/"),
            };
            // kv::Config has no serde form of its own: the fields the `nats kv add` JSON carries.
            let kv_json = |c: &kv::Config| {
                serde_json::json!({
                    "bucket": c.bucket,
                    "history": c.history,
                    "max_age": u64::try_from(c.max_age.as_nanos()).expect("fits"),
                    "storage": json(c.storage),
                    "num_replicas": c.num_replicas,
                })
            };
            check(file, kv_json(&bucket), kv_json(&kv::Config::default()));
        }
        let on_disk: BTreeSet<String> = std::fs::read_dir(nats_dir())
            .expect("read nats/")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json"))
            .collect();
        assert_eq!(on_disk, expected_files, "nats/*.json and the declarations name different things");
    }
}
