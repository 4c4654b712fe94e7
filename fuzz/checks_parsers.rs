// The parser checks of `fuzz/checks.rs` (see its documentation), included there and, alone, by
// the domain, whois and rdap targets: nothing here needs the API crate.

use std::sync::OnceLock;

use common::catalogue::Catalogue;
use common::domain::DomainName;
use workers::parse::rdap::{RdapClass, read_rdap};
use workers::parse::whois::{WhoisClass, decode, read_whois};

/// The catalogue compiled into dsa.
pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| Catalogue::embedded().expect("embedded catalogue"))
}

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

/// The domain normaliser: accepted output is a lower-case LDH name within RFC 1035 limits,
/// normalising it again gives the same name (idempotence), and its U-label form gives the same
/// name too.
pub fn domain(data: &[u8]) {
    let input = String::from_utf8_lossy(data);
    let Ok(d) = DomainName::parse(&input, catalogue()) else { return };
    assert!(is_ldh_name(d.as_str()), "{input:?} → {:?} is not an LDH name", d.as_str());
    let again = DomainName::parse(d.as_str(), catalogue()).expect("normalised output parses");
    assert_eq!(again.as_str(), d.as_str(), "normalise(normalise(x)) ≠ normalise(x) for {input:?}");
    let unicode = DomainName::parse(d.unicode(), catalogue()).expect("the U-label form parses");
    assert_eq!(unicode.as_str(), d.as_str(), "U-label and A-label differ for {input:?}");
    assert!(d.suffix().len() < d.as_str().len() && d.as_str().ends_with(d.suffix()));
}

/// Lower-case letters and digits only, folded as the reader folds (diacritics, Arabic letter
/// forms: `workers::parse::lexicon::fold`): the oracle below compares on these, so dot leaders,
/// punctuation, white space and spelling variants in the answer cannot hide a marker from it.
fn alnum(text: &str) -> String {
    workers::parse::lexicon::fold(text).chars().filter(|c| c.is_alphanumeric()).collect()
}

/// The concept × language table of the reader's generic layer (`workers/data/whois-languages.json`).
fn language_table() -> &'static serde_json::Value {
    static TABLE: OnceLock<serde_json::Value> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(include_str!("../workers/data/whois-languages.json")).expect("language data")
    })
}

/// The words of one column of the language table, over all rows.
fn table_column(column: &str) -> impl Iterator<Item = &'static str> {
    language_table()["languages"]
        .as_object()
        .expect("languages")
        .values()
        .filter_map(move |row| row[column].as_array())
        .flatten()
        .filter_map(serde_json::Value::as_str)
}

/// Every `available` rule of the WHOIS marker data (generic and every family) and every
/// not-found phrase and free status word of the language table (registries' own wordings in
/// many languages, e.g. `.hu`'s "Nincs találat"), as `*`-separated parts reduced by [`alnum`].
fn available_rules() -> &'static Vec<Vec<String>> {
    static RULES: OnceLock<Vec<Vec<String>>> = OnceLock::new();
    RULES.get_or_init(|| {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../workers/data/whois-markers.json")).expect("marker data");
        let mut rules: Vec<String> = vec![&data["generic"]["available"]]
            .into_iter()
            .chain(data["families"].as_object().expect("families").values().map(|f| &f["available"]))
            .filter_map(serde_json::Value::as_array)
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .map(str::to_owned)
            .collect();
        // The table's not-found phrases and its status words that alone say "free".
        rules.extend(table_column("not_found").chain(table_column("free")).map(str::to_owned));
        rules
            .into_iter()
            .map(|rule| rule.trim_start_matches(['=', '^']).split('*').map(alnum).filter(|p| !p.is_empty()).collect())
            .filter(|parts: &Vec<String>| !parts.is_empty())
            .collect()
    })
}

/// Negation words the reader's "negated presence" reading starts from ("There is *no* record
/// for x", "*nothing* matched", "existiert *nicht*"): an answer read available without a listed
/// not-found phrase must at least hold one of them as a word.
const NEGATION_WORDS: &[&str] = &[
    "no", "not", "non", "never", "nothing", "none", "nada", "rien", "nichts", "niente", "nicht", "kein", "keine",
    "niet", "geen", "nie", "ne", "pas", "nao", "inte", "ikke", "nem", "nu", "tidak", "bukan", "khong", "δεν", "לא",
    "не", "ні", "нет", "غير", "لا", "ليس",
];

