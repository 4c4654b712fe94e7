//! DNS probe: asks a zone's authoritative name servers for the domain's NS records with recursion
//! off (RFC 1034 §4.3.1, RFC 1035 §4.1.1 RD bit).
//!
//! A referral (NS records owned by the domain, in the answer or authority section) means the name
//! is delegated, hence registered — an authoritative "taken" that costs the registry nothing.
//! NXDOMAIN or NODATA means only "not delegated": held, suspended, pending-delete and reserved
//! names have no delegation either, so the engine must then ask the registry.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use hickory_resolver::TokioResolver;
use hickory_resolver::net::client::Client;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::udp::UdpClientStream;
use hickory_resolver::net::xfer::DnsHandle;
use hickory_resolver::proto::op::{DnsRequestOptions, Query, ResponseCode};
use hickory_resolver::proto::rr::{Name, RecordType};

use super::ProbeError;
use crate::config::DnsConfig;

/// What the zone's name servers said about a domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delegation {
    /// NS records exist for the domain (host names, lower case, no trailing dot).
    Delegated(Vec<String>),
    /// NXDOMAIN or NODATA: no delegation (not proof of availability).
    NotDelegated,
}

/// The DNS client.
#[derive(Clone)]
pub struct DnsProbe {
    config: DnsConfig,
    overrides_only: bool,
    /// System resolver, used only to find the addresses of a zone's name servers.
    system: Option<TokioResolver>,
    /// A zone's name-server addresses by suffix, kept [`NS_ADDR_TTL_SECS`] (the TLD servers'
    /// addresses rarely change, and resolving them on every check would spend the pre-check's
    /// budget on lookups).
    ns_addrs: moka::future::Cache<String, Arc<Vec<SocketAddr>>>,
}

/// How long a zone's resolved name-server addresses are reused, seconds.
pub const NS_ADDR_TTL_SECS: u64 = 3600;

impl std::fmt::Debug for DnsProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsProbe").field("config", &self.config).finish_non_exhaustive()
    }
}

impl DnsProbe {
    /// A probe with the given settings. The system resolver (from `/etc/resolv.conf`) is used to
    /// find name-server addresses when no override applies; without one, only overridden suffixes
    /// get a DNS pre-check. With `overrides_only`, suffixes without an override get none.
    pub fn new(config: DnsConfig, overrides_only: bool) -> Self {
        let system = TokioResolver::builder_tokio().ok().and_then(|b| b.build().ok());
        let ns_addrs = moka::future::Cache::builder()
            .max_capacity(4096)
            .time_to_live(Duration::from_secs(NS_ADDR_TTL_SECS))
            .build();
        Self { config, overrides_only, system, ns_addrs }
    }

    /// The name-server addresses to ask for `suffix`: the configured override (exact suffix, then
    /// `*`), else the zone's name-server host names resolved by the system resolver.
    pub async fn servers_for(&self, suffix: &str, nameservers: &[String]) -> Vec<SocketAddr> {
        let overridden =
            self.config.nameserver_overrides.get(suffix).or_else(|| self.config.nameserver_overrides.get("*"));
        if let Some(list) = overridden {
            return list.iter().filter_map(|a| a.parse().ok()).collect();
        }
        if self.overrides_only {
            return Vec::new();
        }
        let Some(resolver) = &self.system else { return Vec::new() };
        if let Some(cached) = self.ns_addrs.get(suffix).await {
            return cached.as_ref().clone();
        }
        let mut addrs = Vec::new();
        for host in nameservers.iter().take(3) {
            if let Ok(Ok(ips)) = tokio::time::timeout(self.timeout(), resolver.lookup_ip(host.as_str())).await {
                addrs.extend(ips.iter().filter(|ip| ip.is_ipv4()).take(1).map(|ip| SocketAddr::new(ip, 53)));
            }
        }
        if !addrs.is_empty() {
            self.ns_addrs.insert(suffix.to_owned(), Arc::new(addrs.clone())).await;
        }
        addrs
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.config.timeout_secs.max(0.001))
    }

    /// Asks `server` for the NS records of `domain` (recursion off, UDP).
    ///
    /// # Errors
    /// Timeouts, network failures, and rcodes other than NOERROR/NXDOMAIN (SERVFAIL, REFUSED…).
    #[tracing::instrument(level = "debug", name = "probe", skip_all, err(Display, level = "debug"),
        fields(protocol = "dns", host = %server, domain = %domain))]
    pub async fn ns(&self, server: SocketAddr, domain: &str) -> Result<Delegation, ProbeError> {
        let host = server.to_string();
        let upstream = |message: String| ProbeError::Upstream { protocol: "dns", host: host.clone(), message };
        let name = Name::from_ascii(format!("{domain}."))
            .map_err(|e| ProbeError::NotConfigured(format!("bad DNS name {domain}: {e}")))?;
        let stream = UdpClientStream::builder(server, TokioRuntimeProvider::default())
            .with_timeout(Some(self.timeout()))
            .with_max_retries(u8::try_from(self.config.attempts.saturating_sub(1)).unwrap_or(u8::MAX))
            .build();
        let (client, background) = Client::<TokioRuntimeProvider>::from_sender(stream);
        let background = tokio::spawn(background);
        let mut options = DnsRequestOptions::default();
        options.recursion_desired = false;
        let query = Query::query(name, RecordType::NS);
        let total = self.timeout() * u32::try_from(self.config.attempts.max(1)).unwrap_or(1);
        let result = tokio::time::timeout(total, client.lookup(query, options).next()).await;
        background.abort();
        let response = match result {
            Err(_) => return Err(ProbeError::Timeout { protocol: "dns", host, secs: total.as_secs_f64() }),
            Ok(None) => return Err(upstream("no response".into())),
            Ok(Some(Err(e))) => {
                let text = e.to_string();
                return Err(if text.contains("timed out") {
                    ProbeError::Timeout { protocol: "dns", host, secs: total.as_secs_f64() }
                } else {
                    ProbeError::Network { protocol: "dns", host, message: text }
                });
            }
            Ok(Some(Ok(response))) => response,
        };
        let message = &*response;
        match message.metadata.response_code {
            ResponseCode::NXDomain => return Ok(Delegation::NotDelegated),
            ResponseCode::NoError => {}
            other => return Err(upstream(format!("rcode {other}"))),
        }
        let owner_is_domain = |n: &Name| n.to_ascii().trim_end_matches('.').eq_ignore_ascii_case(domain);
        let servers: Vec<String> = message
            .answers
            .iter()
            .chain(message.authorities.iter())
            .filter(|r| r.record_type() == RecordType::NS && owner_is_domain(&r.name))
            .map(|r| r.data.to_string().trim_end_matches('.').to_ascii_lowercase())
            .collect();
        if servers.is_empty() { Ok(Delegation::NotDelegated) } else { Ok(Delegation::Delegated(servers)) }
    }
}
