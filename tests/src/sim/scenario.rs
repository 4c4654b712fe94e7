//! The scenario: which registries exist, what they offer, and the truth about every name.
//!
//! A scenario is a TOML file (format in `tests/fixtures/scenarios/README.md`). It is the
//! simulator's whole world: a name that is not listed is [`Truth::Available`] in its registry,
//! and a name under a suffix the scenario does not serve has no registry at all.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

/// The demo scenario shipped in `tests/fixtures/scenarios/demo.toml` (embedded, so the
/// simulator runs from the repository alone).
const DEMO_TOML: &str = include_str!("../../fixtures/scenarios/demo.toml");

/// What is really true about a domain name in its registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truth {
    /// Registered and delegated: NS in the TLD zone, taken in RDAP/WHOIS.
    Registered,
    /// Not registered: NXDOMAIN, RDAP 404, WHOIS "not found".
    Available,
    /// Registered but on `serverHold`/`clientHold`: *not* delegated (NXDOMAIN), yet taken in
    /// RDAP/WHOIS. The trap for a checker that trusts NXDOMAIN.
    Held,
    /// Deleted by the registrar, in the redemption grace / pending-delete period (RFC 3915):
    /// not delegated, RDAP status `pending delete` + `redemption period`.
    PendingDelete,
    /// On the registry's reserved list: never delegated, cannot be registered.
    Reserved,
}

impl Truth {
    /// The snake_case name used in scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Registered => "registered",
            Self::Available => "available",
            Self::Held => "held",
            Self::PendingDelete => "pending_delete",
            Self::Reserved => "reserved",
        }
    }

    /// Whether the TLD zone delegates the name (only registered names are in the zone).
    pub fn is_delegated(self) -> bool {
        matches!(self, Self::Registered)
    }
}

impl fmt::Display for Truth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol a simulated registry offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Authoritative DNS for the suffix's zone (UDP and TCP).
    Dns,
    /// RDAP over HTTP (RFC 7480/9083).
    Rdap,
    /// WHOIS over TCP (RFC 3912).
    Whois,
}

/// Which recorded RDAP server the answers are built from (see `tests/fixtures/PROVENANCE.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RdapFamily {
    /// Verisign (`rdap.verisign.com`, .com/.net): upper-case `ldhName`, 404 with an empty body.
    #[default]
    Verisign,
    /// CentralNic (`rdap.centralnic.com`, many new gTLDs): 404 with an RDAP error object.
    Centralnic,
}

/// Which recorded WHOIS server the answers are built from (see `tests/fixtures/PROVENANCE.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhoisFamily {
    /// `whois.verisign-grs.com` (.com/.net): `No match for "NAME".` when available.
    Verisign,
    /// `whois.nic.af` (AFGNIC on CoCCA, .af and .com.af): `Domain Status: No Object Found`.
    NicAf,
    /// `whois.denic.de` (.de): `Status: free` when available; wants `-T dn,ace` before the name.
    Denic,
    /// `whois.nic.io` (ICB, .io): `NOT FOUND`, and `Reserved by Registry` for reserved names.
    NicIo,
}

impl WhoisFamily {
    /// The real registry WHOIS host this family was recorded from; dsa selects its reply
    /// markers by this host name, so `engine.whois.addr_overrides` is keyed by it.
    pub fn default_host(self) -> &'static str {
        match self {
            Self::Verisign => "whois.verisign-grs.com",
            Self::NicAf => "whois.nic.af",
            Self::Denic => "whois.denic.de",
            Self::NicIo => "whois.nic.io",
        }
    }
}