/// The negations of every row of the reader's language table
/// (`workers/data/whois-languages.json`, e.g. Spanish and Slovenian "ni"), and its words that are
/// a negation in their own right (`nothing`: "nichts", "ничего") or say absence (`absence_words`:
/// Turkish "yok", Polish "brak", Hungarian "nincs"), folded: the reader reads a not-found
/// statement from any of them, so the oracle accepts them too. (The fuzzer's first crash on
/// this oracle: `Ÿok` in a windows-1252 answer folds to "yok", which the reader reads as
/// absence, as it must: `YOK` is the same word.)
fn language_negations() -> &'static Vec<String> {
    static NEGATIONS: OnceLock<Vec<String>> = OnceLock::new();
    NEGATIONS.get_or_init(|| {
        table_column("negations")
            .chain(table_column("nothing"))
            .chain(table_column("absence_words"))
            .map(workers::parse::lexicon::fold)
            .collect()
    })
}

/// The table's word beginnings of absence (`absence_stems`: "absent", "отсутств"), folded.
fn absence_stems() -> &'static Vec<String> {
    static STEMS: OnceLock<Vec<String>> = OnceLock::new();
    STEMS.get_or_init(|| table_column("absence_stems").map(workers::parse::lexicon::fold).collect())
}

/// [`NEGATION_WORDS`] and [`language_negations`], folded once, as a set (the oracle runs on every
/// answer read available: folding the list per word of the answer was most of its time).
fn negation_words() -> &'static std::collections::HashSet<String> {
    static WORDS: OnceLock<std::collections::HashSet<String>> = OnceLock::new();
    WORDS.get_or_init(|| {
        NEGATION_WORDS
            .iter()
            .map(|n| workers::parse::lexicon::fold(n))
            .chain(language_negations().iter().cloned())
            .collect()
    })
}

/// Whether `text` holds, in order, every part of some registry's not-found rule (or status
/// word), or a negation word.
fn has_not_found_answer(text: &str) -> bool {
    let folded = workers::parse::lexicon::fold(text);
    let negated = folded.split(|c: char| !c.is_alphanumeric()).any(|w| {
        negation_words().contains(w) || absence_stems().iter().any(|s| !s.is_empty() && w.starts_with(s.as_str()))
    });
    if negated {
        return true;
    }
    let text = alnum(text);
    available_rules().iter().any(|parts| {
        let mut rest = text.as_str();
        parts.iter().all(|part| match rest.find(part.as_str()) {
            Some(at) => {
                rest = &rest[at + part.len()..];
                true
            }
            None => false,
        })
    })
}

fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// The WHOIS reader: never panics, and never says "available" for an answer that does not hold
/// a registry's not-found text. `data` is framed as `server\nsuffix\ncharset\n` + raw answer.
pub fn whois(data: &[u8]) {
    let (server, rest) = split_line(data);
    let (suffix, rest) = split_line(rest);
    let (charset, raw) = split_line(rest);
    let server = String::from_utf8_lossy(server);
    let suffix = String::from_utf8_lossy(suffix);
    let charset = String::from_utf8_lossy(charset);
    let server = Some(server.trim()).filter(|s| !s.is_empty());
    let charset = Some(charset.trim()).filter(|s| !s.is_empty());
    whois_answer(server, &suffix, charset, raw);
}

/// The invariants of [`whois`] on one answer.
fn whois_answer(server: Option<&str>, suffix: &str, charset: Option<&str>, raw: &[u8]) {
    let reading = read_whois(raw, server, suffix, charset);
    if reading.class == WhoisClass::Available {
        let text = decode(raw, charset);
        assert!(
            has_not_found_answer(&text),
            "WHOIS read as available without a not-found answer (server {server:?}, suffix {suffix:?}, marker {:?}): {text:?}",
            reading.marker
        );
    }
    if reading.pending_delete {
        assert_eq!(reading.class, WhoisClass::Registered, "pending delete is a kind of registered");
    }
}

// ----- structure-aware WHOIS answers ------------------------------------------------------------
//
// Random bytes rarely spell a `Key: value` line the reader acts on, and the recorded answers
// used as seeds are kilobytes long (≈300 runs a second). [`whois_structured`] reads the fuzz
// bytes as choices instead: a server, a suffix, a charset, then tokens — real WHOIS keys, status
// and not-found words, dates, separators — interleaved with characters whose lower case has
// another length (the class of issue 32: offsets found in a lower-cased copy used on the
// original). Small inputs build dense answers, so each run is short and every line is one the
// reader parses.

