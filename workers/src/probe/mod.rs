//! Probes: the three ways dsa asks the internet about a domain.
//!
//! * [`dns`]: the TLD's authoritative name servers, recursion off — a delegation proves "taken"
//!   at no cost to the registry; no delegation proves nothing (held, suspended and pending-delete
//!   names have none).
//! * [`rdap`]: the registry's RDAP service (RFC 7480/7482/9083, bootstrap RFC 9224).
//! * [`whois`]: the registry's port-43 WHOIS service (RFC 3912).
//!
//! Every probe has a bounded wait and reports failures as a [`ProbeError`] that knows whether a
//! retry may help.

pub mod dns;
pub mod rdap;
pub mod whois;

use serde::{Deserialize, Serialize};

/// The protocol of an upstream (labels metrics and politeness state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// DNS (RFC 1035), to a TLD's authoritative name servers.
    Dns,
    /// RDAP over HTTPS (RFC 7480).
    Rdap,
    /// WHOIS over TCP port 43 (RFC 3912).
    Whois,
}

impl Protocol {
    /// Lower-case name (`dns`, `rdap`, `whois`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Dns => "dns",
            Protocol::Rdap => "rdap",
            Protocol::Whois => "whois",
        }
    }
}

/// Why a probe gave no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProbeError {
    /// No answer within the deadline.
    #[error("{protocol} {host}: timed out after {secs:.1} s")]
    Timeout {
        /// Protocol.
        protocol: &'static str,
        /// Upstream host.
        host: String,
        /// The deadline, seconds.
        secs: f64,
    },
    /// Connection refused, reset or otherwise broken.
    #[error("{protocol} {host}: {message}")]
    Network {
        /// Protocol.
        protocol: &'static str,
        /// Upstream host.
        host: String,
        /// What happened.
        message: String,
    },
    /// The upstream throttled us (HTTP 429, a WHOIS "limit exceeded" text).
    #[error("{protocol} {host}: rate limited by the upstream")]
    RateLimited {
        /// Protocol.
        protocol: &'static str,
        /// Upstream host.
        host: String,
    },
    /// The answer was larger than the configured cap.
    #[error("{protocol} {host}: answer larger than {limit} bytes refused")]
    TooLarge {
        /// Protocol.
        protocol: &'static str,
        /// Upstream host.
        host: String,
        /// The cap, bytes.
        limit: usize,
    },
    /// The answer was not what the protocol promises (HTTP 5xx, bad redirect, bad DNS rcode…).
    #[error("{protocol} {host}: {message}")]
    Upstream {
        /// Protocol.
        protocol: &'static str,
        /// Upstream host.
        host: String,
        /// What was wrong.
        message: String,
    },
    /// Our own politeness limiter had no slot in time.
    #[error("{host}: too many queries in flight; try again shortly")]
    Busy {
        /// Upstream host.
        host: String,
    },
    /// The host failed repeatedly and is being left alone for a while.
    #[error("{host}: cooling down after repeated failures")]
    CoolingDown {
        /// Upstream host.
        host: String,
    },
    /// The probe is not configured for this suffix (no server known, protocol disabled).
    #[error("{0}")]
    NotConfigured(String),
}

impl ProbeError {
    /// Whether the same query may succeed later (drives JetStream `Nak` with delay vs `Term`).
    pub fn is_retryable(&self) -> bool {
        !matches!(self, ProbeError::NotConfigured(_) | ProbeError::TooLarge { .. })
    }
}
