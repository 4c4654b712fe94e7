//! The account portal (`/account`, issue 15) end to end over HTTP: a real standalone front, on
//! SQLite and on Postgres (a fresh database per test, as `store_pg.rs`), driven like a browser
//! without JavaScript (forms, cookies, redirects by hand).
//!
//! Covered: sign-up shows both keys once and stores only hashes; CSRF on every state-changing
//! form (403); sign-in answers an unknown address like a wrong password (same page, similar
//! time); sign-in limits per (e-mail, address) pair with back-off and per address; sign-out revokes the session server-side;
//! the dashboard shows usage and charges without key material; key settings validation; roll with
//! a grace period; disable/enable; a suspended key stays suspended; password reset links are
//! one-time; `__Host-` + `Secure` cookies when TLS is on.
//!
//! Postgres: `DSA_TEST_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use api::config::Settings;
use api::keys::{KeyState, hash_key};
use api::store::Store;
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};

/// A front serving the portal over some store.
struct Portal {
    base: String,
    store: Arc<dyn Store>,
    _sim: dsa_tests::sim::Simulator,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    ledger: Option<tokio::task::JoinHandle<()>>,
    cleanup: Option<Cleanup>,
}

enum Cleanup {
    File(std::path::PathBuf),
    Database { admin: String, name: String },
}

fn pg_admin() -> String {
    std::env::var("DSA_TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

fn pg_url(admin: &str, db: &str) -> String {
    let (scheme, rest) = admin.split_once("://").expect("postgres:// URL");
    let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
    format!("{scheme}://{authority}/{db}")
}

/// Settings of every portal test: cheap argon2 (the cost is not under test, except where a test
/// says so), generous sign-in limits, a short roll grace.
fn settings(sim: &dsa_tests::sim::Simulator) -> Settings {
    let mut s = Settings { engine: dsa_tests::harness::app::engine_config(sim), ..Settings::default() };
    s.jobs.workers = 4;
    s.policy.per_minute = api::policy::PlanRates { free: 100_000, starter: 100_000, pro: 100_000, reseller: 100_000 };
    s.policy.per_ip_per_minute = 0;
    s.policy.empty_origins_allow_all = false;
    let p = &mut s.policy.portal;
    p.password_memory_kib = 256;
    p.password_iterations = 1;
    p.signin_per_ip_per_minute = 1_000;
    p.signin_free_failures = 1_000;
    // Caps and rates on accounts and keys have their own tests (tests/abuse/accounts.rs).
    p.signups_per_ip_per_day = 0;
    p.key_creations_per_hour = 0;
    let many = api::policy::KindCaps { embed: 100, server: 100 };
    p.key_caps = api::policy::KeyCaps { free: many.clone(), starter: many.clone(), pro: many.clone(), reseller: many };
    p.roll_grace_secs = 2;
    s
}

impl Portal {
    async fn sqlite(adjust: impl FnOnce(&mut Settings)) -> Self {
        Self::sqlite_with_clock(adjust, api::state::system_clock()).await
    }

    async fn sqlite_with_clock(adjust: impl FnOnce(&mut Settings), clock: api::state::Clock) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let sim = dsa_tests::sim::Simulator::start(dsa_tests::sim::Scenario::demo()).await.expect("simulator");
        let path = std::env::temp_dir().join(format!("dsa-portal-{}.db", uuid::Uuid::now_v7()));
        let mut s = settings(&sim);
        s.database.url = format!("sqlite://{}?mode=rwc", path.display()).into();
        adjust(&mut s);
        let app = api::standalone_with_clock(&s, clock).await.expect("standalone");
        Self::serve(app, sim, Cleanup::File(path)).await
    }

    async fn postgres(adjust: impl FnOnce(&mut Settings)) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let admin = pg_admin();
        let name = format!("dsa_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = PgConnection::connect(&admin).await.unwrap_or_else(|e| {
            panic!("Postgres unreachable at DSA_TEST_PG_URL={admin}: {e}; start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start")
        });
        conn.execute(AssertSqlSafe(format!("CREATE DATABASE {name}"))).await.expect("create database");
        conn.close().await.ok();
        let store: Arc<dyn Store> =
            Arc::new(api::store_pg::PgStore::connect(&pg_url(&admin, &name), 4).await.expect("connect"));
        let sim = dsa_tests::sim::Simulator::start(dsa_tests::sim::Scenario::demo()).await.expect("simulator");
        let mut s = settings(&sim);
        adjust(&mut s);
        let app = api::standalone_with_store(&s, store, api::state::system_clock()).await.expect("standalone on pg");
        Self::serve(app, sim, Cleanup::Database { admin, name }).await
    }

    async fn serve(app: api::Standalone, sim: dsa_tests::sim::Simulator, cleanup: Cleanup) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let router = api::router(app.state.clone(), None);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let api::Standalone { state, ledger, store } = app;
        let server = tokio::spawn(async move {
            let _keep = state;
            api::serve(listener, router, async {
                let _ = rx.await;
            })
            .await
            .expect("serve");
        });
        Self {
            base: format!("http://{addr}"),
            store,
            _sim: sim,
            shutdown: Some(tx),
            server: Some(server),
            ledger: Some(ledger),
            cleanup: Some(cleanup),
        }
    }

    fn browser(&self) -> Browser {
        Browser {
            http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client"),
            base: self.base.clone(),
            cookies: HashMap::new(),
            forwarded_for: None,
        }
    }

    async fn finish(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.expect("server task");
        }
        if let Some(ledger) = self.ledger.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), ledger).await;
        }
        match self.cleanup.take() {
            Some(Cleanup::File(path)) => dsa_tests::harness::remove_sqlite_database(&path),
            Some(Cleanup::Database { admin, name }) => {
                drop(self.store);
                if let Ok(mut conn) = PgConnection::connect(&admin).await {
                    let _ = conn.execute(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).await;
                }
            }
            None => {}
        }
    }
}

/// A cookie-keeping client that does not follow redirects.
struct Browser {
    http: reqwest::Client,
    base: String,
    cookies: HashMap<String, String>,
    forwarded_for: Option<String>,
}

struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Page {
    /// The first hidden `csrf` field.
    fn csrf(&self) -> String {
        let at = self.body.find("name=\"csrf\" value=\"").expect("page has a csrf field");
        let rest = &self.body[at + 19..];
        rest[..rest.find('"').expect("closing quote")].to_owned()
    }

    fn location(&self) -> &str {
        self.headers.get("location").and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// Full keys on the page (`dsa_embed_…`, `dsa_server_…`).
    fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        for prefix in ["dsa_embed_", "dsa_server_"] {
            let mut from = 0;
            while let Some(i) = self.body[from..].find(prefix) {
                let start = from + i;
                let key: String =
                    self.body[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if key.len() > prefix.len() + 20 && !keys.contains(&key) {
                    keys.push(key.clone());
                }
                from = start + key.len().max(1);
            }
        }
        keys
    }

    fn set_cookies(&self) -> Vec<String> {
        self.headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect()
    }
}

impl Browser {
    fn absorb(&mut self, headers: &reqwest::header::HeaderMap) {
        for c in headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()) {
            let first = c.split(';').next().unwrap_or("");
            if let Some((k, v)) = first.split_once('=') {
                if v.is_empty() || c.contains("Max-Age=0") {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_owned(), v.to_owned());
                }
            }
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    async fn send(&mut self, request: reqwest::RequestBuilder) -> Page {
        let mut request = request.header("cookie", self.cookie_header());
        if let Some(ip) = &self.forwarded_for {
            request = request.header("x-forwarded-for", ip.as_str());
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        self.absorb(&headers);
        Page { status, headers, body }
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

    /// Signs up through the form; returns the page showing the keys.
    async fn sign_up(&mut self, email: &str, password: &str) -> Page {
        let csrf = self.get("/account/signup").await.csrf();
        self.post(
            "/account/signup",
            &[("csrf", &csrf), ("display_name", "Test Owner"), ("email", email), ("password", password)],
        )
        .await
    }

    async fn sign_in(&mut self, email: &str, password: &str) -> Page {
        let csrf = self.get("/account/signin").await.csrf();
        self.post("/account/signin", &[("csrf", &csrf), ("email", email), ("password", password)]).await
    }
}

const PASSWORD: &str = "violet-harbour-42";

fn assert_security_headers(page: &Page) {
    let h = |n: &str| page.headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let csp = h("content-security-policy");
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("script-src"), "no script may run on a portal page: {csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(h("x-content-type-options"), "nosniff");
    assert_eq!(h("referrer-policy"), "no-referrer");
    assert_eq!(h("cache-control"), "no-store");
}

/// Sign up → both keys once → they work and are stored hashed → dashboard without key material →
/// a charge appears → sign out revokes the session → sign in again shows no key.
async fn sign_up_flow(portal: &Portal) {
    let mut b = portal.browser();
    let page = b.sign_up("Owner@Example.com", PASSWORD).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_security_headers(&page);
    let session_cookie = page.set_cookies().into_iter().find(|c| c.starts_with("dsa_portal=")).expect("session cookie");
    assert!(session_cookie.contains("HttpOnly") && session_cookie.contains("SameSite=Lax"), "{session_cookie}");
    assert!(!session_cookie.contains("Secure"), "no TLS here: {session_cookie}");
    let keys = page.keys();
    assert_eq!(keys.len(), 2, "an embed and a server key: {keys:?}");
    let (embed, server) = (&keys[0], &keys[1]);
    assert!(embed.starts_with("dsa_embed_") && server.starts_with("dsa_server_"));
    assert!(page.body.contains("data-client-key=&quot;dsa_embed_"), "the snippet carries the new embed key");
    let account = portal.store.find_account("owner@example.com").await.expect("store").expect("account stored");
    assert!(account.password_hash.starts_with("$argon2id$v=19$"), "argon2id PHC string");
    assert!(!account.password_hash.contains(PASSWORD));
    for key in &keys {
        let record = portal.store.find_key(&hash_key(key)).await.expect("store").expect("key stored by its hash");
        assert_eq!(record.account_id.as_deref(), Some(account.id.as_str()));
        assert_eq!(record.plan, api::keys::Plan::Free);
    }

    // The server key works on the metered API.
    let http = reqwest::Client::new();
    let check = http
        .get(format!("{}/v1/domains/check?client_key={server}&domain=dsa-demo-available.com", portal.base))
        .send()
        .await
        .expect("check");
    assert_eq!(check.status().as_u16(), 200);

    // The dashboard: fingerprints and usage, never a full key.
    let mut dash = b.get("/account").await;
    assert_eq!(dash.status, 200);
    assert_security_headers(&dash);
    assert!(dash.keys().is_empty(), "a key is shown only once");
    assert!(!dash.body.contains("<script"), "portal pages carry no script");
    assert!(dash.body.contains("Free Developer") && dash.body.contains("Credits used"));
    let deadline = Instant::now() + Duration::from_secs(10);
    // The page reads usage, the chart and the latest charges in three queries: wait until the
    // ledger batch had settled before the first of them.
    while !(dash.body.contains("1 / 500") && dash.body.contains("<rect") && dash.body.contains("id=\"recent\"")) {
        assert!(Instant::now() < deadline, "the charge reaches the dashboard: {}", dash.body);
        tokio::time::sleep(Duration::from_millis(200)).await;
        dash = b.get("/account").await;
    }
    assert!(dash.body.contains("<rect"), "a bar for today");
    assert!(dash.body.contains("1 / 500") && dash.body.contains(">499<"), "used and remaining: {}", dash.body);

    // Sign out: the cookie is cleared, and the old cookie no longer works (server-side revocation).
    let old_cookie = b.cookies.get("dsa_portal").cloned().expect("signed in");
    let csrf = dash.csrf();
    let out = b.post("/account/signout", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, 303);
    assert!(out.location().starts_with("/account/signin"));
    assert!(!b.cookies.contains_key("dsa_portal"), "cookie cleared");
    b.cookies.insert("dsa_portal".into(), old_cookie);
    let denied = b.get("/account").await;
    assert_eq!(denied.status, 303, "a signed-out session is gone");
    assert_eq!(denied.location(), "/account/signin");

    // Signing in again (the account has keys): straight to the dashboard, no key shown.
    let mut b = portal.browser();
    let page = b.sign_in("owner@example.com", PASSWORD).await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location(), "/account");
    assert!(page.keys().is_empty());
    assert_eq!(b.get("/account").await.status, 200);
}

#[tokio::test]
async fn sign_up_shows_keys_once_sign_out_revokes_sqlite() {
    let portal = Portal::sqlite(|_| {}).await;
    sign_up_flow(&portal).await;
    portal.finish().await;
}

#[tokio::test]
async fn sign_up_shows_keys_once_sign_out_revokes_postgres() {
    let portal = Portal::postgres(|_| {}).await;
    sign_up_flow(&portal).await;
    key_actions_flow(&portal).await;
    portal.finish().await;
}

#[tokio::test]
async fn every_state_changing_form_needs_its_csrf_token() {
    let portal = Portal::sqlite(|_| {}).await;
    let mut b = portal.browser();
    // Signed out: the pre-session token (double submit) is required.
    let csrf = b.get("/account/signup").await.csrf();
    let form = |token: &'static str| vec![("email", "x@example.com"), ("password", PASSWORD), ("csrf", token)];
    assert_eq!(b.post("/account/signup", &form("forged")).await.status, 403);
    assert_eq!(b.post("/account/signup", &form("")[..2]).await.status, 403, "no token at all");
    let mut stranger = portal.browser();
    let page =
        stranger.post("/account/signup", &[("email", "x@example.com"), ("password", PASSWORD), ("csrf", &csrf)]).await;
    assert_eq!(page.status, 403, "a token without its cookie (another browser) is refused");
    assert!(page.body.contains("expired"), "{}", page.body);
    assert!(portal.store.find_account("x@example.com").await.expect("store").is_none());
    let bad_signin = b.post("/account/signin", &[("email", "x@example.com"), ("password", PASSWORD)]).await;
    assert_eq!(bad_signin.status, 403);

    // Signed in: every POST needs the session's token.
    let page = b.sign_up("csrf@example.com", PASSWORD).await;
    assert_eq!(page.status, 200);
    let dash = b.get("/account").await;
    let token = dash.csrf();
    let key_id = portal.store.find_account("csrf@example.com").await.expect("store").expect("account").id;
    let key = portal.store.account_keys(&key_id).await.expect("keys").remove(0);
    let mut other = portal.browser();
    other.sign_up("other@example.com", PASSWORD).await;
    let foreign = other.get("/account").await.csrf();
    for path in [
        "/account/keys".to_owned(),
        format!("/account/keys/{}", key.id),
        format!("/account/keys/{}/roll", key.id),
        format!("/account/keys/{}/disable", key.id),
        format!("/account/keys/{}/enable", key.id),
        "/account/signout".to_owned(),
    ] {
        assert_eq!(b.post(&path, &[("kind", "server")]).await.status, 403, "{path} without a token");
        assert_eq!(b.post(&path, &[("csrf", "nope")]).await.status, 403, "{path} with a wrong token");
        assert_eq!(b.post(&path, &[("csrf", &foreign)]).await.status, 403, "{path} with another session's token");
    }
    assert_eq!(portal.store.account_keys(&key_id).await.expect("keys").len(), 2, "nothing was created");
    let after = portal.store.find_key_by_ref(&key.id).await.expect("store").expect("key");
    assert_eq!(after.state, KeyState::Active);
    assert_eq!(after.fingerprint, key.fingerprint, "not rolled");
    // And with the token, it works.
    assert_eq!(b.post("/account/keys", &[("csrf", &token), ("kind", "server")]).await.status, 200);
    portal.finish().await;
}

#[tokio::test]
async fn sign_in_does_not_tell_unknown_addresses_from_wrong_passwords() {
    // Real argon2id cost here: the timing comparison needs the hash to dominate.
    let portal = Portal::sqlite(|s| {
        let d = api::accounts::PasswordParams::default();
        s.policy.portal.password_memory_kib = d.memory_kib;
        s.policy.portal.password_iterations = d.iterations;
    })
    .await;
    let mut b = portal.browser();
    assert_eq!(b.sign_up("known@example.com", PASSWORD).await.status, 200);
    let mut b = portal.browser();
    let mut timings = HashMap::new();
    let mut bodies = HashMap::new();
    for round in 0..3 {
        for (label, email, password) in [
            ("wrong password", "known@example.com", "not-the-password-1"),
            ("unknown address", "nobody@example.com", "not-the-password-1"),
        ] {
            let started = Instant::now();
            let page = b.sign_in(email, password).await;
            let took = started.elapsed();
            assert_eq!(page.status, 401, "{label}: {}", page.body);
            assert!(page.body.contains("The e-mail address or the password is wrong."), "{label}");
            if round > 0 {
                timings.entry(label).or_insert_with(Vec::new).push(took);
            }
            bodies.insert(label, page.body.replace(email, "EMAIL"));
        }
    }
    assert_eq!(bodies["wrong password"], bodies["unknown address"], "same page, whatever the address");
    let mean = |l: &str| timings[l].iter().sum::<Duration>() / timings[l].len() as u32;
    let (wrong, unknown) = (mean("wrong password"), mean("unknown address"));
    eprintln!("sign-in time: wrong password {wrong:?}, unknown address {unknown:?}");
    assert!(unknown * 3 > wrong && wrong * 3 > unknown, "similar time: {wrong:?} vs {unknown:?}");
    // The right password still works.
    assert_eq!(b.sign_in("known@example.com", PASSWORD).await.status, 303);
    portal.finish().await;
}

#[tokio::test]
async fn sign_in_is_limited_per_account_and_address_pair_and_per_address() {
    let portal = Portal::sqlite(|s| {
        s.policy.portal.signin_free_failures = 3;
        s.policy.portal.signin_per_ip_per_minute = 6;
        s.policy.trusted_proxy_hops = 1;
    })
    .await;
    let mut b = portal.browser();
    assert_eq!(b.sign_up("limited@example.com", PASSWORD).await.status, 200);
    // Per (e-mail, address): after 3 failures that address backs off, even with the right
    // password; from another address the owner signs in (issue 32: no lock-out by a third party).
    let mut b = portal.browser();
    b.forwarded_for = Some("203.0.113.1".into());
    for _ in 0..3 {
        assert_eq!(b.sign_in("limited@example.com", "wrong-password-1").await.status, 401);
    }
    let page = b.sign_in("limited@example.com", PASSWORD).await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.body.contains("Too many failed sign-ins for this e-mail address from your network."));
    assert!(page.headers.get("retry-after").is_some());
    let mut owner = portal.browser();
    owner.forwarded_for = Some("203.0.113.2".into());
    assert_eq!(owner.sign_in("limited@example.com", PASSWORD).await.status, 303, "the owner is not locked out");
    // The same back-off for an address nobody has (it reveals nothing).
    b.forwarded_for = Some("203.0.113.5".into());
    for _ in 0..3 {
        assert_eq!(b.sign_in("ghost@example.com", "wrong-password-1").await.status, 401);
    }
    assert_eq!(b.sign_in("ghost@example.com", "wrong-password-1").await.status, 429);
    // Per address: 6 attempts from 203.0.113.3 with different e-mail addresses, then refused.
    b.forwarded_for = Some("203.0.113.3".into());
    for i in 0..6 {
        assert_eq!(b.sign_in(&format!("user{i}@example.com"), "wrong-password-1").await.status, 401);
    }
    let page = b.sign_in("user9@example.com", "wrong-password-1").await;
    assert_eq!(page.status, 429);
    assert!(page.body.contains("Too many sign-in attempts. Wait a minute, then try again."));
    b.forwarded_for = Some("203.0.113.4".into());
    assert_eq!(b.sign_in("user9@example.com", "wrong-password-1").await.status, 401, "another address is not limited");
    portal.finish().await;
}

/// Create, settings (validated), roll with grace, disable/enable, suspended stays suspended.
async fn key_actions_flow(portal: &Portal) {
    let mut b = portal.browser();
    let shown = b.sign_up("keys@example.com", PASSWORD).await;
    let embed = shown.keys().remove(0);
    let account = portal.store.find_account("keys@example.com").await.expect("store").expect("account");
    let record = portal.store.find_key(&hash_key(&embed)).await.expect("store").expect("key");
    let path = format!("/account/keys/{}", record.id);
    let page = b.get(&path).await;
    assert_eq!(page.status, 200);
    assert!(page.keys().is_empty(), "the settings page never shows the key");
    assert!(page.body.contains("PASTE_YOUR_EMBED_KEY_HERE"), "the snippet has a placeholder");
    let csrf = page.csrf();

    // Invalid settings: 400 with each reason; nothing saved.
    let bad = b
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("origins", "https://shop.example/cart\nftp://x.example"),
                ("commission", "1001"),
                ("purchase_url", "/relative"),
            ],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("an origin has no path") && bad.body.contains("http or https"), "{}", bad.body);
    assert!(bad.body.contains("0 to 1000") && bad.body.contains("absolute http"));
    // Valid settings: saved and normalised.
    let ok = b
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("label", "shop widget"),
                ("origins", "https://Shop.Example/\nhttps://*.example.com\nhttp://localhost:8000"),
                ("pricing_enabled", "1"),
                ("commission", "12.5"),
                ("purchase_url", "https://shop.example/cart"),
                // Not fields of the form: an owner cannot change plan or state this way.
                ("plan", "reseller"),
                ("state", "suspended"),
            ],
        )
        .await;
    assert_eq!(ok.status, 303, "{}", ok.body);
    let saved = portal.store.find_key_by_ref(&record.id).await.expect("store").expect("key");
    assert_eq!(saved.allowed_origins, vec!["https://shop.example", "https://*.example.com", "http://localhost:8000"]);
    assert!(saved.pricing_enabled && !saved.show_purchase_button);
    assert_eq!(saved.default_commission_percent, Some(12.5));
    assert_eq!(saved.purchase_url.as_deref(), Some("https://shop.example/cart"));
    assert_eq!(saved.label, "shop widget");
    assert_eq!(saved.plan, record.plan, "the owner cannot change the plan");
    assert_eq!(saved.state, KeyState::Active, "nor the state through the settings");

    // Another account's key is "not found".
    let mut other = portal.browser();
    other.sign_up("intruder@example.com", PASSWORD).await;
    assert_eq!(other.get(&path).await.status, 404);
    let other_csrf = other.get("/account").await.csrf();
    assert_eq!(other.post(&format!("{path}/disable"), &[("csrf", &other_csrf)]).await.status, 404);

    // Roll: the new key is shown once; the old one works during the grace period, then not.
    let origin = [("origin", "http://localhost:8000")];
    let check = |key: String| {
        let url = format!("{}/domain-check?client_key={key}&domain=dsa-demo-available.com", portal.base);
        async move {
            let mut r = reqwest::Client::new().get(url);
            for (k, v) in origin {
                r = r.header(k, v);
            }
            let response = r.send().await.expect("check");
            let status = response.status().as_u16();
            if status != 200 {
                eprintln!("check: {status} {}", response.text().await.unwrap_or_default());
            }
            status
        }
    };
    assert_eq!(check(embed.clone()).await, 200, "embed key from an allowed origin");
    let rolled = b.post(&format!("{path}/roll"), &[("csrf", &csrf)]).await;
    assert_eq!(rolled.status, 200, "{}", rolled.body);
    let new_key = rolled.keys().remove(0);
    assert_ne!(new_key, embed);
    assert!(rolled.body.contains("The old secret stops working at"));
    assert_eq!(check(new_key.clone()).await, 200, "the new secret works at once");
    assert_eq!(check(embed.clone()).await, 200, "the old one within the grace period");
    let after_roll = portal.store.find_key(&hash_key(&new_key)).await.expect("store").expect("key");
    assert_eq!(after_roll.id, record.id, "same key (id, usage, settings)");
    // Grace (2 s) + the front's key cache (api::state::KEY_CACHE_TTL_SECS).
    tokio::time::sleep(Duration::from_secs(2 + api::state::KEY_CACHE_TTL_SECS + 1)).await;
    assert_eq!(check(embed.clone()).await, 403, "the old secret is refused after the grace period");
    assert_eq!(check(new_key.clone()).await, 200);

    // Disable and enable.
    assert_eq!(b.post(&format!("{path}/disable"), &[("csrf", &csrf)]).await.status, 303);
    assert_eq!(portal.store.find_key_by_ref(&record.id).await.expect("store").expect("key").state, KeyState::Disabled);
    assert_eq!(b.post(&format!("{path}/enable"), &[("csrf", &csrf)]).await.status, 303);
    assert_eq!(portal.store.find_key_by_ref(&record.id).await.expect("store").expect("key").state, KeyState::Active);
    // Suspended by the operator: the owner cannot lift it.
    assert!(portal.store.set_key_state(&record.id, KeyState::Suspended).await.expect("store"));
    let refused = b.post(&format!("{path}/enable"), &[("csrf", &csrf)]).await;
    assert_eq!(refused.status, 403);
    assert!(refused.body.contains("suspended"));
    assert_eq!(portal.store.find_key_by_ref(&record.id).await.expect("store").expect("key").state, KeyState::Suspended);
    // Another key, on demand.
    let created = b.post("/account/keys", &[("csrf", &csrf), ("kind", "server")]).await;
    assert_eq!(created.keys().len(), 1);
    assert!(created.keys()[0].starts_with("dsa_server_"));
    assert_eq!(portal.store.account_keys(&account.id).await.expect("keys").len(), 3);
}

