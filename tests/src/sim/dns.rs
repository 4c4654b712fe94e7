//! Authoritative DNS (hickory-server) for every scenario suffix that offers `dns`.
//!
//! Each zone has an SOA and an NS at its apex. A *registered* name is delegated
//! (`example.com. NS ns1.example.com.` plus glue `A 127.0.0.1`); every other truth has no
//! delegation, so a query gets NXDOMAIN with the SOA in the authority section (RFC 2308).
//! Held and pending-delete names are absent on purpose: registries pull them from the zone
//! (RFC 3915 §3.1, EPP `serverHold`), which is why NXDOMAIN never proves "available".
//! Recursion is not offered (the catalogue holds authoritative zones only).
//!
//! **Record data** (`/v1/dns`): every registered name also has its own zone ([`records_text`])
//! with all nine record types dsa answers, a CNAME chain (`www` → `alias` → `web`), an SRV under
//! underscore labels (`_sip._tcp`), and two fault names: `servfail.<name>` answers SERVFAIL to
//! every query and the TXT of `slow.<name>` answers after [`SLOW_TYPE_DELAY`]. A name under it
//! that is not listed answers NXDOMAIN. dsa's recursive-resolver client is pointed at this server
//! (`engine.records.resolvers`); the answers are authoritative, which a stub resolver accepts as
//! a recursive resolver's.
//!
//! **DNSSEC**: every record zone is signed (RRSIG + NSEC, RFC 4034) with one Ed25519 key
//! (RFC 8080) made at start; [`ZoneKey::trust_anchor_text`] lists its DNSKEY once per record
//! zone, so dsa's optional validation (`engine.records.dnssec_validation`) proves the answers
//! `secure` with that anchor, and `bogus` without it. A query without the DO bit gets no RRSIGs,
//! so non-validating clients see the zones as before.

use std::fmt::Write as _;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use hickory_server::Server;
use hickory_server::dnssec::NxProofKind;
use hickory_server::net::runtime::{Time, TokioRuntimeProvider};
use hickory_server::proto::dnssec::crypto::Ed25519SigningKey;
use hickory_server::proto::dnssec::rdata::DNSKEY;
use hickory_server::proto::dnssec::{DnssecSigner, SigningKey};
use hickory_server::proto::op::{Header, HeaderCounts, ResponseCode};
use hickory_server::proto::rr::{LowerName, Name, RecordType};
use hickory_server::proto::serialize::txt::Parser;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, MessageResponseBuilder, ZoneType};
use tokio::net::{TcpListener, UdpSocket};

use super::control::Control;
use super::scenario::{Protocol, Scenario};

/// TCP connections idle longer than this are closed (hickory's DoS guard).
const TCP_IDLE: Duration = Duration::from_secs(10);

/// The zone file text of `suffix`: apex records plus one delegation per registered name.
pub(crate) fn zone_text(scenario: &Scenario, suffix: &str) -> String {
    // The apex NS is out of bailiwick on purpose (`.invalid`, RFC 2606): nothing in the zone
    // can collide with it, and dsa is told the server's address directly.
    let mut z = format!(
        "$ORIGIN {suffix}.\n$TTL 3600\n\
         @ IN SOA a.dsa-sim.invalid. hostmaster.dsa-sim.invalid. 2026112201 1800 900 604800 900\n\
         @ IN NS a.dsa-sim.invalid.\n"
    );
    for (name, truth) in scenario.domains() {
        let ours = scenario.tld_of(name).is_some_and(|t| t.suffix == suffix);
        if ours && truth.is_delegated() {
            // `writeln!` into a String cannot fail.
            let _ = writeln!(z, "{name}. IN NS ns1.{name}.\n{name}. IN NS ns2.{name}.");
            let _ = writeln!(z, "ns1.{name}. IN A 127.0.0.1\nns2.{name}. IN A 127.0.0.1");
        }
    }
    // Timeline names are in the zone; the server answers NXDOMAIN for them outside their
    // registered phases ([`Counting`]).
    for (name, _) in scenario.timelines() {
        if scenario.tld_of(name).is_some_and(|t| t.suffix == suffix) {
            let _ = writeln!(z, "{name}. IN NS ns1.{name}.\n{name}. IN NS ns2.{name}.");
        }
    }
    z
}

