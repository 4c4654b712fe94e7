//! Catalogue generation: the shared input data → `common/data/tld-catalogue.json`.
//!
//! # The path of the data
//!
//! ```text
//!  iana/tlds-alpha-by-domain.txt ──► which suffixes exist (exactly the IANA root zone list)
//!  iana/rdap/dns.json (RFC 9224) ──► `rdap`: bootstrap base URLs, https first
//!  tld/zonedb-zones.jsonl ─────────► `tags`, `whois` host, `nameservers`, closed/brand policy
//!  php-whois servers JSON ─────────► `whois` host where zonedb has none (ccTLDs only),
//!                                    query templates (`-T dn,ace %s` for DENIC…)
//!  psl/public_suffix_list.dat ─────► which second-level zones are registry suffixes (ICANN part)
//!  PROVENANCE.md ──────────────────► commits and dates recorded in `meta`
//!           │
//!           ▼
//!  generate() → CatalogueFile → render() → one entry per line, diff-friendly
//! ```
//!
//! The generator deliberately does **not** read the GPL-licensed tables of the `whois` client
//! (`whois-servers/rfc1036-whois/*`, nor `tld/tld-servers.tsv`, which embeds one of them): the
//! shipped file must not derive from them. The test suite uses them only to cross-check.
//!
//! # Rules
//!
//! * **RDAP**: the IANA bootstrap is authoritative (RFC 9224 §4); https URLs are listed before
//!   http-only ones, bootstrap order kept otherwise. zonedb also lists RDAP URLs for a few TLDs the
//!   bootstrap does not have (`.de`, `.io`…); those are mentioned in the reason but not used.
//! * **WHOIS** (RFC 3912, port 43): zonedb's `whoisServer` wins (it mirrors the IANA root zone
//!   database and is from 2026; php-whois is from 2023). Without one:
//!   - a gTLD gets no WHOIS: since 2025-01-28 ICANN no longer requires gTLD registries to run
//!     port 43, and the IANA database (hence zonedb) drops the server when a registry stops;
//!   - a zone for which zonedb records a web-only `whoisURL` gets no WHOIS either;
//!   - a ccTLD (or a second-level zone) falls back to php-whois; when php-whois lists several
//!     hosts, one inside the zone's own TLD (`whois.belizenic.bz`) beats outside ones
//!     (`whois.afilias-grs.info`), else the first listed.
//!
//!   The query template is php-whois's `queryFormat` for that very host, unless php-whois also
//!   lists the host without one (then plain `{domain}`, which every RFC 3912 server accepts).
//!   Today that gives DENIC `-T dn,ace {domain}` (DENIC's documented type option: the full
//!   domain object with its ACE form), JPRS `{domain}/e` (JPRS's documented switch to English
//!   output) and DK Hostmaster `--show-handles {domain}` (adds contact handles). Verisign's thin
//!   registries get plain `{domain}`: its `domain` keyword only narrows the match.
//! * **Methods**: `rdap` when the bootstrap has the TLD, `whois` when a server is known, `dns`
//!   appended when zonedb knows the name servers (it can only prove "taken").
//!   Two small hand-written tables cover what no input says: servers a public client cannot use
//!   (`.es`: Red.es serves port 43 only to authorised IP addresses) and answer charsets that are
//!   not UTF-8 (NIC.br, ISO-8859-1).
//! * **Policy**: restricted for `gov`, `mil`, `edu`, `int`, the infrastructure TLD `arpa`, zonedb
//!   `brand` and `retired` TLDs, zonedb `closed` TLDs (unless the PSL makes every second-level
//!   label a public suffix, `*.np`, in which case the TLD entry governs those zones and stays
//!   open), and second-level zones whose label marks government, military or education use
//!   (`gov.af`, `ac.uk`, `go.th`). Sponsored TLDs (`aero`, `coop`, `museum`…) stay open: their
//!   eligibility is checked by registrars at registration, a free name is still free.
//! * **Second-level zones**: every PSL ICANN second-level zone of `.af` (spec §1) and of each
//!   restricted closed ccTLD (so `co.za` is not answered with `.za`'s restriction), plus zonedb and
//!   php-whois second-level zones that are PSL ICANN suffixes and either have their own registry
//!   WHOIS server (`co.za`, `ac.uk`) or a restricted label (`gov.uk`). A zone run by the TLD's
//!   registry inherits the TLD's RDAP and WHOIS; a zone with its own registry gets no RDAP (the
//!   TLD's RDAP service does not answer for it). Zones below other restricted TLDs (`e164.arpa`)
//!   get no entry: the TLD's restriction answers for them. A zone's name servers are its own
//!   zonedb ones only: the TLD's servers would answer with a referral for the zone.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{CatalogueFile, CatalogueMeta, LookupMethod, RegistrationPolicy, TldEntry, WhoisServer};

/// Locations of the inputs, relative to the data directory (`shared/data`).
pub mod paths {
    /// IANA root zone TLD list (`# Version …` header, one upper-case label per line).
    pub const IANA_TLDS: &str = "iana/tlds-alpha-by-domain.txt";
    /// IANA RDAP bootstrap registry for DNS (RFC 9224 format).
    pub const RDAP_BOOTSTRAP: &str = "iana/rdap/dns.json";
    /// zonedb metadata, one JSON object per zone (ODbL-1.0).
    pub const ZONEDB: &str = "tld/zonedb-zones.jsonl";
    /// php-whois zone → WHOIS host table (MIT).
    pub const PHP_WHOIS: &str = "whois-servers/php-whois/module.tld.servers.json";
    /// Public Suffix List (MPL-2.0); only its ICANN section is used.
    pub const PUBLIC_SUFFIX_LIST: &str = "psl/public_suffix_list.dat";
    /// Provenance of the data directory: commits and dates of each input.
    pub const PROVENANCE: &str = "PROVENANCE.md";
}