#[tokio::test]
async fn key_settings_roll_disable_and_suspension_sqlite() {
    let portal = Portal::sqlite(|_| {}).await;
    key_actions_flow(&portal).await;
    portal.finish().await;
}

#[tokio::test]
async fn reset_links_work_once_and_end_sessions() {
    let portal = Portal::sqlite(|_| {}).await;
    let mut b = portal.browser();
    b.sign_up("reset@example.com", PASSWORD).await;
    assert_eq!(b.get("/account").await.status, 200);
    let account = portal.store.find_account("reset@example.com").await.expect("store").expect("account");
    let link = api::portal::reset_link(
        portal.store.as_ref(),
        &api::policy::PortalConfig::default(),
        &portal.base,
        &account.id,
    )
    .await
    .expect("link");
    let path = link.strip_prefix(&portal.base).expect("link on this server").to_owned();
    let token = path.split("token=").nth(1).expect("token").to_owned();
    let mut owner = portal.browser();
    let form = owner.get(&path).await;
    assert_eq!(form.status, 200);
    let csrf = form.csrf();
    let weak = owner.post("/account/reset", &[("csrf", &csrf), ("token", &token), ("password", "password123")]).await;
    assert_eq!(weak.status, 400, "a common password is refused");
    assert!(weak.body.contains("most common"));
    let done =
        owner.post("/account/reset", &[("csrf", &csrf), ("token", &token), ("password", "new-lantern-sky-9")]).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(b.get("/account").await.status, 303, "every session of the account ended");
    let again =
        owner.post("/account/reset", &[("csrf", &csrf), ("token", &token), ("password", "other-lantern-sky-9")]).await;
    assert_eq!(again.status, 400, "the link works once");
    assert_eq!(owner.sign_in("reset@example.com", PASSWORD).await.status, 401);
    assert_eq!(owner.sign_in("reset@example.com", "new-lantern-sky-9").await.status, 303);
    // A disabled account cannot sign in, and its sessions end.
    assert_eq!(owner.get("/account").await.status, 200);
    assert!(portal.store.set_account_state(&account.id, api::accounts::AccountState::Disabled).await.expect("store"));
    assert_eq!(owner.get("/account").await.status, 303);
    assert_eq!(owner.sign_in("reset@example.com", "new-lantern-sky-9").await.status, 403);
    portal.finish().await;
}

