//! The TLD catalogue: every IANA TLD (and the second-level registry zones dsa knows, such as
//! `.com.af`) with the method chain used to decide availability and the reason for it.
//!
//! The catalogue is data, not code (house style §11): `common/data/tld-catalogue.json`, generated
//! by `dsa-catalogue` (the `catalogue-build` workspace crate) from the IANA TLD list, the IANA
//! RDAP bootstrap (RFC 9224), WHOIS server lists and zonedb metadata; its provenance is in
//! `common/data/PROVENANCE.md`.
//! The file is compiled into the binary; an operator may point `engine.catalogue` at another copy.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The catalogue shipped with dsa (JSON, see [`Catalogue`]).
pub const EMBEDDED_JSON: &str = include_str!("../../data/tld-catalogue.json");

/// Second-level labels under country-code TLDs whose registry sells (or restricts) names there
/// (`common/data/second-level-labels.json`), for public suffixes the catalogue does not list.
const SECOND_LEVEL_LABELS_JSON: &str = include_str!("../../data/second-level-labels.json");

#[derive(Debug, Deserialize)]
struct SecondLevelLabels {
    sold: Vec<String>,
    restricted: Vec<String>,
}

fn second_level_labels() -> &'static SecondLevelLabels {
    static LABELS: std::sync::OnceLock<SecondLevelLabels> = std::sync::OnceLock::new();
    LABELS.get_or_init(|| {
        serde_json::from_str(SECOND_LEVEL_LABELS_JSON)
            .unwrap_or(SecondLevelLabels { sold: Vec::new(), restricted: Vec::new() })
    })
}

/// How a registry suffix is governed (see [`Catalogue::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution<'a> {
    /// The catalogue lists the suffix itself.
    Listed(&'a TldEntry),
    /// A listed ancestor zone is restricted: the name is restricted too (`x.sp.gov.br` under
    /// `gov.br`).
    RestrictedAncestor(&'a TldEntry),
    /// An unlisted second-level zone that the ccTLD's registry sells (`co.uk` → `uk`): asked of
    /// that registry.
    SoldByTld(&'a TldEntry),
}

impl<'a> Resolution<'a> {
    /// The entry whose methods (or policy) answer for the suffix.
    pub fn entry(&self) -> &'a TldEntry {
        match self {
            Resolution::Listed(e) | Resolution::RestrictedAncestor(e) | Resolution::SoldByTld(e) => e,
        }
    }

    /// Whether the suffix only takes eligible registrants.
    pub fn is_restricted(&self) -> bool {
        match self {
            Resolution::RestrictedAncestor(_) => true,
            Resolution::Listed(e) | Resolution::SoldByTld(e) => {
                matches!(e.policy, RegistrationPolicy::Restricted { .. })
            }
        }
    }
}

/// A lookup method, in the order the engine tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LookupMethod {
    /// The registry's RDAP service (RFC 9083), base URL from the IANA bootstrap (RFC 9224).
    Rdap,
    /// The registry's WHOIS service on port 43 (RFC 3912).
    Whois,
    /// Only the TLD's authoritative name servers: can prove "taken", never "available".
    Dns,
}

/// Who may register in a zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RegistrationPolicy {
    /// Anyone may register through a registrar.
    Open,
    /// Only eligible registrants (government, education, the brand owner…); dsa answers
    /// `restricted`, never `available`.
    Restricted {
        /// Who is eligible, in words.
        reason: String,
    },
}

/// A registry's WHOIS server (RFC 3912).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoisServer {
    /// Host name (also selects the reply markers of the server's family).
    pub host: String,
    /// TCP port, 43 unless the registry says otherwise.
    #[serde(default = "default_whois_port")]
    pub port: u16,
    /// Query template; `{domain}` is replaced by the A-label (RFC 3912 sends the query then CRLF;
    /// the template excludes the CRLF). Example: `-T dn,ace {domain}` for DENIC.
    #[serde(default = "default_query")]
    pub query: String,
    /// Charset of the answers when not UTF-8 (WHATWG label such as `iso-8859-1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charset: Option<String>,
}

fn default_whois_port() -> u16 {
    43
}

fn default_query() -> String {
    "{domain}".to_owned()
}

