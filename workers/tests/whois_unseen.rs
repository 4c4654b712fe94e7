//! How the generic layer of the WHOIS reader does on answers it has never seen.
//!
//! dsa is judged on registries and wordings that are not in `tests/data/whois/`. The
//! leave-one-registry-out test (`whois_generic.rs`) reads each labelled answer with its own
//! family's rules off; this test goes further and reads, with *every* family's rules off
//! ([`read_whois_generic`] without a server), answers an unseen registry could plausibly send:
//!
//! 1. **Transformed samples**: every labelled answer of `tests/data/whois/` rewritten the way
//!    another registry's software would print the same facts — other comment prefixes (`;`,
//!    `--`, `>>>`, `//`, none), the whole answer commented, CRLF, trailing blanks, tabs, upper
//!    and lower case, a UTF-8 BOM, Latin-1, indentation, a banner, evidence keys spelled in other
//!    languages, blank-valued templates added to not-found answers, and short notices in prose
//!    that mention "not found" or "available" added to registered ones.
//! 2. **Hand-made answers** (`tests/unseen/handmade.txt`): realistic answers in wordings that
//!    are *not* in the samples — not-found phrasings of ccTLD and new-gTLD registries in many
//!    languages, reserved/blocked/premium states, pending delete and redemption, quota notices,
//!    registered answers with unfamiliar keys. They are **written by the dsa authors from the
//!    registries' documented formats, not recordings** (see `tests/unseen/PROVENANCE.md`).
//!
//! What is asserted, on every set: an answer that is not "available" is never read as available
//! (0 false available), and a not-found answer is read as available or left unknown, never as
//! taken. The share of not-found answers read as available is the generalisation figure, printed
//! per set; floors keep it from sliding back.

mod samples;

use std::collections::BTreeMap;

use workers::parse::whois::{WhoisClass, decode, read_whois_generic};

/// What the reader made of one set of answers.
#[derive(Default, Clone, Copy)]
struct Tally {
    /// Not-found answers read as available.
    available: usize,
    /// Not-found answers in total.
    available_total: usize,
    /// Answers read as their label says.
    right: usize,
    /// Answers left without a verdict (unknown, rate limited for a non-quota label).
    unknown: usize,
    /// Definitive readings that contradict the label.
    wrong: usize,
    /// Answers that are not "available" read as available: must stay 0.
    false_available: usize,
    total: usize,
}

impl Tally {
    fn add(&mut self, want: Want, got: WhoisClass) {
        self.total += 1;
        if want == Want::Available {
            self.available_total += 1;
            if got == WhoisClass::Available {
                self.available += 1;
            }
        } else if got == WhoisClass::Available {
            self.false_available += 1;
        }
        match (want, got) {
            (Want::Available, WhoisClass::Available)
            | (Want::Registered, WhoisClass::Registered)
            | (Want::Reserved, WhoisClass::Reserved)
            | (Want::RateLimited, WhoisClass::RateLimited)
            | (Want::NoVerdict, WhoisClass::Unknown | WhoisClass::RateLimited) => self.right += 1,
            (_, WhoisClass::Unknown) => self.unknown += 1,
            // A quota notice read as anything but "ask again" is wrong; so is a taken name read
            // as free, or a free name read as taken.
            _ => self.wrong += 1,
        }
    }

    fn merge(&mut self, o: &Tally) {
        self.available += o.available;
        self.available_total += o.available_total;
        self.right += o.right;
        self.unknown += o.unknown;
        self.wrong += o.wrong;
        self.false_available += o.false_available;
        self.total += o.total;
    }

    fn available_pct(&self) -> f64 {
        if self.available_total == 0 { 100.0 } else { 100.0 * self.available as f64 / self.available_total as f64 }
    }
}

/// What an answer calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Available,
    Registered,
    Reserved,
    RateLimited,
    /// An error, a wrong server, an invalid query: anything but a definitive class.
    NoVerdict,
}

fn want_of(label: &str, detail: Option<&str>) -> Want {
    match samples::whois_expected(label, detail) {
        Some(WhoisClass::Available) => Want::Available,
        Some(WhoisClass::Registered) => Want::Registered,
        Some(WhoisClass::Reserved) => Want::Reserved,
        Some(WhoisClass::RateLimited) => Want::RateLimited,
        _ => Want::NoVerdict,
    }
}

fn print_row(name: &str, t: &Tally) {
    println!(
        "{name:<28} {:>6} {:>6} {:>8} {:>6} {:>10} {:>9}/{:<5} {:>6.1}%",
        t.total,
        t.right,
        t.unknown,
        t.wrong,
        t.false_available,
        t.available,
        t.available_total,
        t.available_pct()
    );
}

