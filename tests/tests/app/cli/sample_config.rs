//! The sample configuration lists valid knobs with their defaults.

use api::config::Settings;
use dsa_tests::harness::ScratchDir;
use dsa_tests::harness::binary::dsa_binary;

#[test]
fn sample_config_parses_and_matches_the_defaults() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../dsa.sample.toml");
    let settings = Settings::load(Some(std::path::Path::new(path))).expect("sample config loads");
    assert_eq!(settings, Settings::default(), "dsa.sample.toml must state the defaults");
}

#[test]
fn a_bad_setting_is_named() {
    let dir = ScratchDir::new("dsa-config");
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[engine.whois]\nmax_bytes = \"lots\"\n").expect("write");
    let err = Settings::load(Some(&path)).expect_err("must fail").to_string();
    assert!(err.contains("max_bytes"), "{err}");
    std::fs::write(&path, "[server]\nlisten_on = \"x\"\n").expect("write");
    let err = Settings::load(Some(&path)).expect_err("must fail").to_string();
    assert!(err.contains("listen_on"), "{err}");
}

#[test]
fn environment_overrides_and_unrelated_variables() {
    // SAFETY-free: set_var is safe to call in a single-threaded test of its own process section;
    // these names are used by this test only.
    let dir = ScratchDir::new("dsa-config-env");
    let path = dir.join("empty.toml");
    std::fs::write(&path, "").expect("write");
    // DSA_LOG and friends are not settings and must not break loading.
    let figment_check = std::process::Command::new(dsa_binary())
        .args(["--config", path.to_str().expect("utf-8"), "keys", "list"])
        .env("DSA_LOG", "warn")
        .env("DSA_LOG_FORMAT", "json")
        .env("DSA_TEST_DATA", "/nowhere")
        .env("DSA_DATABASE__URL", format!("sqlite://{}?mode=rwc", dir.join("k.db").display()))
        .output()
        .expect("run dsa");
    assert!(figment_check.status.success(), "{}", String::from_utf8_lossy(&figment_check.stderr));
}

#[test]
fn credentials_never_show_in_debug_output_or_errors() {
    let dir = ScratchDir::new("dsa-config-secret");
    let path = dir.join("secret.toml");
    let file = "[database]\nurl = \"postgres://dsa:db-pa55word@db.internal/dsa\"\n\n\
                [fleet]\nnats_url = \"nats://dsa-front:nats-pa55word@nats.internal:4222\"\n\n\
                [policy.demo]\ncookie_secret = \"cookie-pa55word\"\n";
    std::fs::write(&path, file).expect("write");
    let settings = Settings::load(Some(&path)).expect("loads");
    assert_eq!(settings.fleet.nats_url.expose(), "nats://dsa-front:nats-pa55word@nats.internal:4222");
    assert_eq!(settings.policy.demo.cookie_secret.as_ref().map(|s| s.expose()), Some("cookie-pa55word"));
    let debug = format!("{settings:?} {settings:#?}");
    for secret in ["db-pa55word", "nats-pa55word", "cookie-pa55word"] {
        assert!(!debug.contains(secret), "{secret} shown in Debug output");
    }
    assert!(debug.contains("postgres://dsa:***@db.internal/dsa"), "the URL itself stays readable");

    // A bad setting next to the credentials: the error names the setting, not the credentials.
    std::fs::write(&path, format!("{file}\n[server]\nlisten_on = \"x\"\n")).expect("write");
    let err = Settings::load(Some(&path)).expect_err("must fail");
    let text = format!("{err} {err:?} {err:#}");
    assert!(text.contains("listen_on"), "{text}");
    for secret in ["db-pa55word", "nats-pa55word", "cookie-pa55word"] {
        assert!(!text.contains(secret), "{secret} shown in a config error: {text}");
    }

    // A database that cannot be opened: the error shows the URL without its password.
    let settings = Settings {
        database: api::config::DatabaseConfig {
            url: "sqlite://dsa:db-pa55word@localhost/nonexistent/dir/dsa.db".into(),
            max_connections: 1,
        },
        ..Settings::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let err = runtime.block_on(api::standalone(&settings)).err().expect("cannot open");
    let text = format!("{err:#}");
    assert!(!text.contains("db-pa55word"), "{text}");
}
