//! The field reader: registration facts (domain, registrar, registrant, name servers, status,
//! dates, DNSSEC) from `Key: value` lines and indentation blocks (see [`super`]).

use common::record::DomainRecord;
use time::OffsetDateTime;

use super::dates::parse_date;
use super::keys::*;
use super::lines::Line;
use super::markers::DateOrder;
use crate::parse::lexicon::field_lexicon;
use crate::parse::lowered::Lowered;

#[derive(Default)]
pub(super) struct FieldState {
    pub(super) record: DomainRecord,
    pub(super) created: Option<(u8, OffsetDateTime)>,
    pub(super) updated: Option<(u8, OffsetDateTime)>,
    pub(super) expires: Option<(u8, OffsetDateTime)>,
    pub(super) name_or_org: Option<String>,
    pub(super) domain_ace: Option<String>,
    /// A registrar given only by its registry handle, used when no name follows.
    pub(super) registrar_handle: Option<String>,
    /// The registrant contact's handle, for finding its country in a separate contact object.
    pub(super) registrant_handle: Option<String>,
    /// The registrant's multi-line address: its last line, the number of lines, and whether
    /// lines without a key still continue it.
    pub(super) registrant_address: Option<(String, usize, bool)>,
}

/// A block opened by an empty-valued key, waiting for its indented lines.
pub(super) struct OpenBlock {
    pub(super) kind: Block,
    pub(super) key: String,
    pub(super) indent: usize,
    pub(super) children: usize,
    /// Some children were indented: the block's extent is then given by indentation alone.
    pub(super) indented: bool,
}

/// Lines made only of rule characters ("-----", "=====") carry nothing.
pub(super) fn is_decoration(t: &str) -> bool {
    t.chars().all(|c| matches!(c, '-' | '=' | '_' | '*' | '+' | '~' | ' '))
}

