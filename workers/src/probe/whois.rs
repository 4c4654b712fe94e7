//! WHOIS probe (RFC 3912): TCP to the registry's port-43 server, the query and CRLF, then read
//! until the server closes — with a connect deadline, an idle deadline between reads, a whole
//! exchange deadline and a size cap.

use std::time::Duration;

use common::catalogue::WhoisServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout, timeout_at};

use super::ProbeError;
use crate::config::WhoisConfig;

/// The WHOIS client.
#[derive(Debug, Clone)]
pub struct WhoisProbe {
    config: WhoisConfig,
}

impl WhoisProbe {
    /// A client with the given deadlines, cap and address overrides.
    pub fn new(config: WhoisConfig) -> Self {
        Self { config }
    }

    /// Sends `server.query` (with `{domain}` replaced by the A-label) and returns the raw answer
    /// bytes (undecoded: the charset is the reader's business).
    ///
    /// # Errors
    /// [`ProbeError::Timeout`] for a deadline, [`ProbeError::Network`] for connect/read failures,
    /// [`ProbeError::TooLarge`] beyond `max_bytes`.
    #[tracing::instrument(level = "debug", name = "probe", skip_all, err(Display, level = "debug"),
        fields(protocol = "whois", host = %server.host, domain = %domain))]
    pub async fn query(&self, server: &WhoisServer, domain: &str) -> Result<Vec<u8>, ProbeError> {
        let host = server.host.as_str();
        let target = match self.config.addr_overrides.get(host) {
            Some(addr) => addr.clone(),
            None => format!("{host}:{}", server.port),
        };
        let deadline = Instant::now() + secs(self.config.total_timeout_secs);
        let timeout_err = |s: f64| ProbeError::Timeout { protocol: "whois", host: host.to_owned(), secs: s };
        let net_err = |e: std::io::Error| ProbeError::Network {
            protocol: "whois",
            host: host.to_owned(),
            message: e.to_string(),
        };
        let mut stream = timeout(secs(self.config.connect_timeout_secs), TcpStream::connect(&target))
            .await
            .map_err(|_| timeout_err(self.config.connect_timeout_secs))?
            .map_err(net_err)?;
        let query = format!("{}\r\n", server.query.replace("{domain}", domain));
        timeout_at(deadline, stream.write_all(query.as_bytes()))
            .await
            .map_err(|_| timeout_err(self.config.total_timeout_secs))?
            .map_err(net_err)?;
        let mut answer = Vec::with_capacity(4096);
        let mut buf = [0u8; 8192];
        let idle = secs(self.config.idle_timeout_secs);
        loop {
            let read_deadline = (Instant::now() + idle).min(deadline);
            let n = match timeout_at(read_deadline, stream.read(&mut buf)).await {
                Err(_) => {
                    let secs = if read_deadline == deadline {
                        self.config.total_timeout_secs
                    } else {
                        self.config.idle_timeout_secs
                    };
                    return Err(timeout_err(secs));
                }
                Ok(Err(e)) => return Err(net_err(e)),
                Ok(Ok(n)) => n,
            };
            if n == 0 {
                return Ok(answer);
            }
            if answer.len() + n > self.config.max_bytes {
                return Err(ProbeError::TooLarge {
                    protocol: "whois",
                    host: host.to_owned(),
                    limit: self.config.max_bytes,
                });
            }
            answer.extend_from_slice(&buf[..n]);
        }
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.001))
}
