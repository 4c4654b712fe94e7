//! Accounts and the portal, attacked (issue 32, items 2, 3 and part of 6): credits cannot be
//! farmed (key caps per account, a rate on key creation, sign-ups per address per day), anonymous
//! portal traffic has bounded memory (body limits, e-mail length, bounded limiter maps), a disabled
//! account disables its keys, password hashing has a global budget, and a third party cannot lock
//! a user out by failing sign-ins for their address.
//!
//! Every test runs a real standalone front (fresh SQLite file) over loopback HTTP, driven like a
//! browser without JavaScript; the operator's commands and the memory test run the real `dsa`
//! binary.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use api::config::Settings;
use api::store::Store;
use dsa_tests::harness::binary::dsa_binary;

const PASSWORD: &str = "violet-harbour-42";

/// A standalone front serving the portal, with the SQLite file the `dsa` command can open too.
struct Front {
    base: String,
    store: Arc<dyn Store>,
    db_url: String,
    db_path: PathBuf,
    _sim: dsa_tests::sim::Simulator,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Front {
    /// A front with cheap argon2 (the cost is not under test unless a test says so), one trusted
    /// proxy hop (so a test can speak from many addresses) and generous API limits.
    async fn start(adjust: impl FnOnce(&mut Settings)) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let sim = dsa_tests::sim::Simulator::start(dsa_tests::sim::Scenario::demo()).await.expect("simulator");
        let db_path = std::env::temp_dir().join(format!("dsa-abuse-accounts-{}.db", uuid::Uuid::now_v7()));
        let db_url = format!("sqlite://{}?mode=rwc", db_path.display());
        let mut s = Settings { engine: dsa_tests::harness::app::engine_config(&sim), ..Settings::default() };
        s.database.url = db_url.clone().into();
        s.jobs.workers = 4;
        s.policy.per_minute =
            api::policy::PlanRates { free: 100_000, starter: 100_000, pro: 100_000, reseller: 100_000 };
        s.policy.per_ip_per_minute = 0;
        s.policy.shed_scheduling_lag_ms = 0;
        s.policy.trusted_proxy_hops = 1;
        s.policy.portal.password_memory_kib = 256;
        s.policy.portal.password_iterations = 1;
        adjust(&mut s);
        let app = api::standalone(&s).await.expect("standalone");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let router = api::router(app.state.clone(), None);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let api::Standalone { state, ledger, store } = app;
        let server = tokio::spawn(async move {
            let _keep = (state, ledger);
            api::serve(listener, router, async {
                let _ = rx.await;
            })
            .await
            .expect("serve");
        });
        Self {
            base: format!("http://{addr}"),
            store,
            db_url,
            db_path,
            _sim: sim,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    fn browser(&self, from: &str) -> Browser {
        Browser {
            http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client"),
            base: self.base.clone(),
            cookies: HashMap::new(),
            forwarded_for: from.to_owned(),
        }
    }

    /// Runs the operator's `dsa args…` on this front's database; panics with its output on failure.
    fn dsa(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(dsa_binary());
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("DSA_") {
                cmd.env_remove(name);
            }
        }
        let out = cmd.args(args).env("DSA_DATABASE__URL", &self.db_url).output().expect("run dsa");
        assert!(
            out.status.success(),
            "dsa {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The status and error text of `GET /v1/domains/check` with `key`.
    async fn check(&self, key: &str) -> (u16, String) {
        let response = reqwest::Client::new()
            .get(format!("{}/v1/domains/check?client_key={key}&domain=dsa-demo-available.com", self.base))
            .send()
            .await
            .expect("check");
        (response.status().as_u16(), response.text().await.unwrap_or_default())
    }

    async fn finish(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
        }
        dsa_tests::harness::remove_sqlite_database(&self.db_path);
    }
}

/// A cookie-keeping client that does not follow redirects, speaking from one address (the
/// `X-Forwarded-For` entry the front's one trusted hop reads).
struct Browser {
    http: reqwest::Client,
    base: String,
    cookies: HashMap<String, String>,
    forwarded_for: String,
}

struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Page {
    fn csrf(&self) -> String {
        let at = self.body.find("name=\"csrf\" value=\"").expect("page has a csrf field");
        let rest = &self.body[at + 19..];
        rest[..rest.find('"').expect("closing quote")].to_owned()
    }

    /// Full keys on the page.
    fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        for prefix in ["dsa_embed_", "dsa_server_"] {
            for (at, _) in self.body.match_indices(prefix) {
                let key: String =
                    self.body[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if key.len() > prefix.len() + 20 && !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        keys
    }

    fn retry_after(&self) -> Option<u64> {
        self.headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok())
    }
}

impl Browser {
    async fn send(&mut self, request: reqwest::RequestBuilder) -> Page {
        let cookie = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
        let response = request
            .header("cookie", cookie)
            .header("x-forwarded-for", self.forwarded_for.as_str())
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        for c in headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()) {
            if let Some((k, v)) = c.split(';').next().unwrap_or("").split_once('=') {
                if v.is_empty() || c.contains("Max-Age=0") {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_owned(), v.to_owned());
                }
            }
        }
        let body = response.text().await.unwrap_or_default();
        Page { status, headers, body }
    }

    /// `post`, but `None` when the connection fails (the server closed it before reading all).
    async fn try_post(&mut self, path: &str, form: &[(&str, &str)]) -> Option<Page> {
        let body = serde_urlencoded::to_string(form).expect("form");
        let cookie = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("cookie", cookie)
            .header("x-forwarded-for", self.forwarded_for.as_str())
            .body(body)
            .send()
            .await
            .ok()?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        Some(Page { status, headers, body: response.text().await.unwrap_or_default() })
    }

    async fn get(&mut self, path: &str) -> Page {
        let request = self.http.get(format!("{}{path}", self.base));
        self.send(request).await
    }

    async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        let body = serde_urlencoded::to_string(form).expect("form");
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(request).await
    }

