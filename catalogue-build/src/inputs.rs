//! Readers of the generator's inputs: the IANA TLD list, the RDAP bootstrap (RFC 9224), zonedb,
//! php-whois, the Public Suffix List and `PROVENANCE.md`. Each turns raw text into the facts the
//! rules need, and fails with a [`BuildError`] naming the input.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::{BuildError, bad, paths};

/// The IANA TLD list.
pub(crate) struct IanaList {
    /// `2026011900`.
    pub(crate) version: String,
    /// `Mon Jan 19 07:07:02 2026 UTC`, as printed.
    pub(crate) updated_text: String,
    pub(crate) updated: OffsetDateTime,
    /// Lower-case A-labels, in file order.
    pub(crate) tlds: Vec<String>,
}

impl IanaList {
    pub(crate) fn parse(text: &str) -> Result<Self, BuildError> {
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
pub(crate) fn parse_ctime_utc(text: &str) -> Option<OffsetDateTime> {
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
pub(crate) struct Bootstrap {
    pub(crate) version: String,
    pub(crate) publication: String,
    pub(crate) publication_at: OffsetDateTime,
    pub(crate) services: usize,
    /// TLD → base URLs, https first.
    pub(crate) urls: HashMap<String, Vec<String>>,
}

impl Bootstrap {
    pub(crate) fn parse(text: &str) -> Result<Self, BuildError> {
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
pub(crate) struct Zone {
    pub(crate) domain: String,
    pub(crate) domain_punycode: Option<String>,
    #[serde(default)]
    pub(crate) tags: Vec<String>,
    pub(crate) registry_operator: Option<String>,
    pub(crate) country_name: Option<String>,
    pub(crate) whois_server: Option<String>,
    #[serde(rename = "whoisURL")]
    pub(crate) whois_url: Option<String>,
    #[serde(rename = "rdapURLs", default)]
    pub(crate) rdap_urls: Vec<String>,
    #[serde(default)]
    pub(crate) name_servers: Vec<String>,
}

impl Zone {
    pub(crate) fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

/// zonedb records keyed by A-label.
pub(crate) fn parse_zonedb(text: &str) -> Result<HashMap<String, Zone>, BuildError> {
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
pub(crate) struct PhpServer {
    pub(crate) zone: String,
    pub(crate) host: String,
    pub(crate) query_format: Option<String>,
}

/// php-whois entries keyed by zone (A-label, no dot), file order kept; wildcard and root
/// entries are skipped.
pub(crate) fn parse_php_whois(text: &str) -> Result<HashMap<String, Vec<PhpServer>>, BuildError> {
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
pub(crate) struct Psl {
    /// Plain rules (A-labels).
    pub(crate) rules: HashSet<String>,
    /// Parents of wildcard rules (`*.bd` → `bd`).
    pub(crate) wildcard_parents: HashSet<String>,
}

impl Psl {
    pub(crate) fn parse(text: &str) -> Result<Self, BuildError> {
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
    pub(crate) fn second_level_of(&self, tld: &str) -> Vec<String> {
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
pub(crate) struct Provenance<'a> {
    pub(crate) text: &'a str,
}

impl Provenance<'_> {
    /// The `(commit, date)` recorded in the table row of `path`: the first 40-hex token followed
    /// by ` (YYYY-MM-DD`.
    pub(crate) fn commit_of(&self, path: &str) -> Result<(String, String), BuildError> {
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

/// A host or zone name as a lower-case A-label (UTS 46 via `idna`); zonedb writes IDN hosts
/// such as `whois.nic.москва` in Unicode.
pub(crate) fn a_label(name: &str) -> Result<String, String> {
    let name = name.trim().trim_end_matches('.');
    if name.is_ascii() {
        return Ok(name.to_ascii_lowercase());
    }
    idna::domain_to_ascii(name).map_err(|e| format!("cannot convert {name:?} to an A-label: {e}"))
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
    fn idn_hosts_become_a_labels() {
        assert_eq!(a_label("whois.nic.москва").expect("converts"), "whois.nic.xn--80adxhks");
        assert_eq!(a_label("WHOIS.NIC.AF").expect("converts"), "whois.nic.af");
    }
}
