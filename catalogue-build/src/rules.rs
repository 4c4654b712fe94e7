//! The per-zone rules: which RDAP service, WHOIS host, method chain and policy each TLD and
//! second-level zone gets, and the reason written next to it (see the crate doc's "Rules").

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::catalogue::{LookupMethod, RegistrationPolicy, TldEntry, WhoisServer};

use crate::inputs::{Bootstrap, PhpServer, Psl, Zone, a_label};
use crate::{BuildError, bad, paths};

/// Second-level zones the spec names (§1: `.com.af`, `.net.af`, `.org.af`, `.gov.af`, `.edu.af`):
/// every PSL ICANN second-level zone under these TLDs gets an entry.
pub(crate) const SPEC_SLD_PARENTS: &[&str] = &["af"];

/// TLDs restricted by charter, with who may register (the IANA root zone database names the
/// sponsoring organisation of each).
pub(crate) const CHARTER_RESTRICTED_TLDS: &[(&str, &str)] = &[
    ("edu", "restricted to U.S.-accredited post-secondary institutions (EDUCAUSE)"),
    ("gov", "restricted to U.S. government entities (CISA runs the .gov registry)"),
    ("int", "restricted to organisations established by international treaty (IANA)"),
    ("mil", "restricted to the U.S. Department of Defense"),
];

/// Second-level labels that mark a zone reserved for one kind of institution in ccTLDs
/// (`gov.af`, `go.th`, `ac.uk`, `k12.tr`…), with that kind in words. Applied only to the
/// second-level zones this generator emits, never to TLDs.
pub(crate) const RESTRICTED_SLD_LABELS: &[(&str, &str)] = &[
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
pub(crate) const UNUSABLE_WHOIS: &[(&str, &str)] = &[(
    "es",
    "Red.es answers port-43 WHOIS only from IP addresses it has authorised in advance; \
     public WHOIS is web-only at https://www.dominios.es",
)];

/// Registries with a record of false "not found" answers for registered names, keyed by zone:
/// an `available` answer there needs a second, independent signal (consensus). Each reason
/// names its source; the engine reads it from the entry's `consensus` member.
pub(crate) const FALSE_NOT_FOUND: &[(&str, &str)] = &[
    (
        "co",
        "rdap.nic.co answered 404 for registered names on 2026-09-14, relayed by a public RDAP \
         redirector (browser-use/browser-harness#723)",
    ),
    (
        "io",
        "rdap.nic.io answered 404 for registered names on 2026-09-14, relayed by a public RDAP \
         redirector (browser-use/browser-harness#723)",
    ),
];

/// WHOIS servers whose answers are not UTF-8 (WHATWG encoding label). Small and hand-written on
/// purpose: NIC.br answers in ISO-8859-1 (a raw `.br` answer in `tests/data/whois`, from
/// joepie91/python-whois, has Latin-1 bytes such as `Par\xe1`); `whois.nic.br` is an alias of
/// `whois.registro.br`.
pub(crate) const WHOIS_CHARSETS: &[(&str, &str)] =
    &[("whois.nic.br", "iso-8859-1"), ("whois.registro.br", "iso-8859-1")];

/// The date from which ICANN no longer requires gTLD registries to run port-43 WHOIS (the RDDS
/// transition to RDAP), cited in reasons.
pub(crate) const ICANN_WHOIS_SUNSET: &str = "2025-01-28";

pub(crate) struct Ctx<'a> {
    pub(crate) bootstrap: &'a Bootstrap,
    pub(crate) zones: &'a HashMap<String, Zone>,
    pub(crate) php: &'a HashMap<String, Vec<PhpServer>>,
    pub(crate) psl: &'a Psl,
}

/// The WHOIS server chosen for a zone and where it came from, in words.
pub(crate) struct WhoisChoice {
    pub(crate) server: Option<WhoisServer>,
    /// For a server: its source (`zonedb; php-whois agrees`); without one: why none.
    pub(crate) note: String,
}

/// The RDAP base URLs chosen for a zone, where they came from, or why there are none.
pub(crate) struct RdapChoice {
    pub(crate) urls: Vec<String>,
    pub(crate) source: String,
    /// Why there is no RDAP (used when `urls` is empty).
    pub(crate) missing: String,
}

impl Ctx<'_> {
    pub(crate) fn php_hosts(&self, zone: &str) -> Vec<&str> {
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
    pub(crate) fn whois_server(&self, zone: &str, host: String) -> WhoisServer {
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
    pub(crate) fn tld_whois(&self, tld: &str, zone: &Zone) -> Result<WhoisChoice, BuildError> {
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
    pub(crate) fn tld_entry(&self, tld: &str, zone: &Zone) -> Result<(TldEntry, bool), BuildError> {
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
    pub(crate) fn tld_policy(&self, tld: &str, zone: &Zone) -> (RegistrationPolicy, bool, Option<String>) {
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
    pub(crate) fn sld_candidates(
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
    pub(crate) fn sld_entry(&self, suffix: &str, parent: &TldEntry) -> Result<TldEntry, BuildError> {
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
pub(crate) fn pick_php_host(tld: &str, hosts: &[&str]) -> Option<String> {
    let inside = format!(".{tld}");
    hosts.iter().find(|h| h.ends_with(&inside)).or_else(|| hosts.first()).map(|h| (*h).to_owned())
}

pub(crate) fn restricted_label(label: &str) -> Option<&'static str> {
    RESTRICTED_SLD_LABELS.iter().find(|(l, _)| *l == label).map(|(_, kind)| *kind)
}

pub(crate) fn name_servers(zone: &Zone) -> Result<Vec<String>, BuildError> {
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
pub(crate) fn assemble(
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
        consensus: FALSE_NOT_FOUND
            .iter()
            .find(|(zone, _)| *zone == suffix)
            .map(|(_, why)| format!("a second signal confirms \"available\": {why}")),
    }
}

pub(crate) fn join<S: AsRef<str>>(items: &[S]) -> String {
    items.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn php_host_inside_the_tld_wins() {
        let hosts = ["whois.afilias-grs.info", "whois.belizenic.bz"];
        assert_eq!(pick_php_host("bz", &hosts).as_deref(), Some("whois.belizenic.bz"));
        assert_eq!(pick_php_host("xx", &hosts).as_deref(), Some("whois.afilias-grs.info"));
    }
}