#[tokio::test]
async fn with_tls_cookies_are_host_prefixed_and_secure() {
    let portal = Portal::sqlite(|s| s.policy.demo.cookie_secure = true).await;
    let mut b = portal.browser();
    let form = b.get("/account/signup").await;
    let pre = form.set_cookies().join("\n");
    assert!(pre.contains("__Host-dsa_portal_csrf=") && pre.contains("; Secure"), "{pre}");
    let page = b.sign_up("tls@example.com", PASSWORD).await;
    let cookie =
        page.set_cookies().into_iter().find(|c| c.starts_with("__Host-dsa_portal=")).expect("__Host- session cookie");
    assert!(cookie.contains("Path=/") && cookie.contains("Secure") && cookie.contains("HttpOnly"), "{cookie}");
    assert!(!cookie.contains("Domain"), "{cookie}");
    assert_eq!(b.get("/account").await.status, 200);
    portal.finish().await;
}

#[tokio::test]
async fn sign_up_validates_and_keeps_addresses_unique() {
    let portal = Portal::sqlite(|_| {}).await;
    let mut b = portal.browser();
    for (email, password, expected) in [
        ("not-an-address", PASSWORD, "e-mail address such as"),
        ("a@example.com", "short", "at least 10 characters"),
        ("a@example.com", "qwertyuiop", "most common"),
        ("a@example.com", "A@EXAMPLE.COM", "e-mail address as the password"),
    ] {
        let page = b.sign_up(email, password).await;
        assert_eq!(page.status, 400, "{email} {password}");
        assert!(page.body.contains(expected), "{expected}: {}", page.body);
        assert!(page.keys().is_empty());
    }
    assert_eq!(b.sign_up("a@example.com", PASSWORD).await.status, 200);
    let mut c = portal.browser();
    let dup = c.sign_up(" A@Example.com ", PASSWORD).await;
    assert_eq!(dup.status, 409);
    assert!(dup.keys().is_empty());
    assert_eq!(portal.store.list_accounts().await.expect("store").len(), 1);
    portal.finish().await;
}