/// WHOIS hosts with a marker family of their own, and none (generic markers, family by suffix).
const WHOIS_SERVERS: &[&str] = &[
    "",
    "whois.verisign-grs.com",
    "whois.denic.de",
    "whois.nic.it",
    "whois.dns.be",
    "whois.nic.uk",
    "whois.nic.fr",
    "whois.iana.org",
    "whois.jprs.jp",
    "whois.nic.es",
    "whois.registro.br",
    "whois.tonic.to",
    "whois.nic.org.uy",
    "whois.nic.io",
    "whois.nic.hu",
    "whois.tcinet.ru",
];

const WHOIS_SUFFIXES: &[&str] =
    &["com", "io", "de", "it", "uk", "co.uk", "fr", "jp", "es", "br", "to", "com.uy", "hu", "ru", "com.af", "tr"];

const WHOIS_CHARSETS: &[&str] = &["", "", "utf-8", "windows-1252", "koi8-r", "iso-8859-1", "shift_jis"];

/// Keys the field reader and the markers act on (ICANN RDDS, ccTLD wordings, RIPE style).
const WHOIS_KEYS: &[&str] = &[
    "Domain Name",
    "domain",
    "Registrar",
    "Sponsoring Registrar",
    "Registrar WHOIS Server",
    "Domain Status",
    "Status",
    "state",
    "Estado / Status",
    "Registry Expiry Date",
    "Expiration Date",
    "paid-till",
    "Expires on",
    "Creation Date",
    "created",
    "Record created on",
    "Registered on",
    "Updated Date",
    "changed",
    "Name Server",
    "nserver",
    "Nameservers",
    "DNS",
    "DNSSEC",
    "Registrant",
    "Registrant Organization",
    "Registrant Name",
    "Registrant Country",
    "holder-c",
    "admin-c",
    "tech-c",
    "mnt-by",
    "Holder",
    "Titular",
    "Inhaber",
    "Domain",
    "[Domain Name]",
    "[Status]",
    "Nome de domínio / Domain Name",
    "Registration Date (dd/mm/yyyy)",
    "Availability",
    "Reserved",
    "Address",
    "Name",
    "Organization",
    "Country",
    "Holder name",
    "Registrant Contact Name",
];

/// Values and words: statuses, not-found and quota wordings, negations, placeholders, handles.
const WHOIS_WORDS: &[&str] = &[
    "until",
    "OK-UNTIL",
    "paid until",
    "ok",
    "active",
    "clientTransferProhibited",
    "redemptionPeriod",
    "pendingDelete",
    "free",
    "available",
    "AVAILABLE",
    "No match for",
    "NOT FOUND",
    "No entries found",
    "Status: free",
    "no",
    "not",
    "nicht",
    "kein",
    "registered",
    "reserved",
    "Reserved by Registry",
    "Too many queries",
    "limit exceeded",
    "try again later",
    "if",
    "may",
    "example.com",
    "F.IO",
    "ns1.example.net",
    "192.0.2.1",
    "signedDelegation",
    "unsigned",
    "-",
    "n/a",
    "none",
    "R22-LRCC",
    "ACTI-0024",
    "https://icann.org/epp#ok",
    "(http",
    "MarkMonitor Inc.",
    "Nincs találat",
    "не найден",
    "bulunamadı",
    "ないで",
    "没有",
    "فارغ",
    "Object_Not_Found",
    "DOM_HELD",
    "Ni",
    "match",
    "domain",
    "is",
    "the",
    "of",
    "query",
    "REDEMPTION",
    "quarantine",
    "Tonic whoisd V1.1",
    "go",
    "IT",
    "FRANCE",
];

const WHOIS_DATES: &[&str] = &[
    "2026-01-01",
    "20131218000000",
    "01.02.2026",
    "2005-04-15 21:43:27",
    "30th April 2003",
    "28-May-2010",
    "2026-01-01T00:00:00Z",
    "99/99/9999 99:99:99 +99:99",
    "1999",
    "Mon Jan 01 2026",
];

