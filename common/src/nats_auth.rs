//! Per-role NATS users and their subject permissions: a front, a worker and the ledger consumer
//! each get only the subjects their job needs, so reaching the NATS port is not enough to
//! publish jobs, read charge events or forge charges, and one role's credential cannot read or
//! forge another role's traffic.
//!
//! Each role has its own inbox prefix ([`FleetRole::inbox`], set with async-nats'
//! `custom_inbox_prefix`) and may subscribe to that prefix only: with the client default
//! `_INBOX` shared by every role, a worker subscribed to `_INBOX.>` received the ledger's charge
//! deliveries and published forged charges into its fetch inbox (issue 32).
//!
//! | role | publishes | subscribes |
//! |---|---|---|
//! | front | jobs (the stream's `dsa.jobs.>` and the direct path's `dsa.direct.>`), charge events, the rate and demo KV buckets, reads of the routing bucket; looks up and declares the jobs and ledger streams and its buckets | its inboxes (`_INBOX_front.>`), job replies (`dsa.replies.>`) |
//! | worker | fetch/ack on its own consumers of the jobs stream, job replies and started notices into `dsa.replies.>` (never reading them; never into the fronts' inboxes), the rate, verdict, claims and routing KV buckets, its presence beats (`dsa.workers.presence`); declares the jobs stream, its consumers and its buckets | its inboxes (`_INBOX_worker.>`), the verdict and claims buckets' subjects (waiting on another worker's lookup), direct jobs (`dsa.direct.>`, never publishing there), presence beats |
//! | ledger | fetch/ack on its consumer of the ledger stream; declares the ledger stream and its consumer | its inboxes (`_INBOX_ledger.>`) |
//!
//! A role may create (idempotently, at start) the streams and buckets it uses and its own
//! consumers only (`$JS.API.CONSUMER.CREATE.<stream>.<consumer>…`), never another role's; none
//! may update, purge or delete a stream. No role may publish into the ledger's inboxes: only the
//! server delivers there. `nats/nats.conf` carries the block [`authorization`] renders for the
//! production names (a test keeps the two equal).

use crate::lookup::LookupKind;
use crate::subjects::Names;

/// Where the server reads each role's password from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Passwords {
    /// Environment variables of the nats-server process: `$DSA_NATS_FRONT_PASSWORD`,
    /// `$DSA_NATS_WORKER_PASSWORD`, `$DSA_NATS_LEDGER_PASSWORD` (the shipped `nats/nats.conf`).
    Env,
    /// Literal passwords (tests), in the order front, worker, ledger.
    Literal([String; 3]),
}

/// The NATS user names of the three roles.
pub const ROLE_USERS: [&str; 3] = ["dsa-front", "dsa-worker", "dsa-ledger"];

/// A role of the fleet; each connects as its own NATS user with its own inbox prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetRole {
    /// `dsa front`: HTTP, publishes jobs and charges.
    Front,
    /// `dsa worker`: takes jobs, asks registries, replies to fronts.
    Worker,
    /// `dsa ledger`: settles charge events in Postgres.
    Ledger,
}

impl FleetRole {
    /// The role's NATS user (one of [`ROLE_USERS`]).
    pub fn user(self) -> &'static str {
        match self {
            FleetRole::Front => ROLE_USERS[0],
            FleetRole::Worker => ROLE_USERS[1],
            FleetRole::Ledger => ROLE_USERS[2],
        }
    }

    /// The role of a NATS user name.
    pub fn from_user(user: &str) -> Option<Self> {
        [FleetRole::Front, FleetRole::Worker, FleetRole::Ledger].into_iter().find(|r| r.user() == user)
    }

    /// The inbox prefix the role's client uses (`_INBOX_front` …, prefixed with `fleet.prefix`).
    pub fn inbox(self, names: &Names) -> &str {
        match self {
            FleetRole::Front => &names.front_inbox,
            FleetRole::Worker => &names.worker_inbox,
            FleetRole::Ledger => &names.ledger_inbox,
        }
    }
}

