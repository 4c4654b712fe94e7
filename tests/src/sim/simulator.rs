//! The running simulator: starts the three servers on loopback, hands out their addresses and
//! the `[engine]` configuration that points dsa at them, and stops them on drop.
//!
//! By default every registry of the scenario answers on one RDAP host and one DNS server
//! (127.0.0.1). [`Simulator::start_spread`] serves the same scenario as several upstream hosts
//! instead, as a real multi-TLD world has them: dsa's politeness budgets are per upstream host
//! (RDAP by host name without port, DNS by the name server's socket address), so a benchmark of
//! many names over many TLDs needs one host per registry to meet the budgets it would have live.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
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

/// The most upstream hosts [`Simulator::start_spread`] serves: 127.0.0.1 to 127.0.0.254.
pub const MAX_HOSTS: usize = 254;

/// One simulated upstream host: its RDAP server and its DNS server (both on the host's own
/// loopback address, 127.0.0.`k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamHost {
    /// The RDAP HTTP server.
    pub rdap: SocketAddr,
    /// The authoritative DNS server (UDP and TCP).
    pub dns: SocketAddr,
}

/// A running registry simulator on 127.0.0.1 (and 127.0.0.2… when spread over several hosts).
/// Dropping it stops every server.
pub struct Simulator {
    scenario: Arc<Scenario>,
    control: Arc<Control>,
    dns: SocketAddr,
    rdap: SocketAddr,
    /// Every upstream host, the first on 127.0.0.1 (`dns` and `rdap` above); one unless started
    /// with [`Simulator::start_spread`].
    hosts: Vec<UpstreamHost>,
    /// The host (index into `hosts`) of each suffix of the scenario.
    host_of: BTreeMap<String, usize>,
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
            .field("hosts", &self.hosts.len())
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
        Self::start_spread_on(scenario, ports, 1).await
    }

    /// Starts the servers with the scenario's registries spread over `hosts` upstream hosts
    /// (1 to [`MAX_HOSTS`]; 1 is [`Simulator::start`]). Host `k` (from 0) is the loopback
    /// address 127.0.0.`k+1`, each with an RDAP server and a DNS server of its own (free
    /// ports); the `i`-th suffix of the scenario's `[[tld]]` list is served by host `i mod
    /// hosts`, which [`Simulator::rdap_base`], [`Simulator::dns_addr_for`] and
    /// [`Simulator::engine_config_toml`] say. Every host answers for every suffix with the same
    /// handlers, knobs and counters ([`Simulator::stats`] counts them all). WHOIS, the
    /// registrar servers and the `/v1/dns` resolver stay on host 0.
    ///
    /// # Errors
    /// When `hosts` is out of range, a socket cannot be bound or a zone cannot be built.
    pub async fn start_spread(scenario: Scenario, hosts: usize) -> anyhow::Result<Self> {
        Self::start_spread_on(scenario, Ports::default(), hosts).await
    }

    /// [`Simulator::start_spread`] with host 0's servers on the given ports (0 = free port).
    ///
    /// # Errors
    /// As [`Simulator::start_spread`].
    pub async fn start_spread_on(scenario: Scenario, ports: Ports, hosts: usize) -> anyhow::Result<Self> {
        anyhow::ensure!((1..=MAX_HOSTS).contains(&hosts), "hosts must be 1 to {MAX_HOSTS}, not {hosts}");
        let ips: Vec<Ipv4Addr> = (1..=u8::try_from(hosts)?).map(|k| Ipv4Addr::new(127, 0, 0, k)).collect();
        let host_of = scenario.tlds().iter().enumerate().map(|(i, t)| (t.suffix.clone(), i % hosts)).collect();
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
            hosts: Vec::with_capacity(hosts),
            host_of,
            trust_anchor,
            tasks: Vec::with_capacity(3 + hosts),
        };
        let (dns_addrs, task) = dns::start(&scenario, &zone_key, control.clone(), &ips, ports.dns).await?;
        sim.tasks.push(task);
        for (k, (ip, dns)) in ips.iter().zip(dns_addrs).enumerate() {
            let port = if k == 0 { ports.rdap } else { 0 };
            let (rdap, task) = rdap::start(scenario.clone(), control.clone(), *ip, port).await?;
            sim.tasks.push(task);
            sim.hosts.push(UpstreamHost { rdap, dns });
        }
        if let Some(first) = sim.hosts.first() {
            (sim.dns, sim.rdap) = (first.dns, first.rdap);
        }
        let (addr, task) = whois::start(scenario.clone(), control.clone(), ports.whois, false).await?;
        sim.whois = addr;
        sim.tasks.push(task);
        // The registrar's WHOIS server that thin-registry answers refer to (a free port).
        let (addr, task) = whois::start(scenario, control, 0, true).await?;
        sim.registrar_whois = addr;
        sim.tasks.push(task);
        tracing::info!(dns = %sim.dns, rdap = %sim.rdap, whois = %sim.whois, hosts, "registry simulator started");
        Ok(sim)
    }

    /// Address of the authoritative DNS server (UDP and TCP); when spread, host 0's.
    pub fn dns_addr(&self) -> SocketAddr {
        self.dns
    }

    /// Address of the DNS server of the host serving `suffix` (host 0's for a suffix the
    /// scenario lacks).
    pub fn dns_addr_for(&self, suffix: &str) -> SocketAddr {
        self.host_for(suffix).dns
    }

    /// The upstream hosts, host 0 (127.0.0.1) first: one unless started spread.
    pub fn hosts(&self) -> &[UpstreamHost] {
        &self.hosts
    }

    /// The host serving `suffix`.
    fn host_for(&self, suffix: &str) -> UpstreamHost {
        let k = self.host_of.get(&normalise(suffix)).copied().unwrap_or(0);
        self.hosts.get(k).copied().unwrap_or(UpstreamHost { rdap: self.rdap, dns: self.dns })
    }

    /// The DNSSEC trust anchor file (DNSKEY records) of the signed record zones, for
    /// `engine.records.trust_anchor`.
    pub fn trust_anchor_path(&self) -> &std::path::Path {
        &self.trust_anchor
    }

    /// Address of the RDAP HTTP server; when spread, host 0's.
    pub fn rdap_addr(&self) -> SocketAddr {
        self.rdap
    }

    /// RDAP base URL of `suffix` (`http://127.0.0.1:<port>/rdap/<suffix>/`, ending in `/` as
    /// RFC 9224 bootstrap URLs do; when spread, on the address of the host serving `suffix`).
    pub fn rdap_base(&self, suffix: &str) -> String {
        format!("http://{}/rdap/{}/", self.host_for(suffix).rdap, normalise(suffix))
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
    /// WHOIS host. When spread over several hosts, each DNS suffix also gets its host's name
    /// server, and each RDAP base is on its host's address. It deserialises into
    /// `workers::config::EngineConfig`.
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
        // `*`, not only one entry per suffix: a suffix the scenario lacks must not leak to the
        // real root servers during an offline demo; the simulator answers it with REFUSED.
        let mut nameserver_overrides = BTreeMap::from([("*".to_owned(), vec![self.dns.to_string()])]);
        if self.hosts.len() > 1 {
            // dsa keeps a DNS budget per name server address: one per suffix's host.
            for t in tlds.iter().filter(|t| t.offers(Protocol::Dns)) {
                nameserver_overrides.insert(t.suffix.clone(), vec![self.dns_addr_for(&t.suffix).to_string()]);
            }
        }
        let dns = Dns { enabled: tlds.iter().any(|t| t.offers(Protocol::Dns)), nameserver_overrides };
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
        let spread = if self.hosts.len() > 1 {
            format!("# The registries are spread over {} hosts (127.0.0.1 and up).\n", self.hosts.len())
        } else {
            String::new()
        };
        format!(
            "# Written by dsa-sim: points dsa's engine at the registry simulator on loopback.\n\
             # DNS {dns}, RDAP {rdap}, WHOIS {whois}.\n{spread}\n{body}",
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