/// Second-level zones the spec names (§1: `.com.af`, `.net.af`, `.org.af`, `.gov.af`, `.edu.af`):
/// every PSL ICANN second-level zone under these TLDs gets an entry.
const SPEC_SLD_PARENTS: &[&str] = &["af"];

/// TLDs restricted by charter, with who may register (the IANA root zone database names the
/// sponsoring organisation of each).
const CHARTER_RESTRICTED_TLDS: &[(&str, &str)] = &[
    ("edu", "restricted to U.S.-accredited post-secondary institutions (EDUCAUSE)"),
    ("gov", "restricted to U.S. government entities (CISA runs the .gov registry)"),
    ("int", "restricted to organisations established by international treaty (IANA)"),
    ("mil", "restricted to the U.S. Department of Defense"),
];

/// Second-level labels that mark a zone reserved for one kind of institution in ccTLDs
/// (`gov.af`, `go.th`, `ac.uk`, `k12.tr`…), with that kind in words. Applied only to the
/// second-level zones this generator emits, never to TLDs.
const RESTRICTED_SLD_LABELS: &[(&str, &str)] = &[
    ("ac", "academic"),
    ("edu", "education"),
    ("go", "government"),
    ("gob", "government"),
    ("gouv", "government"),
    ("gov", "government"),
    ("govt", "government"),
    ("gv", "government"),
    ("k12", "school"),
    ("mil", "military"),
    ("sch", "school"),
    ("univ", "university"),
];

/// Port-43 servers that exist but cannot be used by a public client, keyed by zone.
const UNUSABLE_WHOIS: &[(&str, &str)] = &[(
    "es",
    "Red.es answers port-43 WHOIS only from IP addresses it has authorised in advance; \
     public WHOIS is web-only at https://www.dominios.es",
)];

/// WHOIS servers whose answers are not UTF-8 (WHATWG encoding label). Small and hand-written on
/// purpose: NIC.br answers in ISO-8859-1 (a raw `.br` answer in `shared/data/whois`, from
/// joepie91/python-whois, has Latin-1 bytes such as `Par\xe1`); `whois.nic.br` is an alias of
/// `whois.registro.br`.
const WHOIS_CHARSETS: &[(&str, &str)] = &[("whois.nic.br", "iso-8859-1"), ("whois.registro.br", "iso-8859-1")];

/// The date from which ICANN no longer requires gTLD registries to run port-43 WHOIS (the RDDS
/// transition to RDAP), cited in reasons.
const ICANN_WHOIS_SUNSET: &str = "2025-01-28";

/// Errors generating the catalogue.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// An input file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path tried.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An input does not have the expected shape.
    #[error("{input}: {detail}")]
    Input {
        /// Which input (a path from [`paths`]).
        input: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The catalogue could not be serialised.
    #[error("cannot serialise the catalogue: {0}")]
    Json(#[from] serde_json::Error),
}

fn bad(input: &'static str, detail: impl Into<String>) -> BuildError {
    BuildError::Input { input, detail: detail.into() }
}

/// The raw text of every input, as read from the data directory (see [`paths`]).
#[derive(Debug, Clone)]
pub struct Sources {
    /// [`paths::IANA_TLDS`].
    pub iana_tlds: String,
    /// [`paths::RDAP_BOOTSTRAP`].
    pub rdap_bootstrap: String,
    /// [`paths::ZONEDB`].
    pub zonedb: String,
    /// [`paths::PHP_WHOIS`].
    pub php_whois: String,
    /// [`paths::PUBLIC_SUFFIX_LIST`].
    pub public_suffix_list: String,
    /// [`paths::PROVENANCE`].
    pub provenance: String,
}

impl Sources {
    /// Reads every input from `data_dir` (the `shared/data` directory).
    ///
    /// # Errors
    /// [`BuildError::Io`] naming the first file that cannot be read.
    pub fn read(data_dir: &Path) -> Result<Self, BuildError> {
        let read = |rel: &str| {
            let path = data_dir.join(rel);
            std::fs::read_to_string(&path).map_err(|source| BuildError::Io { path, source })
        };
        Ok(Self {
            iana_tlds: read(paths::IANA_TLDS)?,
            rdap_bootstrap: read(paths::RDAP_BOOTSTRAP)?,
            zonedb: read(paths::ZONEDB)?,
            php_whois: read(paths::PHP_WHOIS)?,
            public_suffix_list: read(paths::PUBLIC_SUFFIX_LIST)?,
            provenance: read(paths::PROVENANCE)?,
        })
    }
}

/// Reads the inputs in `data_dir`, generates the catalogue and renders it as the shipped file.
///
/// # Errors
/// As [`Sources::read`], [`generate`] and [`render`].
pub fn generate_json(data_dir: &Path) -> Result<String, BuildError> {
    render(&generate(&Sources::read(data_dir)?)?)
}

/// Generates the catalogue from the inputs. Deterministic: the same inputs give the same file
/// (`generated_at` is the newest input date, not the clock).
///
/// # Errors
/// [`BuildError::Input`] when an input is malformed, or when an IANA TLD has no zonedb record.
pub fn generate(sources: &Sources) -> Result<CatalogueFile, BuildError> {
    let iana = IanaList::parse(&sources.iana_tlds)?;
    let bootstrap = Bootstrap::parse(&sources.rdap_bootstrap)?;
    let zones = parse_zonedb(&sources.zonedb)?;
    let php = parse_php_whois(&sources.php_whois)?;
    let psl = Psl::parse(&sources.public_suffix_list)?;
    let provenance = Provenance { text: &sources.provenance };
    let ctx = Ctx { bootstrap: &bootstrap, zones: &zones, php: &php, psl: &psl };

    let mut entries: BTreeMap<String, TldEntry> = BTreeMap::new();
    let mut sld_parents: BTreeSet<String> = SPEC_SLD_PARENTS.iter().map(|s| (*s).to_owned()).collect();
    for tld in &iana.tlds {
        let zone = zones.get(tld).ok_or_else(|| bad(paths::ZONEDB, format!("no record for IANA TLD {tld}")))?;
        let (entry, enumerate_slds) = ctx.tld_entry(tld, zone)?;
        if enumerate_slds {
            sld_parents.insert(tld.clone());
        }
        entries.insert(tld.clone(), entry);
    }

    for suffix in ctx.sld_candidates(&sld_parents, &entries)? {
        let Some((_, tld)) = suffix.split_once('.') else {
            continue;
        };
        let Some(parent) = entries.get(tld) else {
            continue;
        };
        // Under a restricted TLD whose zones are not enumerated (a brand, `arpa`), the TLD's
        // restriction is the answer for every zone below it (`e164.arpa`).
        let parent_restricted = matches!(parent.policy, RegistrationPolicy::Restricted { .. });
        if parent_restricted && !sld_parents.contains(tld) {
            continue;
        }
        let entry = ctx.sld_entry(&suffix, parent)?;
        entries.insert(suffix, entry);
    }

    let meta = meta(&iana, &bootstrap, &zones, &php, &psl, &provenance, sources)?;
    Ok(CatalogueFile { meta, entries: entries.into_values().collect() })
}

/// Renders the catalogue file: the header pretty-printed, then one entry per line so that a
/// regeneration diffs line by line. The output parses with [`super::Catalogue::from_json`].
///
/// # Errors
/// [`BuildError::Json`] if serialisation fails (it does not for these types).
pub fn render(file: &CatalogueFile) -> Result<String, BuildError> {
    let meta = serde_json::to_string_pretty(&file.meta)?.replace('\n', "\n  ");
    let mut out = format!("{{\n  \"meta\": {meta},\n  \"entries\": [\n");
    for (i, entry) in file.entries.iter().enumerate() {
        out.push_str("    ");
        out.push_str(&serde_json::to_string(entry)?);
        out.push_str(if i + 1 < file.entries.len() { ",\n" } else { "\n" });
    }
    out.push_str("  ]\n}\n");
    Ok(out)
}

/// Counts of a catalogue by method chain (ignoring the `dns` pre-check) and policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// All entries (TLDs and second-level zones).
    pub entries: usize,
    /// Entries that are TLDs (one label).
    pub tlds: usize,
    /// Entries that are second-level zones.
    pub second_level: usize,
    /// Chain has RDAP and WHOIS.
    pub rdap_and_whois: usize,
    /// Chain has RDAP, no WHOIS.
    pub rdap_only: usize,
    /// Chain has WHOIS, no RDAP.
    pub whois_only: usize,
    /// Chain has only the DNS pre-check.
    pub dns_only: usize,
    /// Chain is empty.
    pub no_method: usize,
    /// Entries with a restricted policy.
    pub restricted: usize,
    /// Entries for which [`TldEntry::is_supported`] holds.
    pub supported: usize,
    /// TLD entries (one label) for which [`TldEntry::is_supported`] holds.
    pub supported_tlds: usize,
}