fn print_header(title: &str) {
    println!("\n{title}");
    println!(
        "{:<28} {:>6} {:>6} {:>8} {:>6} {:>10} {:>15} {:>7}",
        "set", "total", "right", "unknown", "wrong", "false-av", "available", "share"
    );
}

// ----- 1. transformations of the labelled samples ------------------------------------------

/// A rewrite of an answer's text as another registry's software could print it. `None` when
/// the transformation does not apply to this answer (nothing to rewrite, not encodable).
type Transform = fn(&str, Want) -> Option<Vec<u8>>;

fn lines_of(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l))
}

fn map_lines(text: &str, f: impl FnMut(&str) -> String) -> String {
    lines_of(text).map(f).collect::<Vec<_>>().join("\n")
}

/// The comment prefix of a line (`%`, `%%`, `#`, `##`), with the rest of the line.
fn split_comment(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let n = t.len() - t.trim_start_matches(['%', '#']).len();
    (n > 0).then(|| (&t[..n], t[n..].trim_start()))
}

fn recomment(text: &str, prefix: &str, suffix: &str) -> Option<Vec<u8>> {
    let mut changed = false;
    let out = map_lines(text, |l| match split_comment(l) {
        Some((_, rest)) => {
            changed = true;
            if prefix.is_empty() { rest.to_owned() } else { format!("{prefix} {rest}{suffix}").trim_end().to_owned() }
        }
        None => l.to_owned(),
    });
    changed.then(|| out.into_bytes())
}

