//! A trivial kind of job (`ping`) answered in both modes.

use std::sync::Arc;
use std::time::Duration;

use dsa_tests::harness::fleet::*;

#[tokio::test]
async fn ping_in_standalone_mode() {
    let dir = std::env::temp_dir().join(format!("dsa-ping-{}.db", uuid::Uuid::now_v7().simple()));
    let mut settings = api::config::Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", dir.display()).into();
    let app = api::standalone(&settings).await.expect("standalone");
    app.state.bus().ping(Duration::from_secs(2)).await.expect("pong");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_in_fleet_mode() {
    let nats = NatsServer::start().await;
    let db = PgDatabase::create().await;
    let sim = sim().await;
    let mut settings = settings(&nats, &db, &sim, "ping");
    settings.fleet.worker_kinds = "ping".into();
    let _front = Front::start(&settings).await;
    let worker = Role::worker(&settings, Arc::new(workers::fleet::PoolStats::default()));
    let names = common::subjects::Names::with_prefix("ping");
    let client = api::fleet::connect_nats(&nats.url(), &names.front_inbox).await.expect("nats");
    let bus: Arc<dyn api::dispatch::JobBus> =
        Arc::new(api::dispatch::NatsBus::start(client, &names).await.expect("bus"));
    bus.ping(Duration::from_secs(5)).await.expect("pong");
    worker.stop().await;
}