impl Summary {
    /// Counts the entries of `entries`.
    pub fn of<'a>(entries: impl IntoIterator<Item = &'a TldEntry>) -> Self {
        let mut s = Self::default();
        for e in entries {
            s.entries += 1;
            let is_tld = !e.suffix.contains('.');
            if is_tld {
                s.tlds += 1;
            } else {
                s.second_level += 1;
            }
            let rdap = e.methods.contains(&LookupMethod::Rdap);
            let whois = e.methods.contains(&LookupMethod::Whois);
            let dns = e.methods.contains(&LookupMethod::Dns);
            match (rdap, whois, dns) {
                (true, true, _) => s.rdap_and_whois += 1,
                (true, false, _) => s.rdap_only += 1,
                (false, true, _) => s.whois_only += 1,
                (false, false, true) => s.dns_only += 1,
                (false, false, false) => s.no_method += 1,
            }
            if matches!(e.policy, RegistrationPolicy::Restricted { .. }) {
                s.restricted += 1;
            }
            if e.is_supported() {
                s.supported += 1;
                if is_tld {
                    s.supported_tlds += 1;
                }
            }
        }
        s
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "entries {} ({} TLDs, {} second-level zones)", self.entries, self.tlds, self.second_level)?;
        writeln!(f, "  rdap+whois  {:5}", self.rdap_and_whois)?;
        writeln!(f, "  rdap only   {:5}", self.rdap_only)?;
        writeln!(f, "  whois only  {:5}", self.whois_only)?;
        writeln!(f, "  dns only    {:5}", self.dns_only)?;
        writeln!(f, "  no method   {:5}", self.no_method)?;
        writeln!(f, "  restricted  {:5}", self.restricted)?;
        writeln!(
            f,
            "  supported   {:5} (TLDs: {}); unsupported {}",
            self.supported,
            self.supported_tlds,
            self.entries - self.supported
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/// The IANA TLD list.
struct IanaList {
    /// `2026011900`.
    version: String,
    /// `Mon Jan 19 07:07:02 2026 UTC`, as printed.
    updated_text: String,
    updated: OffsetDateTime,
    /// Lower-case A-labels, in file order.
    tlds: Vec<String>,
}

impl IanaList {
    fn parse(text: &str) -> Result<Self, BuildError> {
        const INPUT: &str = paths::IANA_TLDS;
        let mut lines = text.lines();
        let header = lines.next().unwrap_or_default();
        // "# Version 2026011900, Last Updated Mon Jan 19 07:07:02 2026 UTC"
        let rest =
            header.strip_prefix("# Version ").ok_or_else(|| bad(INPUT, format!("unexpected header {header:?}")))?;
        let (version, updated_text) =
            rest.split_once(", Last Updated ").ok_or_else(|| bad(INPUT, format!("unexpected header {header:?}")))?;
        let updated =
            parse_ctime_utc(updated_text).ok_or_else(|| bad(INPUT, format!("unreadable date {updated_text:?}")))?;
        let mut tlds = Vec::new();
        let mut seen = HashSet::new();
        for line in lines {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let tld = line.to_ascii_lowercase();
            if !tld.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return Err(bad(INPUT, format!("not an A-label: {line:?}")));
            }
            if !seen.insert(tld.clone()) {
                return Err(bad(INPUT, format!("duplicate TLD {tld}")));
            }
            tlds.push(tld);
        }
        Ok(Self { version: version.to_owned(), updated_text: updated_text.to_owned(), updated, tlds })
    }
}