fn t_comment_semicolon(t: &str, _: Want) -> Option<Vec<u8>> {
    recomment(t, ";", "")
}
fn t_comment_dashes(t: &str, _: Want) -> Option<Vec<u8>> {
    recomment(t, "--", "")
}
fn t_comment_arrows(t: &str, _: Want) -> Option<Vec<u8>> {
    recomment(t, ">>>", " <<<")
}
fn t_comment_slashes(t: &str, _: Want) -> Option<Vec<u8>> {
    recomment(t, "//", "")
}
fn t_comment_none(t: &str, _: Want) -> Option<Vec<u8>> {
    recomment(t, "", "")
}
/// Every line commented, as registries that print their whole answer as remarks do.
fn t_all_commented(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(
        map_lines(
            t,
            |l| if l.trim().is_empty() || split_comment(l).is_some() { l.to_owned() } else { format!("% {l}") },
        )
        .into_bytes(),
    )
}
fn t_crlf(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(lines_of(t).collect::<Vec<_>>().join("\r\n").into_bytes())
}
fn t_trailing_blanks(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(map_lines(t, |l| format!("{l} \t ")).into_bytes())
}
/// Runs of two or more blanks after a key become one tab.
fn t_tabs(t: &str, _: Want) -> Option<Vec<u8>> {
    let out = map_lines(t, |l| {
        let mut s = String::new();
        let mut blanks = 0;
        for c in l.chars() {
            if c == ' ' {
                blanks += 1;
                continue;
            }
            if blanks >= 2 && !s.trim().is_empty() {
                s.push('\t');
            } else {
                s.extend(std::iter::repeat_n(' ', blanks));
            }
            blanks = 0;
            s.push(c);
        }
        s
    });
    Some(out.into_bytes())
}
fn t_upper(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(t.to_uppercase().into_bytes())
}
fn t_lower(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(t.to_lowercase().into_bytes())
}
fn t_bom(t: &str, _: Want) -> Option<Vec<u8>> {
    let mut v = b"\xEF\xBB\xBF".to_vec();
    v.extend_from_slice(t.as_bytes());
    Some(v)
}
/// Latin-1 bytes (only for answers with a character outside ASCII that Latin-1 can hold).
fn t_latin1(t: &str, _: Want) -> Option<Vec<u8>> {
    if t.is_ascii() || t.chars().any(|c| u32::from(c) > 0xFF) {
        return None;
    }
    Some(t.chars().map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')).collect())
}
/// Letters with diacritics written without them, as registries limited to ASCII print them.
fn t_ascii_letters(t: &str, _: Want) -> Option<Vec<u8>> {
    const FROM: &str = "áàâäãåçéèêëíìîïñóòôöõúùûüýÁÀÂÄÃÅÇÉÈÊËÍÌÎÏÑÓÒÔÖÕÚÙÛÜÝąćęłńśźżĄĆĘŁŃŚŹŻčďěňřšťůžČĎĚŇŘŠŤŮŽğışĞİŞ";
    const TO: &str = "aaaaaaceeeeiiiinooooouuuuyAAAAAACEEEEIIIINOOOOOUUUUYacelnszzACELNSZZcdenrstuzCDENRSTUZgisGIS";
    if t.is_ascii() {
        return None;
    }
    let map: Vec<(char, char)> = FROM.chars().zip(TO.chars()).collect();
    let out: String = t.chars().map(|c| map.iter().find(|(f, _)| *f == c).map_or(c, |(_, to)| *to)).collect();
    (out != t).then(|| out.into_bytes())
}
/// Persian yeh and kaf written in their Arabic forms (and the reverse), as registries in Iran and
/// Afghanistan print either.
fn t_arabic_letter_forms(t: &str, _: Want) -> Option<Vec<u8>> {
    let out: String = t
        .chars()
        .map(|c| match c {
            'ی' => 'ي',
            'ک' => 'ك',
            'ي' => 'ی',
            'ك' => 'ک',
            _ => c,
        })
        .collect();
    (out != t).then(|| out.into_bytes())
}
/// The key separator printed as a full-width colon, as CJK registries may.
fn t_fullwidth_colon(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(
        map_lines(t, |l| match l.find(": ").or_else(|| l.find(":\t")) {
            Some(i) if i < 40 && !l[..i].contains("http") => format!("{}：{}", &l[..i], &l[i + 1..]),
            _ => l.to_owned(),
        })
        .into_bytes(),
    )
}
fn t_indent(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(map_lines(t, |l| if l.trim().is_empty() { String::new() } else { format!("    {l}") }).into_bytes())
}
fn t_banner(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(
        format!(
            "Whois Server Version 3.4.1\n\n{t}\n\n>>> Last update of WHOIS database: 2026-05-01T10:00:00Z <<<\n\nFor more information on Whois status codes, please visit https://icann.org/epp\n"
        )
        .into_bytes(),
    )
}
fn t_blank_lines_doubled(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(map_lines(t, |l| if l.trim().is_empty() { "\n".to_owned() } else { l.to_owned() }).into_bytes())
}

/// Short notices in prose that mention "not found" or "available" in passing, as registries
/// print under registered and free answers alike. They must not free a registered name.
const NOTICES: &[&str] = &[
    "% If a domain is not found in this database, it may be available for registration.",
    "% No data protection applies to legal persons.",
    "% whois.nic.zz - available 24/7",
    "% If no match is found, the name may be free.",
    "% Registrant data not found in this record is withheld.",
    "% NOTE: a domain that is not found here may still be unavailable.",
    "% Contact data not found are withheld for privacy reasons.",
    "% Availability: use https://www.example-registry.zz/check to see if a name is available.",
    "# Whois data for reserved names is not available via port 43.",
    "Registrant Fax: not found",
    "DS Records: no records found",
];

fn t_notices(t: &str, _: Want) -> Option<Vec<u8>> {
    Some(format!("{t}\n\n{}\n", NOTICES.join("\n")).into_bytes())
}

/// A registered (or reserved) answer cut down to its domain line and its comments, with the
/// notices added: nothing in it says the name is free, so it must never read available.
fn t_evidence_stripped(t: &str, want: Want) -> Option<Vec<u8>> {
    if !matches!(want, Want::Registered | Want::Reserved) {
        return None;
    }
    let mut kept = Vec::new();
    let mut domain_seen = false;
    for l in lines_of(t) {
        let lower = l.trim().to_lowercase();
        let domain_line = !domain_seen && lower.split(':').next().is_some_and(|k| k.contains("domain"));
        if domain_line || split_comment(l).is_some() || lower.is_empty() {
            domain_seen |= domain_line;
            kept.push(l.to_owned());
        }
    }
    Some(format!("{}\n\n{}\n", kept.join("\n"), NOTICES.join("\n")).into_bytes())
}

/// A registry that prints its whole template with empty values for a name it does not hold:
/// empty values are not registration evidence.
fn t_blank_template(t: &str, want: Want) -> Option<Vec<u8>> {
    if want != Want::Available {
        return None;
    }
    Some(
        format!(
            "{t}\n\nRegistrar:\nRegistrar IANA ID:\nCreation Date:\nUpdated Date:\nRegistry Expiry Date:\nRegistrant Name:\nRegistrant Organization:\nName Server:\nName Server:\nDNSSEC:\nnserver:\ncreated:\npaid-till:\nFecha de creación:\nDate de création:\n"
        )
        .into_bytes(),
    )
}

/// Registration keys respelled the way registries in other languages print them.
const KEY_SWAPS: &[(&str, &[&str])] = &[
    (
        "Creation Date:",
        &[
            "Fecha de creación:",
            "Date de création:",
            "Created On:",
            "Registered on:",
            "Record created:",
            "Data de criação:",
            "Erstellt am:",
            "Data di registrazione:",
            "Дата регистрации:",
        ],
    ),
    ("created:", &["Registration Date:", "Registrado el:", "Date d'enregistrement:", "登録年月日:", "등록일:"]),
    (
        "Registry Expiry Date:",
        &[
            "Fecha de vencimiento:",
            "Date d'expiration:",
            "Expires On:",
            "Paid-till:",
            "Ablaufdatum:",
            "Data di scadenza:",
            "有効期限:",
            "Срок действия:",
        ],
    ),
    ("Registrar:", &["Registrador:", "Bureau d'enregistrement:", "Registrierstelle:", "Регистратор:", "注册商:"]),
    (
        "Name Server:",
        &["nserver:", "Servidor DNS:", "Serveur de noms:", "Nameserver:", "DNS:", "Name Servers:", "域名服务器:"],
    ),
    ("nserver:", &["Name Server:", "Servidores de nombre:", "Serveur DNS:"]),
];

fn t_key_swaps(t: &str, want: Want) -> Option<Vec<u8>> {
    if !matches!(want, Want::Registered | Want::Reserved) {
        return None;
    }
    let mut changed = false;
    let mut out = String::new();
    for (i, line) in lines_of(t).enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let mut new = line.to_owned();
        for (from, tos) in KEY_SWAPS {
            if trimmed.get(..from.len()).is_some_and(|head| head.eq_ignore_ascii_case(from)) {
                let to = tos[i % tos.len()];
                new = format!("{indent}{to}{}", &trimmed[from.len()..]);
                changed = true;
                break;
            }
        }
        out.push_str(&new);
        out.push('\n');
    }
    changed.then(|| out.into_bytes())
}

