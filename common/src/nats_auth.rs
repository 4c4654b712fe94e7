//! Per-role NATS users and their subject permissions: a front, a worker and the ledger consumer
//! each get only the subjects their job needs, so reaching the NATS port is not enough to
//! publish jobs, read charge events or forge charges.
//!
//! | role | publishes | subscribes |
//! |---|---|---|
//! | front | jobs, charge events, the rate and demo KV buckets, reads of the routing bucket, JetStream info/create of the fleet's streams | its reply inbox |
//! | worker | fetch/ack on the jobs stream's consumers, replies to fronts' inboxes, the rate, verdict, claims and routing KV buckets | its inboxes, the verdict and claims buckets' subjects (waiting on another worker's lookup) |
//! | ledger | fetch/ack on the ledger stream's consumer | its inboxes |
//!
//! Every role may create the fleet's streams, consumers and buckets (each role declares them
//! idempotently at start) but none may update, purge or delete them. `nats/nats.conf` carries the
//! block [`authorization`] renders for the production names (a test keeps the two equal).

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

/// The subjects a role may publish to and subscribe to, under `names`.
pub fn permissions(role: &str, names: &Names) -> (Vec<String>, Vec<String>) {
    let kv_stream = |bucket: &str| format!("KV_{bucket}");
    let streams = [
        names.jobs_stream.clone(),
        names.ledger_stream.clone(),
        kv_stream(&names.rate_bucket),
        kv_stream(&names.demo_bucket),
        kv_stream(&names.verdict_bucket),
        kv_stream(&names.claim_bucket),
        kv_stream(&names.routing_bucket),
    ];
    // Declaring (idempotent create) and inspecting the fleet's streams and consumers.
    let mut publish = vec!["$JS.API.INFO".to_owned()];
    for stream in &streams {
        publish.push(format!("$JS.API.STREAM.INFO.{stream}"));
        publish.push(format!("$JS.API.STREAM.CREATE.{stream}"));
        publish.push(format!("$JS.API.CONSUMER.INFO.{stream}.>"));
        publish.push(format!("$JS.API.CONSUMER.CREATE.{stream}.>"));
        publish.push(format!("$JS.API.CONSUMER.DURABLE.CREATE.{stream}.>"));
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
    let consume = |stream: &str| vec![format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.>"), format!("$JS.ACK.{stream}.>")];
    match role {
        "dsa-front" => {
            publish.push(names.jobs_subjects.clone());
            publish.push(names.ledger_subjects.clone());
            publish.extend(kv(&names.rate_bucket));
            publish.extend(kv(&names.demo_bucket));
            // `GET /v1/tlds/{tld}` shows the fleet's routing state; only workers change it.
            publish.extend(kv_read(&names.routing_bucket));
        }
        "dsa-worker" => {
            publish.extend(consume(&names.jobs_stream));
            publish.extend(kv(&names.rate_bucket));
            publish.extend(kv(&names.verdict_bucket));
            publish.extend(kv(&names.claim_bucket));
            publish.extend(kv(&names.routing_bucket));
            // Replies go to the fronts' inboxes.
            publish.push("_INBOX.>".to_owned());
            // A worker waiting on another's claim listens to the two buckets' subjects.
            let subscribe = vec![
                "_INBOX.>".to_owned(),
                format!("$KV.{}.>", names.verdict_bucket),
                format!("$KV.{}.>", names.claim_bucket),
            ];
            return (publish, subscribe);
        }
        "dsa-ledger" => publish.extend(consume(&names.ledger_stream)),
        _ => {}
    }
    (publish, vec!["_INBOX.>".to_owned()])
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
