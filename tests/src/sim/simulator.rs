//! The running simulator: starts the three servers on loopback, hands out their addresses and
//! the `[engine]` configuration that points dsa at them, and stops them on drop.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinHandle;

use super::control::{Control, SimStats};
use super::scenario::{Knobs, Protocol, Scenario, normalise};
use super::{dns, rdap, whois};

/// Fixed ports to listen on (0: let the kernel choose). DNS uses the same port for UDP and TCP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ports {
    /// DNS (UDP and TCP).
    pub dns: u16,
    /// RDAP (HTTP).
    pub rdap: u16,
    /// WHOIS (TCP).
    pub whois: u16,
}

/// A running registry simulator on 127.0.0.1. Dropping it stops every server.
pub struct Simulator {
    scenario: Arc<Scenario>,
    control: Arc<Control>,
    dns: SocketAddr,
    rdap: SocketAddr,
    whois: SocketAddr,
    registrar_whois: SocketAddr,
    /// The DNSSEC trust anchor file of the signed record zones (removed on drop).
    trust_anchor: std::path::PathBuf,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("dns", &self.dns)
            .field("rdap", &self.rdap)
            .field("whois", &self.whois)
            .finish_non_exhaustive()
    }
}

impl Simulator {
    /// Starts DNS, RDAP and WHOIS on 127.0.0.1, each on a free port.
    ///
    /// # Errors
    /// When a socket cannot be bound or a zone cannot be built.
    pub async fn start(scenario: Scenario) -> anyhow::Result<Self> {
        Self::start_on(scenario, Ports::default()).await
    }

    /// Starts the servers on the given ports of 127.0.0.1 (0 = free port).
    ///
    /// # Errors
    /// When a socket cannot be bound (port in use) or a zone cannot be built.
    pub async fn start_on(scenario: Scenario, ports: Ports) -> anyhow::Result<Self> {
        let scenario = Arc::new(scenario);
        let control = Control::new(scenario.knobs());
        let zone_key = dns::ZoneKey::generate()?;
        let trust_anchor =
            std::env::temp_dir().join(format!("dsa-sim-trust-anchor-{}-{:x}.txt", std::process::id(), rand_suffix()));
        std::fs::write(&trust_anchor, zone_key.trust_anchor_text(&scenario))
            .map_err(|e| anyhow::anyhow!("trust anchor {}: {e}", trust_anchor.display()))?;
        // Each server is pushed as soon as it runs, so an error in a later one still stops
        // the earlier ones (through `Drop`).
        let mut sim = Self {
            scenario: scenario.clone(),
            control: control.clone(),
            dns: SocketAddr::from(([127, 0, 0, 1], 0)),
            rdap: SocketAddr::from(([127, 0, 0, 1], 0)),
            whois: SocketAddr::from(([127, 0, 0, 1], 0)),
            registrar_whois: SocketAddr::from(([127, 0, 0, 1], 0)),
            trust_anchor,
            tasks: Vec::with_capacity(3),
        };
        let (addr, task) = dns::start(&scenario, &zone_key, control.clone(), ports.dns).await?;
        sim.dns = addr;
        sim.tasks.push(task);
        let (addr, task) = rdap::start(scenario.clone(), control.clone(), ports.rdap).await?;
        sim.rdap = addr;
        sim.tasks.push(task);
        let (addr, task) = whois::start(scenario.clone(), control.clone(), ports.whois, false).await?;
        sim.whois = addr;
        sim.tasks.push(task);
        // The registrar's WHOIS server that thin-registry answers refer to (a free port).
        let (addr, task) = whois::start(scenario, control, 0, true).await?;
        sim.registrar_whois = addr;
        sim.tasks.push(task);
        tracing::info!(dns = %sim.dns, rdap = %sim.rdap, whois = %sim.whois, "registry simulator started");
        Ok(sim)
    }

    /// Address of the authoritative DNS server (UDP and TCP).
    pub fn dns_addr(&self) -> SocketAddr {
        self.dns
    }

    /// The DNSSEC trust anchor file (DNSKEY records) of the signed record zones, for
    /// `engine.records.trust_anchor`.
    pub fn trust_anchor_path(&self) -> &std::path::Path {
        &self.trust_anchor
    }

    /// Address of the RDAP HTTP server.
    pub fn rdap_addr(&self) -> SocketAddr {
        self.rdap
    }

    /// RDAP base URL of `suffix` (`http://127.0.0.1:<port>/rdap/<suffix>/`, ending in `/` as
    /// RFC 9224 bootstrap URLs do).
    pub fn rdap_base(&self, suffix: &str) -> String {
        format!("http://{}/rdap/{}/", self.rdap, normalise(suffix))
    }

    /// Address of the WHOIS server (one port for every registry host of the scenario).
    pub fn whois_addr(&self) -> SocketAddr {
        self.whois
    }

