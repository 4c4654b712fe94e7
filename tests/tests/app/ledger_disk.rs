//! The standalone ledger when its disk fails a sync (`fdatasync` answers an error): the charges of
//! that sync are not confirmed (503), and from then on no charge is taken and `/readyz` answers
//! 503 until the process restarts, even if later syncs succeed: after a failed sync Linux may have
//! dropped the pages it could not write, so no later sync proves them durable.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use api::keys::KeyState;
use api::store::{KeyUpdate, LedgerSync, NewKey, Store};
use common::messages::LedgerEvent;
use dsa_tests::harness::app::{KeyOpts, TestApp};
use futures::future::BoxFuture;

/// The SQLite store, whose ledger syncs fail while `failing` is set (each commit itself goes to
/// the real database).
struct FailingSyncs {
    inner: Arc<dyn Store>,
    failing: Arc<AtomicBool>,
}

impl Store for FailingSyncs {
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        self.inner.migrate()
    }
    fn find_key(&self, key_hash: &str) -> BoxFuture<'_, anyhow::Result<Option<api::keys::KeyRecord>>> {
        self.inner.find_key(key_hash)
    }
    fn create_key(&self, key: NewKey) -> BoxFuture<'_, anyhow::Result<api::keys::KeyRecord>> {
        self.inner.create_key(key)
    }
    fn list_keys(&self) -> BoxFuture<'_, anyhow::Result<Vec<api::keys::KeyRecord>>> {
        self.inner.list_keys()
    }
    fn set_key_state(&self, id_or_fingerprint: &str, state: KeyState) -> BoxFuture<'_, anyhow::Result<bool>> {
        self.inner.set_key_state(id_or_fingerprint, state)
    }
    fn settled_usage(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        self.inner.settled_usage(key_id, period)
    }
    fn apply_ledger(&self, events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>> {
        self.inner.apply_ledger(events)
    }
    fn commit_ledger<'a>(
        &'a self,
        events: &'a [LedgerEvent],
    ) -> BoxFuture<'a, anyhow::Result<(u64, Option<LedgerSync>)>> {
        Box::pin(async move {
            let (applied, sync) = self.inner.commit_ledger(events).await?;
            assert!(sync.is_some(), "a ledger on a file is synced after its commit");
            if self.failing.load(Ordering::SeqCst) {
                return Ok((applied, Some(LedgerSync::new(|| Err(std::io::Error::other("Input/output error (EIO)"))))));
            }
            Ok((applied, sync))
        })
    }
    fn shared_secret(&self, name: &str) -> BoxFuture<'_, anyhow::Result<String>> {
        self.inner.shared_secret(name)
    }
    fn settled_by_others(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        self.inner.settled_by_others(key_id, period, front)
    }
    fn settled_by_front(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        self.inner.settled_by_front(key_id, period, front)
    }
    fn ledger_count(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        self.inner.ledger_count(key_id, period)
    }
    fn find_key_by_ref(&self, reference: &str) -> BoxFuture<'_, anyhow::Result<Option<api::keys::KeyRecord>>> {
        self.inner.find_key_by_ref(reference)
    }
    fn update_key(&self, id: &str, update: KeyUpdate) -> BoxFuture<'_, anyhow::Result<Option<api::keys::KeyRecord>>> {
        self.inner.update_key(id, update)
    }
    fn usage_by_endpoint(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<Vec<(String, i64)>>> {
        self.inner.usage_by_endpoint(key_id, period)
    }
}

fn check_path(key: &str, domain: &str) -> String {
    format!("/v1/domains/check?client_key={key}&domain={domain}")
}

/// A failed sync: its charge answers 503 (it is in the ledger: committed, not confirmed); the
/// next check answers 503 at once with nothing charged although syncs succeed again, and
/// `/readyz` says why; a front restarted on the same file charges again.
#[tokio::test]
async fn a_failed_ledger_sync_stops_charges_until_restart() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = dsa_tests::sim::Simulator::start(dsa_tests::sim::Scenario::demo()).await.expect("simulator");
    let db_path = std::env::temp_dir().join(format!("dsa-test-{}.db", uuid::Uuid::now_v7()));
    let failing = Arc::new(AtomicBool::new(false));
    let switch = failing.clone();
    let app = TestApp::spawn_wrapped(
        sim,
        db_path,
        |_| {},
        api::state::system_clock(),
        move |inner| Arc::new(FailingSyncs { inner, failing: switch }),
    )
    .await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    let entries = || async { app.store.ledger_count(&key_id, &period).await.expect("count") };

    let (status, _, body) = app.get(&check_path(&key, "dsa-demo-available.com")).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = app.get("/readyz").await;
    assert_eq!(status, 200, "{body}");

    failing.store(true, Ordering::SeqCst);
    let (status, _, body) = app.get(&check_path(&key, "dsa-demo-available.com")).await;
    assert_eq!(status, 503, "the failed sync's charge is not confirmed: {body}");
    assert_eq!(entries().await, 2, "committed before its sync failed: in the ledger, unconfirmed");

    failing.store(false, Ordering::SeqCst);
    for domain in ["dsa-demo-available.com", "dsa-demo-taken.com"] {
        let (status, headers, body) = app.get(&check_path(&key, domain)).await;
        assert_eq!(status, 503, "no charge after a failed sync, though syncs work again: {body}");
        assert_eq!(body["success"], false, "{body}");
        assert!(headers.contains_key("retry-after"), "{headers:?}");
    }
    assert_eq!(entries().await, 2, "nothing kept after the failure");
    let (status, _, body) = app.get("/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], api::ledger::DISK_FAULT, "{body}");
    let (status, _, body) = app.get("/healthz").await;
    assert_eq!(status, 200, "the process itself still serves: {body}");

    // Restarted on the same file, with syncs that work: charges again.
    let (sim, db_path) = app.crash().await;
    let app = TestApp::spawn_on(sim, db_path, |_| {}, api::state::system_clock()).await;
    let (status, _, body) = app.get(&check_path(&key, "dsa-demo-available.com")).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = app.get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.finish(Some(&key)).await, 3, "the two before the failure and the one after the restart");
}