/// Parses `Mon Jan 19 07:07:02 2026 UTC` (ctime layout, as IANA prints it).
fn parse_ctime_utc(text: &str) -> Option<OffsetDateTime> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_weekday, month, day, clock, year, "UTC"] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| m == month)? + 1;
    let day: u8 = day.parse().ok()?;
    let rfc3339 = format!("{year}-{month:02}-{day:02}T{clock}Z");
    OffsetDateTime::parse(&rfc3339, &Rfc3339).ok()
}

/// The IANA RDAP bootstrap for DNS (RFC 9224 §4).
struct Bootstrap {
    version: String,
    publication: String,
    publication_at: OffsetDateTime,
    services: usize,
    /// TLD → base URLs, https first.
    urls: HashMap<String, Vec<String>>,
}

impl Bootstrap {
    fn parse(text: &str) -> Result<Self, BuildError> {
        const INPUT: &str = paths::RDAP_BOOTSTRAP;
        #[derive(Deserialize)]
        struct File {
            version: String,
            publication: String,
            /// Each service is `[[entries…], [base URLs…]]` (RFC 9224 §4).
            services: Vec<Vec<Vec<String>>>,
        }
        let file: File = serde_json::from_str(text).map_err(|e| bad(INPUT, e.to_string()))?;
        let publication_at = OffsetDateTime::parse(&file.publication, &Rfc3339)
            .map_err(|e| bad(INPUT, format!("publication {:?}: {e}", file.publication)))?;
        let mut urls: HashMap<String, Vec<String>> = HashMap::new();
        for service in &file.services {
            let [tlds, bases] = service.as_slice() else {
                return Err(bad(INPUT, format!("service is not [entries, urls]: {service:?}")));
            };
            // RFC 9224 §3: base URLs end in "/"; be lenient with one that does not.
            let mut bases: Vec<String> =
                bases.iter().map(|b| if b.ends_with('/') { b.clone() } else { format!("{b}/") }).collect();
            for b in &bases {
                let parsed = url::Url::parse(b).map_err(|e| bad(INPUT, format!("{b:?}: {e}")))?;
                if !matches!(parsed.scheme(), "https" | "http") {
                    return Err(bad(INPUT, format!("{b:?} is not http(s)")));
                }
            }
            // Prefer https (RFC 9224 §3: clients should use https when both are listed); a
            // stable sort keeps the bootstrap order otherwise.
            bases.sort_by_key(|b| !b.starts_with("https://"));
            for tld in tlds {
                let list = urls.entry(tld.to_ascii_lowercase()).or_default();
                for b in &bases {
                    if !list.contains(b) {
                        list.push(b.clone());
                    }
                }
                list.sort_by_key(|b| !b.starts_with("https://"));
            }
        }
        Ok(Self {
            version: file.version,
            publication: file.publication,
            publication_at,
            services: file.services.len(),
            urls,
        })
    }
}

/// One zonedb record (fields kept by the collector, see PROVENANCE §3).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Zone {
    domain: String,
    domain_punycode: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    registry_operator: Option<String>,
    country_name: Option<String>,
    whois_server: Option<String>,
    #[serde(rename = "whoisURL")]
    whois_url: Option<String>,
    #[serde(rename = "rdapURLs", default)]
    rdap_urls: Vec<String>,
    #[serde(default)]
    name_servers: Vec<String>,
}

impl Zone {
    fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

/// zonedb records keyed by A-label.
fn parse_zonedb(text: &str) -> Result<HashMap<String, Zone>, BuildError> {
    const INPUT: &str = paths::ZONEDB;
    let mut zones = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let zone: Zone = serde_json::from_str(line).map_err(|e| bad(INPUT, format!("line {}: {e}", n + 1)))?;
        let key = match &zone.domain_punycode {
            Some(p) => p.to_ascii_lowercase(),
            None => a_label(&zone.domain).map_err(|e| bad(INPUT, e))?,
        };
        zones.insert(key, zone);
    }
    Ok(zones)
}

/// One php-whois entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PhpServer {
    zone: String,
    host: String,
    query_format: Option<String>,
}

/// php-whois entries keyed by zone (A-label, no dot), file order kept; wildcard and root
/// entries are skipped.
fn parse_php_whois(text: &str) -> Result<HashMap<String, Vec<PhpServer>>, BuildError> {
    const INPUT: &str = paths::PHP_WHOIS;
    let list: Vec<PhpServer> = serde_json::from_str(text).map_err(|e| bad(INPUT, e.to_string()))?;
    let mut map: HashMap<String, Vec<PhpServer>> = HashMap::new();
    for mut server in list {
        let zone = server.zone.trim_start_matches('.');
        if zone.is_empty() || zone.contains('*') {
            continue;
        }
        let zone = a_label(zone).map_err(|e| bad(INPUT, e))?;
        server.host = a_label(&server.host).map_err(|e| bad(INPUT, e))?;
        map.entry(zone).or_default().push(server);
    }
    Ok(map)
}

/// The ICANN section of the Public Suffix List.
struct Psl {
    /// Plain rules (A-labels).
    rules: HashSet<String>,
    /// Parents of wildcard rules (`*.bd` → `bd`).
    wildcard_parents: HashSet<String>,
}