/// One registry suffix (a TLD such as `com`, or a second-level zone such as `com.af`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TldEntry {
    /// The suffix as an A-label, lower case, without a leading dot (`com`, `com.af`, `xn--p1ai`).
    pub suffix: String,
    /// zonedb tags (`generic`, `country`, `brand`, `geo`, `sponsored`, …).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Who may register.
    pub policy: RegistrationPolicy,
    /// Ordered lookup chain; empty when the TLD is unsupported.
    pub methods: Vec<LookupMethod>,
    /// RDAP base URLs from the IANA bootstrap (each ends in `/`).
    #[serde(default)]
    pub rdap: Vec<String>,
    /// The registry's WHOIS server, when one is known.
    #[serde(default)]
    pub whois: Option<WhoisServer>,
    /// The zone's authoritative name servers (host names), for the DNS pre-check.
    #[serde(default)]
    pub nameservers: Vec<String>,
    /// Why this method chain (or why unsupported), in words.
    pub reason: String,
    /// Present when an `available` answer needs a second, independent signal here (consensus):
    /// why, with the source of the record of false "not found" answers. Absent: one definitive
    /// registry answer decides. An operator overrides it per suffix (`engine.consensus.suffixes`),
    /// and dsa switches it on by itself for a while where it saw two signals disagree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consensus: Option<String>,
}

impl TldEntry {
    /// Whether dsa can give a definitive available/taken answer for this suffix: at least one of
    /// RDAP or WHOIS is in the chain, or the policy is restricted (answered without a query).
    pub fn is_supported(&self) -> bool {
        matches!(self.policy, RegistrationPolicy::Restricted { .. })
            || self.methods.iter().any(|m| matches!(m, LookupMethod::Rdap | LookupMethod::Whois))
    }

    /// Whether the catalogue asks for a second signal before `available` here (see
    /// [`TldEntry::consensus`]).
    pub fn requires_consensus(&self) -> bool {
        self.consensus.is_some()
    }
}

/// Header of the catalogue file: where and when it was generated from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogueMeta {
    /// Input versions (IANA list version, bootstrap publication time, zonedb commit…).
    pub sources: BTreeMap<String, String>,
    /// Generation time (RFC 3339).
    pub generated_at: String,
}

/// The serialised form of the catalogue file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CatalogueFile {
    /// Provenance header.
    pub meta: CatalogueMeta,
    /// Every entry, sorted by suffix.
    pub entries: Vec<TldEntry>,
}

