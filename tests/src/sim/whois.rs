//! WHOIS over TCP (RFC 3912): one query line in, one recorded text out, then close.
//!
//! A single port stands in for every registry host of the scenario (`whois.nic.af`,
//! `whois.denic.de`, …; dsa reaches them through `engine.whois.addr_overrides`). The answering
//! registry is chosen by the queried name's suffix, and the text by the name's truth, from the
//! suffix's `whois_family` (see `recorded`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::control::Control;
use super::recorded;
use super::scenario::{Fault, Protocol, Scenario, Truth, check_name, normalise};

/// Longest query line read; RFC 3912 sets none, a domain query is far shorter.
const MAX_QUERY: u64 = 1024;
/// How long a client may take to send its query line.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
/// Size of an `oversize` answer: 10 MiB, forty times dsa's default `max_bytes`.
const OVERSIZE_BYTES: usize = 10 * 1024 * 1024;

/// Host name of the simulated registrar WHOIS server a thin registry's answer refers to
/// (`Registrar WHOIS Server:`); `.test` (RFC 6761), reachable only through dsa's explicit
/// test-only referral allowance.
pub const REGISTRAR_WHOIS_HOST: &str = "whois.registrar.dsa-sim.test";

/// Starts the WHOIS server on 127.0.0.1:`port`; it stops when `control` says so. With
/// `registrar`, it is the simulated registrar's server instead of the registries'.
pub(crate) async fn start(
    scenario: Arc<Scenario>,
    control: Arc<Control>,
    port: u16,
    registrar: bool,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(serve(listener, scenario, control, registrar));
    Ok((addr, task))
}

/// The registrar's answer for a registered `name` (the fuller record a thin registry lacks):
/// registrant organisation and country, or "REDACTED FOR PRIVACY" for `private-` names.
fn registrar_text(name: &str) -> String {
    let (org, country) = if name.starts_with(super::rdap::PRIVATE_PREFIX) {
        ("REDACTED FOR PRIVACY", "REDACTED FOR PRIVACY")
    } else {
        ("Dsa Sim Holdings Ltd", "GB")
    };
    format!(
        "Domain Name: {upper}\r\nRegistrar WHOIS Server: {REGISTRAR_WHOIS_HOST}\r\n\
         Updated Date: 2026-01-15T08:30:00Z\r\nCreation Date: 2001-04-03T12:00:00Z\r\n\
         Registrar Registration Expiration Date: 2031-04-03T12:00:00Z\r\n\
         Registrar: Dsa Sim Registrar, Inc.\r\nDomain Status: clientTransferProhibited https://icann.org/epp#clientTransferProhibited\r\n\
         Registrant Organization: {org}\r\nRegistrant Country: {country}\r\n\
         Name Server: NS1.{upper}\r\nName Server: NS2.{upper}\r\nDNSSEC: unsigned\r\n\
         >>> Last update of WHOIS database: 2026-11-23T06:00:00Z <<<\r\n",
        upper = name.to_ascii_uppercase()
    )
}

