//! The fleet's bus and the network rules: one role's NATS credential cannot read or forge another
//! role's traffic, the ledger applies only its own stream's deliveries and never a non-positive
//! charge, `/v1/dns` resolves public names only, and the smaller network and durability rules
//! (RDAP redirects, proxies, `/metrics`, streaming bulk deadlines, suggestions' charge).
//!
//! The NATS tests run a [`Fleet`] on a real nats-server with the authorization block the code
//! generates (`common::nats_auth`, the same as `nats/nats.conf`) and each role on its own user;
//! their teardown asserts the job and ledger queues drained.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::keys::Plan;
use api::store::Store;
use common::messages::LedgerEvent;
use common::nats_auth::FleetRole;
use dsa_tests::harness::fleet::{Fleet, NatsServer, PgDatabase, key, settled, wait_until};
use futures::StreamExt;

mod network;

/// A forged charge for `key_id` of `credits`.
fn forged(key_id: &str, credits: i64) -> LedgerEvent {
    LedgerEvent {
        event_id: uuid::Uuid::now_v7(),
        key_id: key_id.to_owned(),
        period: common::messages::billing_period(time::OffsetDateTime::now_utc()),
        endpoint: "check".into(),
        credits,
        charged_at: time::OffsetDateTime::now_utc(),
        front: "forged".into(),
        request_id: None,
    }
}

/// The key's settled usage this month (`key_usage.used`).
async fn used(store: &Arc<dyn Store>, key_id: &str) -> i64 {
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    store.settled_usage(key_id, &period).await.expect("usage")
}

/// A client of `user` whose server errors (permission violations) are collected.
async fn client_as(nats: &NatsServer, user: &str, password: &str) -> (async_nats::Client, Arc<Mutex<Vec<String>>>) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let seen = errors.clone();
    let client = async_nats::ConnectOptions::with_user_and_password(user.into(), password.into())
        .event_callback(move |event| {
            let seen = seen.clone();
            async move {
                if let async_nats::Event::ServerError(e) = event {
                    seen.lock().expect("errors").push(e.to_string());
                }
            }
        })
        .connect(format!("127.0.0.1:{}", nats.port))
        .await
        .expect("connects");
    (client, errors)
}

