//! `dsa tlds refresh`: rebuilds the TLD catalogue from the IANA files, the RDAP bootstrap
//! (RFC 9224), zonedb, php-whois and the Public Suffix List found in a data directory, reports
//! what changed against the catalogue in use, and writes the new file if asked to.
//!
//! The generator is the one that made the shipped catalogue ([`catalogue_build`], the
//! `catalogue-build` workspace crate); the new file takes effect through `engine.catalogue = "FILE"` and a restart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use api::config::Settings;
use catalogue_build::{self as build, Sources};
use common::catalogue::{Catalogue, TldEntry};

/// What differs between two catalogues, by registry suffix.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct CatalogueDiff {
    /// Suffixes only in the new catalogue.
    pub added: Vec<String>,
    /// Suffixes only in the old one.
    pub removed: Vec<String>,
    /// Suffixes in both whose entry changed, with the parts that changed (`methods`, `rdap`,
    /// `whois`, `policy`, `nameservers`, `tags`).
    pub changed: BTreeMap<String, Vec<&'static str>>,
}

/// Compares two catalogues entry by entry (the `reason` texts are not compared).
pub(crate) fn diff<'a>(
    old: impl Iterator<Item = &'a TldEntry>,
    new: impl Iterator<Item = &'a TldEntry>,
) -> CatalogueDiff {
    let old: BTreeMap<&str, &TldEntry> = old.map(|e| (e.suffix.as_str(), e)).collect();
    let new: BTreeMap<&str, &TldEntry> = new.map(|e| (e.suffix.as_str(), e)).collect();
    let mut out = CatalogueDiff::default();
    for (suffix, n) in &new {
        let Some(o) = old.get(suffix) else {
            out.added.push((*suffix).to_owned());
            continue;
        };
        let mut parts = Vec::new();
        if o.methods != n.methods {
            parts.push("methods");
        }
        if o.rdap != n.rdap {
            parts.push("rdap");
        }
        if o.whois != n.whois {
            parts.push("whois");
        }
        if o.policy != n.policy {
            parts.push("policy");
        }
        if o.nameservers != n.nameservers {
            parts.push("nameservers");
        }
        if o.tags != n.tags {
            parts.push("tags");
        }
        if !parts.is_empty() {
            out.changed.insert((*suffix).to_owned(), parts);
        }
    }
    out.removed = old.keys().filter(|s| !new.contains_key(*s)).map(|s| (*s).to_owned()).collect();
    out
}

/// Runs `dsa tlds refresh`: exit status 0, or 1 with `--check` when something changed.
pub(crate) fn refresh(
    settings: &Settings,
    data_dir: &Path,
    out: Option<PathBuf>,
    check: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let sources = Sources::read(data_dir)
        .with_context(|| format!("cannot read the catalogue inputs in {}", data_dir.display()))?;
    let file = build::generate(&sources).context("cannot generate the catalogue")?;
    let rendered = build::render(&file)?;
    let (current, against) = match &settings.engine.catalogue {
        Some(path) => (Catalogue::load(path)?, path.display().to_string()),
        None => (Catalogue::embedded()?, "the catalogue built into dsa".to_owned()),
    };
    let changes = diff(current.entries(), file.entries.iter());
    let changed = !(changes.added.is_empty() && changes.removed.is_empty() && changes.changed.is_empty());
    if json {
        super::print_json(&serde_json::json!({
            "against": against,
            "suffixes": file.entries.len(),
            "added": changes.added,
            "removed": changes.removed,
            "changed": changes.changed,
        }))?;
    } else {
        println!("{} suffixes from {}, compared with {against}:", file.entries.len(), data_dir.display());
        println!("  added   {:>5}  {}", changes.added.len(), sample(&changes.added));
        println!("  removed {:>5}  {}", changes.removed.len(), sample(&changes.removed));
        let keys: Vec<String> =
            changes.changed.iter().map(|(s, parts)| format!("{s} ({})", parts.join(", "))).collect();
        println!("  changed {:>5}  {}", keys.len(), sample(&keys));
    }
    if let Some(path) = out {
        std::fs::write(&path, &rendered).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!(
            "wrote {}; use it with engine.catalogue = {:?} and a restart",
            path.display(),
            path.display().to_string()
        );
    }
    Ok(if check && changed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The first few items of a list, for the text report.
fn sample(items: &[String]) -> String {
    const SHOWN: usize = 12;
    let head = items.iter().take(SHOWN).map(|s| format!(".{s}")).collect::<Vec<_>>().join(" ");
    if items.len() > SHOWN { format!("{head} …") } else { head }
}