async fn serve(listener: TcpListener, scenario: Arc<Scenario>, control: Arc<Control>, registrar: bool) {
    // Connections live in a JoinSet owned by this task: when it ends (shutdown or abort),
    // every open connection, stalled ones included, is dropped with it.
    let mut connections = JoinSet::new();
    let stopped = control.stopped();
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            () = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let (scenario, control) = (scenario.clone(), control.clone());
                    connections.spawn(async move {
                        if let Err(e) = connection(stream, peer, &scenario, &control, registrar).await {
                            tracing::debug!(error = %e, %peer, "WHOIS connection");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "WHOIS accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    scenario: &Scenario,
    control: &Control,
    registrar: bool,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut limited = (&mut reader).take(MAX_QUERY);
    match tokio::time::timeout(QUERY_TIMEOUT, limited.read_until(b'\n', &mut line)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Ok(()), // silent client: just close
    }
    let mut stream = reader.into_inner();
    let query = String::from_utf8_lossy(&line).into_owned();
    let name = query_name(&query);
    control.count_query(Protocol::Whois);
    if registrar {
        let registered = check_name(&name).is_ok()
            && scenario.tld_of(&name).is_some()
            && !matches!(scenario.truth_at(&name, control.now()), Truth::Available);
        let text = if registered {
            registrar_text(&name)
        } else {
            format!("No match for \"{}\".\r\n", name.to_ascii_uppercase())
        };
        stream.write_all(text.as_bytes()).await?;
        return stream.shutdown().await;
    }
    let family = scenario.tld_of(&name).and_then(|t| if t.offers(Protocol::Whois) { t.whois_family } else { None });

    if !control.admit(Protocol::Whois, peer.ip(), stream.local_addr()?.ip()) {
        tracing::debug!(%name, client = %peer, "WHOIS rate limit exceeded");
        stream.write_all(recorded::whois_throttled(family).text.as_bytes()).await?;
        return stream.shutdown().await;
    }
    let delay = control.latency(Protocol::Whois);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }

    let text = match family {
        _ if check_name(&name).is_err() => {
            format!("% dsa-sim: malformed query {:?}\r\n", query.trim_end())
        }
        Some(family) => {
            // A thin registry's referral points at the simulated registrar.
            recorded::whois_answer(family, scenario.truth_at(&name, control.now())).render(&name).replace(
                "Registrar WHOIS Server: whois.markmonitor.com",
                &format!("Registrar WHOIS Server: {REGISTRAR_WHOIS_HOST}"),
            )
        }
        None => format!("% dsa-sim: no registry of this scenario holds {name}\r\n"),
    };

    let fault = control.fault(Protocol::Whois);
    if fault != Fault::None {
        control.count_fault(Protocol::Whois);
        tracing::debug!(%name, ?fault, "WHOIS fault");
    }
    match fault {
        Fault::None => stream.write_all(text.as_bytes()).await?,
        Fault::Reset => {
            #[expect(deprecated, reason = "SO_LINGER 0 never blocks; it is how an RST is produced")]
            stream.set_linger(Some(Duration::ZERO))?;
            drop(stream);
            return Ok(());
        }
        Fault::Stall => {
            // Keep the connection open, answer nothing, until the client hangs up (read
            // returns 0) or the simulator stops (the JoinSet drops this task).
            let mut sink = [0u8; 256];
            while stream.read(&mut sink).await? > 0 {}
            return Ok(());
        }
        Fault::Slow => {
            for (i, byte) in text.as_bytes().iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                stream.write_all(std::slice::from_ref(byte)).await?;
            }
        }
        Fault::Oversize => {
            stream.write_all(text.as_bytes()).await?;
            let pad = format!("% {}\r\n", "x".repeat(1021));
            let mut sent = text.len();
            while sent < OVERSIZE_BYTES {
                stream.write_all(pad.as_bytes()).await?;
                sent += pad.len();
            }
        }
    }
    // RFC 3912: the server closes the connection once the answer is sent.
    stream.shutdown().await
}

/// The domain name in a query line: trims CRLF and strips the option prefixes registries
/// accept (`-T dn,ace ` for DENIC, `domain ` / `=` for Verisign).
pub(crate) fn query_name(line: &str) -> String {
    let mut q = line.trim();
    loop {
        let lower = q.to_ascii_lowercase();
        let stripped = ["-t dn,ace ", "-t dn ", "domain ", "="]
            .iter()
            .find(|p| lower.starts_with(*p))
            .map(|p| q[p.len()..].trim_start());
        match stripped {
            Some(rest) => q = rest,
            None => break,
        }
    }
    normalise(q)
}

#[cfg(test)]
mod tests {
    use super::query_name;

    #[test]
    fn strips_query_prefixes() {
        assert_eq!(query_name("-T dn,ace Google.DE\r\n"), "google.de");
        assert_eq!(query_name("domain example.com\r\n"), "example.com");
        assert_eq!(query_name("=example.com.\n"), "example.com");
        assert_eq!(query_name("google.com.af"), "google.com.af");
    }
}