/// Errors loading a catalogue.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// The file could not be read.
    #[error("cannot read TLD catalogue {path}: {source}")]
    Io {
        /// The path tried.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The JSON is malformed or has the wrong shape.
    #[error("malformed TLD catalogue: {0}")]
    Json(#[from] serde_json::Error),
    /// The content is inconsistent (duplicate suffix, bad URL, empty chain without reason…).
    #[error("invalid TLD catalogue: {0}")]
    Invalid(String),
}

/// The loaded catalogue: suffix → entry.
#[derive(Debug, Clone)]
pub struct Catalogue {
    meta: CatalogueMeta,
    entries: BTreeMap<String, TldEntry>,
}

impl Catalogue {
    /// The catalogue compiled into the binary.
    ///
    /// # Errors
    /// Only if the shipped file is broken (a test guards against that).
    pub fn embedded() -> Result<Self, CatalogueError> {
        Self::from_json(EMBEDDED_JSON)
    }

    /// Reads a catalogue file.
    ///
    /// # Errors
    /// [`CatalogueError::Io`] when unreadable, else as [`Catalogue::from_json`].
    pub fn load(path: &Path) -> Result<Self, CatalogueError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| CatalogueError::Io { path: path.display().to_string(), source })?;
        Self::from_json(&text)
    }

    /// Parses and validates catalogue JSON.
    ///
    /// # Errors
    /// [`CatalogueError::Json`] for malformed JSON, [`CatalogueError::Invalid`] for duplicate
    /// suffixes, non-lower-case suffixes or RDAP base URLs that are not absolute http(s) URLs
    /// ending in `/`.
    pub fn from_json(text: &str) -> Result<Self, CatalogueError> {
        let file: CatalogueFile = serde_json::from_str(text)?;
        let mut entries = BTreeMap::new();
        for entry in file.entries {
            if entry.suffix.is_empty()
                || entry.suffix != entry.suffix.to_ascii_lowercase()
                || entry.suffix.starts_with('.')
            {
                return Err(CatalogueError::Invalid(format!("bad suffix {:?}", entry.suffix)));
            }
            for base in &entry.rdap {
                let ok = (base.starts_with("https://") || base.starts_with("http://")) && base.ends_with('/');
                if !ok {
                    return Err(CatalogueError::Invalid(format!(
                        "RDAP base {base:?} of {} is not an http(s) URL ending in /",
                        entry.suffix
                    )));
                }
            }
            let suffix = entry.suffix.clone();
            if entries.insert(suffix.clone(), entry).is_some() {
                return Err(CatalogueError::Invalid(format!("duplicate suffix {suffix}")));
            }
        }
        Ok(Self { meta: file.meta, entries })
    }

    /// Provenance header.
    pub fn meta(&self) -> &CatalogueMeta {
        &self.meta
    }

    /// The entry for exactly this suffix (A-label, no leading dot).
    pub fn get(&self, suffix: &str) -> Option<&TldEntry> {
        self.entries.get(suffix)
    }

    /// The entry that answers for a registry suffix, if any (see [`Catalogue::resolve`]).
    pub fn lookup(&self, suffix: &str) -> Option<&TldEntry> {
        self.resolve(suffix).ok().map(|r| r.entry())
    }

    /// How a registry suffix (a public suffix, A-label, no leading dot) is governed. The suffix
    /// chain is walked one label at a time from the suffix itself to its TLD:
    ///
    /// 1. a listed restricted zone on the way wins (`x.sp.gov.br` → `gov.br`, restricted), except a
    ///    closed ccTLD (`za`, whose names live in second-level zones of their own);
    /// 2. the suffix itself listed → its entry;
    /// 3. an unlisted second-level zone of a ccTLD whose label the ccTLD's registry sells
    ///    (`co.uk`, `com.br`) → the TLD's entry;
    /// 4. anything else (`k12.ak.us`, `tokyo.jp`, a second-level zone of a closed ccTLD) is
    ///    unsupported: that registry is not known to sell names under it, so its "not found"
    ///    would prove nothing.
    ///
    /// # Errors
    /// Why the suffix is unsupported, in words.
    pub fn resolve(&self, suffix: &str) -> Result<Resolution<'_>, String> {
        let labels: Vec<&str> = suffix.split('.').collect();
        let Some(tld) = labels.last().copied() else { return Err("empty suffix".into()) };
        for i in 0..labels.len() {
            let zone = labels[i..].join(".");
            let Some(entry) = self.entries.get(&zone) else { continue };
            let restricted = matches!(entry.policy, RegistrationPolicy::Restricted { .. });
            let closed_cc =
                zone == tld && entry.tags.iter().any(|t| t == "closed") && entry.tags.iter().any(|t| t == "country");
            if i == 0 {
                return Ok(Resolution::Listed(entry));
            }
            if restricted && !closed_cc {
                return Ok(Resolution::RestrictedAncestor(entry));
            }
        }
        let Some(tld_entry) = self.entries.get(tld) else {
            return Err(format!(".{tld} is not a TLD in the IANA root zone"));
        };
        let is_cc = tld.len() == 2 || tld_entry.tags.iter().any(|t| t == "country");
        let closed = tld_entry.tags.iter().any(|t| t == "closed");
        if labels.len() == 2 && is_cc && !closed {
            let labels_data = second_level_labels();
            if labels_data.sold.iter().any(|l| l == labels[0]) {
                return Ok(Resolution::SoldByTld(tld_entry));
            }
            if labels_data.restricted.iter().any(|l| l == labels[0]) {
                return Err(format!(
                    ".{suffix} is for eligible institutions only and the catalogue has no registry for it"
                ));
            }
        }
        Err(format!("the .{tld} registry is not known to sell names under .{suffix}"))
    }

    /// Whether the last label is a TLD in the catalogue (i.e. in the IANA root zone list).
    pub fn has_tld(&self, tld: &str) -> bool {
        self.entries.contains_key(tld)
    }

    /// Every entry, sorted by suffix.
    pub fn entries(&self) -> impl Iterator<Item = &TldEntry> {
        self.entries.values()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the catalogue is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
