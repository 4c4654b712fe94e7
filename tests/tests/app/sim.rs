//! Tests of the registry simulator itself, over real sockets on loopback.

#![expect(clippy::unwrap_used, reason = "tests")]

mod spread;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use dsa_tests::sim::{Fault, Faults, Knobs, RateLimit, Scenario, SimStats, Simulator, Truth};
use hickory_resolver::Resolver;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::op::{Message, Query, ResponseCode};
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

/// A small scenario with every truth in both an RDAP and a WHOIS registry, no knobs.
const SCENARIO: &str = r#"
[[tld]]
suffix = "com"
protocols = ["dns", "rdap", "whois"]
rdap_family = "verisign"
whois_family = "verisign"

[[tld]]
suffix = "dev"
protocols = ["dns", "rdap"]
rdap_family = "centralnic"

[[tld]]
suffix = "af"
protocols = ["dns", "whois"]
whois_family = "nic_af"

[[tld]]
suffix = "com.af"
protocols = ["dns", "whois"]
whois_family = "nic_af"

[[tld]]
suffix = "de"
protocols = ["dns", "whois"]
whois_family = "denic"

[[tld]]
suffix = "io"
protocols = ["whois"]
whois_family = "nic_io"
whois_host = "whois.nic.io"

[[domain]]
name = "example.com"
truth = "registered"
[[domain]]
name = "onhold.com"
truth = "held"
[[domain]]
name = "dropping.com"
truth = "pending_delete"
[[domain]]
name = "blocked.dev"
truth = "reserved"
[[domain]]
name = "shop.dev"
truth = "registered"
[[domain]]
name = "mysite.com.af"
truth = "registered"
[[domain]]
name = "beispiel.de"
truth = "registered"
[[domain]]
name = "registry.io"
truth = "reserved"
"#;

async fn start() -> Simulator {
    Simulator::start(Scenario::from_toml(SCENARIO).unwrap()).await.unwrap()
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap()
}

fn with_knobs(sim: &Simulator, f: impl FnOnce(&mut Knobs)) {
    let mut knobs = sim.knobs();
    f(&mut knobs);
    sim.set_knobs(knobs);
}

// --- DNS ---

async fn dns_udp(addr: SocketAddr, name: &str, rtype: RecordType) -> Message {
    let mut query = Message::query();
    query.metadata.id = 4242;
    query.metadata.recursion_desired = false;
    query.add_query(Query::query(Name::from_ascii(name).unwrap(), rtype));
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&query.to_vec().unwrap(), addr).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(2), sock.recv(&mut buf)).await.unwrap().unwrap();
    Message::from_vec(&buf[..n]).unwrap()
}

async fn dns_tcp(addr: SocketAddr, name: &str, rtype: RecordType) -> Message {
    let mut query = Message::query();
    query.metadata.id = 4243;
    query.add_query(Query::query(Name::from_ascii(name).unwrap(), rtype));
    let bytes = query.to_vec().unwrap();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let len = u16::try_from(bytes.len()).unwrap().to_be_bytes();
    stream.write_all(&len).await.unwrap();
    stream.write_all(&bytes).await.unwrap();
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).await.unwrap();
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut buf).await.unwrap();
    Message::from_vec(&buf).unwrap()
}

