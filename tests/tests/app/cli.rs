//! The operator commands (`dsa keys …`, `dsa usage`, `dsa accounts …`) end to end: the real `dsa`
//! binary ([`dsa_binary`]) against a fresh SQLite file per test, configured the way an operator
//! does it (`DSA_DATABASE__URL`, or a `--config` file).
//!
//! With everything else that runs the real binary or loads its configuration: [`check`] (`dsa
//! check` against the simulator), [`sample_config`] (`dsa.sample.toml`), [`tls`] (`dsa serve`
//! over HTTPS), [`memory`] (the binary's allocator) and [`stop`] (`dsa serve` stopped by SIGTERM).

mod check;
mod memory;
mod sample_config;
mod stop;
mod tls;

use std::path::PathBuf;
use std::process::{Command, Output};

use api::store::{SqliteStore, Store};
use common::messages::{LedgerEvent, billing_period};
use dsa_tests::harness::binary::dsa_binary;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// A scratch directory holding one test's database; removed when the test ends.
struct Db {
    dir: PathBuf,
}

/// What one run of `dsa` printed.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Db {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("dsa-cli-{}", Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("create the test directory");
        Self { dir }
    }

    fn url(&self) -> String {
        format!("sqlite://{}?mode=rwc", self.dir.join("dsa.db").display())
    }

    /// Runs `dsa args…` in the scratch directory with only this test's configuration: other
    /// `DSA_…` variables of the environment (CI sets some) are removed.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(dsa_binary());
        cmd.args(args).current_dir(&self.dir);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("DSA_") {
                cmd.env_remove(name);
            }
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        let output = self.command(args).env("DSA_DATABASE__URL", self.url()).output().expect("run dsa");
        Run::from(output)
    }

    /// Runs a command that must succeed; returns its standard output.
    fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(run.ok, "dsa {args:?} failed:\n{}", run.stderr);
        run.stdout
    }

    /// Runs a command that must fail; returns its standard error.
    fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(!run.ok, "dsa {args:?} succeeded:\n{}", run.stdout);
        assert!(run.stdout.is_empty(), "dsa {args:?} printed on stdout while failing:\n{}", run.stdout);
        run.stderr
    }

    /// Runs a command that must succeed and print JSON.
    fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("dsa {args:?} printed no JSON ({e}):\n{out}"))
    }

    /// Creates a key; returns the key and its record (`keys create --json`).
    fn create(&self, args: &[&str]) -> (String, Value) {
        let mut all = vec!["keys", "create", "--json"];
        all.extend_from_slice(args);
        let mut record = self.json(&all);
        let key = record["key"].as_str().expect("the key").to_owned();
        record.as_object_mut().expect("an object").remove("key");
        (key, record)
    }

    fn show(&self, key: &str) -> Value {
        self.json(&["keys", "show", key, "--json"])
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Self {
            ok: output.status.success(),
            stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
            stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
        }
    }
}

fn str_of<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_else(|| panic!("no string {field} in {value}"))
}

/// The fields of a key in JSON output: stable, and never the key or its hash.
const KEY_FIELDS: [&str; 14] = [
    "account_id",
    "allowed_origins",
    "created_at",
    "default_commission_percent",
    "fingerprint",
    "id",
    "kind",
    "label",
    "monthly_allowance",
    "plan",
    "pricing_enabled",
    "purchase_url",
    "show_purchase_button",
    "state",
];

fn assert_key_fields(record: &Value) {
    let mut fields: Vec<&str> = record.as_object().expect("an object").keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, KEY_FIELDS, "{record}");
}