#[tokio::test]
async fn sessions_end_after_idle_and_absolute_limits() {
    let clock = dsa_tests::harness::app::TestClock::at(time::OffsetDateTime::now_utc());
    let start = time::OffsetDateTime::now_utc();
    let portal = Portal::sqlite_with_clock(
        |s| {
            s.policy.portal.session_idle_secs = 600;
            s.policy.portal.session_absolute_secs = 3_600;
        },
        clock.clock(),
    )
    .await;
    let mut b = portal.browser();
    assert_eq!(b.sign_up("clock@example.com", PASSWORD).await.status, 200);
    // Active every 9 minutes: the idle limit never hits, the absolute one does after an hour.
    for minutes in (9..=54).step_by(9) {
        clock.set(start + time::Duration::minutes(minutes));
        assert_eq!(b.get("/account").await.status, 200, "at +{minutes} min");
    }
    clock.set(start + time::Duration::minutes(61));
    assert_eq!(b.get("/account").await.status, 303, "absolute expiry");
    // Idle: 11 minutes without a request.
    clock.set(start);
    let mut c = portal.browser();
    assert_eq!(c.sign_in("clock@example.com", PASSWORD).await.status, 303);
    clock.set(start + time::Duration::minutes(5));
    assert_eq!(c.get("/account").await.status, 200);
    clock.set(start + time::Duration::minutes(16));
    assert_eq!(c.get("/account").await.status, 303, "idle expiry");
    portal.finish().await;
}