    async fn sign_up(&mut self, email: &str) -> Page {
        let csrf = self.get("/account/signup").await.csrf();
        self.post(
            "/account/signup",
            &[("csrf", &csrf), ("display_name", "Owner"), ("email", email), ("password", PASSWORD)],
        )
        .await
    }

    async fn sign_in(&mut self, email: &str, password: &str) -> Page {
        let csrf = self.get("/account/signin").await.csrf();
        self.post("/account/signin", &[("csrf", &csrf), ("email", email), ("password", password)]).await
    }

    /// `POST /account/keys` of `kind` from the signed-in dashboard.
    async fn create_key(&mut self, kind: &str) -> Page {
        let csrf = self.get("/account").await.csrf();
        self.post("/account/keys", &[("csrf", &csrf), ("kind", kind)]).await
    }
}

/// Finding: one sign-up made 40 more server keys, each with its own 500 Free credits. Now a
/// Free account holds one active key of each kind; rolling keeps the key (no second count);
/// disabling one frees its place, and enabling it again over the cap is refused; the operator
/// raises an account's cap (`dsa accounts set-key-cap`), and key creation is rate-limited even
/// then.
#[tokio::test]
async fn credits_cannot_be_farmed_with_more_keys() {
    let front = Front::start(|_| {}).await;
    let mut b = front.browser("198.51.100.10");
    let shown = b.sign_up("farmer@example.com").await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert_eq!(shown.keys().len(), 2, "sign-up still makes one embed and one server key");
    let account = front.store.find_account("farmer@example.com").await.expect("store").expect("account");

    let refused = b.create_key("server").await;
    assert_eq!(refused.status, 403, "a third key is over the Free cap: {}", refused.body);
    assert!(refused.body.contains("limit of 1 server key"), "the page says why: {}", refused.body);
    assert!(refused.keys().is_empty(), "no key shown");
    assert_eq!(b.create_key("embed").await.status, 403, "one embed key too");
    assert_eq!(front.store.account_keys(&account.id).await.expect("keys").len(), 2, "nothing stored");

    // Rolling replaces the secret of the same key: not a second key.
    let keys = front.store.account_keys(&account.id).await.expect("keys");
    let server = keys.iter().find(|k| k.kind == api::keys::KeyKind::Server).expect("server key").clone();
    let csrf = b.get("/account").await.csrf();
    assert_eq!(b.post(&format!("/account/keys/{}/roll", server.id), &[("csrf", &csrf)]).await.status, 200);
    assert_eq!(b.create_key("server").await.status, 403, "a rolled key still counts once");

    // Disabling frees the place; enabling the old key again would pass the cap.
    let csrf = b.get("/account").await.csrf();
    assert_eq!(b.post(&format!("/account/keys/{}/disable", server.id), &[("csrf", &csrf)]).await.status, 303);
    let replacement = b.create_key("server").await;
    assert_eq!(replacement.status, 200, "{}", replacement.body);
    let csrf = b.get("/account").await.csrf();
    let enable = b.post(&format!("/account/keys/{}/enable", server.id), &[("csrf", &csrf)]).await;
    assert_eq!(enable.status, 403, "enabling over the cap is refused: {}", enable.body);

    // The operator raises this account's cap; key creation is still rate-limited.
    front.dsa(&["accounts", "set-key-cap", "farmer@example.com", "50"]);
    let mut made = 0;
    let limited = loop {
        let page = b.create_key("server").await;
        if page.status != 200 {
            break page;
        }
        made += 1;
        assert!(made < 40, "key creation is never rate-limited");
    };
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert!(limited.retry_after().is_some_and(|s| s >= 1), "Retry-After: {:?}", limited.headers);
    assert!(made >= 1, "the raised cap lets the account make keys");
    front.finish().await;
}