/// Logs written anywhere but a terminal (a file, a pipe, the journal) are plain text: no ANSI
/// escape codes around levels and field names.
#[test]
fn logs_to_a_pipe_carry_no_colour_codes() {
    let db = Db::new();
    let output = db.command(&["keys", "list"]).env("DSA_DATABASE__URL", db.url()).env("DSA_LOG", "debug").output();
    let run = Run::from(output.expect("run dsa"));
    assert!(run.ok, "dsa keys list failed:\n{}", run.stderr);
    assert!(run.stderr.contains("DEBUG"), "no debug log line on standard error:\n{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}'), "ANSI escape codes in a piped log:\n{}", run.stderr);
}

#[test]
fn create_prints_the_key_once_with_its_kind_prefix() {
    let db = Db::new();

    let run = db.run(&["keys", "create", "--kind", "embed", "--plan", "starter", "--origin", "https://Shop.Example/"]);
    assert!(run.ok, "{}", run.stderr);
    let key = run.stdout.trim();
    assert_eq!(run.stdout.lines().count(), 1, "only the key on stdout: {}", run.stdout);
    assert!(key.starts_with("dsa_embed_") && key.len() == 42, "{key}");
    let fingerprint = &api::keys::hash_key(key)[..8];
    assert!(
        run.stderr.contains(&format!("created embed key {fingerprint} (starter plan, 5000 credits a month)")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(key), "the key is printed once, on stdout");

    let server = db.ok(&["keys", "create", "--label", "backend"]);
    assert!(server.trim().starts_with("dsa_server_"), "server is the default kind: {server}");

    let record = db.show(key);
    assert_eq!(str_of(&record, "kind"), "embed");
    assert_eq!(str_of(&record, "plan"), "starter");
    assert_eq!(record["monthly_allowance"], 5000);
    assert_eq!(record["allowed_origins"], serde_json::json!(["https://shop.example"]), "origins are stored normalised");
    assert_eq!(str_of(&record, "state"), "active");

    let (key, record) = db.create(&[
        "--kind",
        "embed",
        "--plan",
        "Reseller",
        "--pricing",
        "--purchase-button",
        "--commission",
        "15",
        "--purchase-url",
        "https://shop.example/buy?ref=1",
        "--label",
        "shop",
    ]);
    assert!(key.starts_with("dsa_embed_"));
    assert_key_fields(&record);
    assert_eq!(record["monthly_allowance"], 50_000);
    assert_eq!(record["pricing_enabled"], true);
    assert_eq!(record["show_purchase_button"], true);
    assert_eq!(record["default_commission_percent"], 15.0);
    assert_eq!(str_of(&record, "purchase_url"), "https://shop.example/buy?ref=1");
    assert_eq!(str_of(&record, "label"), "shop");
}

#[test]
fn list_prints_a_table_and_json_without_keys_or_hashes() {
    let db = Db::new();
    let empty = db.run(&["keys", "list"]);
    assert!(empty.ok && empty.stderr.contains("no keys yet"), "{}", empty.stderr);
    assert_eq!(db.json(&["keys", "list", "--json"]), serde_json::json!([]));

    let (embed, embed_record) = db.create(&["--kind", "embed", "--label", "widget on shop.example"]);
    let (server, server_record) = db.create(&["--plan", "pro", "--label", "backend"]);

    let table = db.ok(&["keys", "list"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    for column in ["key", "kind", "state", "plan", "allowance", "created", "label"] {
        assert!(lines[0].contains(column), "header {column}: {table}");
    }
    assert!(lines[1].starts_with(str_of(&embed_record, "fingerprint")), "oldest first: {table}");
    assert!(
        lines[1].contains("embed") && lines[1].contains("active") && lines[1].contains("widget on shop.example"),
        "{table}"
    );
    assert!(lines[2].contains("server") && lines[2].contains("pro") && lines[2].contains("25000"), "{table}");

    // `--json` also works before the subcommand: it is a flag of `dsa keys`.
    let listed = db.json(&["keys", "--json", "list"]);
    let listed = listed.as_array().expect("an array");
    assert_eq!(listed, &vec![embed_record, server_record]);
    listed.iter().for_each(assert_key_fields);

    let all = format!("{table}{}", serde_json::to_string(listed).expect("JSON"));
    for key in [&embed, &server] {
        assert!(!all.contains(key.as_str()), "a key was printed");
        assert!(!all.contains(&api::keys::hash_key(key)), "a key hash was printed");
    }
}

#[test]
fn show_accepts_the_id_the_fingerprint_and_the_full_key() {
    let db = Db::new();
    let (key, record) = db.create(&["--kind", "embed", "--origin", "https://*.example.com", "--label", "blog"]);
    let (id, fingerprint) = (str_of(&record, "id"), str_of(&record, "fingerprint"));
    assert_eq!(fingerprint, &api::keys::hash_key(&key)[..8]);

    for reference in [id, fingerprint, &fingerprint.to_ascii_uppercase(), key.as_str()] {
        let shown = db.show(reference);
        assert_eq!(str_of(&shown, "id"), id, "by {reference}");
        assert_eq!(
            shown["usage"],
            serde_json::json!({ "period": billing_period(OffsetDateTime::now_utc()), "used": 0, "remaining": 500, "by_endpoint": {} })
        );
    }

    let text = db.ok(&["keys", "show", fingerprint]);
    for expected in [
        fingerprint,
        id,
        "embed",
        "active",
        "free",
        "500 credits",
        "https://*.example.com",
        "blog",
        "default commission  none",
        "usage of",
        "remaining",
        "no charges",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    assert!(!text.contains(&key));
}

#[test]
fn set_changes_plan_allowance_and_settings() {
    let db = Db::new();
    let (_, record) = db.create(&["--kind", "embed"]);
    let fingerprint = str_of(&record, "fingerprint");

    let out = db.ok(&["keys", "set", fingerprint, "--plan", "pro"]);
    assert!(out.contains("plan \"free\" → \"pro\"") && out.contains("monthly_allowance 500 → 25000"), "{out}");
    assert_eq!(db.show(fingerprint)["monthly_allowance"], 25_000);
    let changed = db.json(&["keys", "set", fingerprint, "--plan", "starter", "--json"]);
    assert_eq!((str_of(&changed, "plan"), &changed["monthly_allowance"]), ("starter", &Value::from(5000)));
    assert_key_fields(&changed);

    db.ok(&[
        "keys",
        "set",
        fingerprint,
        "--pricing",
        "on",
        "--purchase-button",
        "on",
        "--commission",
        "12.5",
        "--purchase-url",
        "https://shop.example/buy",
        "--label",
        "renamed",
    ]);
    let shown = db.show(fingerprint);
    assert_eq!(shown["pricing_enabled"], true);
    assert_eq!(shown["show_purchase_button"], true);
    assert_eq!(shown["default_commission_percent"], 12.5);
    assert_eq!(str_of(&shown, "purchase_url"), "https://shop.example/buy");
    assert_eq!(str_of(&shown, "label"), "renamed");
    assert_eq!(str_of(&shown, "plan"), "starter", "what was not named is kept");

    db.ok(&["keys", "set", fingerprint, "--pricing", "off", "--commission", "none", "--purchase-url", "none"]);
    let shown = db.show(fingerprint);
    assert_eq!(shown["pricing_enabled"], false);
    assert_eq!(shown["show_purchase_button"], true);
    assert_eq!(shown["default_commission_percent"], Value::Null);
    assert_eq!(shown["purchase_url"], Value::Null);
    assert_eq!(str_of(&shown, "label"), "renamed");

    let unchanged = db.ok(&["keys", "set", fingerprint, "--label", "renamed"]);
    assert!(unchanged.contains("no change"), "{unchanged}");
    let nothing = db.fails(&["keys", "set", fingerprint]);
    assert!(nothing.contains("nothing to change"), "{nothing}");
}

#[test]
fn set_adds_removes_and_clears_origins_and_refuses_bad_ones() {
    let db = Db::new();
    let (_, record) = db.create(&["--kind", "embed", "--origin", "https://shop.example"]);
    let id = str_of(&record, "id");
    let origins = |db: &Db| db.show(id)["allowed_origins"].clone();

    db.ok(&[
        "keys",
        "set",
        id,
        "--origin",
        "https://*.Blog.Example:443/",
        "--origin",
        "http://localhost:3000",
        "--origin",
        "https://SHOP.example",
    ]);
    assert_eq!(
        origins(&db),
        serde_json::json!(["https://shop.example", "https://*.blog.example", "http://localhost:3000"])
    );

    db.ok(&["keys", "set", id, "--remove-origin", "http://localhost:3000"]);
    assert_eq!(origins(&db), serde_json::json!(["https://shop.example", "https://*.blog.example"]));

    let err = db.fails(&["keys", "set", id, "--remove-origin", "https://other.example"]);
    assert!(err.contains("--remove-origin https://other.example: not in the key's allowed origins"), "{err}");

    db.ok(&["keys", "set", id, "--clear-origins", "--origin", "https://new.example"]);
    assert_eq!(origins(&db), serde_json::json!(["https://new.example"]));
    db.ok(&["keys", "set", id, "--clear-origins"]);
    assert_eq!(origins(&db), serde_json::json!([]));

    for (bad, why) in [
        ("https://shop.example/checkout", "an origin has no path"),
        ("shop.example", "missing scheme"),
        ("ftp://shop.example", "http or https"),
        ("https://shop.example:99999", "port"),
        ("https://*.com", "not a whole TLD"),
        ("https://*.co.uk", "co.uk, a public suffix"),
    ] {
        let err = db.fails(&["keys", "set", id, "--origin", bad]);
        assert!(err.contains("--origin") && err.contains(why), "{bad}: {err}");
        let err = db.fails(&["keys", "create", "--kind", "embed", "--origin", bad]);
        assert!(err.contains("--origin") && err.contains(why), "{bad}: {err}");
    }
    assert_eq!(origins(&db), serde_json::json!([]), "a refused change changes nothing");
    assert_eq!(
        db.json(&["keys", "list", "--json"]).as_array().map(Vec::len),
        Some(1),
        "a refused create creates nothing"
    );
}

#[test]
fn disable_suspend_and_enable_change_the_state() {
    let db = Db::new();
    let (key, record) = db.create(&[]);
    let (id, fingerprint) = (str_of(&record, "id"), str_of(&record, "fingerprint"));
    let state = |db: &Db| str_of(&db.show(id), "state").to_owned();

    let out = db.ok(&["keys", "disable", fingerprint]);
    assert!(out.starts_with(&format!("{fingerprint}: active → disabled")), "{out}");
    assert_eq!(state(&db), "disabled");

    let suspended = db.json(&["keys", "suspend", id, "--json"]);
    assert_eq!(str_of(&suspended, "state"), "suspended");
    assert_key_fields(&suspended);
    assert_eq!(state(&db), "suspended");

    let out = db.ok(&["keys", "enable", &key]);
    assert!(out.contains("suspended → active"), "{out}");
    assert!(!out.contains(&key), "the key is not echoed: {out}");
    assert_eq!(state(&db), "active");

    let table = db.ok(&["keys", "list"]);
    assert!(table.contains("active"), "{table}");
}

#[test]
fn usage_reports_used_remaining_and_credits_by_endpoint() {
    let db = Db::new();
    let (_, record) = db.create(&["--kind", "embed"]);
    let (id, fingerprint) = (str_of(&record, "id").to_owned(), str_of(&record, "fingerprint"));
    let now = OffsetDateTime::now_utc();
    let period = billing_period(now);
    // Built from its JSON form, as the ledger consumer receives it: fields this test does not
    // care about keep their defaults.
    let charged_at = now.format(&time::format_description::well_known::Rfc3339).expect("a timestamp");
    let event = |endpoint: &str, credits: i64, period: &str| -> LedgerEvent {
        serde_json::from_value(serde_json::json!({
            "event_id": Uuid::now_v7(), "key_id": id, "period": period, "endpoint": endpoint,
            "credits": credits, "charged_at": charged_at,
        }))
        .expect("a ledger event")
    };
    let mut events = vec![
        event("check", 1, &period),
        event("check", 1, &period),
        event("check", 1, &period),
        event("whois", 2, &period),
        event("whois", 2, &period),
        event("suggest", 5, "2000-01"),
    ];
    events.push(events[0].clone()); // applied twice: counted once
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let applied = runtime.block_on(async {
        let store = SqliteStore::connect(&db.url(), 1).await.expect("open the database");
        store.migrate().await.expect("migrate");
        store.apply_ledger(events).await.expect("apply the ledger")
    });
    assert_eq!(applied, 6);

    let usage = db.json(&["usage", fingerprint, "--json"]);
    assert_eq!(
        usage,
        serde_json::json!({
            "id": id, "fingerprint": fingerprint, "period": period, "monthly_allowance": 500,
            "used": 7, "remaining": 493, "by_endpoint": { "check": 3, "whois": 4 },
        })
    );
    assert_eq!(db.show(fingerprint)["usage"]["used"], 7);

    let past = db.json(&["usage", &id, "--period", "2000-01", "--json"]);
    assert_eq!((&past["used"], &past["by_endpoint"]), (&Value::from(5), &serde_json::json!({ "suggest": 5 })));
    let empty = db.json(&["usage", &id, "--period", "2001-02", "--json"]);
    assert_eq!((&empty["used"], &empty["remaining"]), (&Value::from(0), &Value::from(500)));

    let text = db.ok(&["usage", fingerprint]);
    for expected in
        [&format!("usage of {fingerprint} in {period}"), "used", "7", "remaining", "493", "check", "3", "whois", "4"]
    {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }

    // Remaining never goes below zero.
    let runtime_events = (0..3).map(|_| event("suggest", 200, &period)).collect();
    runtime.block_on(async {
        let store = SqliteStore::connect(&db.url(), 1).await.expect("open the database");
        store.apply_ledger(runtime_events).await.expect("apply the ledger");
    });
    let over = db.json(&["usage", fingerprint, "--json"]);
    assert_eq!((&over["used"], &over["remaining"]), (&Value::from(607), &Value::from(0)));

    for bad in ["2026-13", "2026-7", "July", "26-07"] {
        let err = db.fails(&["usage", fingerprint, "--period", bad]);
        assert!(err.contains("--period") && err.contains("YYYY-MM"), "{bad}: {err}");
    }
}

#[test]
fn bad_input_fails_with_a_message_naming_it() {
    let db = Db::new();
    let (_, record) = db.create(&[]);
    let fingerprint = str_of(&record, "fingerprint");

    for command in [&["keys", "show"][..], &["keys", "disable"], &["keys", "set"], &["usage"]] {
        let mut args = command.to_vec();
        args.push("deadbeef");
        if command == ["keys", "set"] {
            args.extend(["--label", "x"]);
        }
        let err = db.fails(&args);
        assert!(err.contains("no key with id or fingerprint \"deadbeef\""), "{args:?}: {err}");
    }

    let unknown = "dsa_server_0000000000000000000000000000ABCD";
    let err = db.fails(&["keys", "show", unknown]);
    assert!(err.contains("no key matches the full key given"), "{err}");
    assert!(!err.contains(unknown), "a key is never echoed: {err}");

    let err = db.fails(&["keys", "create", "--plan", "gold"]);
    assert!(err.contains("--plan") && err.contains("unknown plan \"gold\""), "{err}");
    let err = db.fails(&["keys", "set", fingerprint, "--plan", "gold"]);
    assert!(err.contains("--plan") && err.contains("unknown plan \"gold\""), "{err}");
    let err = db.fails(&["keys", "create", "--kind", "browser"]);
    assert!(err.contains("--kind") && err.contains("embed or server"), "{err}");
    for bad in ["-5", "1001", "ten", "NaN"] {
        let err = db.fails(&["keys", "set", fingerprint, &format!("--commission={bad}")]);
        assert!(err.contains("--commission") && err.contains("0 to 1000"), "{bad}: {err}");
    }
    let err = db.fails(&["keys", "create", "--commission", "1001"]);
    assert!(err.contains("--commission") && err.contains("0 to 1000"), "{err}");
    for bad in ["javascript:alert(1)", "/relative", "https://user:pw@shop.example/"] {
        let err = db.fails(&["keys", "set", fingerprint, "--purchase-url", bad]);
        assert!(err.contains("--purchase-url") && err.contains("absolute http(s) URL"), "{bad}: {err}");
        let err = db.fails(&["keys", "create", "--purchase-url", bad]);
        assert!(err.contains("--purchase-url"), "{bad}: {err}");
    }
    let err = db.fails(&["keys", "set", fingerprint, "--pricing", "maybe"]);
    assert!(err.contains("--pricing") && err.contains("on or off"), "{err}");

    assert_eq!(db.json(&["keys", "list", "--json"]).as_array().map(Vec::len), Some(1), "nothing was created");
    let shown = db.show(fingerprint);
    assert_eq!((str_of(&shown, "plan"), str_of(&shown, "state")), ("free", "active"), "nothing was changed");
}

#[test]
fn the_config_file_names_the_database_as_for_serve() {
    let db = Db::new();
    let config = db.dir.join("dsa-test.toml");
    std::fs::write(&config, format!("[database]\nurl = {:?}\n", db.url())).expect("write the config");
    let config = config.to_str().expect("a UTF-8 path");

    let created =
        db.command(&["--config", config, "keys", "create", "--label", "from config"]).output().expect("run dsa");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let listed = db.command(&["keys", "list", "--json"]).env("DSA_CONFIG", config).output().expect("run dsa");
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let listed: Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    assert_eq!(listed[0]["label"], "from config");
    assert_eq!(db.json(&["keys", "list", "--json"]), listed, "DSA_DATABASE__URL names the same file");

    let missing = db.command(&["--config", "no-such.toml", "keys", "list"]).output().expect("run dsa");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no-such.toml"));
}

#[test]
fn accounts_list_show_disable_enable_and_reset_link() {
    let db = Db::new();
    let (operator_key, _) = db.create(&["--kind", "server", "--label", "operator key"]);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let account = runtime.block_on(async {
        let store = SqliteStore::connect(&db.url(), 1).await.expect("open the database");
        store.migrate().await.expect("migrate");
        let hash = api::accounts::PasswordParams { memory_kib: 64, iterations: 1, parallelism: 1 }
            .hash("violet-harbour-42")
            .expect("hash");
        let account = store
            .create_account(api::accounts::NewAccount {
                email: "owner@example.com".into(),
                display_name: "Owner".into(),
                password_hash: hash.clone(),
                email_verified: true,
            })
            .await
            .expect("store")
            .expect("created");
        let (_, key_hash) = api::keys::generate(api::keys::KeyKind::Embed);
        store
            .create_account_key(
                &account.id,
                api::store::NewKey {
                    key_hash,
                    kind: api::keys::KeyKind::Embed,
                    plan: api::keys::Plan::Free,
                    pricing_enabled: false,
                    show_purchase_button: false,
                    default_commission_percent: None,
                    purchase_url: None,
                    allowed_origins: Vec::new(),
                    label: "portal key".into(),
                },
            )
            .await
            .expect("key");
        account
    });

    let list = db.ok(&["accounts", "list"]);
    assert!(list.contains("owner@example.com") && list.contains("active") && list.contains(&account.id), "{list}");
    let json = db.json(&["accounts", "list", "--json"]);
    assert_eq!(json[0]["email"], "owner@example.com");
    assert_eq!(json[0]["keys"], 1);
    assert!(json[0].get("password_hash").is_none(), "never the password hash: {json}");
    let show = db.json(&["accounts", "show", "OWNER@example.com", "--json"]);
    assert_eq!(show["id"], account.id.as_str());
    assert_eq!(show["keys"][0]["label"], "portal key");
    assert_eq!(show["keys"][0]["usage"]["used"], 0);

    // `dsa keys list` names each key's owner ("-": an operator key).
    let keys = db.ok(&["keys", "list"]);
    let line =
        |label: &str| keys.lines().find(|l| l.ends_with(label)).unwrap_or_else(|| panic!("{label}: {keys}")).to_owned();
    assert!(line("portal key").contains("owner@example.com"), "{keys}");
    assert!(line("operator key").contains(" - "), "{keys}");
    let _ = operator_key;

    // A reset link: printed once, on this server's portal.
    let link = db.ok(&["accounts", "reset-link", "owner@example.com"]);
    assert!(link.trim().starts_with("http://127.0.0.1:8080/account/reset?token="), "{link}");
    let other = db.ok(&["accounts", "reset-link", &account.id]);
    assert_ne!(link, other, "a new token each time");

    db.ok(&["accounts", "disable", "owner@example.com"]);
    assert_eq!(db.json(&["accounts", "show", &account.id, "--json"])["state"], "disabled");
    db.ok(&["accounts", "enable", "owner@example.com"]);
    assert_eq!(db.json(&["accounts", "show", &account.id, "--json"])["state"], "active");
    let err = db.fails(&["accounts", "show", "nobody@example.com"]);
    assert!(err.contains("no account"), "{err}");
}

/// The catalogue's inputs: the repository's `tests/data` (`DSA_TEST_DATA`).
fn test_data() -> PathBuf {
    let dir = PathBuf::from(env!("DSA_TEST_DATA"));
    assert!(dir.join("iana/rdap/dns.json").is_file(), "the data set is missing at {}", dir.display());
    dir
}

/// Issue 14: `dsa tlds refresh` rebuilds the catalogue from the inputs it is given and reports
/// what changed: the shipped inputs give the shipped file and no change; an RDAP bootstrap whose
/// base URL moved shows the suffixes whose `rdap` changed, and `--check` fails on it.
#[test]
fn tlds_refresh_rebuilds_the_catalogue_and_reports_changes() {
    use catalogue_build::paths;
    let db = Db::new();
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../common/data/tld-catalogue.json"))
        .expect("shipped catalogue");
    let out = db.dir.join("catalogue.json");
    let data = test_data();
    let stdout = db.ok(&[
        "tlds",
        "refresh",
        "--data-dir",
        &data.display().to_string(),
        "--out",
        &out.display().to_string(),
        "--check",
    ]);
    assert!(stdout.contains("added       0") && stdout.contains("changed     0"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&out).expect("written"), shipped, "the shipped inputs give the shipped file");

    // The same inputs with Google's RDAP service moved.
    let moved = db.dir.join("inputs");
    for rel in [
        paths::IANA_TLDS,
        paths::RDAP_BOOTSTRAP,
        paths::ZONEDB,
        paths::PHP_WHOIS,
        paths::PUBLIC_SUFFIX_LIST,
        paths::PROVENANCE,
    ] {
        let target = moved.join(rel);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        let mut text = std::fs::read_to_string(data.join(rel)).expect("input");
        if rel == paths::RDAP_BOOTSTRAP {
            text = text.replace("https://pubapi.registry.google/rdap/", "https://rdap.registry.example/rdap/");
        }
        std::fs::write(&target, text).expect("write input");
    }
    let run = db.run(&["tlds", "refresh", "--data-dir", &moved.display().to_string(), "--json", "--check"]);
    assert!(!run.ok, "--check fails when something changed");
    let report: Value = serde_json::from_str(&run.stdout).expect("json report");
    assert_eq!(report["added"], serde_json::json!([]));
    assert_eq!(report["removed"], serde_json::json!([]));
    assert_eq!(report["changed"]["dev"], serde_json::json!(["rdap"]), "{report}");
    assert_eq!(report["changed"]["app"], serde_json::json!(["rdap"]), "{report}");
    assert!(report["changed"].get("com").is_none(), "{report}");
    let _ = std::fs::remove_dir_all(&db.dir);
}
