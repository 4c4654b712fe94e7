//! `dsa check` against the registry simulator: the real binary gives the scenario's truth for
//! every name in the demo scenario.

use std::process::Command;

use dsa_tests::harness::binary::dsa_binary;
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
    let bin = dsa_binary();
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

/// `dsa check --file` (a file and standard input) runs the checks concurrently: eight names whose
/// registry answers in 400 ms each take about one answer's time, not eight, and the results come
/// out in input order.
#[tokio::test(flavor = "multi_thread")]
async fn dsa_check_reads_a_file_or_stdin_and_checks_concurrently() {
    use std::io::Write as _;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let sim = Simulator::start(Scenario::demo()).await.expect("simulator");
    sim.set_knobs(Knobs {
        latency_ms: dsa_tests::sim::Latency { rdap: 400, ..Default::default() },
        ..Knobs::default()
    });
    let dir = std::env::temp_dir().join(format!("dsa-check-cli-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("dsa-sim.toml");
    std::fs::write(&config, sim.engine_config_toml()).expect("write config");
    // Available names under RDAP registries: each needs one slow RDAP answer.
    let names: Vec<String> = (0..8).map(|i| format!("cli-bulk-{i}.{}", ["com", "org"][i % 2])).collect();
    let list = dir.join("names.txt");
    std::fs::write(&list, format!("# names to check\n\n{}\n", names[..4].join("\n"))).expect("write list");
    let stdin_names = names[4..].join("\n");
    let args = [
        "--config".to_owned(),
        config.display().to_string(),
        "check".into(),
        "--json".into(),
        "--concurrency".into(),
        "8".into(),
        "--file".into(),
        list.display().to_string(),
    ];
    let bin = dsa_binary();
    let output = tokio::task::spawn_blocking(move || {
        let run = |args: &[String], stdin: Option<&str>| {
            let started = Instant::now();
            let mut child = Command::new(&bin)
                .args(args)
                .env_remove("DSA_CONFIG")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn dsa check");
            let mut pipe = child.stdin.take().expect("stdin");
            if let Some(text) = stdin {
                pipe.write_all(text.as_bytes()).expect("write stdin");
            }
            drop(pipe);
            let output = child.wait_with_output().expect("run dsa check");
            (output, started.elapsed())
        };
        let from_file = run(&args, None);
        let mut stdin_args = args[..6].to_vec();
        stdin_args.extend(["--file".into(), "-".into()]);
        (from_file, run(&stdin_args, Some(&stdin_names)))
    })
    .await
    .expect("join");
    for ((output, elapsed), expected) in [(&output.0, &names[..4]), (&output.1, &names[4..])] {
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let lines: Vec<serde_json::Value> =
            stdout.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
        assert_eq!(lines.len(), expected.len(), "{stdout}");
        for (name, line) in expected.iter().zip(&lines) {
            assert_eq!(line["verdict"]["domain"], name.as_str(), "input order: {line}");
            assert_eq!(line["verdict"]["status"], "available", "{line}");
        }
        // One at a time, four names would take 4 × 400 ms of RDAP alone (start-up aside).
        assert!(*elapsed < Duration::from_millis(1600), "four names took {elapsed:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