impl Psl {
    fn parse(text: &str) -> Result<Self, BuildError> {
        const INPUT: &str = paths::PUBLIC_SUFFIX_LIST;
        let begin = text.find("===BEGIN ICANN DOMAINS===").ok_or_else(|| bad(INPUT, "no ICANN section"))?;
        let end = text.find("===END ICANN DOMAINS===").ok_or_else(|| bad(INPUT, "no ICANN end"))?;
        let mut rules = HashSet::new();
        let mut wildcard_parents = HashSet::new();
        for line in text.get(begin..end).unwrap_or_default().lines() {
            let rule = line.split_whitespace().next().unwrap_or_default();
            if rule.is_empty() || rule.starts_with("//") || rule.starts_with('!') {
                continue;
            }
            if let Some(parent) = rule.strip_prefix("*.") {
                wildcard_parents.insert(a_label(parent).map_err(|e| bad(INPUT, e))?);
            } else {
                rules.insert(a_label(rule).map_err(|e| bad(INPUT, e))?);
            }
        }
        Ok(Self { rules, wildcard_parents })
    }

    /// The two-label rules under `tld`, sorted.
    fn second_level_of(&self, tld: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .rules
            .iter()
            .filter(|r| r.split_once('.').is_some_and(|(l, t)| t == tld && !l.contains('.')))
            .cloned()
            .collect();
        v.sort();
        v
    }
}

/// Facts read from `PROVENANCE.md`.
struct Provenance<'a> {
    text: &'a str,
}

impl Provenance<'_> {
    /// The `(commit, date)` recorded in the table row of `path`: the first 40-hex token followed
    /// by ` (YYYY-MM-DD`.
    fn commit_of(&self, path: &str) -> Result<(String, String), BuildError> {
        let row_start = format!("| `{path}`");
        let row = self
            .text
            .lines()
            .find(|l| l.starts_with(&row_start))
            .ok_or_else(|| bad(paths::PROVENANCE, format!("no table row for {path}")))?;
        for cell in row.split('|') {
            let cell = cell.trim();
            let Some((commit, rest)) = cell.split_once(" (") else {
                continue;
            };
            let commit = commit.trim();
            let date = rest.get(..10).unwrap_or_default();
            let is_commit = commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit());
            let is_date = date.len() == 10
                && date.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
            if is_commit && is_date {
                return Ok((commit.to_owned(), date.to_owned()));
            }
        }
        Err(bad(paths::PROVENANCE, format!("no `commit (date` in the row for {path}")))
    }
}

// ---------------------------------------------------------------------------------------------
// Building entries
// ---------------------------------------------------------------------------------------------

struct Ctx<'a> {
    bootstrap: &'a Bootstrap,
    zones: &'a HashMap<String, Zone>,
    php: &'a HashMap<String, Vec<PhpServer>>,
    psl: &'a Psl,
}

/// The WHOIS server chosen for a zone and where it came from, in words.
struct WhoisChoice {
    server: Option<WhoisServer>,
    /// For a server: its source (`zonedb; php-whois agrees`); without one: why none.
    note: String,
}

/// The RDAP base URLs chosen for a zone, where they came from, or why there are none.
struct RdapChoice {
    urls: Vec<String>,
    source: String,
    /// Why there is no RDAP (used when `urls` is empty).
    missing: String,
}

