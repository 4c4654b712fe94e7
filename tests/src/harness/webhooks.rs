//! A webhook receiver for the tests (issue 25): `tests/webhooks/receiver.py`, which verifies every
//! delivery with the `standardwebhooks` package from PyPI (pinned in
//! `tests/webhooks/requirements.txt`; `DSA_TEST_WEBHOOK_PYTHON` names a Python that has it, else
//! `python3`).

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The receiver process (`tests/webhooks/receiver.py`) on a loopback port.
pub struct Receiver {
    child: tokio::process::Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    http: reqwest::Client,
}

impl Receiver {
    /// Starts the receiver; panics (loudly) when Python or `standardwebhooks` is missing.
    pub async fn start() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let python = std::env::var("DSA_TEST_WEBHOOK_PYTHON").unwrap_or_else(|_| "python3".into());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/webhooks/receiver.py");
        let mut child = tokio::process::Command::new(&python)
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start the webhook receiver with {python}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the receiver starts within 20 s (is standardwebhooks installed? pip install -r tests/webhooks/requirements.txt)")
            .expect("read the receiver's stdout")
            .expect("the receiver prints its port (is standardwebhooks installed?)");
        let port = line.strip_prefix("PORT ").and_then(|p| p.trim().parse().ok()).expect("PORT <n>");
        Self { child, port, http: reqwest::Client::new() }
    }

    /// A URL of the receiver.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Sets `secrets`, `mode`, `delay`.
    pub async fn config(&self, config: Value) {
        let r = self.http.post(self.url("/_config")).json(&config).send().await.expect("configure the receiver");
        assert_eq!(r.status().as_u16(), 204);
    }

    /// Every attempt seen.
    pub async fn received(&self) -> Vec<Value> {
        self.http.get(self.url("/_received")).send().await.expect("receiver").json().await.expect("json")
    }

    /// The attempts answered 2xx, waiting until there are at least `n` distinct webhook-ids.
    pub async fn wait_for(&self, n: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let got: Vec<Value> =
                self.received().await.into_iter().filter(|r| r["status"].as_u64().is_some_and(|s| s < 300)).collect();
            let ids: std::collections::HashSet<_> =
                got.iter().map(|r| r["id"].as_str().unwrap_or("").to_owned()).collect();
            if ids.len() >= n {
                return got;
            }
            assert!(tokio::time::Instant::now() < deadline, "only {} of {n} deliveries arrived: {got:#?}", ids.len());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