/// One simulated registry suffix (`[[tld]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TldSpec {
    /// The suffix as an A-label without a leading dot: `com`, `com.af`.
    pub suffix: String,
    /// The protocols this registry offers.
    pub protocols: Vec<Protocol>,
    /// Recorded RDAP server family (default: `verisign`); used when `protocols` has `rdap`.
    #[serde(default)]
    pub rdap_family: RdapFamily,
    /// Recorded WHOIS text family; required when `protocols` has `whois`.
    #[serde(default)]
    pub whois_family: Option<WhoisFamily>,
    /// The registry's real WHOIS host name (default: the family's, e.g. `whois.nic.af`).
    #[serde(default)]
    pub whois_host: Option<String>,
    /// A lying RDAP server: 404 (as for a free name) for registered names that are not
    /// delegated (`held`, `pending_delete`), as `rdap.nic.io` and `rdap.nic.co` did on
    /// 2026-09-14 (browser-use/browser-harness#723). DNS and WHOIS stay truthful, so a second
    /// signal can catch the lie.
    #[serde(default)]
    pub rdap_false_404: bool,
}

impl Truth {
    /// Whether a registry with `rdap_false_404` answers 404 for this truth: registered, yet not
    /// delegated (a reserved name is never registered).
    pub fn is_registered_undelegated(self) -> bool {
        matches!(self, Self::Held | Self::PendingDelete)
    }
}

impl TldSpec {
    /// Whether the registry offers `protocol`.
    pub fn offers(&self, protocol: Protocol) -> bool {
        self.protocols.contains(&protocol)
    }

    /// The WHOIS host name of this registry, when it offers WHOIS.
    pub fn whois_host(&self) -> Option<String> {
        if !self.offers(Protocol::Whois) {
            return None;
        }
        self.whois_host.clone().or_else(|| self.whois_family.map(|f| f.default_host().to_owned()))
    }
}

/// One domain with a known truth (`[[domain]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainSpec {
    /// The name as an A-label, lower case (`example.com`, `xn--bcher-kva.de`).
    pub name: String,
    /// What is true about it.
    pub truth: Truth,
}

/// A name's lifecycle over time (`[[timeline]]`): registered until `redemption_at` (its RDAP
/// expiry date is `expires_at`), in redemption (RDAP `pending delete` + `redemption period`)
/// until `pending_delete_at`, pending delete (`pending delete` alone, RFC 3915) until `free_at`,
/// then not registered. Phases follow the simulator's clock ([`crate::sim::Simulator::set_now`]).
///
/// In DNS a timeline name is delegated while it is registered and answers NXDOMAIN in every other
/// phase (registries pull deleted names from the zone): a checker that trusted NXDOMAIN would
/// call it available from its deletion on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeline {
    /// The registry's expiry date (published in RDAP while registered; a year after
    /// `reregistered_at` once registered again).
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: time::OffsetDateTime,
    /// Deleted by the registrar: the redemption grace period starts.
    #[serde(with = "time::serde::rfc3339")]
    pub redemption_at: time::OffsetDateTime,
    /// The pending-delete period starts.
    #[serde(with = "time::serde::rfc3339")]
    pub pending_delete_at: time::OffsetDateTime,
    /// Purged: the name is free.
    #[serde(with = "time::serde::rfc3339")]
    pub free_at: time::OffsetDateTime,
    /// Registered again by someone (optional): registered from then on, expiring a year later.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub reregistered_at: Option<time::OffsetDateTime>,
}

/// Where a timeline name is at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Registered (before and after its expiry date, until deleted).
    Registered,
    /// Redemption grace period.
    Redemption,
    /// Pending delete.
    PendingDelete,
    /// Free.
    Free,
}

impl Timeline {
    /// The phase at `now`.
    pub fn phase(&self, now: time::OffsetDateTime) -> Phase {
        if self.reregistered_at.is_some_and(|at| now >= at) {
            Phase::Registered
        } else if now >= self.free_at {
            Phase::Free
        } else if now >= self.pending_delete_at {
            Phase::PendingDelete
        } else if now >= self.redemption_at {
            Phase::Redemption
        } else {
            Phase::Registered
        }
    }
}