/// Issue 32, item 4. Connected as `dsa-worker` to a loaded fleet, a subscription to `_INBOX.>`
/// received every charge delivery meant for the ledger, and forged `LedgerEvent`s of -1000
/// credits published into the ledger's fetch inbox were applied. Now each role has its own inbox
/// prefix and may subscribe only there: the worker's subscriptions to the shared `_INBOX.>` and
/// to the fronts' and the ledger's inboxes are refused by the server and receive nothing, its
/// publishes into the ledger's inboxes, the charge subject and the fronts' inboxes (job replies have
/// a subject space of their own) are refused, and the key's usage stays
/// what the real charges made it.
#[tokio::test]
async fn a_worker_credential_cannot_read_or_forge_other_roles_traffic() {
    let prefix = "bus";
    let fleet = Fleet::builder(prefix).role_users().start().await;
    let (front, store, nats, names) = (fleet.front(0), fleet.store(), fleet.nats(), fleet.names());
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let check = |name: &'static str| {
        let (http, url) = (http.clone(), front.url(&format!("/v1/domains/check?client_key={key}&domain={name}")));
        async move { http.get(url).send().await.expect("request").status().as_u16() }
    };
    assert_eq!(check("example.com").await, 200, "the fleet works with per-role users");
    assert_eq!(settled(store, &key_id, 1).await, 1);

    // The attacker: the worker's credential, sniffing every inbox it can name.
    let (attacker, errors) = client_as(nats, "dsa-worker", fleet.role_password(FleetRole::Worker)).await;
    let role_inbox = |role: &str| {
        // As `Names::with_prefix` builds them (written out: the test also ran before they existed).
        format!("_INBOX_{}_{role}", prefix.replace('-', "_"))
    };
    let (mut sniffed, mut sniffers) = (Vec::new(), Vec::new());
    let caught = Arc::new(Mutex::new(Vec::new()));
    for subject in ["_INBOX.>".to_owned(), format!("{}.>", role_inbox("front")), format!("{}.>", role_inbox("ledger"))]
    {
        sniffed.push(subject.clone());
        let sub = attacker.subscribe(subject.clone()).await.expect("subscribe call returns");
        // Whatever arrives, forge a charge of -1000 into its subject at once (the ledger's fetch
        // inbox lives only while its fetch waits): the attack of issue 32.
        let (attacker, key_id, caught) = (attacker.clone(), key_id.clone(), caught.clone());
        sniffers.push(tokio::spawn(async move {
            let mut sub = sub;
            while let Some(message) = sub.next().await {
                let payload = serde_json::to_vec(&forged(&key_id, -1000)).expect("json");
                let _ = attacker.publish(message.subject.clone(), payload.into()).await;
                caught.lock().expect("caught").push(message.subject.to_string());
            }
        }));
    }
    attacker.flush().await.expect("flush");
    // And blindly into the ledger's inbox prefix, the charge subject, and the fronts' inboxes,
    // where a front waits for the publish acks that make its charges durable (a forged ack would
    // let a charge vanish unnoticed): a worker may publish job replies only, in their own space.
    for target in [
        format!("{}.forged", role_inbox("ledger")),
        names.ledger_charge.clone(),
        format!("{}.forged", role_inbox("front")),
    ] {
        let payload = serde_json::to_vec(&forged(&key_id, -1000)).expect("json");
        attacker.publish(target, payload.into()).await.expect("publish call returns");
    }
    // Load: charges flow to the ledger while the attacker listens.
    for _ in 0..10 {
        assert_eq!(check("example.com").await, 200);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for sniffer in sniffers {
        sniffer.abort();
    }
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    assert_eq!(settled(store, &key_id, 11).await, 11);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let entries = store.ledger_count(&key_id, &period).await.expect("count");
    let after = used(store, &key_id).await;
    assert_eq!((entries, after), (11, 11), "forged charges reached the ledger: (entries, key_usage.used)");
    let caught = caught.lock().expect("caught").clone();
    assert!(
        caught.is_empty(),
        "the worker's credential read {} messages of other roles: {:?}",
        caught.len(),
        &caught[..caught.len().min(5)]
    );
    let errors = errors.lock().expect("errors").clone();
    for subject in &sniffed {
        assert!(
            errors.iter().any(|e| e.contains("Permissions Violation for Subscription") && e.contains(subject.as_str())),
            "subscribing to {subject} must be refused by the server; errors: {errors:?}"
        );
    }
    assert!(
        errors.iter().any(|e| e.contains("Permissions Violation for Publish") && e.contains(&role_inbox("ledger"))),
        "publishing into the ledger's inbox must be refused; errors: {errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("Permissions Violation for Publish") && e.contains(&role_inbox("front"))),
        "publishing into a front's inbox must be refused; errors: {errors:?}"
    );
    assert_eq!(check("example.com").await, 200, "the fleet still works");
    assert_eq!(settled(store, &key_id, 12).await, 12);

    fleet.stop().await;
}

