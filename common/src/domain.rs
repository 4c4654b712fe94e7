//! Domain names: user input → a normalised registrable domain.
//!
//! "Parse, don't validate": [`DomainName::parse`] is the only way to obtain a [`DomainName`], and
//! nothing downstream handles a raw input string again.
//!
//! What it accepts and how (in this order):
//! 1. Surrounding white space is trimmed; a URL (`https://www.Example.com/path?q`) is reduced to
//!    its host (scheme, user-info, port, path, query and fragment are dropped); one trailing dot
//!    (the DNS root) is dropped.
//! 2. An IP address literal is refused.
//! 3. ASCII labels are checked for LDH characters, 1–63 octets, no leading/trailing hyphen and no
//!    `--` in positions 3–4 unless an `xn--` A-label (RFC 5891 §4.2.3.1), so that the error names
//!    the exact fault.
//! 4. The name goes through UTS 46 `ToASCII` with `UseSTD3ASCIIRules`, `CheckHyphens` and
//!    `VerifyDnsLength` (the `idna` crate): U-labels become A-labels, upper case is folded, and
//!    invalid Punycode is refused.
//! 5. The registry suffix is the longest matching rule of the Public Suffix List's **ICANN
//!    section** (the `psl` crate; private-section rules such as `blogspot.com` are skipped, because
//!    a registry sells `blogspot.com`, not `x.blogspot.com`). The TLD must be in the IANA root zone
//!    (the [`Catalogue`]).
//! 6. A subdomain (`www.example.com`, `a.b.example.co.uk`) is reduced to its registrable domain
//!    (one label below the suffix): availability is a property of the registrable domain only.
//!    [`DomainName::was_subdomain`] tells the caller it happened.

use std::fmt;
use std::net::IpAddr;

use idna::uts46::{AsciiDenyList, DnsLength, Hyphens, Uts46};

use crate::catalogue::Catalogue;

/// Longest domain name in presentation form without the trailing dot, octets (RFC 1035 §2.3.4).
pub const MAX_NAME_OCTETS: usize = 253;
/// Longest label, octets (RFC 1035 §2.3.4).
pub const MAX_LABEL_OCTETS: usize = 63;

/// Why an input is not a registrable domain name. Each message is fit for a 400 response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// Nothing left after trimming.
    #[error("Invalid domain format: the domain is empty.")]
    Empty,
    /// More than 253 octets in A-label form.
    #[error("Invalid domain format: the name is {0} characters long; at most 253 are allowed.")]
    TooLong(usize),
    /// Two dots in a row, or a leading dot.
    #[error("Invalid domain format: empty label (two dots in a row or a leading dot).")]
    EmptyLabel,
    /// A label longer than 63 octets.
    #[error("Invalid domain format: label \"{0}\" is longer than 63 characters.")]
    LabelTooLong(String),
    /// A character that is not a letter, digit or hyphen (after UTS 46 mapping).
    #[error("Invalid domain format: character {0:?} is not allowed; use letters, digits and hyphens.")]
    InvalidCharacter(char),
    /// A label starting or ending with a hyphen.
    #[error("Invalid domain format: label \"{0}\" starts or ends with a hyphen.")]
    HyphenAtEdge(String),
    /// `--` in positions 3–4 of a label that is not a valid `xn--` A-label (RFC 5891 §4.2.3.1).
    #[error(
        "Invalid domain format: label \"{0}\" has \"--\" in positions 3 and 4, which is reserved for A-labels (xn--)."
    )]
    ReservedHyphens(String),
    /// An `xn--` label whose Punycode does not decode to a valid U-label.
    #[error("Invalid domain format: \"{0}\" is not valid Punycode (IDNA A-label).")]
    InvalidPunycode(String),
    /// Rejected by UTS 46 processing for another reason (disallowed code point, bidi rule…).
    #[error("Invalid domain format: not a valid internationalised domain name (UTS 46).")]
    Idna,
    /// An IPv4 or IPv6 address instead of a name.
    #[error("Invalid domain format: an IP address is not a domain name.")]
    IpAddress,
    /// A single label, or a name that is itself a public suffix (`com.af`).
    #[error("Invalid domain format: \"{0}\" is a public suffix; add the name to register, e.g. example.{0}.")]
    PublicSuffixOnly(String),
    /// The last label is not a TLD of the IANA root zone.
    #[error("Unsupported TLD: .{0} is not a top-level domain.")]
    UnknownTld(String),
    /// A special-use or internal name ([`crate::public_name`]), with why.
    #[error("Unsupported domain: {0}.")]
    NotPublic(String),
}