const TRANSFORMS: &[(&str, Transform)] = &[
    ("comments ';'", t_comment_semicolon),
    ("comments '--'", t_comment_dashes),
    ("comments '>>> <<<'", t_comment_arrows),
    ("comments '//'", t_comment_slashes),
    ("comments removed", t_comment_none),
    ("all lines commented", t_all_commented),
    ("CRLF", t_crlf),
    ("trailing blanks", t_trailing_blanks),
    ("tabs", t_tabs),
    ("upper case", t_upper),
    ("lower case", t_lower),
    ("UTF-8 BOM", t_bom),
    ("Latin-1", t_latin1),
    ("letters without diacritics", t_ascii_letters),
    ("Arabic/Persian letter forms", t_arabic_letter_forms),
    ("full-width colon", t_fullwidth_colon),
    ("indented", t_indent),
    ("banner and footer", t_banner),
    ("blank lines doubled", t_blank_lines_doubled),
    ("prose notices added", t_notices),
    ("blank template added", t_blank_template),
    ("evidence stripped, notices", t_evidence_stripped),
    ("keys in other spellings", t_key_swaps),
];

#[test]
fn transformed_samples_are_never_falsely_available() {
    let dir = samples::data_dir();
    let all = samples::whois_samples(&dir);
    // `WHOIS_UNSEEN_VERBOSE=1` lists every variant read differently from its original.
    let verbose = std::env::var_os("WHOIS_UNSEEN_VERBOSE").is_some();
    print_header("Transformed samples, all family rules off (generic layer only)");
    let mut total = Tally::default();
    // The stripped answers say nothing either way: unknown is their best reading, so they are
    // left out of the floors (their false-available count still must be 0).
    let mut floored = Tally::default();
    let mut false_available = Vec::new();
    let mut per_transform = BTreeMap::new();
    let mut baseline = Tally::default();
    let mut base_class = Vec::new();
    for s in &all {
        let want = want_of(&s.label, s.detail.as_deref());
        let got = read_whois_generic(&s.raw, s.server.as_deref(), &s.suffix, None);
        baseline.add(want, got.class);
        base_class.push(got.class);
        if want != Want::Available && got.class == WhoisClass::Available {
            false_available.push(format!("untransformed: {} [{}] marker {:?}", s.file, s.label, got.marker));
        }
    }
    print_row("(untransformed)", &baseline);
    for (name, transform) in TRANSFORMS {
        let mut t = Tally::default();
        for (s, base) in all.iter().zip(&base_class) {
            let want = want_of(&s.label, s.detail.as_deref());
            let text = decode(&s.raw, None);
            let Some(bytes) = transform(&text, want) else { continue };
            let got = read_whois_generic(&bytes, s.server.as_deref(), &s.suffix, None);
            t.add(want, got.class);
            if verbose && got.class != *base {
                println!("  changed by {name}: {} [{}] {base:?} → {:?} ({:?})", s.file, s.label, got.class, got.marker);
            }
            if want != Want::Available && got.class == WhoisClass::Available {
                false_available.push(format!("{name}: {} [{}] marker {:?}", s.file, s.label, got.marker));
            }
        }
        print_row(name, &t);
        total.merge(&t);
        if *name != "evidence stripped, notices" {
            floored.merge(&t);
        }
        per_transform.insert(*name, t);
    }
    print_row("ALL VARIANTS", &total);
    for f in &false_available {
        println!("  FALSE AVAILABLE {f}");
    }
    assert!(false_available.is_empty(), "{} variants falsely read as available", false_available.len());
    assert!(total.total > 10_000, "the transformations should make well over 10,000 variants: {}", total.total);
    // Floors at this reader's figures (see the table above): they may only rise.
    assert!(floored.right * 1000 >= floored.total * 975, "variants right: {}/{}", floored.right, floored.total);
    assert!(floored.available_pct() >= 95.5, "not-found variants read available: {:.1}%", floored.available_pct());
}

