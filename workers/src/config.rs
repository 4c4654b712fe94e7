//! Engine configuration: every upstream the engine talks to, with its deadlines and politeness.
//!
//! All fields have conservative defaults for the live internet; tests, benchmarks and the offline
//! demo point them at loopback (the registry simulator writes such a file: `dsa-sim --write-config`).
//! Durations are in seconds (fractions allowed) unless the name says otherwise.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Top-level engine settings (`[engine]` in the dsa config file).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Path of a TLD catalogue file to use instead of the one compiled into the binary.
    pub catalogue: Option<PathBuf>,
    /// DNS probe settings.
    pub dns: DnsConfig,
    /// RDAP probe settings.
    pub rdap: RdapConfig,
    /// WHOIS probe settings.
    pub whois: WhoisConfig,
    /// Per-upstream politeness (rate limits, concurrency caps, cooldown).
    pub limits: LimitsConfig,
    /// Verdict cache.
    pub cache: CacheConfig,
    /// Serving a last known verdict, flagged stale, when the registry gives no definitive answer.
    pub stale: StaleConfig,
    /// Self-correcting routing: WHOIS first for a suffix whose RDAP keeps failing.
    pub routing: RoutingConfig,
    /// Consensus: a second, independent signal before "available" where the catalogue, the
    /// operator or an observed disagreement asks for one.
    pub consensus: ConsensusConfig,
    /// Record lookups behind `/v1/dns` and `/v1/whois` (recursive resolvers, referrals, caches).
    pub records: RecordsConfig,
    /// Overall deadline for one availability check, seconds (all probes included).
    pub check_deadline_secs: f64,
    /// Only query upstreams named in the overrides (`dns.nameserver_overrides`,
    /// `rdap.base_overrides`, `whois.addr_overrides`); every other method is skipped. For offline
    /// demos and tests against the registry simulator, so nothing leaks to the internet.
    pub overrides_only: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            catalogue: None,
            dns: DnsConfig::default(),
            rdap: RdapConfig::default(),
            whois: WhoisConfig::default(),
            limits: LimitsConfig::default(),
            cache: CacheConfig::default(),
            stale: StaleConfig::default(),
            routing: RoutingConfig::default(),
            consensus: ConsensusConfig::default(),
            records: RecordsConfig::default(),
            check_deadline_secs: 10.0,
            overrides_only: false,
        }
    }
}

/// DNS probe: asks a TLD's authoritative name servers for the domain's NS, recursion off.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DnsConfig {
    /// Whether the DNS pre-check runs at all.
    pub enabled: bool,
    /// Name-server addresses (`ip:port`) to ask instead of the catalogue's, keyed by registry
    /// suffix without a leading dot (`com`, `com.af`); the key `*` applies to every suffix.
    pub nameserver_overrides: BTreeMap<String, Vec<String>>,
    /// Per-query timeout, seconds.
    pub timeout_secs: f64,
    /// Attempts per name server.
    pub attempts: usize,
}

impl Default for DnsConfig {
    fn default() -> Self {
        Self { enabled: true, nameserver_overrides: BTreeMap::new(), timeout_secs: 2.0, attempts: 2 }
    }
}

/// RDAP probe (RFC 7480/7482/9083/9224).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RdapConfig {
    /// Whether RDAP is used at all.
    pub enabled: bool,
    /// Base URLs (ending in `/`) to use instead of the bootstrap's, keyed by registry suffix
    /// without a leading dot; `*` applies to every suffix that has RDAP.
    pub base_overrides: BTreeMap<String, String>,
    /// Whole-request timeout, seconds.
    pub timeout_secs: f64,
    /// Connect timeout, seconds.
    pub connect_timeout_secs: f64,
    /// Largest response body read, bytes; a larger one is refused (unknown verdict).
    pub max_body_bytes: usize,
    /// Redirects followed (only to hosts of the bootstrap set, only to `https://` on port 443 or
    /// within the same origin), at most.
    pub max_redirects: usize,
    /// Tests only: also follow redirects to `http://` and to other ports (still only to hosts of
    /// the bootstrap set), for loopback servers. Never set in production: a redirect off https
    /// lets anyone on the path answer for the registry.
    pub test_only_any_redirect: bool,
}