fn ns_targets(msg: &Message) -> Vec<String> {
    msg.answers
        .iter()
        .chain(&msg.authorities)
        .filter_map(|r| match &r.data {
            RData::NS(ns) => Some(ns.0.to_ascii()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn dns_delegates_registered_names_only() {
    let sim = start().await;
    let addr = sim.dns_addr();

    let reg = dns_udp(addr, "example.com.", RecordType::NS).await;
    assert_eq!(reg.metadata.response_code, ResponseCode::NoError);
    assert!(!reg.metadata.recursion_available, "recursion is not offered");
    let ns = ns_targets(&reg);
    assert!(ns.contains(&"ns1.example.com.".to_owned()), "{ns:?}");

    // A registered name's own zone (record data for /v1/dns) answers below the delegation:
    // `www` is the start of a CNAME chain.
    let below = dns_udp(addr, "www.example.com.", RecordType::A).await;
    assert_eq!(below.metadata.response_code, ResponseCode::NoError);
    assert!(below.answers.iter().any(|r| r.record_type() == RecordType::CNAME), "{:?}", below.answers);

    for name in ["never-registered.com.", "onhold.com.", "dropping.com.", "blocked.dev."] {
        let msg = dns_udp(addr, name, RecordType::NS).await;
        assert_eq!(msg.metadata.response_code, ResponseCode::NXDomain, "{name}");
        assert!(msg.authorities.iter().any(|r| r.record_type() == RecordType::SOA), "{name}: SOA");
    }

    // Second-level registry zone, over TCP.
    let tcp = dns_tcp(addr, "mysite.com.af.", RecordType::NS).await;
    assert!(ns_targets(&tcp).contains(&"ns1.mysite.com.af.".to_owned()));
    let tcp = dns_tcp(addr, "other.com.af.", RecordType::NS).await;
    assert_eq!(tcp.metadata.response_code, ResponseCode::NXDomain);

    // The apex answers authoritatively; a zone we do not serve is refused.
    let apex = dns_udp(addr, "com.", RecordType::SOA).await;
    assert!(apex.metadata.authoritative);
    let io = dns_udp(addr, "registry.io.", RecordType::NS).await;
    assert_eq!(io.metadata.response_code, ResponseCode::Refused, ".io offers no DNS here");

    assert!(sim.stats().dns.queries >= 10);
}

#[tokio::test]
async fn dns_answers_hickory_resolver() {
    let sim = start().await;
    let addr = sim.dns_addr();
    let mut udp = ConnectionConfig::udp();
    udp.port = addr.port();
    let mut tcp = ConnectionConfig::tcp();
    tcp.port = addr.port();
    let ns = NameServerConfig::new(addr.ip(), true, vec![udp, tcp]);
    let mut opts = ResolverOpts::default();
    opts.recursion_desired = false;
    opts.cache_size = 0;
    opts.timeout = Duration::from_secs(2);
    opts.attempts = 1;
    let resolver =
        Resolver::builder_with_config(ResolverConfig::from_name_servers(vec![ns]), TokioRuntimeProvider::default())
            .with_options(opts)
            .build()
            .unwrap();

    let found = resolver.lookup("example.com.", RecordType::NS).await.unwrap();
    assert!(!found.answers().is_empty());
    let err = resolver.lookup("free-name.com.", RecordType::NS).await.unwrap_err();
    assert!(err.is_nx_domain(), "{err:?}");
}

// --- RDAP ---

#[tokio::test]
async fn rdap_answers_by_truth() {
    let sim = start().await;
    let client = http();
    let base = sim.rdap_base("com");
    assert!(base.ends_with("/rdap/com/"));

    let resp = client.get(format!("{base}domain/example.com")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/rdap+json");
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["objectClassName"], "domain");
    assert_eq!(body["ldhName"], "EXAMPLE.COM", "Verisign style: upper case");
    let self_link = body["links"].as_array().unwrap().iter().find(|l| l["rel"] == "self").unwrap();
    assert_eq!(self_link["href"], format!("{base}domain/EXAMPLE.COM"));
    assert!(!body.to_string().contains("domain/GOOGLE.COM"), "sample name rewritten in every link");

    // Available at Verisign: 404 with an empty body.
    let resp = client.get(format!("{base}domain/free-name.com")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    assert!(resp.bytes().await.unwrap().is_empty());

    let held: serde_json::Value =
        client.get(format!("{base}domain/onhold.com")).send().await.unwrap().json().await.unwrap();
    assert!(held["status"].as_array().unwrap().contains(&"server hold".into()));

    let pending: serde_json::Value =
        client.get(format!("{base}domain/DROPPING.COM")).send().await.unwrap().json().await.unwrap();
    assert_eq!(pending["status"], serde_json::json!(["pending delete", "redemption period"]));

    // CentralNic family: 404 with the recorded error object, reserved is 200 + server hold.
    let dev = sim.rdap_base("dev");
    let resp = client.get(format!("{dev}domain/free-name.dev")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let err: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(err["errorCode"], 404);
    assert!(err.to_string().contains("free-name.dev"));

    let resp = client.get(format!("{dev}domain/blocked.dev")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let reserved: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(reserved["status"], serde_json::json!(["server hold"]));
    assert!(reserved["remarks"].to_string().contains("reserved"));

    let shop: serde_json::Value =
        client.get(format!("{dev}domain/shop.dev")).send().await.unwrap().json().await.unwrap();
    assert_eq!(shop["ldhName"], "shop.dev");

    // A name of another registry is not found here; a malformed one is a 400.
    let resp = client.get(format!("{dev}domain/example.com")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let resp = client.get(format!("{base}domain/bad_name!.com")).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let err: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(err["errorCode"], 400);

    assert_eq!(sim.stats().rdap.queries, 9);
}

#[tokio::test]
async fn rdap_rate_limit_answers_429_and_counts() {
    let sim = start().await;
    with_knobs(&sim, |k| k.rate_limit = RateLimit { rdap_per_second: Some(2), whois_per_second: None });
    let client = http();
    let url = format!("{}domain/example.com", sim.rdap_base("com"));
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let resp = client.get(&url).send().await.unwrap();
        if resp.status() == 429 {
            assert_eq!(resp.headers()["retry-after"], "1");
            let body: serde_json::Value = resp.json().await.unwrap();
            assert_eq!(body["errorCode"], 429);
            statuses.push(429);
        } else {
            statuses.push(resp.status().as_u16());
        }
    }
    assert_eq!(&statuses[..2], &[200, 200], "{statuses:?}");
    assert!(statuses.contains(&429), "{statuses:?}");
    let stats = sim.stats();
    assert_eq!(stats.rdap.queries, 5);
    assert_eq!(stats.rdap.rate_limit_violations, statuses.iter().filter(|s| **s == 429).count() as u64);

    // Lifting the limit takes effect at once.
    with_knobs(&sim, |k| k.rate_limit = RateLimit::default());
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn rdap_faults() {
    let sim = start().await;
    let url = format!("{}domain/example.com", sim.rdap_base("com"));
    let set = |fault| with_knobs(&sim, |k| k.faults = Faults { rdap: fault, whois: Fault::None });
    let short = || {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder().timeout(Duration::from_millis(600)).build().unwrap()
    };

    set(Fault::Stall);
    let started = Instant::now();
    let err = short().get(&url).send().await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3));

    set(Fault::Reset);
    let err = short().get(&url).send().await.unwrap_err();
    assert!(!err.is_timeout(), "a reset is not a timeout: {err:?}");

    set(Fault::Slow);
    let resp = short().get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200, "headers come at once");
    let err = resp.bytes().await.unwrap_err();
    assert!(err.is_timeout(), "the body trickles: {err:?}");

    set(Fault::Oversize);
    let resp = http().get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.bytes().await.unwrap();
    assert!(body.len() >= 10 * 1024 * 1024, "{}", body.len());
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["ldhName"], "EXAMPLE.COM");

    set(Fault::None);
    assert_eq!(http().get(&url).send().await.unwrap().status(), 200);
    let SimStats { rdap, .. } = sim.stats();
    assert_eq!(rdap.faults, 4);
    assert_eq!(rdap.queries, 5);
}

// --- WHOIS ---

/// Sends one query line and reads until the server closes (or `limit` passes).
async fn whois(addr: SocketAddr, query: &str, limit: Duration) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(format!("{query}\r\n").as_bytes()).await?;
    let mut out = Vec::new();
    match tokio::time::timeout(limit, stream.read_to_end(&mut out)).await {
        Ok(res) => res.map(|_| String::from_utf8_lossy(&out).into_owned()),
        Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, String::from_utf8_lossy(&out).into_owned())),
    }
}

#[tokio::test]
async fn whois_answers_recorded_texts_templated() {
    let sim = start().await;
    let addr = sim.whois_addr();
    let t = Duration::from_secs(3);

    let text = whois(addr, "example.com", t).await.unwrap();
    assert!(text.contains("Domain Name: EXAMPLE.COM\r\n"), "{text}");
    assert!(text.contains("Name Server: NS1.GOOGLE.COM"), "name servers keep their recorded value");
    assert!(!text.contains("Domain Name: GOOGLE.COM"));

    let text = whois(addr, "domain never-registered.com", t).await.unwrap();
    assert!(text.contains("No match for \"NEVER-REGISTERED.COM\"."), "{text}");

    let text = whois(addr, "dropping.com", t).await.unwrap();
    assert!(text.contains("Domain Name: DROPPING.COM") && text.contains("Status: pendingDelete"), "{text}");

    let text = whois(addr, "mysite.com.af", t).await.unwrap();
    assert!(text.starts_with("Domain Name: mysite.com.af\n"), "{text}");
    assert!(!text.contains("google.com.af"));

    let text = whois(addr, "free.af", t).await.unwrap();
    assert!(text.contains("Domain Name: free.af") && text.contains("Domain Status: No Object Found"), "{text}");

    let text = whois(addr, "-T dn,ace beispiel.de", t).await.unwrap();
    assert!(text.contains("Domain: beispiel.de\n") && text.contains("Status: connect"), "{text}");
    let text = whois(addr, "-T dn,ace frei.de", t).await.unwrap();
    assert_eq!(text, "Domain: frei.de\nStatus: free\n");

    let text = whois(addr, "registry.io", t).await.unwrap();
    assert!(text.starts_with("Reserved by Registry"), "{text}");
    let text = whois(addr, "free.io", t).await.unwrap();
    assert!(text.starts_with("NOT FOUND"), "{text}");

    assert_eq!(sim.stats().whois.queries, 9);
    assert_eq!(Scenario::from_toml(SCENARIO).unwrap().truth("registry.io"), Truth::Reserved);
}

#[tokio::test]
async fn whois_rate_limit_answers_limit_text() {
    let sim = start().await;
    with_knobs(&sim, |k| k.rate_limit = RateLimit { rdap_per_second: None, whois_per_second: Some(1) });
    let addr = sim.whois_addr();
    let t = Duration::from_secs(3);
    let first = whois(addr, "-T dn,ace beispiel.de", t).await.unwrap();
    assert!(first.contains("Status: connect"));
    let second = whois(addr, "-T dn,ace beispiel.de", t).await.unwrap();
    assert!(second.contains("access control limit reached"), "DENIC's own text: {second}");
    let third = whois(addr, "example.com", t).await.unwrap();
    assert!(third.contains("LIMIT EXCEEDED"), "{third}");
    let stats = sim.stats();
    assert_eq!(stats.whois.queries, 3);
    assert_eq!(stats.whois.rate_limit_violations, 2);
}

#[tokio::test]
async fn whois_faults() {
    let sim = start().await;
    let addr = sim.whois_addr();
    let set = |fault| with_knobs(&sim, |k| k.faults = Faults { rdap: Fault::None, whois: fault });

    set(Fault::Stall);
    let err = whois(addr, "example.com", Duration::from_millis(500)).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    assert!(err.to_string().is_empty(), "nothing was sent: {err}");

    set(Fault::Reset);
    let err = whois(addr, "example.com", Duration::from_secs(2)).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err:?}");

    set(Fault::Slow);
    let err = whois(addr, "example.com", Duration::from_millis(1500)).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    let got = err.to_string();
    assert!(!got.is_empty() && got.len() <= 3, "one byte a second: {got:?}");

    set(Fault::Oversize);
    let text = whois(addr, "example.com", Duration::from_secs(10)).await.unwrap();
    assert!(text.len() >= 10 * 1024 * 1024);
    assert!(text.contains("Domain Name: EXAMPLE.COM"));

    set(Fault::None);
    let text = whois(addr, "example.com", Duration::from_secs(2)).await.unwrap();
    assert!(text.contains("Domain Name: EXAMPLE.COM"));
    assert_eq!(sim.stats().whois.faults, 4);
}