#[tokio::test]
async fn signing_in_without_keys_creates_the_pair_once() {
    let portal = Portal::sqlite(|_| {}).await;
    let hash =
        api::accounts::PasswordParams { memory_kib: 256, iterations: 1, parallelism: 1 }.hash(PASSWORD).expect("hash");
    portal
        .store
        .create_account(api::accounts::NewAccount {
            email: "nokeys@example.com".into(),
            display_name: String::new(),
            password_hash: hash,
            email_verified: true,
        })
        .await
        .expect("store")
        .expect("created");
    let mut b = portal.browser();
    let page = b.sign_in("nokeys@example.com", PASSWORD).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.keys().len(), 2, "embed + server, shown now");
    let again = portal.browser().sign_in("nokeys@example.com", PASSWORD).await;
    assert_eq!(again.status, 303, "the next sign-in shows none");
    assert!(again.keys().is_empty());
    portal.finish().await;
}

/// The portal's store methods, the same assertions on both stores.
async fn store_methods(store: &dyn Store) {
    use api::accounts::{AccountState, NewAccount, SessionRecord};
    let new = |email: &str| NewAccount {
        email: email.into(),
        display_name: "N".into(),
        password_hash: "$argon2id$x".into(),
        email_verified: true,
    };
    let a = store.create_account(new("a@example.com")).await.expect("store").expect("created");
    assert!(store.create_account(new("a@example.com")).await.expect("store").is_none(), "e-mail unique");
    assert_eq!(store.find_account("a@example.com").await.expect("store").expect("by e-mail").id, a.id);
    assert_eq!(store.find_account(&a.id).await.expect("store").expect("by id").email, "a@example.com");
    assert!(store.find_account("b@example.com").await.expect("store").is_none());
    let session = |hash: &str| SessionRecord {
        token_hash: hash.into(),
        account_id: a.id.clone(),
        csrf_token: "c".into(),
        created_at: 100,
        last_seen_at: 100,
    };
    store.create_session(session("s1")).await.expect("store");
    store.touch_session("s1", 150).await.expect("store");
    assert_eq!(store.find_session("s1").await.expect("store").expect("session").last_seen_at, 150);
    store.delete_session("s1").await.expect("store");
    assert!(store.find_session("s1").await.expect("store").is_none());
    let mut stale = session("old");
    stale.created_at = 10;
    stale.last_seen_at = 10;
    store.create_session(stale).await.expect("store");
    assert_eq!(store.purge_sessions(50, 0).await.expect("store"), 1, "only the idle one");
    assert!(store.find_session("old").await.expect("store").is_none());
    store.create_session(session("s2")).await.expect("store");
    assert!(store.set_password(&a.id, "$argon2id$y").await.expect("store"));
    assert!(store.find_session("s2").await.expect("store").is_none(), "a new password ends the sessions");
    store.create_session(session("s3")).await.expect("store");
    assert!(store.set_account_state(&a.id, AccountState::Disabled).await.expect("store"));
    assert!(store.find_session("s3").await.expect("store").is_none(), "disabling ends the sessions");
    assert_eq!(store.find_account(&a.id).await.expect("store").expect("a").state, AccountState::Disabled);
    assert!(!store.set_account_state("nobody", AccountState::Active).await.expect("store"));
    store.create_reset_token("r1", &a.id, 1_000).await.expect("store");
    assert_eq!(store.take_reset_token("r1", 999).await.expect("store"), Some(a.id.clone()));
    assert_eq!(store.take_reset_token("r1", 999).await.expect("store"), None, "once");
    store.create_reset_token("r2", &a.id, 1_000).await.expect("store");
    assert_eq!(store.take_reset_token("r2", 1_000).await.expect("store"), None, "expired");
    assert_eq!(store.list_accounts().await.expect("store").len(), 1);

    // Keys of the account, usage by day, latest charges, roll.
    let key = |hash: &str| api::store::NewKey {
        key_hash: hash.into(),
        kind: api::keys::KeyKind::Embed,
        plan: api::keys::Plan::Free,
        pricing_enabled: false,
        show_purchase_button: false,
        default_commission_percent: None,
        purchase_url: None,
        allowed_origins: Vec::new(),
        label: String::new(),
    };
    let k = store.create_account_key(&a.id, key(&"1".repeat(64))).await.expect("store");
    assert_eq!(k.account_id.as_deref(), Some(a.id.as_str()));
    let operator = store.create_key(key(&"2".repeat(64))).await.expect("store");
    assert_eq!(operator.account_id, None);
    assert_eq!(store.account_keys(&a.id).await.expect("store").len(), 1);
    let event = |day: u8, endpoint: &str, credits: i64| -> common::messages::LedgerEvent {
        serde_json::from_value(serde_json::json!({
            "event_id": uuid::Uuid::now_v7(), "key_id": k.id, "period": "2026-11", "endpoint": endpoint,
            "credits": credits, "charged_at": format!("2026-11-{day:02}T10:00:00Z"),
        }))
        .expect("event")
    };
    let other = serde_json::from_value(serde_json::json!({
        "event_id": uuid::Uuid::now_v7(), "key_id": operator.id, "period": "2026-11", "endpoint": "check",
        "credits": 7, "charged_at": "2026-11-03T10:00:00Z",
    }))
    .expect("event");
    store
        .apply_ledger(vec![
            event(3, "check", 1),
            event(3, "check", 1),
            event(3, "whois", 2),
            event(20, "check", 1),
            other,
        ])
        .await
        .expect("ledger");
    let daily = store.account_daily_usage(&a.id, "2026-11").await.expect("store");
    assert_eq!(
        daily,
        vec![
            ("2026-11-03".to_owned(), "check".to_owned(), 2),
            ("2026-11-03".to_owned(), "whois".to_owned(), 2),
            ("2026-11-20".to_owned(), "check".to_owned(), 1),
        ],
        "only the account's keys"
    );
    let recent = store.recent_charges(&a.id, 2).await.expect("store");
    assert_eq!(recent.len(), 2);
    assert!(recent[0].charged_at.starts_with("2026-11-20"), "{recent:?}");
    assert!(recent.iter().all(|c| c.key_id == k.id));

    // Roll: the new hash finds the key, the old one only until its grace ends.
    let new_hash = "3".repeat(64);
    let future = time::OffsetDateTime::now_utc().unix_timestamp() + 60;
    assert!(store.roll_key(&k.id, &new_hash, future).await.expect("store"));
    assert_eq!(store.find_key(&new_hash).await.expect("store").expect("new").id, k.id);
    assert_eq!(store.find_key(&"1".repeat(64)).await.expect("store").expect("old, in grace").id, k.id);
    let past = time::OffsetDateTime::now_utc().unix_timestamp() - 1;
    let newer = "4".repeat(64);
    assert!(store.roll_key(&k.id, &newer, past).await.expect("store"));
    assert!(store.find_key(&new_hash).await.expect("store").is_none(), "grace over");
    assert!(store.find_key(&"1".repeat(64)).await.expect("store").is_none(), "two rolls back: gone");
    assert_eq!(store.settled_usage(&k.id, "2026-11").await.expect("store"), 5, "usage stays with the key");
}

