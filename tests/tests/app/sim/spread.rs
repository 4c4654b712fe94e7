//! The registry simulator spread over several upstream hosts ([`Simulator::start_spread`]): each
//! suffix gets its own RDAP host (a loopback address of its own, since dsa keeps an RDAP budget per
//! host name without port) and its own DNS server address in the `[engine]` configuration, and
//! every host answers over real sockets with the one scenario and counters.

use std::net::SocketAddr;
use std::time::Duration;

use dsa_tests::harness::sim_engine;
use dsa_tests::sim::{Scenario, Simulator};
use hickory_resolver::proto::op::{Message, Query, ResponseCode};
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use time::macros::datetime;
use tokio::net::UdpSocket;

/// Three suffixes over two hosts: `org` and `xyz` on host 0, `net` on host 1.
const SCENARIO: &str = r#"
[[tld]]
suffix = "org"
protocols = ["dns", "rdap"]
rdap_family = "centralnic"

[[tld]]
suffix = "net"
protocols = ["dns", "rdap"]
rdap_family = "verisign"

[[tld]]
suffix = "xyz"
protocols = ["dns", "rdap"]
rdap_family = "centralnic"

[[timeline]]
name = "watched-0.org"
expires_at = "2027-09-01T00:00:00Z"
redemption_at = "2027-10-01T00:00:00Z"
pending_delete_at = "2027-10-31T00:00:00Z"
free_at = "2027-11-05T00:00:00Z"

[[timeline]]
name = "watched-1.net"
expires_at = "2027-09-01T00:00:00Z"
redemption_at = "2027-10-01T00:00:00Z"
pending_delete_at = "2027-10-31T00:00:00Z"
free_at = "2027-11-05T00:00:00Z"
"#;

async fn dns_udp(addr: SocketAddr, name: &str) -> Message {
    let mut query = Message::query();
    query.metadata.id = 4244;
    query.metadata.recursion_desired = false;
    query.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::NS));
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&query.to_vec().unwrap(), addr).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(2), sock.recv(&mut buf)).await.unwrap().unwrap();
    Message::from_vec(&buf[..n]).unwrap()
}

fn has_ns(msg: &Message, target: &str) -> bool {
    msg.answers.iter().chain(&msg.authorities).any(|r| matches!(&r.data, RData::NS(ns) if ns.0.to_ascii() == target))
}

fn host_of(base: &str) -> String {
    url::Url::parse(base).unwrap().host_str().unwrap().to_owned()
}

#[tokio::test]
async fn spread_simulator_serves_each_suffix_on_its_own_host() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = Simulator::start_spread(Scenario::from_toml(SCENARIO).unwrap(), 2).await.unwrap();
    sim.set_now(Some(datetime!(2026-03-01 00:00 UTC)));
    let hosts = sim.hosts();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[0].rdap.ip().to_string(), "127.0.0.1");
    assert_eq!(hosts[1].rdap.ip().to_string(), "127.0.0.2");
    assert_eq!((sim.rdap_addr(), sim.dns_addr()), (hosts[0].rdap, hosts[0].dns));

    // The configuration dsa reads: distinct RDAP hosts and DNS servers for org and net (so
    // distinct politeness budgets), org and xyz on the same host (suffix index mod 2).
    let engine = sim_engine(&sim);
    let bases = &engine.rdap.base_overrides;
    let servers = &engine.dns.nameserver_overrides;
    assert_eq!(host_of(&bases["org"]), "127.0.0.1");
    assert_eq!(host_of(&bases["net"]), "127.0.0.2");
    assert_eq!(host_of(&bases["xyz"]), "127.0.0.1");
    assert_eq!(bases["net"], sim.rdap_base("net"));
    assert_eq!(servers["org"], vec![hosts[0].dns.to_string()]);
    assert_eq!(servers["net"], vec![hosts[1].dns.to_string()]);
    assert_eq!(servers["xyz"], vec![hosts[0].dns.to_string()]);
    assert_eq!(servers["*"], vec![hosts[0].dns.to_string()], "unknown suffixes stay on the simulator");
    assert_ne!(servers["org"], servers["net"]);
    assert_eq!(sim.dns_addr_for("net"), hosts[1].dns);

    // RDAP on each host answers for its timeline name (registered now), and by truth.
    let http = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    for (suffix, name) in [("org", "watched-0.org"), ("net", "watched-1.net")] {
        let response = http.get(format!("{}domain/{name}", bases[suffix])).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{name} at {}", bases[suffix]);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["ldhName"].as_str().unwrap().to_ascii_lowercase(), name, "{body}");
    }
    let free = http.get(format!("{}domain/never-registered.net", bases["net"])).send().await.unwrap();
    assert_eq!(free.status().as_u16(), 404);

    // DNS on each host's listener delegates its timeline name.
    let org = dns_udp(hosts[0].dns, "watched-0.org.").await;
    assert_eq!(org.metadata.response_code, ResponseCode::NoError);
    assert!(has_ns(&org, "ns1.watched-0.org."), "{org:?}");
    let net = dns_udp(hosts[1].dns, "watched-1.net.").await;
    assert_eq!(net.metadata.response_code, ResponseCode::NoError);
    assert!(has_ns(&net, "ns1.watched-1.net."), "{net:?}");

    // One set of counters over every host.
    let stats = sim.stats();
    assert_eq!((stats.rdap.queries, stats.dns.queries), (3, 2));
    sim.stop().await;
}

#[tokio::test]
async fn unspread_simulator_keeps_one_host() {
    let sim = Simulator::start(Scenario::from_toml(SCENARIO).unwrap()).await.unwrap();
    assert_eq!(sim.hosts().len(), 1);
    let engine = sim_engine(&sim);
    assert_eq!(engine.dns.nameserver_overrides.len(), 1, "only `*`");
    assert_eq!(engine.dns.nameserver_overrides["*"], vec![sim.dns_addr().to_string()]);
    assert!(engine.rdap.base_overrides.values().all(|b| host_of(b) == "127.0.0.1"));
    assert!(!sim.engine_config_toml().contains("spread"));
    sim.stop().await;
}