/// A normalised registrable domain: A-label form, lower case, within DNS length limits, exactly
/// one label below its registry suffix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DomainName {
    ascii: String,
    unicode: String,
    sld_len: usize,
    was_subdomain: bool,
}

impl DomainName {
    /// Parses user input into a registrable domain. See the module documentation for the rules.
    ///
    /// # Errors
    /// A [`DomainError`] naming the first fault found.
    pub fn parse(input: &str, catalogue: &Catalogue) -> Result<Self, DomainError> {
        let host = extract_host(input)?;
        let ascii = to_ascii(host)?;
        let tld = ascii.rsplit('.').next().unwrap_or(&ascii);
        if !catalogue.has_tld(tld) {
            return Err(if tld.bytes().all(|b| b.is_ascii_digit()) {
                DomainError::IpAddress
            } else {
                DomainError::UnknownTld(tld.to_owned())
            });
        }
        if let Some(why) = crate::public_name::refusal(&ascii, catalogue) {
            return Err(DomainError::NotPublic(why));
        }
        let suffix = icann_suffix(&ascii);
        if suffix.len() >= ascii.len() {
            return Err(DomainError::PublicSuffixOnly(suffix.to_owned()));
        }
        // The registrable domain: the suffix plus the label just below it.
        let above = &ascii[..ascii.len() - suffix.len() - 1];
        let sld = above.rsplit('.').next().unwrap_or(above);
        let was_subdomain = sld.len() != above.len();
        // Built by hand: `format!` costs more than the rest of this step on a cached check.
        let mut registrable = String::with_capacity(sld.len() + 1 + suffix.len());
        registrable.push_str(sld);
        registrable.push('.');
        registrable.push_str(suffix);
        // An A-label name without a Punycode label (`xn--`) is its own U-label form: UTS 46
        // ToUnicode maps lower-case LDH labels to themselves, so the common case skips it.
        let unicode = if registrable.split('.').any(|label| label.starts_with("xn--")) {
            idna::domain_to_unicode(&registrable).0
        } else {
            registrable.clone()
        };
        Ok(Self { sld_len: sld.len(), ascii: registrable, unicode, was_subdomain })
    }

    /// The domain in A-label form, lower case (`xn--bcher-kva.de`).
    pub fn as_str(&self) -> &str {
        &self.ascii
    }

    /// The domain in U-label form for display (`bücher.de`); equals [`Self::as_str`] for ASCII names.
    pub fn unicode(&self) -> &str {
        &self.unicode
    }

    /// The label registered under the suffix (`example` of `example.com.af`), A-label form.
    pub fn sld(&self) -> &str {
        &self.ascii[..self.sld_len]
    }

    /// The registry suffix without a leading dot (`com`, `com.af`).
    pub fn suffix(&self) -> &str {
        &self.ascii[self.sld_len + 1..]
    }

    /// The registry suffix with its leading dot, as the spec writes TLDs (`.com`, `.com.af`).
    pub fn tld(&self) -> String {
        let mut tld = String::with_capacity(1 + self.suffix().len());
        tld.push('.');
        tld.push_str(self.suffix());
        tld
    }

    /// Whether the input named a subdomain that was reduced to this registrable domain.
    pub fn was_subdomain(&self) -> bool {
        self.was_subdomain
    }
}

impl fmt::Display for DomainName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.ascii)
    }
}

impl serde::Serialize for DomainName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.ascii)
    }
}

/// Reduces input (a bare name or a URL) to the host part, without a trailing dot.
fn extract_host(input: &str) -> Result<&str, DomainError> {
    let mut s = input.trim();
    if let Some(idx) = s.find("://") {
        s = &s[idx + 3..];
    }
    if let Some(idx) = s.find(['/', '?', '#']) {
        s = &s[..idx];
    }
    if let Some(idx) = s.rfind('@') {
        s = &s[idx + 1..];
    }
    if s.starts_with('[') || s.parse::<IpAddr>().is_ok() {
        return Err(DomainError::IpAddress);
    }
    if let Some((host, port)) = s.rsplit_once(':')
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
    {
        s = host;
    }
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_empty() {
        return Err(DomainError::Empty);
    }
    if s.parse::<IpAddr>().is_ok() {
        return Err(DomainError::IpAddress);
    }
    Ok(s)
}

