//! `/v1/dns` and `/v1/whois` through the fleet: each kind of lookup on its own subject and
//! consumer, workers started for chosen kinds only (`dsa worker --kinds`).

mod fleet_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use api::keys::Plan;
use common::lookup::LookupKind;
use fleet_support::*;

async fn get(http: &reqwest::Client, url: String) -> (u16, serde_json::Value) {
    let r = http.get(url).send().await.expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(serde_json::Value::Null))
}

#[tokio::test]
async fn each_kind_has_its_own_consumer_and_a_check_worker_never_takes_a_dns_job() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let nats = NatsServer::start().await;
    let db = PgDatabase::create().await;
    let sim = sim().await;
    let prefix = "kinds";
    let mut settings = settings(&nats, &db, &sim, prefix);
    settings.engine.records.dns_deadline_secs = 1.0;
    let front = Front::start(&settings).await;
    let check_stats = Arc::new(workers::fleet::PoolStats::default());
    let mut check_only = settings.clone();
    check_only.fleet.worker_kinds = "check".into();
    let check_worker = Role::worker(&check_only, check_stats.clone());
    let ledger_stats = Arc::new(api::ledger::ConsumerStats::default());
    let ledger = Role::ledger(&settings, ledger_stats.clone());
    let (key, key_id) = key(&front.store, Plan::Free).await;
    let http = reqwest::Client::new();

    // Checks flow; a DNS job waits on its own consumer, untouched by the check-only worker.
    let (status, body) = get(&http, front.url(&format!("/v1/domains/check?client_key={key}&domain=example.com"))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = get(&http, front.url(&format!("/v1/dns?client_key={key}&domain=example.com&types=A"))).await;
    assert_eq!(status, 502, "no dns worker: no answer in time, not charged: {body}");
    let js = jetstream(&nats).await;
    let names = common::subjects::Names::with_prefix(prefix);
    let dns_info = consumer_info(&js, &names.jobs_stream, names.jobs_consumer(LookupKind::Dns)).await;
    assert_eq!(dns_info.num_pending, 1, "the dns job waits for a dns worker");
    assert_eq!(dns_info.config.filter_subject, names.jobs_subject(LookupKind::Dns));
    let check_info = consumer_info(&js, &names.jobs_stream, names.jobs_consumer(LookupKind::Check)).await;
    assert_eq!(check_info.config.filter_subject, names.jobs_subject(LookupKind::Check));
    assert_eq!(check_stats.answered.load(Ordering::Relaxed), 1, "the check worker answered the check only");

    // A worker for whois and dns takes the waiting (now expired) job and answers new ones.
    let lookup_stats = Arc::new(workers::fleet::PoolStats::default());
    let mut lookup_kinds = settings.clone();
    lookup_kinds.fleet.worker_kinds = "whois,dns".into();
    let lookup_worker = Role::worker(&lookup_kinds, lookup_stats.clone());
    let (status, body) =
        get(&http, front.url(&format!("/v1/dns?client_key={key}&domain=example.com&types=A,MX"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["records"]["A"][0]["value"], "192.0.2.10");
    let (status, body) = get(&http, front.url(&format!("/v1/whois?client_key={key}&domain=google.com"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["whois"]["registrar"], "MarkMonitor Inc.");
    assert_eq!(body["whois"]["source"], "dsa_domain_whois");
    assert_eq!(body["credits_remaining"], 500 - 1 - 1 - 2);
    assert!(
        wait_until(Duration::from_secs(5), || async { lookup_stats.terminated.load(Ordering::Relaxed) == 1 }).await,
        "the expired dns job is terminated, not answered"
    );
    assert_eq!(check_stats.answered.load(Ordering::Relaxed), 1, "no whois or dns job reached the check worker");
    assert_eq!(settled(&front.store, &key_id, 3).await, 3, "three charges: check, dns, whois");

    front.stop().await;
    check_worker.stop().await;
    lookup_worker.stop().await;
    assert_drained(&nats, prefix).await;
    ledger.stop().await;
    db.drop_now().await;
}
