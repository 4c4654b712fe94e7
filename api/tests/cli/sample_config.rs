//! The sample configuration lists valid knobs with their defaults.

use api::config::Settings;

#[test]
fn sample_config_parses_and_matches_the_defaults() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../dsa.sample.toml");
    let settings = Settings::load(Some(std::path::Path::new(path))).expect("sample config loads");
    assert_eq!(settings, Settings::default(), "dsa.sample.toml must state the defaults");
}

#[test]
fn a_bad_setting_is_named() {
    let dir = std::env::temp_dir().join(format!("dsa-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
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
    let dir = std::env::temp_dir().join(format!("dsa-config-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("empty.toml");
    std::fs::write(&path, "").expect("write");
    // DSA_LOG and friends are not settings and must not break loading.
    let figment_check = std::process::Command::new(env!("CARGO_BIN_EXE_dsa"))
        .args(["--config", path.to_str().expect("utf-8"), "keys", "list"])
        .env("DSA_LOG", "warn")
        .env("DSA_LOG_FORMAT", "json")
        .env("DSA_SHARED_DATA", "/nowhere")
        .env("DSA_DATABASE__URL", format!("sqlite://{}?mode=rwc", dir.join("k.db").display()))
        .output()
        .expect("run dsa");
    assert!(figment_check.status.success(), "{}", String::from_utf8_lossy(&figment_check.stderr));
}
