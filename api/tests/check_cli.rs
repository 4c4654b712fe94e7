//! `dsa check` against the registry simulator: the real binary gives the scenario's truth for
//! every name in the demo scenario.

use std::process::Command;

use dsa_tests::sim::{Knobs, Scenario, Simulator, Truth};

#[tokio::test(flavor = "multi_thread")]
async fn dsa_check_gives_the_scenario_truth_for_every_name() {
    let sim = Simulator::start(Scenario::demo()).await.expect("simulator");
    sim.set_knobs(Knobs::default());
    let dir = std::env::temp_dir().join(format!("dsa-check-cli-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("dsa-sim.toml");
    // Generous WHOIS politeness: the binary checks two dozen names back to back.
    let extra = "\n[engine.limits.whois]\nper_second = 50.0\nburst = 50\nconcurrency = 4\n";
    std::fs::write(&config, format!("{}{extra}", sim.engine_config_toml())).expect("write config");
    let names: Vec<(String, Truth)> = sim.scenario().domains().map(|(n, t)| (n.to_owned(), t)).collect();
    let mut args = vec!["--config".to_owned(), config.display().to_string(), "check".into(), "--json".into()];
    args.extend(names.iter().map(|(n, _)| n.clone()));
    let bin = env!("CARGO_BIN_EXE_dsa");
    let output = tokio::task::spawn_blocking(move || Command::new(bin).args(&args).env_remove("DSA_CONFIG").output())
        .await
        .expect("join")
        .expect("run dsa check");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "exit {:?}\n{stdout}\n{}", output.status, String::from_utf8_lossy(&output.stderr));
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert_eq!(lines.len(), names.len());
    for ((name, truth), line) in names.iter().zip(&lines) {
        let expected = match truth {
            Truth::Registered | Truth::Held => "taken",
            Truth::Available => "available",
            Truth::PendingDelete => "pending_delete",
            Truth::Reserved => "reserved",
        };
        assert_eq!(line["verdict"]["domain"], name.as_str(), "{line}");
        assert_eq!(line["verdict"]["status"], expected, "{name}: {line}");
        assert!(line["steps"].as_array().is_some_and(|s| !s.is_empty()), "evidence trail: {line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