    /// Address of the simulated registrar's WHOIS server (thin-registry referrals).
    pub fn registrar_whois_addr(&self) -> SocketAddr {
        self.registrar_whois
    }

    /// The scenario being served.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// An `[engine]` TOML section pointing dsa at this simulator: every DNS query (`*`) to the
    /// simulator's name server, an RDAP base per RDAP suffix, and a WHOIS address per registry
    /// WHOIS host. It deserialises into `workers::config::EngineConfig`.
    pub fn engine_config_toml(&self) -> String {
        #[derive(Serialize)]
        struct File {
            engine: Engine,
        }
        #[derive(Serialize)]
        struct Engine {
            overrides_only: bool,
            dns: Dns,
            rdap: Rdap,
            whois: Whois,
            records: Records,
        }
        #[derive(Serialize)]
        struct Records {
            resolvers: Vec<String>,
            trust_anchor: String,
            referral: Referral,
        }
        #[derive(Serialize)]
        struct Referral {
            test_only_allow: BTreeMap<String, String>,
        }
        #[derive(Serialize)]
        struct Dns {
            enabled: bool,
            nameserver_overrides: BTreeMap<String, Vec<String>>,
        }
        #[derive(Serialize)]
        struct Rdap {
            enabled: bool,
            base_overrides: BTreeMap<String, String>,
        }
        #[derive(Serialize)]
        struct Whois {
            enabled: bool,
            addr_overrides: BTreeMap<String, String>,
        }

        let tlds = self.scenario.tlds();
        // `*`, not one entry per suffix: a suffix the scenario lacks must not leak to the real
        // root servers during an offline demo; the simulator answers it with REFUSED.
        let dns = Dns {
            enabled: tlds.iter().any(|t| t.offers(Protocol::Dns)),
            nameserver_overrides: BTreeMap::from([("*".to_owned(), vec![self.dns.to_string()])]),
        };
        let base_overrides: BTreeMap<_, _> = tlds
            .iter()
            .filter(|t| t.offers(Protocol::Rdap))
            .map(|t| (t.suffix.clone(), self.rdap_base(&t.suffix)))
            .collect();
        let addr_overrides: BTreeMap<_, _> =
            tlds.iter().filter_map(|t| t.whois_host()).map(|h| (h, self.whois.to_string())).collect();
        let file = File {
            engine: Engine {
                overrides_only: true,
                dns,
                rdap: Rdap { enabled: !base_overrides.is_empty(), base_overrides },
                whois: Whois { enabled: !addr_overrides.is_empty(), addr_overrides },
                // `/v1/dns` asks the simulator as its recursive resolver; `/v1/whois` may follow
                // thin-registry links to the simulated registrar (a test-only allowance).
                records: Records {
                    resolvers: vec![self.dns.to_string()],
                    // Used only if the operator turns `dnssec_validation` on.
                    trust_anchor: self.trust_anchor.display().to_string(),
                    referral: Referral {
                        test_only_allow: BTreeMap::from([
                            (rdap::REGISTRAR_HOST.to_owned(), self.rdap.to_string()),
                            (whois::REGISTRAR_WHOIS_HOST.to_owned(), self.registrar_whois.to_string()),
                        ]),
                    },
                },
            },
        };
        let body = toml::to_string(&file).unwrap_or_else(|e| {
            // Plain maps of strings always serialise; keep the contract of returning TOML.
            tracing::error!(error = %e, "engine config serialisation");
            String::new()
        });
        format!(
            "# Written by dsa-sim: points dsa's engine at the registry simulator on loopback.\n\
             # DNS {dns}, RDAP {rdap}, WHOIS {whois}.\n\n{body}",
            dns = self.dns,
            rdap = self.rdap,
            whois = self.whois,
        )
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> SimStats {
        self.control.stats()
    }

    /// Sets the simulated registries' clock, which moves the `[[timeline]]` names through their
    /// phases (`None`: the real time). Tests move it with the front's injected clock.
    pub fn set_now(&self, now: Option<time::OffsetDateTime>) {
        self.control.set_now(now);
    }

    /// The knobs in force.
    pub fn knobs(&self) -> Knobs {
        self.control.knobs()
    }

    /// Changes latency, rate limits and faults; takes effect for the next request.
    pub fn set_knobs(&self, knobs: Knobs) {
        self.control.set_knobs(knobs);
    }

    /// Stops every server and waits (up to 5 s) for them to finish.
    pub async fn stop(mut self) {
        self.control.shutdown();
        for task in std::mem::take(&mut self.tasks) {
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), task).await.is_err() {
                abort.abort();
            }
        }
    }
}

/// A per-simulator suffix for file names (several simulators run in one test process).
fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    (u64::from(nanos) << 16) ^ NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Drop for Simulator {
    fn drop(&mut self) {
        // The servers watch this signal and wind down on their own (graceful for HTTP);
        // stalled and slow answers end too.
        self.control.shutdown();
        let _ = std::fs::remove_file(&self.trust_anchor);
    }
}
