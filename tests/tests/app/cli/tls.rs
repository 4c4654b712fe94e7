//! HTTPS: the real binary serving TLS from PEM files, with HSTS (spec §1: HTTPS in production).

use std::process::{Command, Stdio};
use std::time::Duration;

use dsa_tests::harness::binary::dsa_binary;

#[tokio::test(flavor = "multi_thread")]
async fn serves_https_with_hsts() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("dsa-tls-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost", "-addext", "basicConstraints=critical,CA:FALSE", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .expect("the openssl command is needed to make a test certificate");
    assert!(made.success());
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let mut child = Command::new(dsa_binary())
        .env("DSA_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .env("DSA_SERVER__TLS_CERT", &cert)
        .env("DSA_SERVER__TLS_KEY", &key)
        .env("DSA_DATABASE__URL", format!("sqlite://{}?mode=rwc", dir.join("dsa.db").display()))
        .env("DSA_BOOTSTRAP__CREATE_DEV_KEY", "false")
        .env("DSA_ENGINE__OVERRIDES_ONLY", "true")
        .env_remove("DSA_CONFIG")
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dsa");
    let root = reqwest::Certificate::from_pem(&std::fs::read(&cert).expect("cert")).expect("pem");
    let client = reqwest::Client::builder().add_root_certificate(root).build().expect("client");
    let mut response = None;
    let mut last_error = String::new();
    for _ in 0..200 {
        match client.get(format!("https://localhost:{port}/healthz")).send().await {
            Ok(r) => {
                response = Some(r);
                break;
            }
            Err(e) => last_error = format!("{e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    let response = response.unwrap_or_else(|| panic!("dsa did not answer over HTTPS: {last_error}"));
    assert_eq!(response.status().as_u16(), 200);
    let hsts = response
        .headers()
        .get("strict-transport-security")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(hsts.starts_with("max-age=31536000"), "{hsts}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 17: with `server.admin_listen` set, `dsa serve` answers `/metrics` there and no longer on
/// the public listener (404 in the spec's shape); `/healthz` stays on both.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_move_to_the_admin_listener() {
    // reqwest is built without a crypto provider (dependencies.md): install one here too, not
    // only in the HTTPS test, which may run after this one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("dsa-admin-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let free = || std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let (port, admin_port) = (free(), free());
    let mut child = Command::new(dsa_binary())
        .env("DSA_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .env("DSA_SERVER__ADMIN_LISTEN", format!("127.0.0.1:{admin_port}"))
        .env("DSA_DATABASE__URL", format!("sqlite://{}?mode=rwc", dir.join("dsa.db").display()))
        .env("DSA_BOOTSTRAP__CREATE_DEV_KEY", "false")
        .env("DSA_ENGINE__OVERRIDES_ONLY", "true")
        .env_remove("DSA_CONFIG")
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dsa");
    let client = reqwest::Client::new();
    let mut up = false;
    for _ in 0..200 {
        if client.get(format!("http://127.0.0.1:{port}/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let public = client.get(format!("http://127.0.0.1:{port}/metrics")).send().await;
    let admin = client.get(format!("http://127.0.0.1:{admin_port}/metrics")).send().await;
    let admin_health = client.get(format!("http://127.0.0.1:{admin_port}/healthz")).send().await;
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(up, "dsa did not start");
    let public = public.expect("public /metrics answers");
    assert_eq!(public.status().as_u16(), 404);
    let body: serde_json::Value = public.json().await.expect("json");
    assert_eq!(body["success"], false);
    let admin = admin.expect("admin /metrics answers");
    assert_eq!(admin.status().as_u16(), 200);
    let text = admin.text().await.expect("text");
    assert!(text.contains("dsa_"), "Prometheus text with dsa's metrics: {text:.200}");
    assert_eq!(admin_health.expect("admin /healthz").status().as_u16(), 200);
}