// ----- 2. hand-made answers in wordings the samples do not have ---------------------------

/// One hand-made answer of `tests/unseen/handmade.txt`.
struct Handmade {
    want: &'static str,
    id: String,
    text: String,
}

/// The hand-made answers used to find gaps (`handmade.txt`).
const HANDMADE: &str = include_str!("unseen/handmade.txt");
/// Hand-made answers written after those fixes, read once untouched, then used to find more gaps
/// (`handmade_round2.txt`).
const HANDMADE_ROUND2: &str = include_str!("unseen/handmade_round2.txt");
/// Hand-made answers written after the round-2 fixes (`handmade_holdout.txt`, round 3): held out
/// until its figures were reported (41/69 right, 18/36 not-found read available), a training set
/// since issue 14 (see `tests/unseen/PROVENANCE.md`).
const HANDMADE_HOLDOUT: &str = include_str!("unseen/handmade_holdout.txt");
/// Hand-made answers written by someone who did not see the issue-14 morphology work, while it
/// was done, and read once after it (`handmade_round4.txt`): the held-out estimate. Never tuned on
/// (a miss is fixed only when it is a false "available"; see `tests/unseen/PROVENANCE.md`).
const HANDMADE_ROUND4: &str = include_str!("unseen/handmade_round4.txt");

/// Hand-made answers of the four long-tail classes of issue 28 (the registry as the subject of
/// the not-found sentence, markers run together with other tokens, terse one-line answers, a
/// verdict line buried in a long disclaimer) with traps for each, written before the reader was
/// changed for them (`handmade_longtail.txt`): a training set.
const HANDMADE_LONGTAIL: &str = include_str!("unseen/handmade_longtail.txt");

/// New wordings of the same four classes, written after the reader was changed for them and read
/// once before any further change: the check of how those fixes generalise
/// (`handmade_longtail_check.txt`).
const HANDMADE_LONGTAIL_CHECK: &str = include_str!("unseen/handmade_longtail_check.txt");

fn handmade(file: &str) -> Vec<Handmade> {
    let mut cases: Vec<Handmade> = Vec::new();
    for line in file.lines() {
        if let Some(head) = line.strip_prefix("==== ").and_then(|h| h.strip_suffix(" ====")) {
            let (want, id) = head.split_once(' ').expect("`==== <want> <id> ====`");
            let want = ["available", "registered", "pending_delete", "reserved", "rate_limited", "no_verdict"]
                .into_iter()
                .find(|w| *w == want)
                .unwrap_or_else(|| panic!("unknown want {want:?} in case {id}"));
            cases.push(Handmade { want, id: id.to_owned(), text: String::new() });
        } else if let Some(case) = cases.last_mut() {
            case.text.push_str(line);
            case.text.push('\n');
        }
    }
    cases
}

#[test]
fn handmade_answers_in_unseen_wordings() {
    let cases = handmade(HANDMADE);
    assert!(cases.len() >= 150, "expected the full hand-made set, got {}", cases.len());
    let t = check_handmade("Hand-made answers (written by the dsa authors, not recordings), family rules off", &cases);
    assert!(t.right * 100 >= t.total * 98, "round 1: {}/{} right, below the 98% floor", t.right, t.total);
}

#[test]
fn handmade_round2_answers() {
    let cases = handmade(HANDMADE_ROUND2);
    assert!(cases.len() >= 80, "expected the full round-2 hand-made set, got {}", cases.len());
    let t = check_handmade("Hand-made answers, round 2, family rules off", &cases);
    assert!(t.right * 100 >= t.total * 98, "round 2: {}/{} right, below the 98% floor", t.right, t.total);
}

#[test]
fn handmade_holdout_answers() {
    let cases = handmade(HANDMADE_HOLDOUT);
    assert!(cases.len() >= 60, "expected the full held-out hand-made set, got {}", cases.len());
    let t = check_handmade("Hand-made answers, round 3 (training since issue 14), family rules off", &cases);
    // Held out, it read 41/69 right and 18/36 not-found answers available; after the issue-14
    // morphology and key tables (tuned on it) 69/69 and 36/36. The floor keeps the training
    // figure: it may only rise.
    assert!(t.right >= 69 && t.available >= 36, "round 3: {}/{} right, {} available", t.right, t.total, t.available);
}

