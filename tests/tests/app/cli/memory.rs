//! The `dsa` binary's allocator: jemalloc with background purging (`api/src/main.rs`, configured
//! in `.cargo/config.toml`), so a front's resident memory falls back after a flood instead of
//! staying at its peak (issue "Performance and scale"; the flood figures come from the check
//! bench, `BENCH_MODES=flood`). What a test can see from outside the process: jemalloc's
//! background purging thread (`jemalloc_bg_thd`) runs in `dsa serve` once it has served
//! requests; with the system allocator, or jemalloc built without `background_thread:true`, it
//! does not exist. Beside it, the metrics recorder's upkeep thread (`dsa-metrics-upkeep`,
//! `api::telemetry::prometheus`) drains the histograms nobody scrapes, so they do not grow with
//! every request.

use std::process::{Command, Stdio};
use std::time::Duration;

use dsa_tests::harness::binary::dsa_binary;

/// The names of the threads of process `pid` (`/proc/PID/task/*/comm`).
fn thread_names(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn dsa_serve_runs_jemallocs_background_purging() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("dsa-memory-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let mut child = Command::new(dsa_binary())
        .env("DSA_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .env("DSA_DATABASE__URL", format!("sqlite://{}?mode=rwc", dir.join("dsa.db").display()))
        .env("DSA_BOOTSTRAP__CREATE_DEV_KEY", "false")
        .env("DSA_ENGINE__OVERRIDES_ONLY", "true")
        .env_remove("DSA_CONFIG")
        .env_remove("_RJEM_MALLOC_CONF")
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dsa");
    let client = reqwest::Client::new();
    let mut served = 0;
    for _ in 0..400 {
        if client.get(format!("http://127.0.0.1:{port}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
            served += 1;
            if served == 50 {
                break;
            }
        } else {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let mut names = Vec::new();
    for _ in 0..100 {
        names = thread_names(child.id());
        if names.iter().any(|n| n.starts_with("jemalloc_bg_thd"))
            && names.iter().any(|n| n.starts_with("dsa-metrics-upk"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(served, 50, "dsa serve did not answer /healthz");
    assert!(
        names.iter().any(|n| n.starts_with("jemalloc_bg_thd")),
        "no jemalloc background thread in dsa serve; its threads: {names:?}"
    );
    // `comm` keeps 15 bytes of a thread's name.
    assert!(
        names.iter().any(|n| n.starts_with("dsa-metrics-upk")),
        "no metrics upkeep thread in dsa serve; its threads: {names:?}"
    );
}