/// One timeline (`[[timeline]]`): a name and its phases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineSpec {
    /// The name as an A-label, lower case.
    pub name: String,
    /// Its phases.
    #[serde(flatten)]
    pub timeline: Timeline,
}

/// How a server misbehaves on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// Answer normally.
    #[default]
    None,
    /// Read the request, then close the connection with a TCP RST (SO_LINGER 0).
    Reset,
    /// Read the request, then never answer (the connection stays open until the client gives
    /// up or the simulator stops).
    Stall,
    /// Send the normal answer at one byte per second.
    Slow,
    /// Send a 10 MiB answer (RDAP: a valid JSON object padded with a huge remark; WHOIS: the
    /// normal text followed by padding lines).
    Oversize,
}

/// Artificial latency per protocol, milliseconds, added before each answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Latency {
    /// DNS answers.
    pub dns: u64,
    /// RDAP answers.
    pub rdap: u64,
    /// WHOIS answers.
    pub whois: u64,
}

/// Per-client-IP rate limits; a request over the limit is a counted violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimit {
    /// RDAP requests per second (burst of the same size); over it the answer is 429.
    pub rdap_per_second: Option<u32>,
    /// WHOIS queries per second (burst of the same size); over it the answer is the registry's
    /// "limit exceeded" text.
    pub whois_per_second: Option<u32>,
}

/// Faults per protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Fault of the RDAP server.
    pub rdap: Fault,
    /// Fault of the WHOIS server.
    pub whois: Fault,
}

/// Behaviour knobs (`[knobs]`), changeable at run time with `Simulator::set_knobs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Knobs {
    /// Added latency.
    pub latency_ms: Latency,
    /// Rate limits.
    pub rate_limit: RateLimit,
    /// Faults.
    pub faults: Faults,
}

/// The serialised form of a scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    #[serde(default)]
    tld: Vec<TldSpec>,
    #[serde(default)]
    domain: Vec<DomainSpec>,
    #[serde(default)]
    timeline: Vec<TimelineSpec>,
    #[serde(default)]
    knobs: Knobs,
}

/// A validated scenario: registries, truths and initial knobs. Deserialises (with validation)
/// from the scenario file format, so it can be embedded in another serde document.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "ScenarioFile")]
pub struct Scenario {
    tlds: Vec<TldSpec>,
    truths: BTreeMap<String, Truth>,
    timelines: BTreeMap<String, Timeline>,
    knobs: Knobs,
}

impl TryFrom<ScenarioFile> for Scenario {
    type Error = anyhow::Error;

    fn try_from(file: ScenarioFile) -> anyhow::Result<Self> {
        Self::new(file.tld, file.domain, file.knobs)?.with_timelines(file.timeline)
    }
}

impl Scenario {
    /// Parses and validates a scenario from TOML text.
    ///
    /// # Errors
    /// Malformed TOML, an unknown field, a bad suffix or name, a duplicate, a domain outside
    /// every suffix, or a WHOIS registry without `whois_family`.
    pub fn from_toml(s: &str) -> anyhow::Result<Self> {
        let file: ScenarioFile = toml::from_str(s).context("malformed scenario TOML")?;
        Self::try_from(file)
    }