/// How long the TXT answer of `slow.<name>` takes (a slow type among fast ones).
pub const SLOW_TYPE_DELAY: Duration = Duration::from_millis(1500);

/// The record zone of a registered `name`: every type `/v1/dns` answers, with RFC 5737/3849
/// documentation addresses.
pub(crate) fn records_text(name: &str) -> String {
    format!(
        "$ORIGIN {name}.\n$TTL 300\n\
         @ IN SOA ns1.{name}. hostmaster.{name}. 2026112301 7200 3600 1209600 300\n\
         @ 3600 IN NS ns1.{name}.\n@ 3600 IN NS ns2.{name}.\n\
         @ IN A 192.0.2.10\n@ IN AAAA 2001:db8::10\n\
         @ 3600 IN MX 10 mail.{name}.\n@ 3600 IN MX 20 mail2.{name}.\n\
         @ IN TXT \"v=spf1 -all\"\n@ IN TXT \"part one \" \"part two\"\n\
         @ IN CAA 0 issue \"letsencrypt.org\"\n\
         ns1 IN A 127.0.0.1\nns2 IN A 127.0.0.1\nmail IN A 192.0.2.25\nmail2 IN A 192.0.2.26\n\
         www IN CNAME alias.{name}.\nalias IN CNAME web.{name}.\nweb IN A 192.0.2.80\n\
         _sip._tcp IN SRV 10 60 5060 sip.{name}.\nsip IN A 192.0.2.50\n\
         slow IN A 192.0.2.90\nslow IN TXT \"slow answer\"\n\
         servfail IN A 192.0.2.99\n"
    )
}

/// The simulator's zone-signing key (Ed25519, RFC 8080): it signs every record zone.
pub(crate) struct ZoneKey {
    /// The private key, PKCS#8 DER.
    pkcs8: Vec<u8>,
    /// Its DNSKEY (zone key + secure entry point, flags 257).
    dnskey: DNSKEY,
}

impl ZoneKey {
    /// A fresh key.
    pub(crate) fn generate() -> anyhow::Result<Self> {
        let pkcs8 = Ed25519SigningKey::generate_pkcs8().map_err(|e| anyhow!("DNSSEC key: {e}"))?;
        let key = Ed25519SigningKey::from_pkcs8(&pkcs8).map_err(|e| anyhow!("DNSSEC key: {e}"))?;
        let public = key.to_public_key().map_err(|e| anyhow!("DNSSEC public key: {e}"))?;
        Ok(Self { pkcs8: pkcs8.secret_pkcs8_der().to_vec(), dnskey: DNSKEY::new(true, true, false, public) })
    }

    /// A signer for `zone`; signatures are valid for 30 days.
    fn signer(&self, zone: &Name) -> anyhow::Result<DnssecSigner> {
        let der = rustls_pki_types::PrivatePkcs8KeyDer::from(self.pkcs8.clone());
        let key = Ed25519SigningKey::from_pkcs8(&der).map_err(|e| anyhow!("DNSSEC key: {e}"))?;
        Ok(DnssecSigner::new(self.dnskey.clone(), Box::new(key), zone.clone(), Duration::from_secs(30 * 86_400)))
    }

    /// A trust anchor file (DNSKEY records in zone-file form) naming this key for every signed
    /// zone of `scenario`.
    pub(crate) fn trust_anchor_text(&self, scenario: &Scenario) -> String {
        let mut text = String::new();
        for name in record_zones(scenario) {
            let _ = writeln!(text, "{name}. 3600 IN DNSKEY {}", self.dnskey);
        }
        text
    }
}

