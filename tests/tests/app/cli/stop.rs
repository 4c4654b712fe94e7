//! `dsa serve` stopped by SIGTERM (as systemd or an orchestrator stops it) leaves its SQLite file
//! whole on its own: the ledger drained, the write-ahead log checkpointed into the file and
//! removed, so that copying the file alone (a backup of a stopped service) keeps every charge.

use std::process::Stdio;
use std::time::{Duration, Instant};

use api::store::{NewKey, SqliteStore, Store};
use dsa_tests::harness::ScratchDir;
use dsa_tests::harness::binary::dsa_binary;
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
        let store = SqliteStore::connect(&db, 1).await.expect("open the database");
        store.migrate().await.expect("migrate");
        let (key, key_hash) = api::keys::generate(api::keys::KeyKind::Server);
        store
            .create_key(NewKey {
                key_hash,
                kind: api::keys::KeyKind::Server,
                plan: api::keys::Plan::Pro,
                pricing_enabled: false,
                show_purchase_button: false,
                default_commission_percent: None,
                purchase_url: None,
                allowed_origins: Vec::new(),
                label: "stop test".into(),
            })
            .await
            .expect("key");
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
    let mut up = false;
    for _ in 0..400 {
        if http.get(format!("{base}/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("dsa did not stop within 30 s of SIGTERM");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
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