/// Finding: `dsa accounts disable` ended the sessions but the account's keys kept working. Now
/// they answer 403 with the spec's text for a disabled key (§7), within the key cache's lifetime,
/// and work again once the account is enabled.
#[tokio::test]
async fn a_disabled_account_disables_its_keys() {
    let front = Front::start(|_| {}).await;
    let mut b = front.browser("198.51.100.20");
    let shown = b.sign_up("disabled@example.com").await;
    let server = shown.keys().into_iter().find(|k| k.starts_with("dsa_server_")).expect("server key");
    assert_eq!(front.check(&server).await.0, 200);
    front.dsa(&["accounts", "disable", "disabled@example.com"]);
    let deadline = Instant::now() + Duration::from_secs(api::state::KEY_CACHE_TTL_SECS + 5);
    let (status, body) = loop {
        let (status, body) = front.check(&server).await;
        if status != 200 || Instant::now() > deadline {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(status, 403, "a disabled account's key is refused: {body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(body, serde_json::json!({"success": false, "error": "Invalid or disabled client key."}));
    front.dsa(&["accounts", "enable", "disabled@example.com"]);
    let deadline = Instant::now() + Duration::from_secs(api::state::KEY_CACHE_TTL_SECS + 5);
    while front.check(&server).await.0 != 200 {
        assert!(Instant::now() < deadline, "the key works again once the account is enabled");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    front.finish().await;
}

/// Finding (credits): sign-ups were unlimited per address. Now an address makes
/// `policy.portal.signups_per_ip_per_day` accounts (default 3) per UTC day; another address is
/// not affected.
#[tokio::test]
async fn sign_ups_per_address_are_limited_per_day() {
    let front = Front::start(|_| {}).await;
    let mut b = front.browser("198.51.100.30");
    for i in 0..3 {
        let page = b.sign_up(&format!("owner{i}@example.com")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        b.cookies.clear();
    }
    let refused = b.sign_up("owner3@example.com").await;
    assert_eq!(refused.status, 429, "the 4th sign-up of the day from one address: {}", refused.body);
    assert!(refused.retry_after().is_some_and(|s| (1..=86_400).contains(&s)), "{:?}", refused.headers);
    assert!(front.store.find_account("owner3@example.com").await.expect("store").is_none());
    let mut other = front.browser("198.51.100.31");
    assert_eq!(other.sign_up("owner3@example.com").await.status, 200, "another address signs up");
    front.finish().await;
}

/// Finding (6, smaller): five failed sign-ins a minute per e-mail address locked its owner out
/// from everywhere. Now failures count per (e-mail address, client address) with a capped
/// exponential back-off: the attacker's address is slowed, the owner from theirs signs in.
#[tokio::test]
async fn a_third_party_cannot_lock_a_user_out() {
    let front = Front::start(|s| s.policy.portal.signin_per_ip_per_minute = 1_000).await;
    let mut owner = front.browser("198.51.100.40");
    assert_eq!(owner.sign_up("victim@example.com").await.status, 200);
    owner.cookies.clear();

    let mut attacker = front.browser("203.0.113.66");
    let mut answers = Vec::new();
    for _ in 0..30 {
        let page = attacker.sign_in("victim@example.com", "wrong-password-1").await;
        answers.push((page.status, page.retry_after()));
    }
    // The owner, from their own address, right after the attacker's 30 attempts.
    let page = owner.sign_in("victim@example.com", PASSWORD).await;
    assert_eq!(page.status, 303, "the owner signs in from their own address: {}", page.body);

    let failures = answers.iter().filter(|(s, _)| *s == 401).count();
    assert!(failures <= 6, "the attacker's address is slowed down after a few failures: {answers:?}");
    let slowed: Vec<_> = answers.iter().filter(|(s, _)| *s == 429).collect();
    assert!(!slowed.is_empty() && slowed.iter().all(|(_, wait)| wait.is_some_and(|w| w >= 1)), "{answers:?}");
    assert!(answers.iter().all(|(s, _)| matches!(s, 401 | 429)), "{answers:?}");
    front.finish().await;
}

/// Finding (6, smaller): argon2 had no global budget, so requests from many addresses kept every
/// core hashing while the rest queued. Now at most one hash per core runs; the request that
/// finds them all busy gets 429 with `Retry-After` at once instead of waiting in a queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn password_hashing_has_a_global_budget() {
    // Costly hashes (tens of milliseconds each, release-built argon2) so that requests overlap.
    let front = Front::start(|s| {
        s.policy.portal.password_memory_kib = 19_456;
        s.policy.portal.password_iterations = 16;
        s.policy.portal.signin_per_ip_per_minute = 1_000;
    })
    .await;
    // One warm-up sign-in makes the dummy hash used for unknown addresses.
    let mut warm = front.browser("192.0.2.1");
    assert_eq!(warm.sign_in("nobody@example.com", "wrong-password-1").await.status, 401);
    let mut tasks = Vec::new();
    for i in 0..12 {
        let mut b = front.browser(&format!("2001:db8:{i}::1"));
        let csrf = b.get("/account/signin").await.csrf();
        tasks.push(tokio::spawn(async move {
            let started = Instant::now();
            let page = b
                .post(
                    "/account/signin",
                    &[("csrf", &csrf), ("email", &format!("user{i}@example.com")), ("password", "wrong-password-1")],
                )
                .await;
            (page.status, page.retry_after(), started.elapsed())
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("task"));
    }
    let busy: Vec<_> = answers.iter().filter(|(s, _, _)| *s == 429).collect();
    assert!(!busy.is_empty(), "12 hashes at once on a budget of one per core: some are refused: {answers:?}");
    assert!(busy.iter().all(|(_, retry, _)| retry.is_some_and(|r| r >= 1)), "{answers:?}");
    assert!(answers.iter().all(|(s, _, _)| matches!(s, 401 | 429)), "{answers:?}");
    front.finish().await;
}

/// Finding: the sign-in limiter kept every e-mail string it was given (up to axum's 2 MiB form
/// limit), so one anonymous client grew the front without bound. A real `dsa serve` process gets
/// 500 sign-in posts of ~1.9 MB e-mail addresses; its resident memory grows by less than 20 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_sign_in_posts_do_not_grow_the_front() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("dsa-abuse-rss-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let mut cmd = Command::new(dsa_binary());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("DSA_") {
            cmd.env_remove(name);
        }
    }
    let mut child = cmd
        .arg("serve")
        .env("DSA_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .env("DSA_DATABASE__URL", format!("sqlite://{}?mode=rwc", dir.join("dsa.db").display()))
        .env("DSA_BOOTSTRAP__CREATE_DEV_KEY", "false")
        .env("DSA_ENGINE__OVERRIDES_ONLY", "true")
        .env("DSA_POLICY__PORTAL__PASSWORD_MEMORY_KIB", "256")
        .env("DSA_POLICY__PORTAL__PASSWORD_ITERATIONS", "1")
        // Every attempt reaches the handler: the address limit is not what is under test.
        .env("DSA_POLICY__PORTAL__SIGNIN_PER_IP_PER_MINUTE", "100000")
        .env("DSA_POLICY__SHED_SCHEDULING_LAG_MS", "0")
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dsa");
    struct Kill(std::process::Child, PathBuf);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
            let _ = std::fs::remove_dir_all(&self.1);
        }
    }
    let pid = child.id();
    let mut b = Browser {
        http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client"),
        base: format!("http://127.0.0.1:{port}"),
        cookies: HashMap::new(),
        forwarded_for: "198.51.100.50".into(),
    };
    let mut ready = false;
    for _ in 0..400 {
        if b.http.get(format!("{}/healthz", b.base)).send().await.is_ok() {
            ready = true;
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("dsa serve exited early: {status}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _guard = Kill(child, dir);
    assert!(ready, "dsa serve did not answer /healthz");
    let rss = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
        line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).expect("VmRSS kB")
    };
    // Warm up: the pages, one ordinary failed sign-in (the dummy hash), allocator arenas.
    let csrf = b.get("/account/signin").await.csrf();
    for i in 0..20 {
        let page = b
            .post("/account/signin", &[("csrf", &csrf), ("email", &format!("warm{i}@example.com")), ("password", "x")])
            .await;
        assert_eq!(page.status, 401, "{}", page.body);
    }
    let before = rss();
    let mut statuses = HashMap::<u16, u32>::new();
    for i in 0..500u32 {
        // ~1.9 MB, distinct each time, lower-case already: what the limiter used to keep.
        let local = format!("{i:06}{}", "a".repeat(1_900_000));
        let email = format!("{local}@example.com");
        // A front that refuses the body may answer and close before the client has written it
        // all (a broken pipe): refused too, status 0 in the tally.
        let page = b.try_post("/account/signin", &[("csrf", &csrf), ("email", &email), ("password", "x")]).await;
        *statuses.entry(page.map_or(0, |p| p.status)).or_default() += 1;
    }
    let after = rss();
    let grown_mib = after.saturating_sub(before) as f64 / 1024.0;
    eprintln!("VmRSS before {before} kB, after {after} kB: +{grown_mib:.1} MiB; answers {statuses:?}");
    assert!(grown_mib < 20.0, "500 huge sign-ins grew the front by {grown_mib:.1} MiB (answers {statuses:?})");
    assert!(statuses.keys().all(|s| *s == 0 || (400..500).contains(s)), "every huge form is refused: {statuses:?}");
    // A form over the portal's 16 KiB body limit is refused as too large.
    let page = b.try_post("/account/signup", &[("csrf", &csrf), ("display_name", &"x".repeat(20_000))]).await;
    assert!(page.as_ref().is_none_or(|p| p.status == 413), "{:?}", page.map(|p| (p.status, p.body)));
}

/// A real SMTP server on loopback (`python3 -m aiosmtpd`, PyPI `aiosmtpd==1.4.6`) storing each
/// message in a maildir. Fails loudly when python3 or aiosmtpd is missing.
struct SmtpServer {
    port: u16,
    dir: PathBuf,
    child: std::process::Child,
}

impl SmtpServer {
    fn start() -> Self {
        let check = Command::new("python3").args(["-c", "import aiosmtpd"]).output();
        assert!(
            check.as_ref().is_ok_and(|o| o.status.success()),
            "python3 with aiosmtpd is needed (pip install aiosmtpd==1.4.6; .ci/services.sh does it): {check:?}"
        );
        let dir = std::env::temp_dir().join(format!("dsa-abuse-smtp-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).expect("maildir");
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
        let child = Command::new("python3")
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}"), "-c", "aiosmtpd.handlers.Mailbox"])
            .arg(dir.join("mail"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start aiosmtpd");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "aiosmtpd did not listen on 127.0.0.1:{port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { port, dir, child }
    }

    /// The messages received so far (raw RFC 5322 text).
    fn messages(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.dir.join("mail").join("new")) else { return Vec::new() };
        entries.filter_map(Result::ok).filter_map(|e| std::fs::read_to_string(e.path()).ok()).collect()
    }

    /// Waits for the `n`th message (1-based).
    async fn wait_for(&self, n: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut messages = self.messages();
            if messages.len() >= n {
                messages.sort();
                return messages.swap_remove(n - 1);
            }
            assert!(Instant::now() < deadline, "no message {n} within 10 s ({} received)", messages.len());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The verification link in a message, whatever its transfer encoding (7bit or
/// quoted-printable, whose soft line breaks and `=3D` are undone).
fn verification_link(message: &str) -> String {
    let text = message.replace("=\r\n", "").replace("=\n", "").replace("=3D", "=");
    let at = text.find("/account/verify?token=").expect("the mail carries the link");
    let start = text[..at].rfind("http").expect("an absolute link");
    text[start..].split_whitespace().next().expect("link").to_owned()
}

/// Credits cannot be farmed with throw-away addresses: with `[policy.portal.smtp]` set, a new
/// account gets no key (no credits) and cannot sign in until the link mailed to the address is
/// followed; then its first sign-in makes its pair. The mail goes through a real SMTP server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_keys_wait_for_the_emailed_link() {
    let smtp = SmtpServer::start();
    let front = Front::start(|s| {
        s.policy.portal.smtp = Some(api::policy::SmtpConfig {
            host: "127.0.0.1".into(),
            port: smtp.port,
            security: api::policy::SmtpSecurity::None,
            from: "dsa <noreply@dsa.test>".into(),
            ..api::policy::SmtpConfig::default()
        });
        // The link's base; the front's port is known only once it listens, so the test follows
        // the link's path and query on the front it runs.
        s.policy.portal.public_url = Some("https://dsa.test".into());
    })
    .await;
    let mut b = front.browser("198.51.100.60");
    let page = b.sign_up("verify@example.com").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.keys().is_empty(), "no key before the address is verified: {}", page.body);
    assert!(page.body.contains("We sent a link"), "{}", page.body);
    let account = front.store.find_account("verify@example.com").await.expect("store").expect("account");
    assert!(!account.email_verified);
    assert!(front.store.account_keys(&account.id).await.expect("keys").is_empty(), "no key, so no credits");

    let refused = b.sign_in("verify@example.com", PASSWORD).await;
    assert_eq!(refused.status, 403, "unverified: {}", refused.body);
    assert!(refused.body.contains("Confirm your e-mail address first"), "{}", refused.body);
    assert!(refused.keys().is_empty());

    let mail = smtp.wait_for(1).await;
    assert!(mail.contains("To: verify@example.com"), "{mail}");
    let link = verification_link(&mail);
    assert!(link.starts_with("https://dsa.test/account/verify?token="), "the configured base, never the Host: {link}");
    let path = link.trim_start_matches("https://dsa.test");
    let followed = b.get(path).await;
    assert_eq!(followed.status, 303, "{}", followed.body);
    assert_eq!(b.get(path).await.status, 400, "the link works once");

    let signed_in = b.sign_in("verify@example.com", PASSWORD).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let keys = signed_in.keys();
    assert_eq!(keys.len(), 2, "the first sign-in makes the pair: {keys:?}");
    let server = keys.iter().find(|k| k.starts_with("dsa_server_")).expect("server key");
    assert_eq!(front.check(server).await.0, 200);
    assert_eq!(smtp.messages().len(), 1, "one mail: the second sign-in attempt came within 10 minutes");
    front.finish().await;
}

/// With verification mail on, the sign-up form does not tell who has an account: a second
/// sign-up with a taken address (in another case and with spaces) gets the same page, status and
/// no key, and the address's owner is told by mail instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_does_not_reveal_a_taken_address() {
    let smtp = SmtpServer::start();
    let front = Front::start(|s| {
        s.policy.portal.smtp = Some(api::policy::SmtpConfig {
            host: "127.0.0.1".into(),
            port: smtp.port,
            security: api::policy::SmtpSecurity::None,
            from: "dsa <noreply@dsa.test>".into(),
            ..api::policy::SmtpConfig::default()
        });
        s.policy.portal.public_url = Some("https://dsa.test".into());
    })
    .await;
    let first = front.browser("198.51.100.61").sign_up("owner@example.com").await;
    let verify_mail = smtp.wait_for(1).await;
    assert!(verify_mail.contains("Confirm your e-mail address"), "{verify_mail}");
    let again = front.browser("198.51.100.62").sign_up(" Owner@Example.com ").await;
    assert_eq!((first.status, again.status), (200, 200), "{}", again.body);
    assert!(again.keys().is_empty());
    let strip_csrf = |body: &str| body.lines().filter(|l| !l.contains("csrf")).collect::<Vec<_>>().join("\n");
    assert_eq!(strip_csrf(&first.body), strip_csrf(&again.body), "the same page for a new and a taken address");
    assert!(!again.body.to_lowercase().contains("already"), "{}", again.body);
    smtp.wait_for(2).await;
    let notice =
        smtp.messages().into_iter().find(|m| m.contains("already have an account")).expect("the owner's notice");
    assert!(notice.contains("To: owner@example.com"), "{notice}");
    assert!(notice.contains("already has one") && notice.contains("https://dsa.test/account/signin"), "{notice}");
    assert_eq!(front.store.list_accounts().await.expect("store").len(), 1);
    front.finish().await;
}
