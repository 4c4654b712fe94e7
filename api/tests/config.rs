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