#[tokio::test]
async fn store_methods_sqlite() {
    let portal = Portal::sqlite(|_| {}).await;
    store_methods(portal.store.as_ref()).await;
    portal.finish().await;
}

#[tokio::test]
async fn store_methods_postgres() {
    let portal = Portal::postgres(|_| {}).await;
    store_methods(portal.store.as_ref()).await;
    portal.finish().await;
}

/// Issue 25: a server key's page lists its webhooks, their latest deliveries, and a disabled
/// webhook with its reason (the owner is told there). The delivery loop is off: the deliveries
/// are made through the store, and the endpoint is never contacted.
#[tokio::test]
async fn the_key_page_lists_webhooks_and_their_deliveries() {
    let portal = Portal::sqlite(|s| s.webhooks.deliver = false).await;
    let mut b = portal.browser();
    let shown = b.sign_up("hooks@example.com", PASSWORD).await;
    let server = shown.keys().into_iter().find(|k| k.starts_with("dsa_server_")).expect("a server key");
    let record = portal.store.find_key(&hash_key(&server)).await.expect("store").expect("key");
    let path = format!("/account/keys/{}", record.id);
    let page = b.get(&path).await;
    assert!(page.body.contains("No webhooks."), "{}", page.body);
    let hook = portal
        .store
        .create_webhook(api::webhooks::NewWebhook {
            key_id: record.id.clone(),
            url: "https://hooks.example.com/dsa".into(),
            event_types: vec!["domain.available".into()],
            description: String::new(),
            secret: api::webhooks::new_secret(),
            now_ms: 1_000,
        })
        .await
        .expect("store")
        .expect("created");
    let page = b.get(&path).await;
    assert!(page.body.contains("hooks.example.com") && page.body.contains("Nothing delivered yet."), "{}", page.body);
    portal
        .store
        .emit_event(api::events::NewEvent {
            id: api::events::event_id(&["portal", &record.id]),
            key_id: record.id.clone(),
            event_type: "domain.available".into(),
            subject: None,
            occurred_at: time::OffsetDateTime::now_utc(),
            data: serde_json::json!({"domain": "example.com"}),
        })
        .await
        .expect("emit");
    assert_eq!(portal.store.fan_out_events(2_000, 10).await.expect("fan out"), 1);
    let claimed = portal.store.claim_deliveries("portal-test", 2_000, 62_000, 10).await.expect("claim");
    assert_eq!(claimed.len(), 1);
    let failed = api::webhooks::AttemptOutcome {
        delivery_id: claimed[0].id.clone(),
        lease_owner: "portal-test".into(),
        attempt: 1,
        at_ms: 2_000,
        status: Some(503),
        error: Some("HTTP 503".into()),
        latency_ms: 12,
        delivered: false,
        next_attempt_ms: Some(7_000),
    };
    let recorded = portal.store.record_attempt(&hook.id, failed, 0).await.expect("record");
    assert!(recorded.disabled_failing_since_ms.is_some());
    let page = b.get(&path).await;
    for text in ["domain.available", "pending", "HTTP 503", "disabled", "Deliveries to this endpoint stopped:"] {
        assert!(page.body.contains(text), "{text}: {}", page.body);
    }
    portal.finish().await;
}