/// UTS 46 ToASCII with precise errors for the common ASCII faults.
fn to_ascii(host: &str) -> Result<String, DomainError> {
    for label in host.split('.') {
        if label.is_empty() {
            return Err(DomainError::EmptyLabel);
        }
        if label.is_ascii() {
            // Lower-cased only when it has upper case (a copy per label of every check else).
            if label.bytes().any(|b| b.is_ascii_uppercase()) {
                check_ascii_label(&label.to_ascii_lowercase())?;
            } else {
                check_ascii_label(label)?;
            }
        }
    }
    let ascii = Uts46::new()
        .to_ascii(host.as_bytes(), AsciiDenyList::STD3, Hyphens::Check, DnsLength::Ignore)
        .map_err(|_| diagnose(host))?
        .into_owned();
    for label in ascii.split('.') {
        // A label of characters that UTS 46 maps to nothing (U+034F COMBINING GRAPHEME JOINER,
        // soft hyphen…) is empty once mapped: `x.\u{34f}.dk` is not a name (found by fuzzing).
        if label.is_empty() {
            return Err(DomainError::EmptyLabel);
        }
        if label.len() > MAX_LABEL_OCTETS {
            return Err(DomainError::LabelTooLong(label.to_owned()));
        }
    }
    if ascii.len() > MAX_NAME_OCTETS {
        return Err(DomainError::TooLong(ascii.len()));
    }
    Ok(ascii)
}

/// Checks one lower-case ASCII label against LDH and the hyphen rules (RFC 5891 §4.2.3.1).
fn check_ascii_label(label: &str) -> Result<(), DomainError> {
    if let Some(c) = label.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '-')) {
        return Err(DomainError::InvalidCharacter(c));
    }
    if label.len() > MAX_LABEL_OCTETS {
        return Err(DomainError::LabelTooLong(label.to_owned()));
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Err(DomainError::HyphenAtEdge(label.to_owned()));
    }
    if label.get(2..4) == Some("--") {
        if !label.starts_with("xn--") {
            return Err(DomainError::ReservedHyphens(label.to_owned()));
        }
        let (_, result) = idna::domain_to_unicode(label);
        if result.is_err() || label.len() == 4 {
            return Err(DomainError::InvalidPunycode(label.to_owned()));
        }
    }
    Ok(())
}

/// Names the fault of a host that UTS 46 refused, as precisely as it can.
fn diagnose(host: &str) -> DomainError {
    for label in host.split('.') {
        let lower = label.to_lowercase();
        if lower.starts_with("xn--") {
            return DomainError::InvalidPunycode(lower);
        }
        if let Some(c) = lower.chars().find(|c| c.is_ascii() && !(c.is_ascii_alphanumeric() || *c == '-')) {
            return DomainError::InvalidCharacter(c);
        }
        if lower.starts_with('-') || lower.ends_with('-') {
            return DomainError::HyphenAtEdge(lower);
        }
    }
    DomainError::Idna
}

/// The longest ICANN-section public suffix of a lower-case A-label name.
///
/// `psl::suffix` also matches private-section rules; when it does, the leftmost label of that
/// match is dropped and the lookup repeated until an ICANN rule (or the implicit `*` rule for the
/// last label) matches.
fn icann_suffix(name: &str) -> &str {
    let mut candidate = name;
    loop {
        let Some(found) = psl::suffix(candidate.as_bytes()) else {
            return candidate.rsplit('.').next().unwrap_or(candidate);
        };
        let len = found.as_bytes().len();
        let suffix = &candidate[candidate.len() - len..];
        if found.typ() != Some(psl::Type::Private) {
            return suffix;
        }
        match suffix.split_once('.') {
            Some((_, rest)) => candidate = &name[name.len() - rest.len()..],
            None => return suffix,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icann_suffix_skips_private_rules() {
        assert_eq!(icann_suffix("foo.blogspot.com"), "com");
        assert_eq!(icann_suffix("example.co.uk"), "co.uk");
        assert_eq!(icann_suffix("example.com.af"), "com.af");
        assert_eq!(icann_suffix("example.xn--p1ai"), "xn--p1ai");
    }

    /// Found by fuzzing: a label of characters UTS 46 maps to nothing is empty after mapping,
    /// and must not leave a registrable domain with an empty name (`.dk`).
    #[test]
    fn labels_that_map_to_nothing_are_empty() {
        assert_eq!(to_ascii("Fz\u{34f}.\u{34f}.dk"), Err(DomainError::EmptyLabel));
        assert_eq!(to_ascii("example\u{ad}.\u{ad}.com"), Err(DomainError::EmptyLabel));
        assert_eq!(to_ascii("ex\u{ad}ample.com").as_deref(), Ok("example.com"));
    }
}
