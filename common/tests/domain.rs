//! The normaliser: user input → registrable domain (UTS 46, PSL ICANN section, IANA TLDs).

use common::catalogue::Catalogue;
use common::domain::{DomainError, DomainName};
use proptest::prelude::*;
use std::sync::LazyLock;

static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(|| Catalogue::embedded().expect("embedded catalogue loads"));

fn parse(s: &str) -> Result<DomainName, DomainError> {
    DomainName::parse(s, &CATALOGUE)
}

fn ok(s: &str) -> DomainName {
    parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

#[test]
fn normalises_common_inputs() {
    let cases = [
        ("example.com", "example.com", "example", ".com"),
        ("EXAMPLE.COM", "example.com", "example", ".com"),
        ("example.com.", "example.com", "example", ".com"),
        ("  example.com  ", "example.com", "example", ".com"),
        ("https://www.Example.com/path?q=1#x", "example.com", "example", ".com"),
        ("http://user@example.com:8080/", "example.com", "example", ".com"),
        ("bücher.de", "xn--bcher-kva.de", "xn--bcher-kva", ".de"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de", "xn--bcher-kva", ".de"),
        ("google.com.af", "google.com.af", "google", ".com.af"),
        ("www.google.com.af", "google.com.af", "google", ".com.af"),
        ("moe.gov.af", "moe.gov.af", "moe", ".gov.af"),
        ("a.b.example.co.uk", "example.co.uk", "example", ".co.uk"),
        ("foo.blogspot.com", "blogspot.com", "blogspot", ".com"),
        ("пример.рф", "xn--e1afmkfd.xn--p1ai", "xn--e1afmkfd", ".xn--p1ai"),
        ("nic.af", "nic.af", "nic", ".af"),
    ];
    for (input, domain, sld, tld) in cases {
        let d = ok(input);
        assert_eq!(d.as_str(), domain, "{input}");
        assert_eq!(d.sld(), sld, "{input}");
        assert_eq!(d.tld(), tld, "{input}");
    }
    assert_eq!(ok("xn--bcher-kva.de").unicode(), "bücher.de");
    assert!(ok("www.example.com").was_subdomain());
    assert!(!ok("example.com").was_subdomain());
}

#[test]
fn rejects_with_a_precise_reason() {
    let long_label = format!("{}.com", "a".repeat(64));
    let long_name = format!("{}.com", vec!["a".repeat(60); 5].join("."));
    let cases: Vec<(&str, Expect)> = vec![
        ("", |e| matches!(e, DomainError::Empty)),
        ("   ", |e| matches!(e, DomainError::Empty)),
        (".", |e| matches!(e, DomainError::Empty)),
        ("a..com", |e| matches!(e, DomainError::EmptyLabel)),
        (&long_label, |e| matches!(e, DomainError::LabelTooLong(_))),
        (&long_name, |e| matches!(e, DomainError::TooLong(_))),
        ("exa_mple.com", |e| matches!(e, DomainError::InvalidCharacter('_'))),
        ("exa mple.com", |e| matches!(e, DomainError::InvalidCharacter(' '))),
        ("-example.com", |e| matches!(e, DomainError::HyphenAtEdge(_))),
        ("example-.com", |e| matches!(e, DomainError::HyphenAtEdge(_))),
        ("ab--cd.com", |e| matches!(e, DomainError::ReservedHyphens(_))),
        ("xn--.com", |e| matches!(e, DomainError::HyphenAtEdge(_))),
        ("xn--a.com", |e| matches!(e, DomainError::InvalidPunycode(_))),
        ("xn--zzzzzz-9999.com", |e| matches!(e, DomainError::InvalidPunycode(_))),
        ("192.168.0.1", |e| matches!(e, DomainError::IpAddress)),
        ("[::1]", |e| matches!(e, DomainError::IpAddress)),
        ("http://10.0.0.1/x", |e| matches!(e, DomainError::IpAddress)),
        ("com", |e| matches!(e, DomainError::PublicSuffixOnly(_))),
        ("com.af", |e| matches!(e, DomainError::PublicSuffixOnly(_))),
        ("co.uk", |e| matches!(e, DomainError::PublicSuffixOnly(_))),
        ("example.notatld", |e| matches!(e, DomainError::UnknownTld(_))),
        ("example.local", |e| matches!(e, DomainError::UnknownTld(_))),
    ];
    for (input, expected) in cases {
        match parse(input) {
            Ok(d) => panic!("{input:?} should be rejected, got {d}"),
            Err(e) => {
                assert!(expected(&e), "{input:?}: unexpected reason {e:?}");
                assert!(!e.to_string().is_empty());
            }
        }
    }
}

/// A predicate on the rejection reason.
type Expect = fn(&DomainError) -> bool;

fn is_ldh_name(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever the input, parsing never panics; accepted output is ASCII LDH within limits,
    /// its U-label form is UTS 46 ToUnicode of it (the parser skips ToUnicode for a name without
    /// an `xn--` label), and normalising it again gives the same name (idempotence).
    #[test]
    fn never_panics_and_is_idempotent(input in "\\PC{0,80}") {
        if let Ok(d) = parse(&input) {
            prop_assert!(is_ldh_name(d.as_str()), "{:?} → {:?}", input, d.as_str());
            prop_assert_eq!(d.unicode(), idna::domain_to_unicode(d.as_str()).0);
            let again = parse(d.as_str()).expect("normalised output parses");
            prop_assert_eq!(again.as_str(), d.as_str());
            let again_unicode = parse(d.unicode()).expect("U-label form parses");
            prop_assert_eq!(again_unicode.as_str(), d.as_str());
        }
    }

    /// A U-label name and its A-label (Punycode, UTS 46 ToASCII) give the same result: the same
    /// registrable domain when accepted, a refusal for both otherwise.
    #[test]
    fn a_u_label_and_its_a_label_give_the_same_result(
        labels in prop::collection::vec("[a-z0-9äöüßéèçñøåæłśżćąęõ-]{1,12}|[а-яё0-9-]{1,12}|[α-ω]{1,8}|[一-龥]{1,4}|[א-ת]{1,6}", 1..3),
        suffix in prop::sample::select(vec!["com", "de", "com.af", "xn--p1ai", "рф", "org"]),
    ) {
        let unicode = format!("{}.{}", labels.join("."), suffix);
        let Ok(ascii) = idna::domain_to_ascii(&unicode) else { return Ok(()) };
        match (parse(&unicode), parse(&ascii)) {
            (Ok(u), Ok(a)) => {
                prop_assert_eq!(u.as_str(), a.as_str());
                prop_assert_eq!(u.unicode(), a.unicode());
                prop_assert_eq!(u.suffix(), a.suffix());
            }
            (Err(_), Err(_)) => {}
            (u, a) => prop_assert!(false, "{} → {:?} but {} → {:?}", unicode, u.map(|d| d.as_str().to_owned()), ascii, a.map(|d| d.as_str().to_owned())),
        }
    }

    /// Plausible names (labels from a domain-ish alphabet under real suffixes).
    #[test]
    fn plausible_names(labels in prop::collection::vec("[a-zA-Z0-9ü-]{1,20}", 1..4),
                       suffix in prop::sample::select(vec!["com", "com.af", "af", "co.uk", "de", "xn--p1ai", "org"])) {
        let input = format!("{}.{}", labels.join("."), suffix);
        if let Ok(d) = parse(&input) {
            prop_assert!(is_ldh_name(d.as_str()));
            prop_assert_eq!(d.suffix(), suffix);
            prop_assert_eq!(d.unicode(), idna::domain_to_unicode(d.as_str()).0);
            let again = parse(d.as_str()).expect("idempotent");
            prop_assert_eq!(again.as_str(), d.as_str());
        }
    }
}
