//! Benchmark of webhook deliveries (issue 25): `BENCH_EVENTS` events (default 2000) are recorded in
//! a standalone front's SQLite store with its delivery loop off, then a delivery loop starts and
//! delivers them to one webhook on a local receiver (axum on loopback, answering 204 at once):
//! fan-out, claims, signed POSTs and the recorded attempts, until the last one is recorded as
//! delivered. Prints deliveries per second (target ≥ 500/s). Not a timed test:
//! `cargo bench -p dsa-tests --bench webhooks`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use api::events::{NewEvent, event_id};
use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::harness::bench::env_or;

#[tokio::main]
async fn main() {
    let events: usize = env_or("BENCH_EVENTS", 2000);
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move { axum::serve(listener, receiver).await.expect("receiver") });

    let mut config = api::webhooks::WebhookConfig {
        test_only_allow_loopback: true,
        poll_ms: 20,
        batch: 256,
        concurrency: 64,
        ..Default::default()
    };
    let app = TestApp::spawn_with(|s| s.webhooks.deliver = false).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let hook = app
        .store
        .create_webhook(api::webhooks::NewWebhook {
            key_id: key_id.clone(),
            url: format!("http://127.0.0.1:{port}/hook"),
            event_types: Vec::new(),
            description: "bench".into(),
            secret: api::webhooks::new_secret(),
            now_ms: api::webhooks::unix_ms(time::OffsetDateTime::now_utc()),
        })
        .await
        .expect("store")
        .expect("created");
    let started = Instant::now();
    for n in 0..events {
        app.store
            .emit_event(NewEvent {
                id: event_id(&["bench", &n.to_string(), &started.elapsed().as_nanos().to_string()]),
                key_id: key_id.clone(),
                event_type: "domain.available".into(),
                subject: None,
                occurred_at: time::OffsetDateTime::now_utc(),
                data: serde_json::json!({"domain": format!("bench{n}.com")}),
            })
            .await
            .expect("emit");
    }
    let emitted = started.elapsed();
    config.deliver = true;
    let started = Instant::now();
    let _loop = api::webhooks::deliver::spawn(&app.store, config, api::state::system_clock());
    let deadline = Instant::now() + Duration::from_secs(600);
    while hits.load(Ordering::Relaxed) < events {
        assert!(Instant::now() < deadline, "only {} of {events} delivered", hits.load(Ordering::Relaxed));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let received = started.elapsed();
    // Until the last attempt is recorded as delivered.
    loop {
        let page = app.store.list_deliveries(&hook.id, i64::MAX, 1).await.expect("list");
        let pending = page.first().is_none_or(|d| d.state != "delivered");
        if !pending || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let recorded = started.elapsed();
    println!(
        "webhooks: {events} events recorded in {:.2} s; then delivered: received by the endpoint after {:.2} s, recorded after {:.2} s: {:.0} deliveries/s (target >= 500/s)",
        emitted.as_secs_f64(),
        received.as_secs_f64(),
        recorded.as_secs_f64(),
        events as f64 / recorded.as_secs_f64()
    );
    app.finish(None).await;
}