impl Ctx<'_> {
    fn php_hosts(&self, zone: &str) -> Vec<&str> {
        let mut hosts: Vec<&str> = Vec::new();
        for s in self.php.get(zone).map(Vec::as_slice).unwrap_or_default() {
            if !hosts.contains(&s.host.as_str()) {
                hosts.push(&s.host);
            }
        }
        hosts
    }

    /// The query template for `host` as php-whois sends it for `zone` (`%s\r\n` → `{domain}`);
    /// plain `{domain}` when php-whois has no format for that host, or also lists it without
    /// one. Plain `{domain}` is what every RFC 3912 server accepts (Verisign's thin registries
    /// included: the `domain` keyword only narrows the match, it is not needed).
    fn whois_server(&self, zone: &str, host: String) -> WhoisServer {
        let same_host: Vec<&PhpServer> =
            self.php.get(zone).map(|v| v.iter().filter(|s| s.host == host).collect()).unwrap_or_default();
        let query = if same_host.iter().any(|s| s.query_format.is_none()) {
            None
        } else {
            same_host.iter().find_map(|s| s.query_format.as_deref()).and_then(|f| {
                let t = f.trim_end_matches(['\r', '\n']).replace("%s", "{domain}");
                t.contains("{domain}").then_some(t)
            })
        };
        let charset = WHOIS_CHARSETS.iter().find(|(h, _)| *h == host).map(|(_, c)| (*c).to_owned());
        WhoisServer { host, port: 43, query: query.unwrap_or_else(|| "{domain}".to_owned()), charset }
    }

    /// Chooses the registry WHOIS server of a TLD (rules in the module doc).
    fn tld_whois(&self, tld: &str, zone: &Zone) -> Result<WhoisChoice, BuildError> {
        let php = self.php_hosts(tld);
        if let Some(raw) = &zone.whois_server {
            let host = a_label(raw).map_err(|e| bad(paths::ZONEDB, e))?;
            let note = if php.contains(&host.as_str()) {
                "zonedb; php-whois agrees".to_owned()
            } else if php.is_empty() {
                "zonedb".to_owned()
            } else {
                format!("zonedb; php-whois's older entry {} is not used", php.join(", "))
            };
            return Ok(WhoisChoice { server: Some(self.whois_server(tld, host)), note });
        }
        if let Some((_, why)) = UNUSABLE_WHOIS.iter().find(|(z, _)| *z == tld) {
            return Ok(WhoisChoice { server: None, note: (*why).to_owned() });
        }
        let stale = if php.is_empty() {
            String::new()
        } else {
            format!("; php-whois's 2023 entry {} is not used", php.join(", "))
        };
        if let Some(url) = &zone.whois_url {
            return Ok(WhoisChoice {
                server: None,
                note: format!("the registry offers web-only WHOIS at {url}{stale}"),
            });
        }
        if zone.has_tag("generic") {
            let note = format!(
                "zonedb, which mirrors the IANA root zone database, lists no port-43 server \
                 (gTLD registries may stop port 43 since {ICANN_WHOIS_SUNSET}){stale}"
            );
            return Ok(WhoisChoice { server: None, note });
        }
        match pick_php_host(tld, &php) {
            Some(host) => {
                let note = if php.len() > 1 {
                    format!("php-whois, preferred among {}; zonedb lists none", php.join(", "))
                } else {
                    "php-whois; zonedb lists none".to_owned()
                };
                Ok(WhoisChoice { server: Some(self.whois_server(tld, host)), note })
            }
            None => {
                Ok(WhoisChoice { server: None, note: "neither zonedb nor php-whois knows a port-43 server".to_owned() })
            }
        }
    }

    /// The entry of an IANA TLD, and whether its second-level zones need entries of their own
    /// (a closed TLD whose restriction must not leak to `co.<tld>` through the lookup fallback).
    fn tld_entry(&self, tld: &str, zone: &Zone) -> Result<(TldEntry, bool), BuildError> {
        let urls = self.bootstrap.urls.get(tld).cloned().unwrap_or_default();
        let unused: Vec<&String> = zone.rdap_urls.iter().filter(|u| !urls.contains(u)).collect();
        let mut missing = format!("the IANA bootstrap has no service for .{tld}");
        if !unused.is_empty() {
            missing.push_str(&format!("; zonedb lists {}, unused until the bootstrap does", join(&unused)));
        }
        let rdap = RdapChoice { urls, source: "IANA bootstrap".to_owned(), missing };
        let whois = self.tld_whois(tld, zone)?;
        let nameservers = name_servers(zone)?;
        let (policy, enumerate_slds, policy_note) = self.tld_policy(tld, zone);
        let notes: Vec<String> = policy_note.into_iter().collect();
        let entry = assemble(tld, zone.tags.clone(), policy, rdap, whois, nameservers, notes);
        Ok((entry, enumerate_slds))
    }

    /// The policy of a TLD, whether to emit its second-level zones, and a note for the reason.
    fn tld_policy(&self, tld: &str, zone: &Zone) -> (RegistrationPolicy, bool, Option<String>) {
        let restricted = |reason: String| RegistrationPolicy::Restricted { reason };
        if let Some((_, why)) = CHARTER_RESTRICTED_TLDS.iter().find(|(t, _)| *t == tld) {
            return (restricted((*why).to_owned()), false, None);
        }
        if zone.has_tag("infrastructure") {
            let why = "infrastructure TLD administered by IANA for the IAB, no public registrations";
            return (restricted(why.to_owned()), false, None);
        }
        let retired = zone
            .has_tag("retired")
            .then_some("zonedb tags it retired: it is leaving the root zone and takes no new registrations");
        if zone.has_tag("brand") {
            let mut why = "closed brand TLD, registrations only for the registry operator".to_owned();
            if let Some(r) = retired {
                why = format!("{why}; {r}");
            }
            return (restricted(why), false, None);
        }
        if zone.has_tag("closed") {
            if !zone.has_tag("country") {
                let operator = zone.registry_operator.as_deref().unwrap_or("the registry");
                let why = format!("closed TLD (zonedb), registrations only for {operator}");
                return (restricted(why), false, None);
            }
            if self.psl.wildcard_parents.contains(tld) {
                let note = format!(
                    "zonedb tags .{tld} closed to direct registrations, but the PSL makes every \
                     second-level label a public suffix (*.{tld}), so this entry governs names \
                     under those zones and stays open"
                );
                return (RegistrationPolicy::Open, false, Some(note));
            }
            let slds = self.psl.second_level_of(tld);
            let example = ["com", "co", "org", "net"]
                .into_iter()
                .map(|l| format!("{l}.{tld}"))
                .find(|s| slds.contains(s))
                .or_else(|| slds.first().cloned());
            let why = match example {
                None => {
                    format!("the .{tld} registry takes no registrations (zonedb tags it closed)")
                }
                Some(example) => format!(
                    "no registrations directly under .{tld} (zonedb tags it closed); names are \
                     registered under its second-level zones such as {example}, which have \
                     entries of their own"
                ),
            };
            return (restricted(why), !slds.is_empty(), None);
        }
        if let Some(r) = retired {
            return (restricted(r.to_owned()), false, None);
        }
        (RegistrationPolicy::Open, false, None)
    }

    /// Second-level zones that get entries (rules in the module doc), sorted.
    fn sld_candidates(
        &self,
        parents: &BTreeSet<String>,
        tlds: &BTreeMap<String, TldEntry>,
    ) -> Result<BTreeSet<String>, BuildError> {
        let mut out = BTreeSet::new();
        for parent in parents {
            out.extend(self.psl.second_level_of(parent));
        }
        let two_labels = |s: &str| s.split('.').count() == 2;
        for (suffix, zone) in self.zones {
            if !two_labels(suffix) || !self.psl.rules.contains(suffix) {
                continue;
            }
            if ["retired", "withdrawn", "private"].iter().any(|t| zone.has_tag(t)) {
                continue;
            }
            let Some((label, tld)) = suffix.split_once('.') else {
                continue;
            };
            let Some(parent) = tlds.get(tld) else {
                continue;
            };
            let own = match &zone.whois_server {
                Some(h) => Some(a_label(h).map_err(|e| bad(paths::ZONEDB, e))?),
                None => None,
            };
            let distinct = own.is_some_and(|h| parent.whois.as_ref().is_none_or(|w| w.host != h));
            if distinct || restricted_label(label).is_some() {
                out.insert(suffix.clone());
            }
        }
        for (suffix, servers) in self.php {
            if !two_labels(suffix) || !self.psl.rules.contains(suffix) {
                continue;
            }
            let Some((_, tld)) = suffix.split_once('.') else {
                continue;
            };
            let Some(parent) = tlds.get(tld) else {
                continue;
            };
            let distinct = servers.iter().any(|s| parent.whois.as_ref().is_none_or(|w| w.host != s.host));
            if distinct {
                out.insert(suffix.clone());
            }
        }
        Ok(out)
    }

    /// The entry of a second-level zone under `parent`.
    fn sld_entry(&self, suffix: &str, parent: &TldEntry) -> Result<TldEntry, BuildError> {
        let (label, tld) = suffix.split_once('.').unwrap_or((suffix, ""));
        let empty = Zone::default();
        let zone = self.zones.get(suffix).unwrap_or(&empty);
        let tld_zone = self.zones.get(tld).unwrap_or(&empty);

        let own_host = match &zone.whois_server {
            Some(h) => Some((a_label(h).map_err(|e| bad(paths::ZONEDB, e))?, "zonedb")),
            None if zone.whois_url.is_none() => pick_php_host(tld, &self.php_hosts(suffix)).map(|h| (h, "php-whois")),
            None => None,
        };
        let parent_host = parent.whois.as_ref().map(|w| w.host.as_str());
        let (rdap, whois) = match own_host {
            Some((host, source)) if Some(host.as_str()) != parent_host => {
                let rdap = RdapChoice {
                    urls: Vec::new(),
                    source: String::new(),
                    missing: format!(
                        "a different registry than .{tld} runs this zone, so the .{tld} RDAP \
                         service does not cover it"
                    ),
                };
                let whois = WhoisChoice {
                    server: Some(self.whois_server(suffix, host)),
                    note: format!("{source}, the zone's own registry"),
                };
                (rdap, whois)
            }
            _ => {
                let rdap = RdapChoice {
                    urls: parent.rdap.clone(),
                    source: format!("IANA bootstrap entry of .{tld}, same registry"),
                    missing: format!("the IANA bootstrap has no service for .{tld}"),
                };
                let note = if parent.whois.is_some() {
                    format!("inherited from .{tld}, same registry")
                } else {
                    format!("none is known for .{tld}, whose registry runs this zone")
                };
                (rdap, WhoisChoice { server: parent.whois.clone(), note })
            }
        };
        let policy = match restricted_label(label) {
            Some(kind) => {
                let country = tld_zone.country_name.clone().unwrap_or_else(|| format!(".{tld}"));
                RegistrationPolicy::Restricted {
                    reason: format!("restricted to eligible {kind} institutions ({country})"),
                }
            }
            None => RegistrationPolicy::Open,
        };
        // The TLD's `closed` tag describes the TLD itself (`za`), not `co.za`.
        let mut tags: BTreeSet<String> = parent.tags.iter().filter(|t| *t != "closed").cloned().collect();
        tags.extend(zone.tags.iter().cloned());
        let nameservers = name_servers(zone)?;
        Ok(assemble(suffix, tags.into_iter().collect(), policy, rdap, whois, nameservers, Vec::new()))
    }
}