/// Issue 25: a server key's page lists its watches and adds one (the API's path: the fee is
/// charged); an embed key's page offers none; a bad name is refused.
#[tokio::test]
async fn the_key_page_lists_and_adds_watches_sqlite() {
    let portal = Portal::sqlite(|_| {}).await;
    let mut b = portal.browser();
    let shown = b.sign_up("watcher@example.com", PASSWORD).await;
    let keys = shown.keys();
    let (embed, server) = (&keys[0], &keys[1]);
    let record = portal.store.find_key(&hash_key(server)).await.expect("store").expect("key");
    let path = format!("/account/keys/{}", record.id);
    let page = b.get(&path).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("id=\"no-watches\"") && page.body.contains("id=\"add-watch\""), "{}", page.body);
    let csrf = page.csrf();
    let added = b.post(&format!("{path}/watches"), &[("csrf", &csrf), ("domain", "Example.COM")]).await;
    assert_eq!(added.status, 303, "{}", added.body);
    let page = b.get(&path).await;
    assert!(page.body.contains("id=\"watch-list\"") && page.body.contains("<td>example.com</td>"), "{}", page.body);
    assert_eq!(portal.store.count_watches(&record.id).await.expect("count"), 1);
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    let mut usage = Vec::new();
    for _ in 0..100 {
        usage = portal.store.usage_by_endpoint(&record.id, &period).await.expect("usage");
        if !usage.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(usage, vec![("watch".to_owned(), 20)], "the fee, as through the API");
    let bad = b.post(&format!("{path}/watches"), &[("csrf", &csrf), ("domain", "not a domain")]).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let forged = b.post(&format!("{path}/watches"), &[("csrf", "nope"), ("domain", "example.net")]).await;
    assert_eq!(forged.status, 403, "no watch without the form's token");
    let embed_record = portal.store.find_key(&hash_key(embed)).await.expect("store").expect("key");
    let embed_page = b.get(&format!("/account/keys/{}", embed_record.id)).await;
    assert!(!embed_page.body.contains("id=\"add-watch\""), "embed keys hold no watches");
    portal.finish().await;
}

/// Issue 25: from a taken result to a watch in two clicks. A server key's page checks a name (the
/// API's check: one credit); a taken name is offered for watching and the watch is added with
/// the fee; an available name is not offered; an embed key's page cannot check.
#[tokio::test]
async fn a_taken_result_on_the_key_page_becomes_a_watch() {
    let portal = Portal::sqlite(|_| {}).await;
    let mut b = portal.browser();
    let shown = b.sign_up("taken@example.com", PASSWORD).await;
    let keys = shown.keys();
    let server = keys.iter().find(|k| k.starts_with("dsa_server_")).expect("a server key").clone();
    let embed = keys.iter().find(|k| k.starts_with("dsa_embed_")).expect("an embed key").clone();
    let record = portal.store.find_key(&hash_key(&server)).await.expect("store").expect("key");
    let path = format!("/account/keys/{}", record.id);
    let page = b.get(&path).await;
    assert!(page.body.contains("id=\"check-name\""), "{}", page.body);
    let csrf = page.csrf();

    let free = b.post(&format!("{path}/check"), &[("csrf", &csrf), ("domain", "dsa-portal-free-name.com")]).await;
    assert_eq!(free.status, 200, "{}", free.body);
    assert!(free.body.contains("id=\"checked\"") && free.body.contains("is available"), "{}", free.body);
    assert!(!free.body.contains("id=\"watch-checked\""), "nothing to watch: {}", free.body);

    let taken = b.post(&format!("{path}/check"), &[("csrf", &csrf), ("domain", "EXAMPLE.com")]).await;
    assert_eq!(taken.status, 200, "{}", taken.body);
    assert!(taken.body.contains("state-taken") && taken.body.contains("id=\"watch-checked\""), "{}", taken.body);
    assert!(taken.body.contains("name=\"domain\" value=\"example.com\""), "the normalised name: {}", taken.body);
    let added = b.post(&format!("{path}/watches"), &[("csrf", &csrf), ("domain", "example.com")]).await;
    assert_eq!(added.status, 303, "{}", added.body);
    let page = b.get(&path).await;
    assert!(page.body.contains("<td>example.com</td>"), "{}", page.body);
    assert_eq!(portal.store.count_watches(&record.id).await.expect("count"), 1);

    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    let mut usage = Vec::new();
    for _ in 0..100 {
        usage = portal.store.usage_by_endpoint(&record.id, &period).await.expect("usage");
        if usage.len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    usage.sort();
    assert_eq!(
        usage,
        vec![("check".to_owned(), 2), ("watch".to_owned(), 20)],
        "two checks and the fee, as through the API"
    );

    let bad = b.post(&format!("{path}/check"), &[("csrf", &csrf), ("domain", "not a domain")]).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let forged = b.post(&format!("{path}/check"), &[("csrf", "nope"), ("domain", "example.net")]).await;
    assert_eq!(forged.status, 403, "no check without the form's token");
    let embed_id = portal.store.find_key(&hash_key(&embed)).await.expect("store").expect("key").id;
    let refused =
        b.post(&format!("/account/keys/{embed_id}/check"), &[("csrf", &csrf), ("domain", "example.com")]).await;
    assert_eq!(refused.status, 400, "embed keys hold no watches: {}", refused.body);
    portal.finish().await;
}

/// The page of a server key lists the key's bulk jobs (issue 26), read-only; an embed key's page
/// has no such section.
#[tokio::test]
async fn a_server_keys_page_lists_its_bulk_jobs() {
    let portal = Portal::sqlite(|_| {}).await;
    let mut b = portal.browser();
    let shown = b.sign_up("jobs@example.com", PASSWORD).await;
    let keys = shown.keys();
    let server = keys.iter().find(|k| k.starts_with("dsa_server_")).expect("a server key").clone();
    let embed = keys.iter().find(|k| k.starts_with("dsa_embed_")).expect("an embed key").clone();
    let server_id = portal.store.find_key(&hash_key(&server)).await.expect("store").expect("key").id;
    let embed_id = portal.store.find_key(&hash_key(&embed)).await.expect("store").expect("key").id;
    let page = b.get(&format!("/account/keys/{server_id}")).await;
    assert!(page.body.contains("Bulk jobs") && page.body.contains("No bulk job yet."), "{}", page.body);
    let submitted = reqwest::Client::new()
        .post(format!("{}/v1/jobs/bulk-check?client_key={server}", portal.base))
        .header("content-type", "text/plain")
        .body("example.com\ndsa-portal-job.com\n")
        .send()
        .await
        .expect("submit");
    assert_eq!(submitted.status().as_u16(), 202);
    let page = b.get(&format!("/account/keys/{server_id}")).await;
    assert!(page.body.contains("id=\"jobs\"") && page.body.contains(" / 2</td>"), "{}", page.body);
    let page = b.get(&format!("/account/keys/{embed_id}")).await;
    assert!(!page.body.contains("Bulk jobs"), "{}", page.body);
    portal.finish().await;
}