#[test]
fn handmade_round4_held_out_answers() {
    let cases = handmade(HANDMADE_ROUND4);
    assert!(cases.len() >= 100, "expected the full round-4 hand-made set, got {}", cases.len());
    let t = check_handmade("Hand-made answers, round 4 (HELD OUT), family rules off", &cases);
    // Held out: the floor is the latest reading, so that a change that loses ground shows.
    assert!(
        t.right >= ROUND4_FLOOR.0 && t.available >= ROUND4_FLOOR.1,
        "round 4: {}/{} right, {} available",
        t.right,
        t.total,
        t.available
    );
}

#[test]
fn handmade_longtail_answers() {
    let cases = handmade(HANDMADE_LONGTAIL);
    assert!(cases.len() >= 70, "expected the full long-tail hand-made set, got {}", cases.len());
    let t = check_handmade("Hand-made answers, long-tail classes (training), family rules off", &cases);
    // Per class (the id's second part), traps apart.
    println!("{:<28} {:>6} {:>6}", "class", "total", "right");
    let mut by_class: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for c in &cases {
        let class = c.id.split('-').nth(1).unwrap_or_default();
        let class = if c.id.contains("-trap-") { format!("{class} (traps)") } else { class.to_owned() };
        let r = read_whois_generic(c.text.as_bytes(), None, "", None);
        let right = match c.want {
            "available" => r.class == WhoisClass::Available,
            "registered" | "pending_delete" => r.class == WhoisClass::Registered,
            "reserved" => r.class == WhoisClass::Reserved,
            "rate_limited" => r.class == WhoisClass::RateLimited,
            _ => matches!(r.class, WhoisClass::Unknown | WhoisClass::RateLimited),
        };
        let e = by_class.entry(class).or_default();
        e.0 += 1;
        e.1 += usize::from(right);
    }
    for (class, (total, right)) in &by_class {
        println!("{class:<28} {total:>6} {right:>6}");
    }
    assert!(t.right >= LONGTAIL_FLOOR, "long tail: {}/{} right, below the floor {LONGTAIL_FLOOR}", t.right, t.total);
}

#[test]
fn handmade_longtail_check_answers() {
    let cases = handmade(HANDMADE_LONGTAIL_CHECK);
    assert!(cases.len() >= 40, "expected the full long-tail check set, got {}", cases.len());
    let t = check_handmade("Hand-made answers, long-tail check (written after the fixes), family rules off", &cases);
    assert!(
        t.right >= LONGTAIL_CHECK_FLOOR,
        "long-tail check: {}/{} right, below the floor {LONGTAIL_CHECK_FLOOR}",
        t.right,
        t.total
    );
}

/// The long-tail check set's reading, the floor of its test (see `tests/unseen/PROVENANCE.md`).
const LONGTAIL_CHECK_FLOOR: usize = 40;

/// The long-tail set's reading, the floor of its test (see `tests/unseen/PROVENANCE.md`).
const LONGTAIL_FLOOR: usize = 78;

/// Round 4's reading (right, not-found answers read available), the floor of its test: 32 and 6
/// with the reader of stop 21, 44 and 16 after the morphology work, 70 and 28 after the concept ×
/// language table (both written without seeing this file).
const ROUND4_FLOOR: (usize, usize) = (70, 28);

fn check_handmade(title: &str, cases: &[Handmade]) -> Tally {
    // The set is meant to hold wordings the labelled samples do not: list any line of a
    // not-found, reserved, pending-delete or quota answer that a sample has verbatim (lines of
    // 20 characters or more with a value, compared in lower case). Registered answers use keys
    // and EPP statuses every registry shares, so they are not checked.
    let dir = samples::data_dir();
    let corpus: String =
        samples::whois_samples(&dir).iter().map(|s| decode(&s.raw, None).to_lowercase()).collect::<Vec<_>>().join("\n");
    let mut in_samples = Vec::new();
    for c in cases.iter().filter(|c| c.want != "registered") {
        for l in c.text.lines().map(str::trim).filter(|l| l.chars().count() >= 20 && !l.ends_with(':')) {
            if corpus.contains(&l.to_lowercase()) {
                in_samples.push(format!("{}: {l}", c.id));
            }
        }
    }

    print_header(title);
    let mut by_want: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut not_right = Vec::new();
    let mut false_available = Vec::new();
    let mut pending_flagged = (0, 0);
    for c in cases {
        let r = read_whois_generic(c.text.as_bytes(), None, "", None);
        let want = match c.want {
            "available" => Want::Available,
            "registered" | "pending_delete" => Want::Registered,
            "reserved" => Want::Reserved,
            "rate_limited" => Want::RateLimited,
            _ => Want::NoVerdict,
        };
        let tally = by_want.entry(c.want).or_default();
        let before = tally.right;
        tally.add(want, r.class);
        if c.want == "pending_delete" {
            pending_flagged.1 += 1;
            if r.class == WhoisClass::Registered && r.pending_delete {
                pending_flagged.0 += 1;
            }
        }
        if want != Want::Available && r.class == WhoisClass::Available {
            false_available.push(format!("{} ({}) read available: {:?}", c.id, c.want, r.marker));
        }
        if tally.right == before {
            not_right.push(format!("{:<14} {:<34} → {:?} ({:?})", c.want, c.id, r.class, r.marker));
        }
    }
    let mut total = Tally::default();
    for (want, t) in &by_want {
        print_row(want, t);
        total.merge(t);
    }
    print_row("ALL HAND-MADE", &total);
    println!("  pending delete flagged: {}/{}", pending_flagged.0, pending_flagged.1);
    for n in &not_right {
        println!("  not right: {n}");
    }
    for l in &in_samples {
        println!("  also in the samples: {l}");
    }
    assert!(false_available.is_empty(), "hand-made answers falsely read as available:\n{}", false_available.join("\n"));
    assert!(in_samples.is_empty(), "hand-made lines found verbatim in the samples: {in_samples:?}");
    total
}