/// Characters whose lower case has another UTF-8 length or more characters, and their
/// neighbours (combining marks, final sigma, title case): the class of issue 32. Written by
/// code point: editors normalise the signs (OHM, KELVIN, ANGSTROM) to the letters they look like.
const CASE_SHIFTERS: &[&str] = &[
    "\u{130}",
    "\u{2126}",
    "\u{1e9e}",
    "\u{fb01}",
    "\u{fb03}",
    "\u{3a3}",
    "\u{3c2}",
    "\u{212a}",
    "\u{212b}",
    "\u{1c5}",
    "\u{1c4}",
    "\u{390}",
    "\u{23a}",
    "\u{23e}",
    "\u{2c6f}",
    "\u{1f88}",
    "\u{307}",
    "\u{149}",
    "\u{10400}",
    "\u{ff24}",
    "\u{feff}",
    "\u{200b}",
    "\u{a0}",
    "\u{3000}",
    "\u{ff1a}",
];

const WHOIS_SEPARATORS: &[&str] = &[
    ":", ": ", " ", "  ", "\t", ".", "....", ". . . .", "-", " - ", "/", "(", ")", "[", "]", ",", ";", "%", "# ",
    ">>> ", "\r\n", "*",
];

/// Picks from `list` by the next byte (the first entry when the bytes ran out).
fn pick<'a>(bytes: &mut std::slice::Iter<'_, u8>, list: &[&'a str]) -> &'a str {
    let i = bytes.next().map_or(0, |&b| usize::from(b) % list.len());
    list[i]
}

/// Builds `(server, suffix, charset, answer)` from `data` read as choices (see above).
pub fn whois_structured_answer(data: &[u8]) -> (&'static str, &'static str, &'static str, Vec<u8>) {
    let mut bytes = data.iter();
    let server = pick(&mut bytes, WHOIS_SERVERS);
    let suffix = pick(&mut bytes, WHOIS_SUFFIXES);
    let charset = pick(&mut bytes, WHOIS_CHARSETS);
    let mut out: Vec<u8> = Vec::with_capacity(data.len() * 8);
    while let Some(&op) = bytes.next() {
        match op % 10 {
            0 => out.push(b'\n'),
            1 => {
                out.extend_from_slice(pick(&mut bytes, WHOIS_KEYS).as_bytes());
                out.extend_from_slice(b": ");
            }
            2 | 3 => out.extend_from_slice(pick(&mut bytes, WHOIS_WORDS).as_bytes()),
            4 | 5 => out.extend_from_slice(pick(&mut bytes, CASE_SHIFTERS).as_bytes()),
            6 => out.extend_from_slice(pick(&mut bytes, WHOIS_DATES).as_bytes()),
            7 => out.extend_from_slice(pick(&mut bytes, WHOIS_SEPARATORS).as_bytes()),
            8 => out.push(b' '),
            // A raw byte: stray Latin-1, broken UTF-8, control characters.
            _ => out.push(bytes.next().copied().unwrap_or(0xc3)),
        }
    }
    (server, suffix, charset, out)
}

/// [`whois`]'s invariants on an answer built from `data` as choices ([`whois_structured_answer`]).
pub fn whois_structured(data: &[u8]) {
    let (server, suffix, charset, raw) = whois_structured_answer(data);
    whois_answer(Some(server).filter(|s| !s.is_empty()), suffix, Some(charset).filter(|s| !s.is_empty()), &raw);
}

/// The RDAP reader: never panics; "not found" only for an HTTP 404, or an HTTP 200 carrying an
/// RFC 9083 §6 error object with `errorCode` 404 (the registry's not-found answer); "registered"
/// and "reserved" only for an HTTP 200.
pub fn rdap(data: &[u8]) {
    let (status, body) = split_line(data);
    let status = std::str::from_utf8(status).ok().and_then(|s| s.trim().parse::<u16>().ok()).unwrap_or(200);
    let reading = read_rdap(status, body);
    match reading.class {
        RdapClass::NotFound if status == 200 => {
            let v: serde_json::Value = serde_json::from_slice(body).expect("a 200 not-found is a JSON error object");
            let code = &v["errorCode"];
            assert!(
                code.as_u64() == Some(404) || code.as_str().is_some_and(|c| c.trim() == "404"),
                "RDAP 200 not-found without errorCode 404: {}",
                reading.detail
            );
        }
        RdapClass::NotFound => assert_eq!(status, 404, "RDAP not-found without a 404: {}", reading.detail),
        RdapClass::Registered | RdapClass::PendingDelete | RdapClass::Reserved => {
            assert_eq!(status, 200, "RDAP registered without a 200: {}", reading.detail)
        }
        RdapClass::Unknown => {}
    }
}
