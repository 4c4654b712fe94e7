//! RDAP probe (RFC 7480 transport, RFC 7482 query `domain/<name>`, RFC 9083 JSON, bootstrap
//! RFC 9224).
//!
//! `GET {base}domain/{name}` with `Accept: application/rdap+json`. Redirects are followed by hand,
//! at most `max_redirects` hops, only to hosts of the bootstrap set (a 404 from some other server
//! says nothing about the registry) and only to `https://` on port 443 or within the same origin
//! (RFC 7480 §4.2 wants https; a redirect to http:// would let anyone on the path answer for the
//! registry, one to another port reaches another service of that host). The body is read up to
//! `max_body_bytes`. Proxy variables (`HTTPS_PROXY`…) are ignored: a proxy would resolve the
//! host itself, out of dsa's control.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::header::{ACCEPT, LOCATION};
use reqwest::{Client, StatusCode, Url};

use super::ProbeError;
use crate::config::RdapConfig;

/// What an RDAP server answered: the final HTTP status and the body bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdapAnswer {
    /// HTTP status of the final (non-redirect) response.
    pub status: u16,
    /// Host that produced it.
    pub host: String,
    /// The body, at most `max_body_bytes` long.
    pub body: Vec<u8>,
}

/// The RDAP client.
#[derive(Debug, Clone)]
pub struct RdapProbe {
    client: Client,
    config: RdapConfig,
}

impl RdapProbe {
    /// A client with the given deadlines and caps.
    ///
    /// # Errors
    /// When the HTTP client cannot be built (TLS roots unavailable).
    pub fn new(config: RdapConfig) -> Result<Self, reqwest::Error> {
        // reqwest is built with `rustls-no-provider`: install ring once per process (a second
        // install is refused, which is fine).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(Duration::from_secs_f64(config.connect_timeout_secs.max(0.001)))
            .timeout(Duration::from_secs_f64(config.timeout_secs.max(0.001)))
            .user_agent(concat!("dsa/", env!("CARGO_PKG_VERSION"), " (domain availability)"))
            .build()?;
        Ok(Self { client, config })
    }

    /// Asks `base` about `domain`, following redirects only to `allowed_hosts`.
    ///
    /// A 429 becomes [`ProbeError::RateLimited`] and a 5xx [`ProbeError::Upstream`]; every other
    /// final status (200, 404, 400…) is returned for the reader to judge.
    ///
    /// # Errors
    /// Timeouts, network failures, a redirect to a host outside the set or beyond the hop limit,
    /// a body beyond the cap.
    #[tracing::instrument(level = "debug", name = "probe", skip_all, err(Display, level = "debug"),
        fields(protocol = "rdap", base = %base, domain = %domain))]
    pub async fn lookup(
        &self,
        base: &str,
        domain: &str,
        allowed_hosts: &BTreeSet<String>,
    ) -> Result<RdapAnswer, ProbeError> {
        let mut url = Url::parse(base)
            .and_then(|b| b.join(&format!("domain/{domain}")))
            .map_err(|e| ProbeError::NotConfigured(format!("bad RDAP base {base}: {e}")))?;
        let mut hops = 0;
        loop {
            let host = url.host_str().unwrap_or_default().to_owned();
            let upstream = |message: String| ProbeError::Upstream { protocol: "rdap", host: host.clone(), message };
            let response = self
                .client
                .get(url.clone())
                .header(ACCEPT, "application/rdap+json, application/json;q=0.8")
                .send()
                .await
                .map_err(|e| self.transport_error(&host, &e))?;
            let status = response.status();
            if status.is_redirection() {
                hops += 1;
                if hops > self.config.max_redirects {
                    return Err(upstream(format!("more than {} redirects", self.config.max_redirects)));
                }
                let location = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| upstream(format!("HTTP {status} without Location")))?;
                let next = url.join(location).map_err(|e| upstream(format!("bad redirect: {e}")))?;
                let next_host = next.host_str().unwrap_or_default().to_ascii_lowercase();
                let same_origin = next.origin() == url.origin();
                let https_443 = next.scheme() == "https" && next.port_or_known_default() == Some(443);
                if !(same_origin || https_443 || self.config.test_only_any_redirect) {
                    return Err(upstream(format!(
                        "redirect to {}://{next_host}:{} refused: RDAP redirects must stay on https, port 443",
                        next.scheme(),
                        next.port_or_known_default().unwrap_or(0)
                    )));
                }
                if !allowed_hosts.contains(&next_host) {
                    return Err(upstream(format!(
                        "redirect to {next_host}, which is not an RDAP server of the bootstrap"
                    )));
                }
                url = next;
                continue;
            }
            if status == StatusCode::TOO_MANY_REQUESTS {
                return Err(ProbeError::RateLimited { protocol: "rdap", host });
            }
            if status.is_server_error() {
                return Err(upstream(format!("HTTP {status}")));
            }
            let limit = self.config.max_body_bytes;
            if response.content_length().is_some_and(|len| len as usize > limit) {
                return Err(ProbeError::TooLarge { protocol: "rdap", host, limit });
            }
            let mut response = response;
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| self.transport_error(&host, &e))? {
                if body.len() + chunk.len() > limit {
                    return Err(ProbeError::TooLarge { protocol: "rdap", host, limit });
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(RdapAnswer { status: status.as_u16(), host, body });
        }
    }

    fn transport_error(&self, host: &str, e: &reqwest::Error) -> ProbeError {
        if e.is_timeout() {
            ProbeError::Timeout { protocol: "rdap", host: host.to_owned(), secs: self.config.timeout_secs }
        } else {
            ProbeError::Network { protocol: "rdap", host: host.to_owned(), message: error_chain(e) }
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}