// ----- 3. round 5 (issue 28): the held-out measure of the long-tail work -------------------

/// Hand-made answers written while the issue-28 long-tail reader work was under way, by someone
/// who saw neither that work nor the reader's code and data (`handmade_round5.txt`): weighted
/// toward the classes the issue names (the registry or its database as the subject of a not-found
/// statement, markers run together with other tokens, terse one-line reserved answers, a verdict
/// line buried in a long disclaimer, and registered answers in the same styles). Read once before
/// and once after that work; never tuned on, except for safety fixes (`tests/unseen/PROVENANCE.md`).
const HANDMADE_ROUND5: &str = include_str!("unseen/handmade_round5.txt");

/// Registered answers as collections without the answering server's name hold them, each with its
/// expected created/updated/expires dates, registrar and name servers in `#=` lines
/// (`handmade_round5_fields.txt`), by the same author under the same rules.
const HANDMADE_ROUND5_FIELDS: &str = include_str!("unseen/handmade_round5_fields.txt");

#[test]
fn handmade_round5_held_out_answers() {
    let cases = handmade(HANDMADE_ROUND5);
    assert!(cases.len() >= 140, "expected the full round-5 hand-made set, got {}", cases.len());
    let t = check_handmade("Hand-made answers, round 5 (HELD OUT, issue 28), family rules off", &cases);
    for c in cases.iter().filter(|c| c.want == "pending_delete") {
        let r = read_whois_generic(c.text.as_bytes(), None, "", None);
        if !(r.class == WhoisClass::Registered && r.pending_delete) {
            println!("  pending delete not flagged: {} → {:?}, flag {}", c.id, r.class, r.pending_delete);
        }
    }
    // Held out: the floor is the latest reading, so that a change that loses ground shows.
    // `check_handmade` has already asserted 0 false "available".
    assert!(
        t.right >= ROUND5_FLOOR.0 && t.available >= ROUND5_FLOOR.1,
        "round 5: {}/{} right, {} available",
        t.right,
        t.total,
        t.available
    );
}

/// Round 5's reading (right, not-found answers read available), the floor of its test: 77 of 146
/// and 23 of 66 with the reader of main before the issue-28 long-tail work (`bb8b6ce`), 101 and 38
/// after it (read once, after the merge; the long-tail work never saw this file).
const ROUND5_FLOOR: (usize, usize) = (101, 38);

/// One round-5 field answer: the text the reader gets and the `#=` expectations.
struct FieldCase {
    id: String,
    domain: String,
    text: String,
    expected: BTreeMap<String, String>,
}

fn field_cases(file: &str) -> Vec<FieldCase> {
    handmade(file)
        .into_iter()
        .map(|c| {
            assert_eq!(c.want, "registered", "{}: the field set holds registered answers only", c.id);
            let mut expected = BTreeMap::new();
            let mut text = String::new();
            for line in c.text.lines() {
                if let Some(e) = line.strip_prefix("#=") {
                    let (k, v) = e.split_once(':').unwrap_or_else(|| panic!("{}: `#= key: value`", c.id));
                    expected.insert(k.trim().to_owned(), v.trim().to_owned());
                } else {
                    text.push_str(line);
                    text.push('\n');
                }
            }
            let domain = expected.remove("domain").unwrap_or_else(|| panic!("{}: no `#= domain:`", c.id));
            FieldCase { id: c.id, domain, text, expected }
        })
        .collect()
}

/// How one field fared over a set: right, wrong (a value that is not the expected one), missing.
#[derive(Default, Clone, Copy)]
struct FieldScore {
    right: usize,
    wrong: usize,
    missing: usize,
}