/// The ledger's own checks, behind the permissions (a server run without them, or a credential
/// that leaked): a message published into the ledger's fetch inbox is not a JetStream delivery of
/// the ledger stream and is dropped, and a charge of zero or fewer credits, even one delivered
/// by the stream, is terminated as poison (alone, or dropped from a group of charges whose real
/// ones settle), and so is a group larger than fronts send. None changes the key's usage or
/// ledger entries.
#[tokio::test]
async fn the_ledger_applies_only_its_streams_deliveries_of_positive_charges() {
    // An open server: only the ledger's own checks stand between a client and the balance.
    let fleet = Fleet::builder("busopen").workers(0).start().await;
    let (store, names) = (fleet.store(), fleet.names());
    let (_key, key_id) = fleet.key(Plan::Free).await;
    let attacker = async_nats::connect(fleet.nats().url()).await.expect("connect");
    let js = async_nats::jetstream::new(attacker.clone());

    // A real charge, published as a front does.
    let real = forged(&key_id, 3);
    js.publish(names.ledger_charge.clone(), serde_json::to_vec(&real).expect("json").into())
        .await
        .expect("publish")
        .await
        .expect("stored");
    assert_eq!(settled(store, &key_id, 1).await, 1);
    assert_eq!(used(store, &key_id).await, 3);

    // The ledger's fetch inbox, learnt from its pull requests (any client may listen on an open
    // server), then charges published straight into it: with no reply subject, and with the ack
    // subject of another stream.
    let mut pulls = attacker
        .subscribe(format!("$JS.API.CONSUMER.MSG.NEXT.{}.{}", names.ledger_stream, names.ledger_consumer))
        .await
        .expect("subscribe");
    for _ in 0..10 {
        // Each fetch has its own inbox, alive while the fetch waits (200 ms): publish at once.
        let pull = tokio::time::timeout(Duration::from_secs(5), pulls.next()).await.expect("a pull").expect("message");
        let inbox = pull.reply.expect("pull requests carry the fetch inbox").to_string();
        let foreign = serde_json::to_vec(&forged(&key_id, 1000)).expect("json");
        attacker.publish(inbox.clone(), foreign.clone().into()).await.expect("publish");
        let other = format!("$JS.ACK.OTHER_STREAM.{}.1.1.1.1700000000000000000.0", names.ledger_consumer);
        attacker.publish_with_reply(inbox, other, foreign.into()).await.expect("publish");
        attacker.flush().await.expect("flush");
    }
    // Non-positive charges delivered by the stream itself (a front's credential, or a bug).
    for credits in [-1000, 0] {
        js.publish(names.ledger_charge.clone(), serde_json::to_vec(&forged(&key_id, credits)).expect("json").into())
            .await
            .expect("publish")
            .await
            .expect("stored");
    }
    // A group of charges, as fronts publish them, with a forged one inside: the real charge of
    // the group is applied, the non-positive one dropped.
    let group = [forged(&key_id, -1000), forged(&key_id, 4)];
    js.publish(names.ledger_charge.clone(), common::messages::encode_ledger_message(&group).into())
        .await
        .expect("publish")
        .await
        .expect("stored");
    // A group over the size fronts keep to is terminated whole, unread.
    let oversized: Vec<_> = (0..=common::messages::LEDGER_EVENTS_PER_MESSAGE).map(|_| forged(&key_id, 1)).collect();
    js.publish(names.ledger_charge.clone(), common::messages::encode_ledger_message(&oversized).into())
        .await
        .expect("publish")
        .await
        .expect("stored");
    let after_forging = forged(&key_id, 2);
    js.publish(names.ledger_charge.clone(), serde_json::to_vec(&after_forging).expect("json").into())
        .await
        .expect("publish")
        .await
        .expect("stored");
    assert_eq!(settled(store, &key_id, 3).await, 3, "the grouped real charge and the next one are applied");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    assert_eq!(
        store.ledger_count(&key_id, &period).await.expect("count"),
        3,
        "only the three real charges are ledger entries"
    );
    assert_eq!(used(store, &key_id).await, 3 + 4 + 2, "key_usage.used counts the real charges only");
    // Every non-positive charge was terminated, not left to be redelivered.
    let mut stream = js.get_stream(&names.ledger_stream).await.expect("stream");
    let state = stream.info().await.expect("info").state.clone();
    assert_eq!(state.messages, 0, "nothing left in the ledger stream: {state:?}");

    fleet.stop().await;
}