pub(super) fn read_fields(lines: &[Line<'_>], order: DateOrder) -> DomainRecord {
    let mut st = FieldState::default();
    let mut stack: Vec<OpenBlock> = Vec::new();
    let mut prev_blank = false;
    // The key of the previous top-level line, for runs of repeated keys ("changed:" lines).
    let mut prev_top_key: Option<String> = None;
    for line in lines {
        let text = line.raw.trim();
        if text.is_empty() {
            prev_blank = true;
            continue;
        }
        if line.comment {
            stack.clear();
            prev_blank = false;
            continue;
        }
        if is_decoration(text) {
            continue;
        }
        let kv = split_key_value(text).map(|(k, v)| if is_yaml_tag(&v) { (k, String::new()) } else { (k, v) });
        let this_top_key = kv.as_ref().map(|(k, _)| k.clone()).filter(|_| stack.is_empty() || line.indent == 0);
        let repeated_key = this_top_key.is_some() && this_top_key == prev_top_key;
        prev_top_key = this_top_key;
        // Close the blocks this line is not part of.
        while let Some(top) = stack.last_mut() {
            if line.indent > top.indent {
                top.indented = true;
                break;
            }
            if line.indent == top.indent && accepts_unindented(top, kv.as_ref(), text, prev_blank) {
                break;
            }
            stack.pop();
        }
        prev_blank = false;
        let ignored = stack.iter().any(|b| b.kind == Block::OtherContact);
        if let Some((key, _)) = kv.as_ref().filter(|(_, v)| v.is_empty()) {
            // A nested or top-level block header.
            let kind = if ignored { Block::OtherContact } else { block_for(key).unwrap_or(Block::Plain) };
            if let Some(top) = stack.last_mut() {
                top.children += 1;
            }
            stack.push(OpenBlock { kind, key: key.clone(), indent: line.indent, children: 0, indented: false });
            continue;
        }
        if ignored {
            if let Some(top) = stack.last_mut() {
                top.children += 1;
            }
            continue;
        }
        match stack.last_mut() {
            Some(top) => {
                let index = top.children;
                top.children += 1;
                let (kind, key) = (top.kind, top.key.clone());
                apply_child(&mut st, kind, &key, index, kv, text, order);
            }
            None => match kv {
                Some((key, value)) => {
                    // "Registrar: ACTI-0024" followed by "Name: ACTIVE 24, s.r.o." (SK-NIC, CZ.NIC
                    // style): a handle opens the contact whose details follow unindented.
                    let handle_of = match field_for(&key) {
                        Some(Field::Registrar) => Some(Block::Registrar),
                        Some(Field::RegistrantNameOrOrg) => Some(Block::Registrant),
                        _ => None,
                    };
                    if let Some(kind) = handle_of.filter(|_| is_handle(&value)) {
                        if kind == Block::Registrar && st.registrar_handle.is_none() {
                            st.registrar_handle = Some(value.clone());
                        }
                        if kind == Block::Registrant && st.registrant_handle.is_none() {
                            st.registrant_handle = Some(value.clone());
                        }
                        stack.push(OpenBlock { kind, key, indent: line.indent, children: 1, indented: false });
                    } else if let Some(f) = field_for(&key) {
                        match f {
                            // "changed: ... 19960111" ... "changed: ... 20140116": a run of change
                            // lines is a history; the record was last updated at the latest.
                            Field::Updated(p) if repeated_key => keep_latest(&mut st.updated, p, &value, order),
                            _ => apply(&mut st, f, &value, order),
                        }
                        // "nameservers: ns2.google.com.\n             ns1.google.com." (NASK):
                        // more-indented lines continue a list value.
                        if matches!(f, Field::Nameserver | Field::Status) {
                            stack.push(OpenBlock {
                                kind: Block::Plain,
                                key,
                                indent: line.indent,
                                children: 1,
                                indented: false,
                            });
                        }
                    } else if st.registrant_handle.is_none()
                        && !value.contains(char::is_whitespace)
                        && key_candidates(&key).iter().any(|k| field_lexicon().registrant_handle_keys.contains(k))
                    {
                        // "holder-c: A1967-FRNIC": the registrant's contact object, by handle.
                        st.registrant_handle = Some(value.clone());
                    }
                }
                None => {
                    // "Nameservers", "Registrar" (.it, DK Hostmaster, .ai) without a colon open
                    // a block too.
                    let key = normalise_key(text);
                    let header_like = text.chars().all(|c| c.is_alphabetic() || matches!(c, ' ' | '(' | ')' | '-'));
                    let kind = block_for(&key).filter(|k| {
                        header_like
                            && matches!(
                                k,
                                Block::Registrant | Block::Registrar | Block::Nameservers | Block::OtherContact
                            )
                    });
                    if let Some(kind) = kind {
                        stack.push(OpenBlock { kind, key, indent: line.indent, children: 0, indented: false });
                    }
                }
            },
        }
    }
    // A multi-line registrant address whose last line is a country ("IT", "FRANCE").
    if st.record.registrant.country.is_none()
        && let Some((tail, n, _)) = st.registrant_address.take()
        && n >= 2
    {
        st.record.registrant.country = field_lexicon().country_code(&tail);
    }
    if st.record.registrant.country.is_none()
        && let Some(handle) = st.registrant_handle.clone()
        && let Some(country) = contact_country(lines, &handle)
    {
        apply(&mut st, Field::RegistrantCountry, &country, order);
    }
    finish(st)
}

/// A key naming a name server inside a name-server block ("Name", "Hostname", "DNS",
/// "Primary Server Hostname"), not its address.
pub(super) fn is_nameserver_key(k: &str) -> bool {
    matches!(field_for(k), Some(Field::Nameserver))
        || k == "dns"
        || ((k.contains("name") || k.contains("server") || k.contains("host"))
            && !k.contains("address")
            && !k.contains("ip"))
}

/// May a line printed at the same indentation as the open block's key still belong to it?
pub(super) fn accepts_unindented(top: &OpenBlock, kv: Option<&(String, String)>, text: &str, prev_blank: bool) -> bool {
    if top.indented {
        return false;
    }
    match kv {
        // "REGISTRANT:\nGoogle Inc.\n" — but a blank line after some children ends the block,
        // and so does a line that is itself a block header ("Technical Contact").
        None => !(prev_blank && top.children > 0) && block_for(&normalise_key(text)).is_none(),
        // "Registrant:\n----\nOrg: X\nName: Y" — contact details without indentation.
        Some((k, v)) => {
            let belongs = match top.kind {
                Block::Registrant | Block::Registrar | Block::OtherContact | Block::Domain => is_contact_subkey(k),
                // ".tn": "DNS servers" / "Name....: ns4.ati.tn." / "IP n° 1 : ..." unindented.
                Block::Nameservers => is_nameserver_key(k) || k.contains("ip"),
                _ => false,
            };
            !v.is_empty() && !prev_blank && belongs
        }
    }
}

pub(super) fn apply_child(
    st: &mut FieldState,
    block: Block,
    block_key: &str,
    index: usize,
    kv: Option<(String, String)>,
    text: &str,
    order: DateOrder,
) {
    let top_level = |st: &mut FieldState, k: &str, v: &str| {
        if let Some(f) = field_for(k) {
            apply(st, f, v, order);
        }
    };
    match (block, kv) {
        (Block::OtherContact, _) => {}
        (Block::Domain, None) if index == 0 => apply(st, Field::Domain, text, order),
        // "Domain:\nname: git.ee" (.ee)
        (Block::Domain, Some((k, v))) if k == "name" => apply(st, Field::Domain, &v, order),
        (Block::Registrant, None) if index == 0 => apply(st, Field::RegistrantNameOrOrg, text, order),
        (Block::Registrant, None) => {
            // "Address: Viale Alessandrino, 595\n    Roma\n    00172\n    RM\n    IT"
            if let Some((tail, n, true)) = st.registrant_address.as_mut() {
                *tail = text.to_owned();
                *n += 1;
            }
        }
        (Block::Registrant, Some((k, v))) => {
            let cands = key_candidates(&k);
            if cands.iter().any(|c| matches!(c.as_str(), "address" | "street" | "street address")) {
                if st.registrant_address.is_none() {
                    st.registrant_address = Some((v.clone(), 1, true));
                }
            } else if let Some(address) = st.registrant_address.as_mut() {
                address.2 = false;
            }
            let has = |names: &[&str]| cands.iter().any(|c| names.contains(&c.as_str()));
            if has(&["organization", "organisation", "org", "company", "company name", "organization name"]) {
                apply(st, Field::RegistrantOrg, &v, order);
            } else if has(&["name"]) {
                apply(st, Field::RegistrantNameOrOrg, &v, order);
            } else if has(&["country", "country code", "countrycode"])
                || cands.iter().any(|c| field_lexicon().is_country_key(c))
            {
                apply(st, Field::RegistrantCountry, &v, order);
            } else if !is_contact_subkey(&k) {
                // GoDaddy prints the whole record indented under "Registrant:"; dates there may
                // also be the contact's own, so they rank below the record's.
                match field_for(&k) {
                    Some(Field::Created(p)) => apply(st, Field::Created(p + 3), &v, order),
                    Some(Field::Updated(p)) => apply(st, Field::Updated(p + 3), &v, order),
                    Some(Field::Expires(p)) => apply(st, Field::Expires(p + 3), &v, order),
                    _ => top_level(st, &k, &v),
                }
            }
        }
        (Block::Registrar, None) if index == 0 => apply(st, Field::Registrar, text, order),
        (Block::Registrar, Some((k, v))) => match k.as_str() {
            "name" | "organization" | "organisation" | "registrar name" | "organization name" | "organisation name" => {
                apply(st, Field::Registrar, &v, order);
            }
            "whois" | "whois server" => apply(st, Field::RegistrarWhois, &v, order),
            _ if !is_contact_subkey(&k) => top_level(st, &k, &v),
            _ => {}
        },
        (Block::Nameservers, None) => apply(st, Field::Nameserver, text.trim_start_matches(['-', '*', ' ']), order),
        (Block::Nameservers, Some((k, v))) => {
            if is_nameserver_key(&k) {
                apply(st, Field::Nameserver, &v, order);
            } else {
                top_level(st, &k, &v);
            }
        }
        (Block::Status, None) => apply(st, Field::Status, text, order),
        (Block::Plain, None) => {
            if let Some(f) = field_for(block_key) {
                apply(st, f, text, order);
            }
        }
        (_, Some((k, v))) => top_level(st, &k, &v),
        _ => {}
    }
}

pub(super) fn apply(st: &mut FieldState, field: Field, value: &str, order: DateOrder) {
    let value = value.trim();
    if value.is_empty() {
        return;
    }
    let r = &mut st.record;
    match field {
        Field::Domain | Field::DomainAce => {
            let Some(d) = value.split_whitespace().next().map(|t| t.trim_end_matches('.').to_lowercase()) else {
                return;
            };
            if !d.contains('.') || !d.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-') {
                return;
            }
            if field == Field::DomainAce || (r.domain.as_deref().is_some_and(|cur| !cur.is_ascii()) && d.is_ascii()) {
                // The record is documented as an A-label: an ASCII form printed later wins.
                if d.is_ascii() && st.domain_ace.is_none() {
                    st.domain_ace = Some(d);
                }
            } else if r.domain.is_none() {
                r.domain = Some(d);
            }
        }
        Field::Status => {
            if let Some(date) = status_until(value) {
                keep_date(&mut st.expires, 3, date, order);
            }
            for part in value.split(',') {
                let s = clean_status(part);
                // A wrapped explanation ("This feature is provided to protect against ...") or a
                // number is not a status word.
                let sentence = s.split(" (").next().unwrap_or_default().split_whitespace().count() >= 6;
                let number = s.chars().all(|c| c.is_ascii_digit() || c.is_whitespace());
                if !s.is_empty() && !sentence && !number && !r.status.contains(&s) {
                    r.status.push(s);
                }
            }
        }
        Field::Registrar => {
            if r.registrar.is_none() {
                let v = strip_registrar_id(&cut_url(value));
                if !v.is_empty() && !is_placeholder(&v) {
                    r.registrar = Some(v);
                }
            }
        }
        Field::RegistrarWhois => {
            if r.registrar_whois_server.is_none()
                && let Some(tok) = value.split_whitespace().next()
            {
                let host = tok.trim_start_matches("whois://").trim_end_matches(['.', '/']).to_ascii_lowercase();
                if is_host_name(&host) {
                    r.registrar_whois_server = Some(host);
                }
            }
        }
        Field::RegistrantOrg => {
            if r.registrant.org.is_none() && !is_placeholder(value) {
                r.registrant.org = Some(value.to_owned());
            }
        }
        Field::RegistrantNameOrOrg => {
            if st.name_or_org.is_none() && !is_placeholder(value) {
                st.name_or_org = Some(value.to_owned());
            }
        }
        Field::RegistrantCountry => {
            if r.registrant.country.is_none() {
                // "FR", "France", "France (FR)": names through the lexicon's country table.
                r.registrant.country = field_lexicon().country_code(value);
            }
        }
        Field::Nameserver => {
            for tok in value.split(|c: char| c.is_whitespace() || c == ',' || c == ';') {
                let host = tok
                    .trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | '"'))
                    .trim_end_matches('.')
                    .to_ascii_lowercase();
                // "ns1.example.com 192.0.2.1", "google.pt NS ns1.google.com." — names only; the
                // domain itself is dropped when the record is finished.
                if is_host_name(&host) && !r.nameservers.contains(&host) {
                    r.nameservers.push(host);
                }
            }
        }
        Field::Created(p) => keep_date(&mut st.created, p, value, order),
        Field::Updated(p) => keep_date(&mut st.updated, p, value, order),
        Field::Expires(p) => keep_date(&mut st.expires, p, value, order),
        Field::Dnssec => {
            if r.dnssec.is_none() {
                r.dnssec = parse_dnssec(value);
            }
        }
    }
}