    /// Reads a scenario file.
    ///
    /// # Errors
    /// As [`Scenario::from_toml`], or when the file is unreadable.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read scenario {}", path.display()))?;
        Self::from_toml(&text).with_context(|| format!("invalid scenario {}", path.display()))
    }

    /// The demo scenario (`tests/fixtures/scenarios/demo.toml`, compiled in).
    ///
    /// # Panics
    /// Never in a released build: a unit test parses the embedded file.
    pub fn demo() -> Self {
        // The signature is fixed by the harness API (no Result); the file is compiled in and
        // covered by `demo_is_valid_and_uses_every_truth`.
        Self::from_toml(DEMO_TOML).expect("the embedded demo scenario is valid")
    }

    /// Builds a scenario from parts (same validation as [`Scenario::from_toml`]).
    ///
    /// # Errors
    /// As [`Scenario::from_toml`].
    pub fn new(tlds: Vec<TldSpec>, domains: Vec<DomainSpec>, knobs: Knobs) -> anyhow::Result<Self> {
        let mut seen = BTreeMap::new();
        let mut tlds_out = Vec::with_capacity(tlds.len());
        for mut tld in tlds {
            tld.suffix = normalise(&tld.suffix);
            check_name(&tld.suffix).with_context(|| format!("[[tld]] suffix {:?}", tld.suffix))?;
            if seen.insert(tld.suffix.clone(), ()).is_some() {
                bail!("[[tld]] suffix {:?} is listed twice", tld.suffix);
            }
            if tld.offers(Protocol::Whois) && tld.whois_family.is_none() {
                bail!("[[tld]] {:?} offers whois but has no whois_family", tld.suffix);
            }
            tlds_out.push(tld);
        }
        let mut scenario = Self { tlds: tlds_out, truths: BTreeMap::new(), timelines: BTreeMap::new(), knobs };
        for domain in domains {
            let name = normalise(&domain.name);
            check_name(&name).with_context(|| format!("[[domain]] name {:?}", domain.name))?;
            match scenario.tld_of(&name) {
                Some(tld) if tld.suffix != name => {}
                _ => bail!("[[domain]] {name:?} is not below any [[tld]] suffix"),
            }
            if scenario.truths.insert(name.clone(), domain.truth).is_some() {
                bail!("[[domain]] {name:?} is listed twice");
            }
        }
        Ok(scenario)
    }

    /// Adds timelines (names not listed as `[[domain]]`, under a suffix of the scenario, phases
    /// in order).
    ///
    /// # Errors
    /// A bad name, a name listed twice or also as a `[[domain]]`, or phases out of order.
    pub fn with_timelines(mut self, timelines: Vec<TimelineSpec>) -> anyhow::Result<Self> {
        for spec in timelines {
            let name = normalise(&spec.name);
            check_name(&name).with_context(|| format!("[[timeline]] name {:?}", spec.name))?;
            match self.tld_of(&name) {
                Some(tld) if tld.suffix != name => {}
                _ => bail!("[[timeline]] {name:?} is not below any [[tld]] suffix"),
            }
            let t = spec.timeline;
            if !(t.redemption_at <= t.pending_delete_at
                && t.pending_delete_at <= t.free_at
                && t.reregistered_at.is_none_or(|at| t.free_at <= at))
            {
                bail!("[[timeline]] {name:?}: redemption_at ≤ pending_delete_at ≤ free_at ≤ reregistered_at must hold");
            }
            if self.truths.contains_key(&name) || self.timelines.insert(name.clone(), t).is_some() {
                bail!("[[timeline]] {name:?} is listed twice");
            }
        }
        Ok(self)
    }

    /// Every timeline: name and phases.
    pub fn timelines(&self) -> impl Iterator<Item = (&str, &Timeline)> {
        self.timelines.iter().map(|(name, t)| (name.as_str(), t))
    }

    /// The timeline of `name`, if it has one.
    pub fn timeline(&self, name: &str) -> Option<&Timeline> {
        self.timelines.get(&normalise(name))
    }

    /// The truth about `name` at `now`: a timeline's phase (redemption and pending delete are
    /// [`Truth::PendingDelete`]), else [`Scenario::truth`].
    pub fn truth_at(&self, name: &str, now: time::OffsetDateTime) -> Truth {
        match self.timeline(name).map(|t| t.phase(now)) {
            Some(Phase::Registered) => Truth::Registered,
            Some(Phase::Redemption | Phase::PendingDelete) => Truth::PendingDelete,
            Some(Phase::Free) => Truth::Available,
            None => self.truth(name),
        }
    }

    /// The truth about `name` (case-insensitive, trailing dot allowed); unlisted names are
    /// [`Truth::Available`].
    pub fn truth(&self, name: &str) -> Truth {
        self.truths.get(&normalise(name)).copied().unwrap_or(Truth::Available)
    }

    /// The registry holding `name`: the longest scenario suffix it ends with (`google.com.af`
    /// → `com.af`, not `af`).
    pub fn tld_of(&self, name: &str) -> Option<&TldSpec> {
        let name = normalise(name);
        self.tlds
            .iter()
            .filter(|t| name == t.suffix || name.ends_with(&format!(".{}", t.suffix)))
            .max_by_key(|t| t.suffix.len())
    }

    /// The registry with exactly this suffix.
    pub fn tld(&self, suffix: &str) -> Option<&TldSpec> {
        let suffix = normalise(suffix);
        self.tlds.iter().find(|t| t.suffix == suffix)
    }

    /// Every registry, in file order.
    pub fn tlds(&self) -> &[TldSpec] {
        &self.tlds
    }

    /// Every listed domain with its truth, sorted by name.
    pub fn domains(&self) -> impl Iterator<Item = (&str, Truth)> {
        self.truths.iter().map(|(n, t)| (n.as_str(), *t))
    }

    /// The knobs the simulator starts with.
    pub fn knobs(&self) -> Knobs {
        self.knobs
    }
}