/// Registrar names compared case-insensitively with blanks collapsed, without a trailing
/// `[Tag = …]` or `(handle)` (as `whois_fields.rs` compares them).
fn registrar_key(s: &str) -> String {
    let mut s = s.trim();
    loop {
        let before = s;
        for (open, close) in [('[', ']'), ('(', ')')] {
            if s.ends_with(close)
                && let Some(p) = s.rfind(open)
            {
                s = s[..p].trim_end();
            }
        }
        if s == before {
            break;
        }
    }
    s.trim_end_matches('.').to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

fn day_of(s: &str) -> time::Date {
    time::Date::parse(s, &time::macros::format_description!("[year]-[month]-[day]"))
        .unwrap_or_else(|e| panic!("expected date {s:?}: {e}"))
}

#[test]
fn handmade_round5_fields_without_server() {
    use workers::engine::registration::fields;
    use workers::parse::whois::read_whois;

    let cases = field_cases(HANDMADE_ROUND5_FIELDS);
    assert!(cases.len() >= 40, "expected the full round-5 field set, got {}", cases.len());
    let mut table: BTreeMap<&str, FieldScore> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut not_registered = Vec::new();
    for c in &cases {
        // No server name, as in collections that do not record it: the suffix is the name's
        // last label, like the samples without a server (`tests/samples`).
        let suffix = c.domain.rsplit('.').next().unwrap_or_default();
        let reading = read_whois(c.text.as_bytes(), None, suffix, None);
        if reading.class != WhoisClass::Registered {
            not_registered.push(format!("{} → {:?}", c.id, reading.class));
        }
        let mut record = reading.record;
        let mut redacted = fields::whois_redactions(&c.text);
        fields::finish(&mut record, &mut redacted, false);
        let mut mark = |field: &'static str, got: Option<bool>, note: String| {
            let s = table.entry(field).or_default();
            match got {
                Some(true) => s.right += 1,
                Some(false) => {
                    s.wrong += 1;
                    misses.push(format!("{:<34} {field:<11} wrong: {note}", c.id));
                }
                None => {
                    s.missing += 1;
                    misses.push(format!("{:<34} {field:<11} missing: {note}", c.id));
                }
            }
        };
        for (field, got) in
            [("created", record.created_at), ("updated", record.updated_at), ("expires", record.expires_at)]
        {
            let Some(want) = c.expected.get(field) else { continue };
            let want_day = day_of(want);
            // One day of slack: a registry's local time converted to UTC may change the day.
            let got_ok = got.map(|g| (g.to_offset(time::UtcOffset::UTC).date() - want_day).whole_days().abs() <= 1);
            mark(field, got_ok, format!("want {want}, got {got:?}"));
        }
        if let Some(want) = c.expected.get("registrar") {
            let got_ok = record.registrar.as_deref().map(|g| registrar_key(g) == registrar_key(want));
            mark("registrar", got_ok, format!("want {want:?}, got {:?}", record.registrar));
        }
        if let Some(want) = c.expected.get("nameservers") {
            let want: std::collections::BTreeSet<String> = want.split_whitespace().map(str::to_owned).collect();
            let got: std::collections::BTreeSet<String> =
                record.nameservers.iter().map(|n| n.trim().trim_end_matches('.').to_lowercase()).collect();
            let got_ok = (!got.is_empty()).then(|| got == want);
            mark("nameservers", got_ok, format!("want {want:?}, got {got:?}"));
        }
    }

    println!("\nHand-made registered answers without a server name, round 5 (HELD OUT, issue 28)");
    println!("{:<14} {:>6} {:>6} {:>8} {:>6} {:>7}", "field", "total", "right", "wrong", "missing", "share");
    let mut all = FieldScore::default();
    for (field, s) in &table {
        let total = s.right + s.wrong + s.missing;
        println!(
            "{field:<14} {total:>6} {:>6} {:>8} {:>6} {:>6.1}%",
            s.right,
            s.wrong,
            s.missing,
            100.0 * s.right as f64 / total as f64
        );
        all.right += s.right;
        all.wrong += s.wrong;
        all.missing += s.missing;
    }
    let total = all.right + all.wrong + all.missing;
    println!(
        "{:<14} {total:>6} {:>6} {:>8} {:>6} {:>6.1}%",
        "all fields",
        all.right,
        all.wrong,
        all.missing,
        100.0 * all.right as f64 / total as f64
    );
    println!("  answers not read as registered: {}/{}", not_registered.len(), cases.len());
    for n in &not_registered {
        println!("  not registered: {n}");
    }
    for m in &misses {
        println!("  {m}");
    }
    assert!(total >= 200, "too few fields compared: {total}");
    // Held out: the floor is the latest reading of all fields right.
    assert!(all.right >= ROUND5_FIELDS_FLOOR, "round-5 fields: {}/{total} right", all.right);
}

/// Round 5's field reading (fields right), the floor of its test: 169 of 203 with the reader of
/// main before the issue-28 long-tail work (`bb8b6ce`), 181 after it (read once, after the merge).
const ROUND5_FIELDS_FLOOR: usize = 181;
