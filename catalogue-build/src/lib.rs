//! The catalogue generator: the shared input data → `common/data/tld-catalogue.json`.
//!
//! A build-time tool kept out of the runtime `common` crate: the `dsa-catalogue` binary and
//! `dsa tlds refresh` call it; the services only load its output
//! ([`common::catalogue::Catalogue`]). The inputs are read in `inputs`, the per-zone rules live
//! in `rules`, and this file ties them together and writes the provenance header.
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
//!   Three small hand-written tables cover what no input says: servers a public client cannot use
//!   (`.es`: Red.es serves port 43 only to authorised IP addresses), answer charsets that are
//!   not UTF-8 (NIC.br, ISO-8859-1), and registries with a record of false "not found" answers
//!   (`.io`, `.co`: RDAP 404s for registered names on 2026-09-14,
//!   browser-use/browser-harness#723), whose entries get a `consensus` member: "available" there
//!   needs a second, independent signal.
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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use common::catalogue::{CatalogueFile, CatalogueMeta, LookupMethod, RegistrationPolicy, TldEntry};

mod inputs;
mod rules;

use inputs::{Bootstrap, IanaList, PhpServer, Provenance, Psl, Zone, parse_php_whois, parse_zonedb};
use rules::{Ctx, SPEC_SLD_PARENTS};

/// Locations of the inputs, relative to the data directory (`tests/data`).
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

pub(crate) fn bad(input: &'static str, detail: impl Into<String>) -> BuildError {
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
    /// Reads every input from `data_dir` (the `tests/data` directory).
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
/// regeneration diffs line by line. The output parses with [`common::catalogue::Catalogue::from_json`].
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
