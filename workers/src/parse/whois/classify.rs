//! Classification: the order of rules of the module documentation of [`super`], over the
//! prepared lines, the selected family and the registration facts read.

use common::record::DomainRecord;

use super::WhoisClass;
use super::fields::{holder_named, object_handles, read_fields};
use super::lines::Line;
use super::markers::{
    DateOrder, Family, Lists, Marker, Markers, Selected, first_match, first_statement_match, last_hit,
};

pub(super) fn classify(
    data: &Markers,
    sel: &Selected<'_>,
    lines: &[Line<'_>],
    record: &DomainRecord,
) -> (WhoisClass, Option<String>) {
    let fam = sel.family.map(|f| &f.lists);
    let family_then_generic = |pick: fn(&Lists) -> &Vec<Marker>| -> Option<String> {
        fam.and_then(|l| first_match(pick(l), lines))
            .or_else(|| first_match(pick(&data.generic), lines))
            .map(|m| m.rule.clone())
    };

    if let Some(rule) = family_then_generic(|l| &l.rate_limited) {
        return (WhoisClass::RateLimited, Some(rule));
    }
    if let Some(rule) = family_then_generic(|l| &l.reserved) {
        return (WhoisClass::Reserved, Some(rule));
    }
    // A status field whose value alone says the name is withheld ("Estado / Status: RESERVED",
    // "state: blocked"), under whatever key wording the field reader knows: reserved, even with
    // a creation date or a holder (the registry's own hold on the name).
    if let Some(word) = record.status.iter().find_map(|s| crate::parse::lexicon::reserved_status(s)) {
        return (WhoisClass::Reserved, Some(format!("status:{word}")));
    }
    // The family's own unknown wording describes that registry's whole answer (NIC-Uruguay's
    // record of the zone com.uy shown in place of a com.uy name it does not hold, status ACTIVO
    // and all): it decides even when a registered marker follows.
    if let Some((rule, _)) = fam.and_then(|l| last_hit(&l.unknown, lines)) {
        return (WhoisClass::Unknown, Some(rule.rule.clone()));
    }
    let registered_marker = family_then_generic(|l| &l.registered);
    // A text that is not about a domain registration at all (an IANA TLD record, a help page)
    // stays unknown even if it carries dates, statuses or name servers — unless a registered
    // marker *follows* a generic unknown one, as when a client prints IANA's referral and then
    // the registry's answer.
    if let Some((rule, at)) = last_hit(&data.generic.unknown, lines) {
        let registered_after = fam
            .and_then(|l| last_hit(&l.registered, lines))
            .into_iter()
            .chain(last_hit(&data.generic.registered, lines))
            .any(|(_, reg_at)| reg_at > at)
            // The registry's answer after the referral may word its keys in a way no marker
            // knows ("Registrador:", "Fecha de creación:"): its registration facts count too.
            || {
                // Only a record of a name (a domain with a dot, not IANA's `domain: COM`).
                let after = read_fields(&lines[at + 1..], DateOrder::Dmy);
                after.domain.is_some() && field_evidence(&after, &lines[at + 1..]).is_some()
            };
        if !registered_after {
            return (WhoisClass::Unknown, Some(rule.rule.clone()));
        }
    }
    let registered = registered_marker.or_else(|| field_evidence(record, lines));

    if sel.wrong_server {
        // E.g. Verisign's "No match for" about a .et name: that server does not hold .et.
        let name = sel.family.map_or("", |f| f.name.as_str());
        return match registered {
            Some(rule) => (WhoisClass::Registered, Some(rule)),
            None => (WhoisClass::Unknown, Some(format!("server {name} is not authoritative for this suffix"))),
        };
    }

    // Only the family's own "available" wording counts when the family is known; the generic
    // wording only on lines that are statements about the name.
    let available = match sel.family.and_then(|f| f.lists.available.as_deref()) {
        Some(own) => first_match(own, lines).map(|m| m.rule.clone()),
        None => first_statement_match(data.generic.available.as_deref().unwrap_or(&[]), lines)
            .map(|m| m.rule.clone())
            // A status field that alone says free, under any status key the field reader knows
            // ("Stav: volná", "Estado: disponible", "域名状态：可注册").
            .or_else(|| {
                record.status.iter().find_map(|s| crate::parse::lexicon::free_status(s)).map(|w| format!("status:{w}"))
            }),
    };

    let result = match (available, registered) {
        // Both: the registration facts win — a stray phrase must not free a registered name.
        (_, Some(rule)) => (WhoisClass::Registered, Some(rule)),
        (Some(rule), None) => (WhoisClass::Available, Some(rule)),
        (None, None) => {
            let empty = lines.iter().all(|l| l.comment || l.norm.is_empty());
            match sel.family {
                Some(f) if empty && f.empty_means_available => {
                    (WhoisClass::Available, Some(format!("empty answer ({} answers not-found with nothing)", f.name)))
                }
                // Neither the family nor the generic markers know this wording, and no
                // registration evidence was read: the multilingual lexicon decides. Comment lines
                // count here (some registries wrap their whole answer in them).
                _ => match generic_lexicon(lines).or_else(|| terse(lines)) {
                    Some(reading) => reading,
                    None if empty => (WhoisClass::Unknown, Some("empty answer".into())),
                    None => (WhoisClass::Unknown, None),
                },
            }
        }
    };
    tracing::trace!(
        by_host = sel.by_host,
        family = sel.family.map(|f| f.name.as_str()),
        class = ?result.0,
        marker = result.1.as_deref(),
        "whois answer classified"
    );
    result
}

/// The lexicon layer (see [`crate::parse::lexicon`]) over the answer's lines, comment lines included,
/// wrapped sentence tails left out.
pub(super) fn generic_lexicon(lines: &[Line<'_>]) -> Option<(WhoisClass, Option<String>)> {
    use crate::parse::lexicon::{LexiconClass, classify};
    let norms: Vec<&str> = lines.iter().filter(|l| !l.continuation).map(|l| l.norm.as_str()).collect();
    Some(match classify(&norms)? {
        LexiconClass::Quota(m) => (WhoisClass::RateLimited, Some(m)),
        LexiconClass::Reserved(m) => (WhoisClass::Reserved, Some(m)),
        LexiconClass::PendingDelete(m) => (WhoisClass::Registered, Some(m)),
        LexiconClass::NotFound(m) => (WhoisClass::Available, Some(m)),
        LexiconClass::Conflict(m) => (WhoisClass::Unknown, Some(m)),
    })
}

/// A terse answer: one content line (comment and blank lines aside) that is only a status word,
/// with or without the queried name ("Restricted name.", "BLOCKED", "x.zz: restricted", "free"),
/// read by [`crate::parse::lexicon::terse_reading`]. Answers of more than one line, or whose line
/// says anything else, get no reading here.
fn terse(lines: &[Line<'_>]) -> Option<(WhoisClass, Option<String>)> {
    let mut content = lines.iter().filter(|l| !l.comment && !l.norm.is_empty());
    let line = content.next()?;
    if content.next().is_some() {
        return None;
    }
    let class = match crate::parse::lexicon::terse_reading(&line.norm)? {
        true => WhoisClass::Reserved,
        false => WhoisClass::Available,
    };
    Some((class, Some(format!("terse answer \"{}\"", line.norm))))
}

/// Registration facts that only a registered answer carries: a creation or expiry date, a
/// registrar, name servers, a holder (`Registrant:`, `owner:`, `Titular:`; a value that itself
/// says "not found" is none), or a RIPE-style domain object's contact handles (`admin-c:`,
/// `tech-c:`, `holder-c:`, `mnt-by:` with a value, next to the domain's name). Empty values are
/// never evidence: a registry may print its whole template blank for a name it does not hold.
pub(super) fn field_evidence(record: &DomainRecord, lines: &[Line<'_>]) -> Option<String> {
    use crate::parse::lexicon::says_not_found;
    if record.created_at.is_some() {
        Some("field:created".into())
    } else if record.expires_at.is_some() {
        Some("field:expires".into())
    } else if record.registrar.as_deref().is_some_and(|r| !says_not_found(r)) {
        Some("field:registrar".into())
    } else if !record.nameservers.is_empty() {
        Some("field:nameservers".into())
    } else if record.registrant.org.as_deref().is_some_and(|o| !says_not_found(o)) || holder_named(lines) {
        Some("field:registrant".into())
    } else if record.domain.is_some() && object_handles(lines) {
        Some("field:contact handles".into())
    } else {
        // An EPP status, or a status value that alone says registered in the registry's words.
        record
            .status
            .iter()
            .find(|s| is_epp_status(s) || crate::parse::lexicon::taken_status(s).is_some())
            .map(|s| format!("field:status {s}"))
    }
}

/// An EPP domain status of a registered object (RFC 5731 §2.3, RFC 3915 §3.1), in either
/// spelling (`clientTransferProhibited`, `client transfer prohibited`): only an existing
/// registration carries one. `ok`/`active` are left to the markers (they also name other
/// things: a registrar's account, a contact).
fn is_epp_status(status: &str) -> bool {
    const EPP: &[&str] = &[
        "clientdeleteprohibited",
        "clienthold",
        "clientrenewprohibited",
        "clienttransferprohibited",
        "clientupdateprohibited",
        "serverdeleteprohibited",
        "serverhold",
        "serverrenewprohibited",
        "servertransferprohibited",
        "serverupdateprohibited",
        "pendingcreate",
        "pendingrenew",
        "pendingtransfer",
        "pendingupdate",
        "pendingdelete",
        "pendingrestore",
        "redemptionperiod",
        "addperiod",
        "autorenewperiod",
        "renewperiod",
        "transferperiod",
    ];
    let compact: String = status
        .split(" (")
        .next()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    EPP.contains(&compact.as_str())
}

pub(super) fn is_pending_delete(data: &Markers, family: Option<&Family>, record: &DomainRecord) -> bool {
    let rules = family
        .map(|f| f.lists.pending_delete.as_slice())
        .unwrap_or(&[])
        .iter()
        .chain(data.generic.pending_delete.iter());
    let compact: Vec<String> = record
        .status
        .iter()
        .map(|s| s.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase())
        .collect();
    rules.into_iter().any(|rule| compact.iter().any(|s| s.contains(rule.as_str())))
}