impl Default for RdapConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            base_overrides: BTreeMap::new(),
            timeout_secs: 6.0,
            connect_timeout_secs: 3.0,
            max_body_bytes: 1 << 20,
            max_redirects: 3,
            test_only_any_redirect: false,
        }
    }
}

/// WHOIS probe (RFC 3912).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WhoisConfig {
    /// Whether WHOIS is used at all.
    pub enabled: bool,
    /// Socket addresses (`ip:port`) to connect to instead of resolving a server's host name,
    /// keyed by that host name (`whois.nic.af`). The host name still selects the reply markers.
    pub addr_overrides: BTreeMap<String, String>,
    /// Connect timeout, seconds.
    pub connect_timeout_secs: f64,
    /// Longest wait for the next bytes of an answer, seconds.
    pub idle_timeout_secs: f64,
    /// Whole-exchange deadline, seconds.
    pub total_timeout_secs: f64,
    /// Largest answer read, bytes (RFC 3912 has no length; 256 KiB is far above any registry's).
    pub max_bytes: usize,
}

impl Default for WhoisConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            addr_overrides: BTreeMap::new(),
            connect_timeout_secs: 3.0,
            idle_timeout_secs: 5.0,
            total_timeout_secs: 8.0,
            max_bytes: 256 * 1024,
        }
    }
}

/// Politeness towards one upstream host: a rate limit (governor), a concurrency cap and a cooldown.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HostLimit {
    /// Sustained queries per second.
    pub per_second: f64,
    /// Burst size (queries allowed at once after an idle period).
    pub burst: u32,
    /// Queries in flight at once.
    pub concurrency: usize,
}

impl Default for HostLimit {
    fn default() -> Self {
        Self { per_second: 1.0, burst: 1, concurrency: 1 }
    }
}

/// With a burst of 1 there is no token to hold back: queries are spaced this much wider than
/// the rate instead ([`HostLimit::paced`]).
const PACE_MARGIN: f64 = 1.1;

impl HostLimit {
    /// The schedule dsa keeps to under this limit, a little inside it: one token of the burst
    /// held back (`burst - 1`, the same rate), or with a burst of 1, queries spaced 10% wider
    /// than the rate.
    ///
    /// An upstream that enforces exactly this limit (a token bucket of `burst` at `per_second`)
    /// counts a query when it *arrives*; dsa takes its slot a moment before it sends. Running
    /// at the limit itself, any query that travels faster than the one before it (connection
    /// reuse, scheduling on a busy host) arrives before the upstream's bucket has refilled and
    /// is refused. The token held back absorbs that jitter, up to one emission interval
    /// (100 ms at 10 a second), at no cost in sustained rate; only the first burst after an
    /// idle period is one query smaller.
    pub fn paced(&self) -> HostLimit {
        let burst = self.burst.max(1);
        if burst >= 2 {
            HostLimit { burst: burst - 1, ..self.clone() }
        } else {
            HostLimit { per_second: self.per_second / PACE_MARGIN, burst: 1, ..self.clone() }
        }
    }
}

/// Politeness settings per protocol, with per-host overrides.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Default for each RDAP host.
    pub rdap: HostLimit,
    /// Default for each WHOIS host (registries throttle port 43 hard: 1/s is polite).
    pub whois: HostLimit,
    /// Default for each DNS name server.
    pub dns: HostLimit,
    /// Overrides keyed by upstream host name.
    pub hosts: BTreeMap<String, HostLimit>,
    /// Consecutive failures after which a host is left alone for `cooldown_secs`.
    pub failures_before_cooldown: u32,
    /// Cooldown length, seconds.
    pub cooldown_secs: f64,
    /// Longest wait for a rate-limit slot before giving up (unknown verdict), seconds.
    pub max_queue_wait_secs: f64,
    /// A hard cap (0.01 to 1) on the share of each host's rate, burst and concurrency that
    /// background work (watch re-checks, bulk jobs' checks) may use, whatever users do; 1 (the
    /// default) sets none. Background work yields to waiting users in any case (see
    /// `crate::politeness`).
    pub background_share: f64,
    /// Longest wait of background work for a slot of its share, seconds (the job's own deadline
    /// may end it sooner). Longer than `max_queue_wait_secs`: nobody waits for a background
    /// job, and one that gave up would only be asked again later.
    pub background_max_wait_secs: f64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            rdap: HostLimit { per_second: 10.0, burst: 10, concurrency: 8 },
            whois: HostLimit { per_second: 1.0, burst: 2, concurrency: 2 },
            dns: HostLimit { per_second: 50.0, burst: 50, concurrency: 32 },
            hosts: BTreeMap::new(),
            failures_before_cooldown: 5,
            cooldown_secs: 30.0,
            max_queue_wait_secs: 3.0,
            background_share: 1.0,
            background_max_wait_secs: 60.0,
        }
    }
}