/// Lower-cases and drops one trailing dot.
pub(crate) fn normalise(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Checks an LDH name (A-labels only): labels of 1–63 letters, digits and inner hyphens,
/// 253 octets at most (RFC 1035 §2.3.1, RFC 5890 §2.3.1).
pub(crate) fn check_name(name: &str) -> anyhow::Result<()> {
    if name.is_empty() || name.len() > 253 {
        bail!("must be 1 to 253 characters");
    }
    for label in name.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            bail!("label {label:?} is not an LDH label (use A-labels for IDNs)");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_is_valid_and_uses_every_truth() {
        let demo = Scenario::demo();
        for truth in [Truth::Registered, Truth::Available, Truth::Held, Truth::PendingDelete, Truth::Reserved] {
            assert!(demo.domains().any(|(_, t)| t == truth), "demo lacks {truth}");
        }
        assert_eq!(demo.truth("EXAMPLE.com."), Truth::Registered);
        assert_eq!(demo.truth("surely-not-listed-anywhere.com"), Truth::Available);
        assert_eq!(demo.tld_of("google.com.af").map(|t| t.suffix.as_str()), Some("com.af"));
    }

    #[test]
    fn rejects_bad_scenarios() {
        let no_family = "[[tld]]\nsuffix = \"af\"\nprotocols = [\"whois\"]\n";
        assert!(Scenario::from_toml(no_family).is_err());
        let outside = "[[tld]]\nsuffix = \"com\"\nprotocols = [\"dns\"]\n\
                       [[domain]]\nname = \"x.net\"\ntruth = \"registered\"\n";
        assert!(Scenario::from_toml(outside).is_err());
        let bad_name = "[[tld]]\nsuffix = \"com\"\nprotocols = [\"dns\"]\n\
                        [[domain]]\nname = \"-x.com\"\ntruth = \"registered\"\n";
        assert!(Scenario::from_toml(bad_name).is_err());
        let typo = "[[tld]]\nsuffix = \"com\"\nprotocol = [\"dns\"]\n";
        assert!(Scenario::from_toml(typo).is_err());
        // Embedded in another document, validation still runs.
        #[derive(Deserialize)]
        struct Outer {
            #[expect(dead_code, reason = "only deserialisation is tested")]
            scenario: Scenario,
        }
        assert!(toml::from_str::<Outer>("[scenario]\n[[scenario.tld]]\nsuffix = \"-x\"\nprotocols = []\n").is_err());
    }
}
