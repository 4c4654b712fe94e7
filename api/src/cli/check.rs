//! `dsa check`: the engine run directly over names from the arguments and a file.

use std::path::PathBuf;
use std::process::ExitCode;

use api::config::Settings;
use workers::engine::Engine;

use super::read_input;

/// Runs `dsa check`: the names given and those read from `file`, up to `concurrency` at once,
/// printed in input order; exit status 2 when any name got no definitive verdict or was invalid.
pub(crate) async fn run(
    settings: Settings,
    mut domains: Vec<String>,
    file: Option<PathBuf>,
    concurrency: u16,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if let Some(file) = file {
        let text = String::from_utf8(read_input(Some(file.clone()))?)
            .map_err(|_| anyhow::anyhow!("--file {}: not UTF-8 text", file.display()))?;
        domains.extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned));
    }
    anyhow::ensure!(!domains.is_empty(), "dsa check: no domain names given (arguments or --file)");
    check(settings, domains, usize::from(concurrency), json).await
}

/// Checks `domains` with the engine directly and prints each result.
async fn check(settings: Settings, domains: Vec<String>, concurrency: usize, json: bool) -> anyhow::Result<ExitCode> {
    use futures::StreamExt as _;
    let engine = Engine::new(settings.engine)?;
    // `buffered`: up to `concurrency` checks at once, results in input order. The engine's
    // governor (per-upstream rate, concurrency cap, cooldown) paces them per registry.
    let mut results = futures::stream::iter(domains)
        .map(|input| {
            let engine = engine.clone();
            async move { check_one(&engine, input, json).await }
        })
        .buffered(concurrency.max(1));
    let mut all_ok = true;
    while let Some(result) = results.next().await {
        let (text, ok) = result?;
        println!("{text}");
        all_ok &= ok;
    }
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// One name of `dsa check`: the text to print and whether the verdict is definitive.
async fn check_one(engine: &Engine, input: String, json: bool) -> anyhow::Result<(String, bool)> {
    let failed = |e: &dyn std::fmt::Display| {
        if json {
            serde_json::json!({ "input": input, "error": e.to_string() }).to_string()
        } else {
            format!("{input}: {e}")
        }
    };
    let domain = match engine.parse(&input) {
        Ok(d) => d,
        Err(e) => return Ok((failed(&e), false)),
    };
    match engine.check_uncached(&domain).await {
        Ok(report) => {
            let ok = report.verdict.status.is_definitive();
            if json {
                return Ok((serde_json::to_string(&report)?, ok));
            }
            let v = &report.verdict;
            let mut text = format!(
                "{}  {:?}  via {:?}{}",
                v.domain,
                v.status,
                v.method,
                if v.authoritative { " (authoritative)" } else { "" }
            );
            for step in &report.steps {
                text.push_str(&format!("\n    {:<5} {:<28} {}", step.protocol.as_str(), step.upstream, step.outcome));
            }
            text.push_str(&format!("\n    evidence: {}", v.evidence));
            Ok((text, ok))
        }
        Err(e) => Ok((failed(&e), false)),
    }
}