/// Among php-whois hosts for a zone under `tld`, the one inside `tld` itself, else the first.
fn pick_php_host(tld: &str, hosts: &[&str]) -> Option<String> {
    let inside = format!(".{tld}");
    hosts.iter().find(|h| h.ends_with(&inside)).or_else(|| hosts.first()).map(|h| (*h).to_owned())
}

fn restricted_label(label: &str) -> Option<&'static str> {
    RESTRICTED_SLD_LABELS.iter().find(|(l, _)| *l == label).map(|(_, kind)| *kind)
}

fn name_servers(zone: &Zone) -> Result<Vec<String>, BuildError> {
    let mut out = Vec::new();
    for ns in &zone.name_servers {
        let ns = a_label(ns).map_err(|e| bad(paths::ZONEDB, e))?;
        if !out.contains(&ns) {
            out.push(ns);
        }
    }
    Ok(out)
}

/// Builds the entry, its method chain and its reason from the chosen pieces.
fn assemble(
    suffix: &str,
    tags: Vec<String>,
    policy: RegistrationPolicy,
    rdap: RdapChoice,
    whois: WhoisChoice,
    nameservers: Vec<String>,
    notes: Vec<String>,
) -> TldEntry {
    let mut methods = Vec::new();
    let mut chain = Vec::new();
    if !rdap.urls.is_empty() {
        methods.push(LookupMethod::Rdap);
        chain.push(format!("RDAP at {} ({})", join(&rdap.urls), rdap.source));
    }
    if let Some(w) = &whois.server {
        methods.push(LookupMethod::Whois);
        let mut s = format!("WHOIS on {}", w.host);
        if w.port != 43 {
            s.push_str(&format!(" port {}", w.port));
        }
        if w.query != "{domain}" {
            s.push_str(&format!(" with query \"{}\"", w.query));
        }
        if let Some(c) = &w.charset {
            s.push_str(&format!(" answering in {c}"));
        }
        chain.push(format!("{s} ({})", whois.note));
    }
    let dns = (!nameservers.is_empty()).then(|| {
        methods.push(LookupMethod::Dns);
        let n = nameservers.len();
        format!("a DNS pre-check on {n} zonedb name server{}", if n == 1 { "" } else { "s" })
    });

    let mut reason = if chain.is_empty() {
        let mut s = "Unsupported, neither RDAP nor port-43 WHOIS is available".to_owned();
        match &dns {
            Some(d) => s.push_str(&format!("; only {d}, which can show a name is taken, never that it is free")),
            None => s.push_str("; no name servers are known either"),
        }
        s
    } else {
        let mut s = chain.join(", then ");
        if let Some(d) = &dns {
            s.push_str(&format!(", plus {d}"));
        }
        s
    };
    if rdap.urls.is_empty() {
        reason.push_str(&format!("; no RDAP: {}", rdap.missing));
    }
    if whois.server.is_none() {
        reason.push_str(&format!("; no WHOIS: {}", whois.note));
    }
    for note in notes {
        reason.push_str(&format!("; {note}"));
    }
    if let RegistrationPolicy::Restricted { reason: why } = &policy {
        reason.push_str(&format!("; policy: {why}"));
    }
    reason.push('.');

    TldEntry {
        suffix: suffix.to_owned(),
        tags,
        policy,
        methods,
        rdap: rdap.urls,
        whois: whois.server,
        nameservers,
        reason,
    }
}