/// The date in a status value that carries the expiry ("OK-UNTIL 20131218000000").
///
/// The word is searched in a lower-cased copy and the date read from the value itself, through
/// [`Lowered`]: lower-casing may change the text's length ("İ", "Ω"), so an offset in the copy is
/// no offset in the value.
pub(super) fn status_until(value: &str) -> Option<&str> {
    let lowered = Lowered::new(value);
    let lower = lowered.as_str();
    field_lexicon().status_until_words.iter().find_map(|w| {
        lower.match_indices(w.as_str()).find_map(|(start, _)| {
            let before_ok = lower.get(..start)?.chars().next_back().is_none_or(|c| !c.is_alphanumeric());
            let after = lowered.original_from(start + w.len())?;
            let rest = after.trim_start();
            (before_ok && after.starts_with([' ', ':']) && parse_date(rest, DateOrder::Dmy).is_some()).then_some(rest)
        })
    })
}

/// A registry handle rather than a name: one token with a digit or a hyphen ("ACTI-0024").
pub(super) fn is_handle(v: &str) -> bool {
    !v.is_empty()
        && !v.contains(char::is_whitespace)
        && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && v.contains(|c: char| c.is_ascii_digit() || c == '-')
}

pub(super) fn finish(mut st: FieldState) -> DomainRecord {
    if st.record.registrar.is_none() {
        st.record.registrar = st.registrar_handle.take();
    }
    if let Some(ace) = st.domain_ace.take()
        && st.record.domain.as_deref().is_none_or(|d| !d.is_ascii())
    {
        st.record.domain = Some(ace);
    }
    // DK Hostmaster's "DNS:" line names the domain itself, not a name server.
    if let Some(d) = st.record.domain.clone() {
        st.record.nameservers.retain(|n| *n != d);
    }
    st.record.created_at = st.created.map(|(_, d)| d);
    st.record.updated_at = st.updated.map(|(_, d)| d);
    st.record.expires_at = st.expires.map(|(_, d)| d);
    if st.record.registrant.org.is_none() {
        st.record.registrant.org = st.name_or_org;
    }
    st.record
}