/// The registered names that get a record zone (their TLD offers DNS and delegates them).
fn record_zones(scenario: &Scenario) -> Vec<&str> {
    scenario
        .domains()
        .filter(|(name, truth)| scenario.tld_of(name).is_some_and(|t| t.offers(Protocol::Dns)) && truth.is_delegated())
        .map(|(name, _)| name)
        .collect()
}

/// Builds the catalog of every DNS zone of the scenario; record zones are signed with `key`.
fn catalog(scenario: &Scenario, key: &ZoneKey) -> anyhow::Result<Catalog> {
    let mut catalog = Catalog::new();
    for tld in scenario.tlds().iter().filter(|t| t.offers(Protocol::Dns)) {
        let origin =
            Name::from_ascii(format!("{}.", tld.suffix)).with_context(|| format!("zone name {}", tld.suffix))?;
        let text = zone_text(scenario, &tld.suffix);
        let (origin, records) = Parser::new(text, None, Some(origin))
            .parse()
            .with_context(|| format!("zone {} does not parse", tld.suffix))?;
        let handler = InMemoryZoneHandler::<TokioRuntimeProvider>::new(
            origin.clone(),
            records,
            ZoneType::Primary,
            AxfrPolicy::Deny,
            None,
        )
        .map_err(|e| anyhow!("zone {}: {e}", tld.suffix))?;
        catalog.upsert(LowerName::from(origin), vec![Arc::new(handler)]);
    }
    for name in record_zones(scenario) {
        let origin = Name::from_ascii(format!("{name}.")).with_context(|| format!("zone name {name}"))?;
        let (origin, records) = Parser::new(records_text(name), None, Some(origin))
            .parse()
            .with_context(|| format!("record zone {name} does not parse"))?;
        let mut handler = InMemoryZoneHandler::<TokioRuntimeProvider>::new(
            origin.clone(),
            records,
            ZoneType::Primary,
            AxfrPolicy::Deny,
            Some(NxProofKind::Nsec),
        )
        .map_err(|e| anyhow!("record zone {name}: {e}"))?;
        handler.add_zone_signing_key_mut(key.signer(&origin)?).map_err(|e| anyhow!("record zone {name}: {e}"))?;
        handler.secure_zone_mut().map_err(|e| anyhow!("record zone {name} signing: {e}"))?;
        catalog.upsert(LowerName::from(origin), vec![Arc::new(handler)]);
    }
    Ok(catalog)
}

/// Wraps the catalog to count queries and add the configured latency, and to pull timeline
/// names from the zone outside their registered phases (on the simulator's clock).
struct Counting {
    catalog: Catalog,
    control: Arc<Control>,
    /// Timeline names (lower case, no trailing dot) and their phases.
    timelines: std::collections::HashMap<String, super::scenario::Timeline>,
}

