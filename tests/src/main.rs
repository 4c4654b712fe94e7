//! `dsa-sim`: runs the registry simulator until Ctrl-C / SIGTERM.
//!
//! ```text
//! dsa-sim --scenario tests/fixtures/scenarios/demo.toml --write-config dsa-sim.toml
//! ```

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use dsa_tests::sim::{Ports, Protocol, Scenario, Simulator};
use tracing_subscriber::EnvFilter;

/// Registry simulator: authoritative DNS, RDAP and WHOIS on 127.0.0.1 for a scenario.
#[derive(Debug, Parser)]
#[command(name = "dsa-sim", version)]
struct Args {
    /// Scenario file (TOML); the embedded demo scenario when omitted.
    #[arg(long, env = "DSA_SIM_SCENARIO")]
    scenario: Option<PathBuf>,
    /// DNS port (UDP and TCP); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    dns_port: u16,
    /// RDAP (HTTP) port; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    rdap_port: u16,
    /// WHOIS port; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    whois_port: u16,
    /// Write the `[engine]` config pointing dsa at the simulator to this file.
    #[arg(long)]
    write_config: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .init();
    let args = Args::parse();
    let scenario = match &args.scenario {
        Some(path) => Scenario::load(path)?,
        None => Scenario::demo(),
    };
    let ports = Ports { dns: args.dns_port, rdap: args.rdap_port, whois: args.whois_port };
    let sim = Simulator::start_on(scenario, ports).await?;

    println!("dsa-sim running on 127.0.0.1");
    println!("  DNS   {} (UDP+TCP)", sim.dns_addr());
    println!("  WHOIS {}", sim.whois_addr());
    for tld in sim.scenario().tlds() {
        if tld.offers(Protocol::Rdap) {
            println!("  RDAP  .{:<8} {}", tld.suffix, sim.rdap_base(&tld.suffix));
        }
    }
    if let Some(path) = &args.write_config {
        std::fs::write(path, sim.engine_config_toml()).with_context(|| format!("cannot write {}", path.display()))?;
        println!("engine config written to {}", path.display());
    } else {
        println!("\n{}", sim.engine_config_toml());
    }

    shutdown_signal().await;
    tracing::info!(stats = ?sim.stats(), "stopping");
    sim.stop().await;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