pub(super) fn keep_date(slot: &mut Option<(u8, OffsetDateTime)>, priority: u8, value: &str, order: DateOrder) {
    if slot.is_some_and(|(p, _)| p <= priority) {
        return;
    }
    if let Some(d) = parse_date(value, order) {
        *slot = Some((priority, d));
    }
}

/// Like [`keep_date`], but at equal priority a later date replaces an earlier one.
pub(super) fn keep_latest(slot: &mut Option<(u8, OffsetDateTime)>, priority: u8, value: &str, order: DateOrder) {
    match *slot {
        Some((p, current)) if p == priority => {
            if let Some(d) = parse_date(value, order).filter(|d| *d > current) {
                *slot = Some((priority, d));
            }
        }
        _ => keep_date(slot, priority, value, order),
    }
}

pub(super) fn clean_status(s: &str) -> String {
    // "ok - Normal state." / "clientDeleteProhibited - status prevent domain deletion ...":
    // the label, without the registry's explanation.
    let s = cut_url(s);
    let s = s.split(" - ").next().unwrap_or(&s);
    s.trim_end_matches(['.', ';']).trim().to_owned()
}

/// Drops a trailing URL: `clientTransferProhibited https://icann.org/epp#...` → the label.
pub(super) fn cut_url(s: &str) -> String {
    let s = s.trim();
    let cut = ["(http", "http://", "https://"].iter().filter_map(|p| s.find(p)).min().unwrap_or(s.len());
    s.get(..cut).unwrap_or(s).trim().to_owned()
}