// --- Configuration and scenarios ---

#[derive(serde::Deserialize)]
struct DsaConfig {
    engine: workers::config::EngineConfig,
}

#[tokio::test]
async fn engine_config_points_dsa_at_the_simulator() {
    let sim = Simulator::start(Scenario::demo()).await.unwrap();
    let text = sim.engine_config_toml();
    let cfg: DsaConfig = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let engine = cfg.engine;
    assert_eq!(engine.dns.nameserver_overrides["*"], vec![sim.dns_addr().to_string()]);
    assert!(engine.rdap.enabled && engine.whois.enabled);
    assert_eq!(engine.rdap.base_overrides["com"], sim.rdap_base("com"));
    assert_eq!(engine.rdap.base_overrides["dev"], sim.rdap_base("dev"));
    assert!(!engine.rdap.base_overrides.contains_key("af"), ".af has no RDAP");
    let whois = sim.whois_addr().to_string();
    for host in ["whois.verisign-grs.com", "whois.nic.af", "whois.denic.de", "whois.nic.io"] {
        assert_eq!(engine.whois.addr_overrides.get(host), Some(&whois), "{host}");
    }
    assert_eq!(engine.whois.addr_overrides.len(), 4);
}

#[test]
fn demo_file_is_the_embedded_demo() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scenarios/demo.toml");
    let loaded = Scenario::load(&path).unwrap();
    assert_eq!(loaded, Scenario::demo());
    assert_eq!(loaded.truth("google.com.af"), Truth::Registered);
    assert_eq!(loaded.truth("suspended-shop.com"), Truth::Held);
}

#[tokio::test]
async fn fixed_ports_and_drop_stop_the_servers() {
    let sim = start().await;
    let (dns, rdap, whois) = (sim.dns_addr(), sim.rdap_addr(), sim.whois_addr());
    drop(sim);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(TcpStream::connect(whois).await.is_err(), "WHOIS stopped");
    assert!(TcpStream::connect(rdap).await.is_err(), "RDAP stopped");
    // The ports are free again, so a simulator can be started on them.
    let ports = dsa_tests::sim::Ports { dns: dns.port(), rdap: rdap.port(), whois: whois.port() };
    let again = Simulator::start_on(Scenario::from_toml(SCENARIO).unwrap(), ports).await.unwrap();
    assert_eq!(again.dns_addr(), dns);
    let msg = dns_udp(dns, "example.com.", RecordType::NS).await;
    assert_eq!(msg.metadata.response_code, ResponseCode::NoError);
}