// `RequestHandler` is declared with `#[async_trait]`; this is the signature the macro expands
// to, written out because the workspace does not depend on `async-trait`.
impl RequestHandler for Counting {
    fn handle_request<'life0, 'life1, 'async_trait, R, T>(
        &'life0 self,
        request: &'life1 Request,
        response_handle: R,
    ) -> Pin<Box<dyn Future<Output = ResponseInfo> + Send + 'async_trait>>
    where
        R: ResponseHandler + 'async_trait,
        T: Time + 'async_trait,
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            self.control.count_query(Protocol::Dns);
            let delay = self.control.latency(Protocol::Dns);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let query = request.queries.queries().first().map(|q| (q.name().to_string(), q.original().query_type()));
            if let Some((qname, qtype)) = query {
                let qname = qname.to_ascii_lowercase();
                if qname.starts_with("servfail.") {
                    let response = MessageResponseBuilder::new(&request.queries, None)
                        .error_msg(&request.metadata, ResponseCode::ServFail);
                    let mut response_handle = response_handle;
                    return match response_handle.send_response(response).await {
                        Ok(info) => info,
                        Err(_) => {
                            let mut metadata = request.metadata;
                            metadata.response_code = ResponseCode::ServFail;
                            ResponseInfo::from(Header { metadata, counts: HeaderCounts::default() })
                        }
                    };
                }
                let bare = qname.trim_end_matches('.');
                // The name or any name below it (`ns1.<name>`).
                let pulled = std::iter::successors(Some(bare), |n| n.split_once('.').map(|(_, rest)| rest))
                    .filter_map(|n| self.timelines.get(n))
                    .any(|timeline| timeline.phase(self.control.now()) != super::scenario::Phase::Registered);
                if pulled {
                    let response = MessageResponseBuilder::new(&request.queries, None)
                        .error_msg(&request.metadata, ResponseCode::NXDomain);
                    let mut response_handle = response_handle;
                    return match response_handle.send_response(response).await {
                        Ok(info) => info,
                        Err(_) => {
                            let mut metadata = request.metadata;
                            metadata.response_code = ResponseCode::NXDomain;
                            ResponseInfo::from(Header { metadata, counts: HeaderCounts::default() })
                        }
                    };
                }
                if qname.starts_with("slow.") && qtype == RecordType::TXT {
                    tokio::time::sleep(SLOW_TYPE_DELAY).await;
                }
            }
            self.catalog.handle_request::<R, T>(request, response_handle).await
        })
    }
}

/// Binds UDP and TCP on the same port of `ip` (`port` 0: a free one).
async fn bind(ip: Ipv4Addr, port: u16) -> anyhow::Result<(UdpSocket, TcpListener)> {
    // With port 0 the UDP port the kernel picks may be taken for TCP; try a few.
    let attempts = if port == 0 { 16 } else { 1 };
    let mut last = None;
    for _ in 0..attempts {
        let udp = UdpSocket::bind((ip, port)).await.with_context(|| format!("DNS UDP bind on {ip}:{port}"))?;
        let chosen = udp.local_addr()?.port();
        match TcpListener::bind((ip, chosen)).await {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e) => last = Some(e),
        }
    }
    Err(anyhow!("DNS TCP bind on {ip}:{port}: {last:?}"))
}

/// Starts the DNS server, listening (UDP and TCP) on every address of `ips`: on `port` of the
/// first (0: a free one) and a free port of each other. Every listener has the same zones and
/// counters, so a scenario can be served as several upstream name servers. Returns the
/// listeners' addresses in the order of `ips`; the task serves until `control` says stop.
pub(crate) async fn start(
    scenario: &Scenario,
    key: &ZoneKey,
    control: Arc<Control>,
    ips: &[Ipv4Addr],
    port: u16,
) -> anyhow::Result<(Vec<SocketAddr>, tokio::task::JoinHandle<()>)> {
    let catalog = catalog(scenario, key)?;
    let mut sockets = Vec::with_capacity(ips.len());
    for (i, ip) in ips.iter().enumerate() {
        sockets.push(bind(*ip, if i == 0 { port } else { 0 }).await?);
    }
    let addrs = sockets.iter().map(|(udp, _)| udp.local_addr()).collect::<Result<Vec<_>, _>>()?;
    let stopped = control.stopped();
    let timelines = scenario.timelines().map(|(name, t)| (name.to_owned(), *t)).collect();
    let mut server = Server::new(Counting { catalog, control, timelines });
    for (udp, tcp) in sockets {
        server.register_socket(udp);
        server.register_listener(tcp, TCP_IDLE, 64);
    }
    let token = server.shutdown_token().clone();
    tokio::spawn(async move {
        stopped.await;
        token.cancel();
    });
    let task = tokio::spawn(async move {
        if let Err(e) = server.block_until_done().await {
            tracing::error!(error = %e, "DNS server stopped");
        }
    });
    Ok((addrs, task))
}
