//! The fleet harness's teardown itself: a test cannot forget it, a failing test body still gets
//! it, and it fails a test that leaves work in a queue.

use std::time::Duration;

use api::keys::Plan;
use dsa_tests::harness::fleet::{Fleet, pg_admin_url};
use sqlx::Connection;

use super::get;

/// The text of a task's panic.
fn panic_text(error: tokio::task::JoinError) -> String {
    let payload = error.into_panic();
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

/// Whether the machine's Postgres still has the database `name`.
async fn database_exists(name: &str) -> bool {
    let mut conn = sqlx::PgConnection::connect(&pg_admin_url()).await.expect("connect to Postgres");
    sqlx::query("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(name)
        .fetch_optional(&mut conn)
        .await
        .expect("query pg_database")
        .is_some()
}

/// Runs `body` as a task, which must panic; returns the panic's text, the fleet's database name
/// and nats-server port (sent by `body` once its fleet runs).
async fn must_panic<F, Fut>(body: F) -> (String, String, u16)
where
    F: FnOnce(tokio::sync::oneshot::Sender<(String, u16)>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let error = tokio::spawn(body(tx)).await.expect_err("the task panics");
    let (db, port) = rx.await.expect("the fleet started");
    (panic_text(error), db, port)
}

/// Everything the fleet started is gone: the database dropped, nats-server no longer listening.
async fn assert_torn_down(db: &str, port: u16) {
    assert!(!database_exists(db).await, "the database {db} was dropped");
    let closed = dsa_tests::harness::fleet::wait_until(Duration::from_secs(5), || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err()
    })
    .await;
    assert!(closed, "nats-server stopped listening on {port}");
}

#[tokio::test]
async fn a_fleet_dropped_without_stop_fails_the_test_and_is_still_torn_down() {
    let (text, db, port) = must_panic(|started| async move {
        let fleet = Fleet::start("forgot", 1, 1).await;
        let _ = started.send((fleet.db_name().to_owned(), fleet.nats().port));
        // The test ends here without `fleet.stop().await`.
    })
    .await;
    assert!(text.contains("dropped without `fleet.stop().await`"), "{text}");
    assert_torn_down(&db, port).await;
}

#[tokio::test]
async fn a_failing_test_body_reports_its_own_failure_and_is_torn_down() {
    let (text, db, port) = must_panic(|started| async move {
        let fleet = Fleet::start("fails", 1, 1).await;
        let _ = started.send((fleet.db_name().to_owned(), fleet.nats().port));
        let (status, _) = get(&reqwest::Client::new(), fleet.url("/no-such-path")).await;
        assert_eq!(status, 200, "the test body fails here");
        fleet.stop().await;
    })
    .await;
    assert!(text.contains("the test body fails here"), "the body's failure is the one reported: {text}");
    assert_torn_down(&db, port).await;
}

#[tokio::test]
async fn a_job_left_in_the_queue_fails_the_teardown() {
    let (text, db, port) = must_panic(|started| async move {
        let fleet =
            Fleet::builder("leftover").workers(0).configure(|s| s.engine.check_deadline_secs = 1.0).start().await;
        let _ = started.send((fleet.db_name().to_owned(), fleet.nats().port));
        let (key, _) = fleet.key(Plan::Free).await;
        let url = fleet.url(&format!("/v1/domains/check?client_key={key}&domain=dsa-demo-available.net"));
        let (status, body) = get(&reqwest::Client::new(), url).await;
        assert_eq!(status, 502, "no worker: {body}");
        // No `expect_undrained`: the job nobody took must fail the teardown.
        fleet.stop().await;
    })
    .await;
    assert!(text.contains("the Jobs queue is not drained"), "{text}");
    assert_torn_down(&db, port).await;
}

#[tokio::test]
async fn a_dsa_process_left_running_is_stopped_with_sigterm_and_its_work_drained() {
    let mut fleet = Fleet::builder("sigterm").workers(0).start().await;
    let settings = fleet.settings().clone();
    let worker = fleet.spawn_process("worker", &settings);
    let (key, key_id) = fleet.key(Plan::Free).await;
    let url = fleet.url(&format!("/v1/domains/check?client_key={key}&domain=dsa-demo-available.com"));
    let http = reqwest::Client::new();
    // The process takes jobs once its pull loop runs: retry until it answers.
    let mut answered = None;
    for _ in 0..100 {
        let (status, body) = get(&http, url.clone()).await;
        if status == 200 {
            answered = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let body = answered.unwrap_or_else(|| {
        panic!(
            "the dsa worker process never answered: {}",
            std::fs::read_to_string(&fleet.process(worker).log).unwrap_or_default()
        )
    });
    assert_eq!(body["available"], true, "{body}");
    assert!(fleet.process(worker).running());
    // The teardown SIGTERMs it (and would fail if it outlived the signal by 15 s), then checks
    // the queues.
    fleet.drain().await;
    assert!(!fleet.process(worker).running(), "stopped at teardown");
    assert_eq!(dsa_tests::harness::fleet::settled(fleet.store(), &key_id, 1).await, 1);
    fleet.stop().await;
}