/// `CHECK (credits > 0)` in both schemas (migration 0005): a store refuses a non-positive charge
/// as data (the ledger consumer terminates it), so the balance can only grow from charges.
#[tokio::test]
async fn both_stores_refuse_non_positive_charges() {
    let db = PgDatabase::create().await;
    let pg: Arc<dyn Store> = Arc::new(api::store_pg::PgStore::connect(&db.url, 2).await.expect("pg"));
    let dir = std::env::temp_dir().join(format!("dsa-bus-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let sqlite: Arc<dyn Store> = Arc::new(
        api::store::SqliteStore::connect(&format!("sqlite://{}", dir.join("dsa.db").display()), 2)
            .await
            .expect("sqlite"),
    );
    for (name, store) in [("postgres", pg), ("sqlite", sqlite)] {
        store.migrate().await.expect("migrate");
        let (_key, key_id) = key(&store, Plan::Free).await;
        store.apply_ledger(vec![forged(&key_id, 4)]).await.expect("a positive charge applies");
        for credits in [-1000, 0] {
            let outcome = store.apply_ledger(vec![forged(&key_id, credits)]).await;
            assert!(outcome.is_err(), "{name}: a charge of {credits} credits was accepted: {outcome:?}");
        }
        assert_eq!(used(&store, &key_id).await, 4, "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    db.drop_now().await;
}

/// Issue 32, item 6: `/v1/domains/suggest?check=1` committed its 5 credits before the pre-check
/// and the pre-check's 5 after it, so a refused second commit answered 503 with 5 credits kept.
/// Now one commit at the end covers what the answer charges: here NATS goes down during the
/// pre-check, and whatever the front answers, the key is charged exactly what it said (nothing
/// for a 503).
#[tokio::test]
async fn suggestions_charge_exactly_what_they_answer() {
    let mut fleet = Fleet::start("bussuggest", 1, 1).await;
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    // example.com's verdict is in the front's cache: the pre-check answers it at once.
    let r = http.get(fleet.url(&format!("/v1/domains/check?client_key={key}&domain=example.com"))).send().await;
    assert_eq!(r.expect("check").status().as_u16(), 200);
    assert_eq!(settled(&store, &key_id, 1).await, 1);
    // The other suggestions' NS lookups are slow; NATS dies while they wait.
    fleet.sim().set_knobs(dsa_tests::sim::Knobs {
        latency_ms: dsa_tests::sim::Latency { dns: 3000, ..Default::default() },
        ..Default::default()
    });
    let url = fleet.url(&format!("/v1/domains/suggest?client_key={key}&keyword=example&tlds=.com,.net&check=1"));
    let request = tokio::spawn(async move {
        let r = reqwest::Client::new().get(url).send().await.expect("suggest");
        let status = r.status().as_u16();
        (status, r.json::<serde_json::Value>().await.unwrap_or_default())
    });
    tokio::time::sleep(Duration::from_millis(1000)).await;
    fleet.nats_mut().kill();
    let (status, body) = request.await.expect("join");
    fleet.nats_mut().resume().await;
    fleet.sim().set_knobs(dsa_tests::sim::Knobs::default());
    let charged = if status == 200 { body["credits_cost"].as_i64().expect("credits_cost") } else { 0 };
    // A later check, settled, shows the ledger has caught up with everything before it.
    let mut sentinel = 0;
    for _ in 0..50 {
        let r = http.get(fleet.url(&format!("/v1/domains/check?client_key={key}&domain=google.com"))).send().await;
        if r.is_ok_and(|r| r.status().as_u16() == 200) {
            sentinel = 1;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(sentinel, 1, "the fleet recovers");
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    let settled_all = wait_until(Duration::from_secs(15), || {
        let store = store.clone();
        let (key_id, period) = (key_id.clone(), period.clone());
        async move {
            store
                .usage_by_endpoint(&key_id, &period)
                .await
                .is_ok_and(|u| u.iter().any(|(e, n)| e == "check" && *n == 2))
        }
    })
    .await;
    assert!(settled_all, "the sentinel check settled");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let usage = store.usage_by_endpoint(&key_id, &period).await.expect("usage");
    let suggest: i64 = usage.iter().filter(|(e, _)| e == "suggest").map(|(_, n)| n).sum();
    assert_eq!(suggest, charged, "the front answered {status} ({body}) but the key was charged {suggest} for it");

    fleet.stop().await;
}

/// The direct path (`dsa.direct.<kind>`) is a NATS input of running workers that only fronts may
/// publish to. Connected with a front's credential (leaked, or a compromised front), hostile
/// direct jobs are sent to the DNS workers: bytes that are not JSON, JSON that is not a job, a job
/// with no reply subject, a job whose reply subject is the ledger's charge subject, a DNS job for
/// internal names (which the front's `/v1/dns` refuses, so it never reached a worker before) and a
/// job of the wrong kind. The workers survive all of it, answer nothing but a rejection of the
/// internal names (they do not ask their resolvers), charge nothing, and a well-formed direct job
/// sent after them is answered.
#[tokio::test]
async fn hostile_direct_jobs_do_not_reach_a_workers_resolver_or_the_ledger() {
    use common::lookup::{DnsType, LookupKind, LookupOutcome};
    use common::messages::{Job, JobAnswer, JobReply, JobWork};
    use common::subjects::{DIRECT_REASON_HEADER, REPLY_HEADER, STARTED_HEADER};

    let fleet = Fleet::builder("direct").role_users().start().await;
    let (front, store, nats, names) = (fleet.front(0), fleet.store(), fleet.nats(), fleet.names());
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let check = || {
        let (http, url) = (http.clone(), front.url(&format!("/v1/domains/check?client_key={key}&domain=example.com")));
        async move { http.get(url).send().await.expect("request").status().as_u16() }
    };
    assert_eq!(check().await, 200);
    assert_eq!(settled(store, &key_id, 1).await, 1);

    let (attacker, _errors) = client_as(nats, FleetRole::Front.user(), fleet.role_password(FleetRole::Front)).await;
    let replies = format!("{}.{}", names.job_replies, uuid::Uuid::new_v4().simple());
    let mut answers = attacker.subscribe(format!("{replies}.*")).await.expect("subscribe to job replies");
    let subject = names.direct_subject(LookupKind::Dns);
    let dns_job = |name: &str| Job {
        job_id: uuid::Uuid::now_v7(),
        request_id: None,
        deadline: time::OffsetDateTime::now_utc() + Duration::from_secs(5),
        priority: common::priority::Priority::Interactive,
        work: JobWork::Dns { name: name.to_owned(), types: vec![DnsType::A] },
    };
    let headers = |reply_to: &str| {
        let mut h = async_nats::HeaderMap::new();
        h.insert(REPLY_HEADER, reply_to);
        // "The stream never took it": a worker takes the copy at once.
        h.insert(DIRECT_REASON_HEADER, "publish_failed");
        h
    };
    let send = |payload: Vec<u8>, headers: Option<async_nats::HeaderMap>| {
        let (attacker, subject) = (attacker.clone(), subject.clone());
        async move {
            match headers {
                Some(h) => attacker.publish_with_headers(subject, h, payload.into()).await,
                None => attacker.publish(subject, payload.into()).await,
            }
            .expect("a front may publish direct jobs");
        }
    };
    let reply_to = |job: &Job| format!("{replies}.{}", job.job_id);

    // Not JSON, not a job, no reply subject, a reply subject in the ledger's space.
    send(vec![0xff, 0x00, b'{', 0xc3, 0x28], Some(headers(&format!("{replies}.garbage")))).await;
    send(br#"{"job_id": "not-a-uuid", "kind": "dns", "name": 7}"#.to_vec(), Some(headers(&format!("{replies}.x"))))
        .await;
    let orphan = dns_job("example.com");
    send(serde_json::to_vec(&orphan).expect("json"), None).await;
    let to_ledger = dns_job("example.com");
    send(serde_json::to_vec(&to_ledger).expect("json"), Some(headers(&names.ledger_charge))).await;
    // A check job on the DNS kind's subject.
    let mut wrong_kind = dns_job("example.com");
    wrong_kind.work = JobWork::Check { domain: "example.com".into() };
    send(serde_json::to_vec(&wrong_kind).expect("json"), Some(headers(&reply_to(&wrong_kind)))).await;
    // Internal names: each must come back rejected, never resolved.
    let internal = [
        "metadata.google.internal",
        "kubernetes.default.svc.cluster.local",
        "LOCALHOST.",
        "10.in-addr.arpa",
        "nas.lan",
    ];
    let mut rejected_jobs = std::collections::HashMap::new();
    for name in internal {
        let job = dns_job(name);
        rejected_jobs.insert(job.job_id, name);
        send(serde_json::to_vec(&job).expect("json"), Some(headers(&reply_to(&job)))).await;
    }
    // Then a well-formed job: its answer shows the workers still take direct jobs.
    let fine = dns_job("example.com");
    send(serde_json::to_vec(&fine).expect("json"), Some(headers(&reply_to(&fine)))).await;
    attacker.flush().await.expect("flush");

    let mut answered_fine = false;
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while !(answered_fine && rejected_jobs.is_empty()) {
        let message = tokio::time::timeout_at(until, answers.next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "replies missing: internal names {rejected_jobs:?}, the well-formed job answered {answered_fine}"
                )
            })
            .expect("subscription open");
        if message.headers.as_ref().is_some_and(|h| h.get(STARTED_HEADER).is_some()) {
            continue;
        }
        let reply: JobReply = serde_json::from_slice(&message.payload).expect("a worker's reply parses");
        assert_ne!(reply.job_id, wrong_kind.job_id, "a job of another kind was run: {reply:?}");
        if reply.job_id == fine.job_id {
            assert!(matches!(reply.outcome, LookupOutcome::Answer { answer: JobAnswer::Dns { .. } }), "{reply:?}");
            answered_fine = true;
        } else if let Some(name) = rejected_jobs.remove(&reply.job_id) {
            match &reply.outcome {
                LookupOutcome::Rejected { reason } => {
                    assert!(reason.contains("only public names"), "{name}: {reason}")
                }
                other => panic!("{name} was not refused by the worker: {other:?}"),
            }
        } else {
            panic!("an unexpected reply on {}: {reply:?}", message.subject);
        }
    }
    // Nothing charged by any of it, and the fleet still serves users.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    assert_eq!(store.ledger_count(&key_id, &period).await.expect("count"), 1);
    assert_eq!(check().await, 200, "the workers survived the hostile direct jobs");
    assert_eq!(settled(store, &key_id, 2).await, 2);
    fleet.stop().await;
}