/// The subjects a role (a user of [`ROLE_USERS`]) may publish to and subscribe to, under `names`;
/// nothing for an unknown user.
pub fn permissions(role: &str, names: &Names) -> (Vec<String>, Vec<String>) {
    let Some(role) = FleetRole::from_user(role) else { return (Vec::new(), Vec::new()) };
    let kv_stream = |bucket: &str| format!("KV_{bucket}");
    let jobs_consumers: Vec<(String, String)> = LookupKind::ALL
        .into_iter()
        .map(|kind| (names.jobs_stream.clone(), names.jobs_consumer(kind).to_owned()))
        .collect();
    // The streams a role looks up and declares (idempotent create), and its own consumers.
    let (streams, consumers) = match role {
        FleetRole::Front => (
            vec![
                names.jobs_stream.clone(),
                names.ledger_stream.clone(),
                kv_stream(&names.rate_bucket),
                kv_stream(&names.demo_bucket),
                kv_stream(&names.routing_bucket),
            ],
            Vec::new(),
        ),
        FleetRole::Worker => (
            vec![
                names.jobs_stream.clone(),
                kv_stream(&names.rate_bucket),
                kv_stream(&names.verdict_bucket),
                kv_stream(&names.claim_bucket),
                kv_stream(&names.routing_bucket),
            ],
            jobs_consumers,
        ),
        FleetRole::Ledger => {
            (vec![names.ledger_stream.clone()], vec![(names.ledger_stream.clone(), names.ledger_consumer.clone())])
        }
    };
    let mut publish = vec!["$JS.API.INFO".to_owned()];
    for stream in &streams {
        publish.push(format!("$JS.API.STREAM.INFO.{stream}"));
        publish.push(format!("$JS.API.STREAM.CREATE.{stream}"));
    }
    // Creating, looking up, fetching from and acking the role's own consumers only: the create
    // subject names the consumer (`CONSUMER.CREATE.<stream>.<name>[.<filter>]`, nats-server ≥
    // 2.9), so no role can create or redefine another role's consumer.
    for (stream, consumer) in &consumers {
        publish.push(format!("$JS.API.CONSUMER.INFO.{stream}.{consumer}"));
        publish.push(format!("$JS.API.CONSUMER.CREATE.{stream}.{consumer}"));
        publish.push(format!("$JS.API.CONSUMER.CREATE.{stream}.{consumer}.>"));
        publish.push(format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"));
        publish.push(format!("$JS.ACK.{stream}.{consumer}.>"));
    }
    let kv = |bucket: &str| {
        vec![
            format!("$KV.{bucket}.>"),
            format!("$JS.API.DIRECT.GET.{}.>", kv_stream(bucket)),
            format!("$JS.API.DIRECT.GET.{}", kv_stream(bucket)),
            format!("$JS.API.STREAM.MSG.GET.{}", kv_stream(bucket)),
        ]
    };
    // Reading a bucket without writing it: direct and message gets only.
    let kv_read = |bucket: &str| {
        vec![
            format!("$JS.API.DIRECT.GET.{}.>", kv_stream(bucket)),
            format!("$JS.API.DIRECT.GET.{}", kv_stream(bucket)),
            format!("$JS.API.STREAM.MSG.GET.{}", kv_stream(bucket)),
        ]
    };
    let own_inbox = format!("{}.>", role.inbox(names));
    let mut subscribe = vec![own_inbox];
    match role {
        FleetRole::Front => {
            publish.push(names.jobs_subjects.clone());
            // The second path of interactive jobs (core NATS, outside the jobs stream); only
            // fronts make jobs, so only fronts publish there.
            publish.push(names.direct_subjects.clone());
            publish.push(names.ledger_subjects.clone());
            publish.extend(kv(&names.rate_bucket));
            publish.extend(kv(&names.demo_bucket));
            // `GET /v1/tlds/{tld}` shows the fleet's routing state; only workers change it.
            publish.extend(kv_read(&names.routing_bucket));
            // Its job replies arrive in the job-reply space.
            subscribe.push(format!("{}.>", names.job_replies));
        }
        FleetRole::Worker => {
            publish.extend(kv(&names.rate_bucket));
            publish.extend(kv(&names.verdict_bucket));
            publish.extend(kv(&names.claim_bucket));
            publish.extend(kv(&names.routing_bucket));
            // Replies go to the job-reply space (the job's `Dsa-Reply-To`), never into the
            // fronts' inboxes: a worker can neither read fronts' replies nor forge their
            // JetStream answers (publish acks of charges, rate-limit KV reads).
            publish.push(format!("{}.>", names.job_replies));
            // A worker waiting on another's claim listens to the two buckets' subjects.
            subscribe.push(format!("$KV.{}.>", names.verdict_bucket));
            subscribe.push(format!("$KV.{}.>", names.claim_bucket));
            // Direct jobs are taken (queue subscription), never made: a worker cannot hand work
            // to other workers.
            subscribe.push(names.direct_subjects.clone());
            // Presence beats: how many workers share the fleet-wide upstream budget.
            publish.push(names.worker_presence.clone());
            subscribe.push(names.worker_presence.clone());
        }
        FleetRole::Ledger => {}
    }
    (publish, subscribe)
}

/// The `authorization { … }` block of a nats-server configuration with one user per role.
pub fn authorization(names: &Names, passwords: &Passwords) -> String {
    let quote = |s: &str| format!("\"{s}\"");
    let list = |items: &[String]| items.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ");
    let mut out = String::from("authorization {\n  users = [\n");
    for (i, user) in ROLE_USERS.iter().enumerate() {
        let password = match passwords {
            Passwords::Env => {
                format!("${}", ["DSA_NATS_FRONT_PASSWORD", "DSA_NATS_WORKER_PASSWORD", "DSA_NATS_LEDGER_PASSWORD"][i])
            }
            Passwords::Literal(p) => quote(&p[i]),
        };
        let (publish, subscribe) = permissions(user, names);
        out.push_str(&format!(
            "    {{\n      user: {}\n      password: {password}\n      permissions: {{\n        publish: {{ allow: [{}] }}\n        subscribe: {{ allow: [{}] }}\n      }}\n    }}\n",
            quote(user),
            list(&publish),
            list(&subscribe),
        ));
    }
    out.push_str("  ]\n}\n");
    out
}

/// `url` with any password replaced by `***`, for logs and error messages. A string that does
/// not parse as a URL but has user information (`…://user:secret@host`, or any `@` after the
/// scheme) loses everything between the scheme and the last `@`: a malformed URL must not print
/// its password either.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) if !parsed.cannot_be_a_base() => url.to_owned(),
        // Not a URL, or one with no authority (`user:secret@host` parses as scheme `user`).
        _ => {
            let start = url.find("://").map_or(0, |i| i + 3);
            match url[start..].rfind('@') {
                Some(at) => format!("{}***{}", &url[..start], &url[start + at..]),
                None => url.to_owned(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_front_publishes_charges_and_jobs() {
        let names = Names::with_prefix("");
        for (role, charges) in [("dsa-front", true), ("dsa-worker", false), ("dsa-ledger", false)] {
            let (publish, _) = permissions(role, &names);
            assert_eq!(publish.contains(&"dsa.ledger.>".to_owned()), charges, "{role}");
            assert_eq!(publish.contains(&"dsa.jobs.>".to_owned()), charges, "{role}");
            assert!(!publish.iter().any(|s| s.contains("DELETE") || s.contains("PURGE") || s.contains("UPDATE")));
        }
    }

    #[test]
    fn each_role_reads_its_own_inboxes_and_creates_its_own_consumers_only() {
        let names = Names::with_prefix("");
        let (front_pub, front_sub) = permissions("dsa-front", &names);
        let (worker_pub, worker_sub) = permissions("dsa-worker", &names);
        let (ledger_pub, ledger_sub) = permissions("dsa-ledger", &names);
        assert_eq!(front_sub, ["_INBOX_front.>", "dsa.replies.>"]);
        assert_eq!(ledger_sub, ["_INBOX_ledger.>"]);
        assert_eq!(worker_sub[0], "_INBOX_worker.>");
        let all = [&front_pub, &front_sub, &worker_pub, &worker_sub, &ledger_pub, &ledger_sub];
        // The client default inbox (shared by every role) is nowhere.
        assert!(all.iter().all(|list| list.iter().all(|s| !s.starts_with("_INBOX."))), "{all:?}");
        // Nobody publishes into any role's inboxes (only the server answers there); workers
        // answer fronts' jobs in the job-reply space, which only fronts read.
        for list in [&front_pub, &worker_pub, &ledger_pub] {
            assert!(!list.iter().any(|s| s.starts_with("_INBOX_")), "{list:?}");
        }
        assert!(worker_pub.contains(&"dsa.replies.>".to_owned()));
        assert!(!worker_sub.iter().any(|s| s.starts_with("dsa.replies")));
        // No wildcard consumer creation; the ledger consumer is the ledger's alone.
        for list in [&front_pub, &worker_pub, &ledger_pub] {
            assert!(!list.iter().any(|s| s.contains("CONSUMER.CREATE") && s.ends_with(".DSA_LEDGER.>")), "{list:?}");
            assert!(!list.iter().any(|s| s.contains("DURABLE.CREATE")), "{list:?}");
        }
        let ledger_create = "$JS.API.CONSUMER.CREATE.DSA_LEDGER.dsa-ledger".to_owned();
        assert!(ledger_pub.contains(&ledger_create));
        assert!(!front_pub.contains(&ledger_create) && !worker_pub.contains(&ledger_create));
        assert!(!worker_pub.iter().any(|s| s.contains("DSA_LEDGER")), "{worker_pub:?}");
        assert!(!front_pub.iter().any(|s| s.contains("CONSUMER.CREATE")), "{front_pub:?}");
    }

    #[test]
    fn workers_write_the_routing_bucket_and_fronts_only_read_it() {
        let names = Names::with_prefix("");
        let (front, _) = permissions("dsa-front", &names);
        let (worker, _) = permissions("dsa-worker", &names);
        let get = "$JS.API.DIRECT.GET.KV_dsa_routing.>".to_owned();
        let put = "$KV.dsa_routing.>".to_owned();
        assert!(front.contains(&get) && !front.contains(&put), "{front:?}");
        assert!(worker.contains(&get) && worker.contains(&put), "{worker:?}");
    }

    #[test]
    fn only_fronts_send_direct_jobs_and_only_workers_take_them() {
        for prefix in ["", "t-42"] {
            let names = Names::with_prefix(prefix);
            let direct = names.direct_subjects.clone();
            let presence = names.worker_presence.clone();
            let (front_pub, front_sub) = permissions("dsa-front", &names);
            let (worker_pub, worker_sub) = permissions("dsa-worker", &names);
            let (ledger_pub, ledger_sub) = permissions("dsa-ledger", &names);
            assert!(front_pub.contains(&direct), "{front_pub:?}");
            assert!(!front_sub.contains(&direct) && !front_sub.contains(&presence), "{front_sub:?}");
            assert!(worker_sub.contains(&direct), "{worker_sub:?}");
            // A worker (the role that parses hostile registry bytes) cannot hand jobs to others.
            assert!(!worker_pub.contains(&direct), "{worker_pub:?}");
            assert!(!worker_pub.iter().any(|s| s.contains(".direct.")), "{worker_pub:?}");
            // Presence beats are the workers' own business.
            assert!(worker_pub.contains(&presence) && worker_sub.contains(&presence));
            assert!(!front_pub.contains(&presence));
            for list in [&ledger_pub, &ledger_sub] {
                assert!(!list.iter().any(|s| s.contains("direct") || s.contains("presence")), "{list:?}");
            }
            // Started notices travel in the job-reply space, which workers already answer in.
            assert!(worker_pub.contains(&format!("{}.>", names.job_replies)));
        }
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact_url("nats://dsa-worker:s3cret@nats:4222"), "nats://dsa-worker:***@nats:4222");
        assert_eq!(redact_url("nats://nats:4222"), "nats://nats:4222");
        // Unparsable (a space in the host, a bad port): the user information goes all the same.
        assert_eq!(redact_url("nats://dsa-worker:s3cret@na ts:4222"), "nats://***@na ts:4222");
        assert_eq!(redact_url("postgres://u:p@ss@db:99999/x"), "postgres://***@db:99999/x");
        assert_eq!(redact_url("u:s3cret@host"), "***@host");
        assert_eq!(redact_url("not a url"), "not a url");
    }
}

#[cfg(test)]
mod shipped {
    use super::*;

    const BEGIN: &str =
        "# BEGIN generated by common/src/nats_auth.rs (test nats_conf_matches_the_code; DSA_BLESS=1 rewrites)\n";
    const END: &str = "# END generated\n";

    #[test]
    fn nats_conf_matches_the_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../nats/nats.conf");
        let text = std::fs::read_to_string(&path).expect("nats/nats.conf");
        let start = text.find(BEGIN).expect("BEGIN marker") + BEGIN.len();
        let end = text.find(END).expect("END marker");
        let expected = authorization(&Names::with_prefix(""), &Passwords::Env);
        if text[start..end] != expected {
            if std::env::var_os("DSA_BLESS").is_some() {
                std::fs::write(&path, format!("{}{expected}{}", &text[..start], &text[end..])).expect("write");
            } else {
                panic!("nats/nats.conf's authorization block differs from the code; rerun with DSA_BLESS=1");
            }
        }
    }
}
