//! The TLD catalogue: every IANA TLD (and the second-level registry zones dsa knows, such as
//! `.com.af`) with the method chain used to decide availability and the reason for it.
//!
//! The catalogue is data, not code (house style §11): `common/data/tld-catalogue.json`, generated
//! by `dsa-catalogue` (see [`build`]) from the IANA TLD list, the IANA RDAP bootstrap (RFC 9224),
//! WHOIS server lists and zonedb metadata; its provenance is in `common/data/PROVENANCE.md`.
//! The file is compiled into the binary; an operator may point `engine.catalogue` at another copy.

pub mod build;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The catalogue shipped with dsa (JSON, see [`Catalogue`]).
pub const EMBEDDED_JSON: &str = include_str!("../../data/tld-catalogue.json");

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
}

impl TldEntry {
    /// Whether dsa can give a definitive available/taken answer for this suffix: at least one of
    /// RDAP or WHOIS is in the chain, or the policy is restricted (answered without a query).
    pub fn is_supported(&self) -> bool {
        matches!(self.policy, RegistrationPolicy::Restricted { .. })
            || self.methods.iter().any(|m| matches!(m, LookupMethod::Rdap | LookupMethod::Whois))
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

    /// The entry that governs a registry suffix: the suffix itself when the catalogue lists it
    /// (`com.af`), else its TLD (`co.uk` → `uk`, same registry).
    pub fn lookup(&self, suffix: &str) -> Option<&TldEntry> {
        self.entries.get(suffix).or_else(|| {
            let tld = suffix.rsplit('.').next()?;
            self.entries.get(tld)
        })
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