fn join<S: AsRef<str>>(items: &[S]) -> String {
    items.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ")
}

/// A host or zone name as a lower-case A-label (UTS 46 via `idna`); zonedb writes IDN hosts
/// such as `whois.nic.москва` in Unicode.
fn a_label(name: &str) -> Result<String, String> {
    let name = name.trim().trim_end_matches('.');
    if name.is_ascii() {
        return Ok(name.to_ascii_lowercase());
    }
    idna::domain_to_ascii(name).map_err(|e| format!("cannot convert {name:?} to an A-label: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Provenance header
// ---------------------------------------------------------------------------------------------

fn meta(
    iana: &IanaList,
    bootstrap: &Bootstrap,
    zones: &HashMap<String, Zone>,
    php: &HashMap<String, Vec<PhpServer>>,
    psl: &Psl,
    provenance: &Provenance<'_>,
    sources: &Sources,
) -> Result<CatalogueMeta, BuildError> {
    let (boot_commit, _) = provenance.commit_of(paths::RDAP_BOOTSTRAP)?;
    let (iana_commit, _) = provenance.commit_of(paths::IANA_TLDS)?;
    let (zonedb_commit, zonedb_date) = provenance.commit_of(paths::ZONEDB)?;
    let (php_commit, php_date) = provenance.commit_of(paths::PHP_WHOIS)?;
    let (psl_commit, psl_date) = provenance.commit_of(paths::PUBLIC_SUFFIX_LIST)?;

    let mut s = BTreeMap::new();
    s.insert(
        "iana_tlds".to_owned(),
        format!(
            "IANA tlds-alpha-by-domain.txt Version {}, Last Updated {} ({} TLDs; copy from \
             amanverasia-inventyv/TLD-LIST@{iana_commit}); fnv1a64 {:016x}",
            iana.version,
            iana.updated_text,
            iana.tlds.len(),
            fnv1a64(&sources.iana_tlds)
        ),
    );
    s.insert(
        "iana_rdap_bootstrap".to_owned(),
        format!(
            "IANA RDAP bootstrap for DNS (RFC 9224) version {}, publication {} ({} services, \
             {} TLDs; copy from gentpan/whoga@{boot_commit}); fnv1a64 {:016x}",
            bootstrap.version,
            bootstrap.publication,
            bootstrap.services,
            bootstrap.urls.len(),
            fnv1a64(&sources.rdap_bootstrap)
        ),
    );
    s.insert(
        "zonedb".to_owned(),
        format!(
            "zonedb/zonedb metadata@{zonedb_commit} ({zonedb_date}; {} zones; data ODbL-1.0); \
             fnv1a64 {:016x}",
            zones.len(),
            fnv1a64(&sources.zonedb)
        ),
    );
    s.insert(
        "php_whois".to_owned(),
        format!(
            "io-developer/php-whois module.tld.servers.json@{php_commit} ({php_date}; {} zones; \
             MIT); fnv1a64 {:016x}",
            php.len(),
            fnv1a64(&sources.php_whois)
        ),
    );
    s.insert(
        "public_suffix_list".to_owned(),
        format!(
            "publicsuffix/list@{psl_commit} ({psl_date}; ICANN section, {} rules; MPL-2.0); \
             fnv1a64 {:016x}",
            psl.rules.len() + psl.wildcard_parents.len(),
            fnv1a64(&sources.public_suffix_list)
        ),
    );

    // The newest date among the inputs, so that `--check` is reproducible.
    let mut newest = iana.updated.max(bootstrap.publication_at);
    for date in [&zonedb_date, &php_date, &psl_date] {
        let at = OffsetDateTime::parse(&format!("{date}T00:00:00Z"), &Rfc3339)
            .map_err(|e| bad(paths::PROVENANCE, format!("date {date}: {e}")))?;
        newest = newest.max(at);
    }
    let generated_at =
        newest.format(&Rfc3339).map_err(|e| bad(paths::PROVENANCE, format!("cannot format {newest}: {e}")))?;
    Ok(CatalogueMeta { sources: s, generated_at })
}

/// FNV-1a, 64 bit: a dependency-free fingerprint of an input's bytes (not a security hash).
fn fnv1a64(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_dates_parse() {
        let at = parse_ctime_utc("Mon Jan 19 07:07:02 2026 UTC").expect("parses");
        assert_eq!(at.format(&Rfc3339).expect("formats"), "2026-01-19T07:07:02Z");
        assert!(parse_ctime_utc("Mon Jan 19 07:07:02 2026").is_none());
    }

    #[test]
    fn php_host_inside_the_tld_wins() {
        let hosts = ["whois.afilias-grs.info", "whois.belizenic.bz"];
        assert_eq!(pick_php_host("bz", &hosts).as_deref(), Some("whois.belizenic.bz"));
        assert_eq!(pick_php_host("xx", &hosts).as_deref(), Some("whois.afilias-grs.info"));
    }

    #[test]
    fn idn_hosts_become_a_labels() {
        assert_eq!(a_label("whois.nic.москва").expect("converts"), "whois.nic.xn--80adxhks");
        assert_eq!(a_label("WHOIS.NIC.AF").expect("converts"), "whois.nic.af");
    }
}