/// Verdict cache (moka) with tiered time-to-live.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// Largest number of cached verdicts.
    pub capacity: u64,
    /// Time-to-live of taken / pending-delete / reserved / restricted verdicts, seconds.
    pub taken_ttl_secs: u64,
    /// Time-to-live of available verdicts, seconds (short: a name can be registered any moment).
    pub available_ttl_secs: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self { capacity: 100_000, taken_ttl_secs: 6 * 3600, available_ttl_secs: 120 }
    }
}

/// Serve stale (`[engine.stale]`): when no registry method gives a definitive answer (which is
/// otherwise a 502), the last definitive verdict seen for the name may be served instead, flagged
/// `stale` with its age, if it is younger than the bound for its status. "Available" gets a short
/// bound: a name can be registered at any moment, and a stale "available" sends a customer to a
/// checkout that may fail, whereas a stale "taken" rarely becomes wrong within a day.
///
/// The last known verdicts live in a second, bounded store beside the fresh cache, kept for
/// `max(max_age_secs, available_max_age_secs)` seconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StaleConfig {
    /// Whether stale verdicts are served at all.
    pub enabled: bool,
    /// Oldest taken / pending-delete / reserved / restricted verdict served stale, seconds.
    pub max_age_secs: u64,
    /// Oldest available verdict served stale, seconds (0: never serve a stale "available").
    pub available_max_age_secs: u64,
    /// Largest number of last known verdicts kept.
    pub capacity: u64,
}

impl Default for StaleConfig {
    fn default() -> Self {
        Self { enabled: true, max_age_secs: 86_400, available_max_age_secs: 300, capacity: 100_000 }
    }
}

/// Self-correcting routing (`[engine.routing]`): when RDAP fails `rdap_failures` times in a row
/// for a suffix and WHOIS then answers definitively, WHOIS is asked first for that suffix for
/// `prefer_whois_secs` (or until RDAP answers definitively again). Standalone the decision is the
/// process's; in a fleet it is shared through the routing KV bucket (see `crate::routing`).
/// Logged and counted in `dsa_route_whois_first_total{suffix}` / `dsa_route_rdap_first_total{suffix}`;
/// shown by `GET /v1/tlds/{tld}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// Whether the engine reorders a suffix's chain at all.
    pub enabled: bool,
    /// RDAP failures in a row (timeouts, resets, 5xx, unreadable answers) before a WHOIS success
    /// puts WHOIS first.
    pub rdap_failures: u32,
    /// How long WHOIS stays first, seconds; then RDAP leads again. In a fleet at most an hour
    /// (the routing bucket's max age).
    pub prefer_whois_secs: u64,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        Self { enabled: true, rdap_failures: 3, prefer_whois_secs: 300 }
    }
}

/// Consensus before "available" (`[engine.consensus]`, issue 28). Where it is required, an
/// `available` answer from one registry service is confirmed by a second, independent signal
/// before it is given: the other registry service of the suffix (WHOIS after RDAP, RDAP after
/// WHOIS), else the TLD's authoritative name servers asked directly, recursion off (no
/// delegation agrees; a delegation disagrees). Signals that disagree give `unknown` (502, not
/// charged), are counted per suffix (`dsa_consensus_disagreements_total{suffix}`, `GET
/// /v1/tlds/{tld}`), logged at warn, and switch consensus on for the suffix for `hold_secs`
/// (fleet-wide through the routing bucket).
///
/// Required for a suffix when, in this order: `suffixes` says so (`true`/`false`, key `*` for
/// every suffix), else the catalogue entry has a `consensus` member (`.io`, `.co`), else a
/// disagreement was seen less than `hold_secs` ago.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ConsensusConfig {
    /// Whether consensus is used at all (off: one registry answer decides everywhere, and no
    /// audit runs).
    pub enabled: bool,
    /// Per-suffix override of the catalogue, keyed by registry suffix without a leading dot
    /// (`com`, `com.af`); `*` applies to every suffix without its own key. `false` also
    /// ignores an observed disagreement.
    pub suffixes: BTreeMap<String, bool>,
    /// How long a disagreement switches consensus on for its suffix, seconds. In a fleet at most
    /// an hour (the routing bucket's max age).
    pub hold_secs: u64,
    /// Where consensus is not required: also confirm one `available` answer in this many (an
    /// audit), so that dsa notices a registry that starts lying; 0 disables the audit. An
    /// audited answer that disagrees is `unknown` too and switches consensus on.
    pub audit_one_in: u32,
}

