//! `dsa serve` stopped by SIGTERM (as systemd or an orchestrator stops it) leaves its SQLite file
//! whole on its own: the ledger drained, the write-ahead log checkpointed into the file and
//! removed, so that copying the file alone (a backup of a stopped service) keeps every charge.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use api::keys::Plan;
use api::store::{SqliteStore, Store};
use dsa_tests::harness::binary::dsa_binary;
use dsa_tests::harness::{ScratchDir, fleet};
use dsa_tests::sim::{Scenario, Simulator};

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_standalone_leaves_every_charge_in_its_database_file() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = Simulator::start(Scenario::demo()).await.expect("simulator");
    let dir = ScratchDir::new("dsa-stop");
    let config = dir.join("dsa.toml");
    std::fs::write(&config, sim.engine_config_toml()).expect("write config");
    let file = dir.join("dsa.db");
    let db = format!("sqlite://{}?mode=rwc", file.display());
    let key = {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db, 1).await.expect("open the database"));
        store.migrate().await.expect("migrate");
        let (key, _) = fleet::key(&store, Plan::Pro).await;
        // The test's own connection closed: the service's are then the database's only ones.
        store.close().await;
        key
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let mut child = std::process::Command::new(dsa_binary())
        .arg("--config")
        .arg(&config)
        .arg("serve")
        .env("DSA_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .env("DSA_DATABASE__URL", &db)
        .env("DSA_BOOTSTRAP__CREATE_DEV_KEY", "false")
        .env_remove("DSA_CONFIG")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dsa");
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let up = fleet::wait_until(Duration::from_secs(20), || {
        let health = http.get(format!("{base}/healthz")).send();
        async move { health.await.is_ok() }
    })
    .await;
    if !up {
        let _ = child.kill();
        panic!("dsa did not start");
    }
    let names = ["dsa-demo-available.com", "dsa-demo-taken.com", "dsa-demo-available.net"];
    for name in names {
        let response =
            http.get(format!("{base}/v1/domains/check?client_key={key}&domain={name}")).send().await.expect("check");
        assert_eq!(response.status().as_u16(), 200, "{name}: {:?}", response.text().await);
    }
    let wal = dir.join("dsa.db-wal");
    assert!(wal.exists(), "a running service writes its commits to the WAL first");

    let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let exited = fleet::wait_until(Duration::from_secs(30), || {
        let done = matches!(child.try_wait(), Ok(Some(_)));
        async move { done }
    })
    .await;
    if !exited {
        let _ = child.kill();
        panic!("dsa did not stop within 30 s of SIGTERM");
    }
    let status = child.wait().expect("exit status");
    assert!(status.success(), "dsa exits cleanly on SIGTERM: {status:?}");
    assert!(!wal.exists(), "the WAL is checkpointed into the file and removed when dsa stops");

    // The file alone, as a backup would copy it: every charge is in it.
    let copy = dir.join("backup.db");
    std::fs::copy(&file, &copy).expect("copy the database file");
    let backup =
        SqliteStore::connect(&format!("sqlite://{}?mode=rwc", copy.display()), 1).await.expect("open the copy");
    let charged: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM ledger_entries").fetch_one(backup.pool()).await.expect("count");
    assert_eq!(charged, names.len() as i64, "every check's charge is in the file alone");
    backup.close().await;
}
