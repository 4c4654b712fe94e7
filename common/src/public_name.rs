//! Which names dsa asks about: public names only. A lookup runs on dsa's machines, with their
//! resolvers and network, so a name that only means something inside a network (a cluster's
//! service names, a cloud's metadata host, a company's split-horizon zone, a home router) would
//! tell a caller about dsa's surroundings, not about the public DNS.
//!
//! A name is public when its top-level label is a TLD of the IANA root zone (dsa's
//! [`Catalogue`]) and it is not a special-use name. Special-use names (IANA "Special-Use Domain
//! Names" registry) and the names reserved for private use are refused with the reason, even
//! where a resolver would answer for them.

use crate::catalogue::Catalogue;

/// Top-level labels that never name a public host, with why (for the client's 400).
const SPECIAL_TLDS: [(&str, &str); 8] = [
    ("localhost", ".localhost names this machine (RFC 6761 §6.3)"),
    ("invalid", ".invalid is reserved to be invalid (RFC 6761 §6.4)"),
    ("test", ".test is reserved for testing (RFC 6761 §6.2)"),
    ("example", ".example is reserved for documentation (RFC 6761 §6.5)"),
    ("local", ".local is multicast DNS on a local network (RFC 6762)"),
    ("onion", ".onion names are Tor onion services, not DNS names (RFC 7686)"),
    ("alt", ".alt is reserved for names outside the DNS (RFC 9476)"),
    ("internal", ".internal is reserved for private networks (ICANN, 2024)"),
];

/// Why `name` (lower-case A-labels, no trailing dot) is not a public name dsa may look up, or
/// `None` when it is. The text completes "… is not looked up:" style messages for clients.
pub fn refusal(name: &str, catalogue: &Catalogue) -> Option<String> {
    let tld = name.rsplit('.').next().unwrap_or(name);
    if let Some((_, why)) = SPECIAL_TLDS.iter().find(|(label, _)| *label == tld) {
        return Some((*why).to_owned());
    }
    if tld == "arpa" {
        // RFC 8375: a home network's own zone; the rest of .arpa is infrastructure (reverse
        // mapping of addresses, RFC 1035 §3.5 and RFC 3596 §2.5), which would map dsa's own
        // private address space; dsa offers no PTR lookups.
        return Some(if name == "home.arpa" || name.ends_with(".home.arpa") {
            ".home.arpa is a home network's own zone (RFC 8375)".to_owned()
        } else {
            ".arpa names are infrastructure (reverse mapping), not looked up".to_owned()
        });
    }
    if !catalogue.has_tld(tld) {
        return Some(format!(
            ".{tld} is not a top-level domain of the public DNS (internal zones such as .corp, .lan, .home or \
             cluster.local are not looked up)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_and_special_names_are_refused_public_ones_pass() {
        let catalogue = Catalogue::embedded().expect("catalogue");
        for name in [
            "kubernetes.default.svc.cluster.local",
            "kubernetes.default.svc",
            "metadata.google.internal",
            "printer.local",
            "localhost",
            "app.localhost",
            "x.test",
            "www.example",
            "nothing.invalid",
            "duckduckgogg42xjoc72x3sjasowoarfbgcmvfimaftt6twagswzczad.onion",
            "x.alt",
            "router.home.arpa",
            "10.in-addr.arpa",
            "1.0.0.127.in-addr.arpa",
            "b.a.9.8.ip6.arpa",
            "fileserver.corp",
            "nas.lan",
            "router.home",
            "wiki.intranet",
        ] {
            assert!(refusal(name, &catalogue).is_some(), "{name} must be refused");
        }
        for name in ["example.com", "www.example.co.uk", "_sip._tcp.example.com", "xn--bcher-kva.de", "nic.google"] {
            assert_eq!(refusal(name, &catalogue), None, "{name}");
        }
    }
}