/// Drops a registry's handle after a registrar name: "MarkMonitor Inc. (R22-LRCC)", "(292)",
/// "NetNames Limited [Tag = NETNAMES]".
pub(super) fn strip_registrar_id(v: &str) -> String {
    let mut v = v.trim();
    loop {
        let before = v;
        if v.ends_with(']')
            && let Some((head, _)) = v.rsplit_once('[')
        {
            v = head.trim_end();
        }
        if v.ends_with(')')
            && let Some((head, inner)) = v.rsplit_once('(')
            && !inner.contains(char::is_whitespace)
            && inner.contains(|c: char| c.is_ascii_digit())
            && !head.is_empty()
        {
            v = head.trim_end();
        }
        if v == before {
            break;
        }
    }
    v.to_owned()
}

pub(super) fn is_placeholder(v: &str) -> bool {
    let l = v.trim().to_ascii_lowercase();
    l.is_empty()
        || matches!(
            l.as_str(),
            "-" | "--"
                | "n/a"
                | "na"
                | "n.a."
                | "none"
                | "(none)"
                | "nil"
                | "not defined"
                | "not.defined"
                | "null"
                | "unknown"
        )
}

/// Whether the answer names a holder under one of the table's holder-name keys
/// ([`crate::parse::lexicon::holder_name_keys`]) or under a holder,
/// organisation or admin/tech contact key of the language table (`whois-languages.json`), with a
/// value that is no placeholder and does not itself say "not found".
pub(super) fn holder_named(lines: &[Line<'_>]) -> bool {
    lines.iter().filter(|l| !l.comment).any(|l| {
        split_key_value(l.raw.trim()).is_some_and(|(k, v)| {
            key_candidates(&k).iter().any(|c| {
                crate::parse::lexicon::holder_name_keys().contains(c)
                    || matches!(
                        crate::parse::lexicon::field_lexicon().field_of(c),
                        Some("registrant" | "organisation" | "contact")
                    )
            }) && !is_placeholder(&v)
                && !crate::parse::lexicon::says_not_found(&v)
        })
    })
}

/// Whether the answer has a domain object's contact handles (`admin-c:`, `tech-c:`, `mnt-by:`
/// with a value that is a handle): the object exists, so the name is held by someone.
pub(super) fn object_handles(lines: &[Line<'_>]) -> bool {
    lines.iter().filter(|l| !l.comment).any(|l| {
        split_key_value(l.raw.trim()).is_some_and(|(k, v)| {
            crate::parse::lexicon::object_handle_keys().contains(&k)
                && !is_placeholder(&v)
                && v.split_whitespace().count() == 1
                && v.chars().any(|c| c.is_alphanumeric())
        })
    })
}

/// The name servers of an answer made of bare `<label> <name server>` lines, one per delegation,
/// as Tonic (.to) prints after its `Tonic whoisd V1.1` banner (`go ns-1.myphotoalbum.com`).
/// Only for families that declare `nameserver_lines`: elsewhere two words on a line are prose.
pub(super) fn nameserver_lines(lines: &[Line<'_>]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for l in lines.iter().filter(|l| !l.comment) {
        // The raw text, not the folded `norm`: a host name keeps its letters.
        let raw = l.raw.trim().to_lowercase();
        let mut words = raw.split_whitespace();
        let (Some(label), Some(host), None) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let host = host.trim_end_matches('.');
        let label_ok = !label.is_empty() && label.chars().all(|c| c.is_alphanumeric() || c == '-');
        if label_ok && is_host_name(host) && !found.iter().any(|h| h == host) {
            found.push(host.to_owned());
        }
    }
    found
}

pub(super) fn is_host_name(s: &str) -> bool {
    s.len() >= 3
        && s.contains('.')
        && !s.starts_with(['.', '-'])
        && s.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-' || c == '_')
        && s.chars().any(char::is_alphabetic)
        && !looks_like_address(s)
}

pub(super) fn looks_like_address(s: &str) -> bool {
    s.contains(':') || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// DNSSEC state as printed: `signedDelegation` / `unsignedDelegation` (ICANN RDDS),
/// `yes`/`no`, `Active`/`Inactive`, KISA's `서명` / `미서명`.
pub(super) fn parse_dnssec(v: &str) -> Option<bool> {
    let l = v.trim().to_lowercase();
    let first = l.split(|c: char| c.is_whitespace() || c == ',' || c == '(').next().unwrap_or_default();
    match first {
        "unsigned" | "unsigneddelegation" | "no" | "inactive" | "false" | "off" | "none" | "미서명" => Some(false),
        "not" if l.starts_with("not signed") => Some(false),
        "signed" | "signeddelegation" | "yes" | "active" | "true" | "on" | "서명" => Some(true),
        _ => field_lexicon().dnssec(&l),
    }
}