impl Default for ConsensusConfig {
    fn default() -> Self {
        Self { enabled: true, suffixes: BTreeMap::new(), hold_secs: 3_600, audit_one_in: 20 }
    }
}

/// Record lookups (`[engine.records]`): the recursive resolvers `/v1/dns` asks, and how
/// `/v1/whois` follows a thin registry's referral to the registrar.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RecordsConfig {
    /// Recursive resolvers (`ip` or `ip:port`, port 53 by default); empty: the system's
    /// (`/etc/resolv.conf`).
    pub resolvers: Vec<String>,
    /// Per-query timeout, seconds.
    pub timeout_secs: f64,
    /// Attempts per resolver.
    pub attempts: usize,
    /// Entries of the resolver's own cache (it honours record TTLs); 0 disables it.
    pub cache_size: u64,
    /// Validate DNSSEC (RFC 4033–4035) on `/v1/dns` answers: records that fail validation
    /// (`bogus`) are not returned (their type is listed as failed), and the answer says how
    /// it was proven (`lookup.dnssec`: `secure`, `insecure`, `indeterminate`). Off by default:
    /// most recursive resolvers validate already, and validation costs extra queries (DNSKEY, DS
    /// up the chain).
    pub dnssec_validation: bool,
    /// Trust anchor file for DNSSEC validation (DNSKEY records in zone-file form, as unbound's
    /// `trust-anchor-file`); unset: the IANA root keys (KSK-2017, KSK-2024) built into
    /// hickory. Used only when `dnssec_validation` is on.
    pub trust_anchor: Option<String>,
    /// Whole-request deadline for one DNS lookup (all types, in parallel), seconds.
    pub dns_deadline_secs: f64,
    /// Whole-request deadline for one WHOIS lookup (registry plus one referral), seconds.
    pub whois_deadline_secs: f64,
    /// How long a registration answer is kept in the worker's cache, seconds (0: no cache).
    pub whois_cache_ttl_secs: u64,
    /// Thin-registry referral (registrar RDAP `related` link / WHOIS `Registrar WHOIS Server`).
    pub referral: ReferralConfig,
}

impl Default for RecordsConfig {
    fn default() -> Self {
        Self {
            resolvers: Vec::new(),
            timeout_secs: 2.0,
            attempts: 2,
            cache_size: 4096,
            dnssec_validation: false,
            trust_anchor: None,
            dns_deadline_secs: 5.0,
            whois_deadline_secs: 10.0,
            whois_cache_ttl_secs: 900,
            referral: ReferralConfig::default(),
        }
    }
}

/// Following a thin registry's referral once, with SSRF guards: https only for RDAP, every
/// resolved address must be public unicast, the connection is pinned to the address checked,
/// one hop, size and time caps.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ReferralConfig {
    /// Whether referrals are followed at all.
    pub follow: bool,
    /// Whole-exchange deadline of the referral, seconds.
    pub timeout_secs: f64,
    /// Largest referral answer read, bytes.
    pub max_bytes: usize,
    /// TEST ONLY: socket addresses (`ip:port`) that a referral may reach although they are not
    /// public unicast (the registry simulator on loopback), keyed by the referral's host name.
    /// Also allows plain `http` for those hosts. Never set this in production.
    pub test_only_allow: std::collections::BTreeMap<String, String>,
}

impl Default for ReferralConfig {
    fn default() -> Self {
        Self { follow: true, timeout_secs: 4.0, max_bytes: 512 * 1024, test_only_allow: Default::default() }
    }
}
