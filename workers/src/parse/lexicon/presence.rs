//! The negated presence reading: a negation bearing on a word that says something exists or
//! was found ("There is no record for x", "nicht registriert", "نتیجه‌ای پیدا نشد"), with the
//! morphology of [`super::morph`] (negations fused onto the word, words of absence, a negating
//! determiner on the queried object, "not in our database"). Split from `statement.rs`, whose
//! sentence rules (negation, hypothetical, asides) it uses.

use super::*;

/// A not-found statement made of a negation next to a presence word (the table's `presence_stems`):
/// within the three words after the negation, or before a negation that ends the sentence
/// (postposed negations: "existiert nicht", "registered: no", "gibt es nicht", "موجود نیست",
/// "kayıtlı değil"; only articles and auxiliaries may follow it). Also, by the morphology of
/// [`super::morph`]: a negation fused onto the presence word ("nenalezena",
/// "niezarejestrowana", "bulunamadı"), a word of absence ("Brak domeny", "absent de la base",
/// "отсутствует"), a negating determiner on the queried object itself ("No such name
/// registered", "Aucun domaine correspondant"). Only short statements about the name count: at
/// most 100 characters, not another field's value, not hypothetical or general, no error
/// wording, no word about another part of the record in the sentence. A negated ability modal
/// before a registration word ("cannot be registered") is about registrability, not presence.
pub(super) fn negated_presence(line: &str) -> Option<String> {
    let lists = word_lists();
    let m = morph_lists();
    let glue = |w: &str| listed(&lists.glue, w);
    let presence = |w: &str| {
        !lists.not_presence.iter().any(|n| w.starts_with(n.as_str()))
            && lists.presence.iter().any(|stem| w.starts_with(stem.as_str()))
            // Hungarian "-ható/-hető" (-able): "nem regisztrálható" is "cannot be registered".
            && !(w.ends_with("hato") || w.ends_with("heto"))
    };
    for (sentence, ws) in statement_sentences(line) {
        if !about_name(sentence, &ws) {
            continue;
        }
        for (i, w) in ws.iter().enumerate() {
            let negated_before = ws[i.saturating_sub(2)..i].iter().any(|x| listed(&lists.negations, x));
            if !negated_before {
                if fused_negation(w) {
                    return Some(format!("{w} (fused negation)"));
                }
                // "bulunamadı" (could not be found), "kaydedilmemiş" (has not been registered);
                // not "kaydedilemez" (cannot be registered: withheld).
                if let Some((stem, cannot)) = turkish_negative(i.checked_sub(1).map(|j| ws[j]), w)
                    && !(cannot && turkish_register_stem(stem))
                {
                    return Some(format!("{w} (negative)"));
                }
                if absence_word(w) && absence_bears(&ws, i, presence) {
                    return Some(format!("{w} (absence)"));
                }
            }
            if !listed(&lists.negations, w) && !listed(&m.nothing, w) {
                continue;
            }
            // In a relative clause ("a name that does not exist returns a notice"): a sentence
            // about names in general, not a statement about this one.
            if ws[..i].iter().any(|x| listed(&lists.relatives, x)) {
                continue;
            }
            // The negation must bear on the presence word itself: the first word after it that
            // is not an article or auxiliary ("no record", "is not present", "non è presente",
            // "nie została zarejestrowana") — not a verb's object ("never discloses any
            // information", "will not use information"). A negation after the word it negates
            // ends its sentence, or only auxiliaries follow it ("existiert nicht", "registered:
            // no", "ثبت نشده است"); one in mid-sentence negates what follows it ("für die
            // Registrierung nicht verfügbar").
            let after = ws.iter().skip(i + 1).take(3).find(|p| !glue(p));
            let tail_glue = ws[i + 1..].iter().all(|p| glue(p));
            let before = tail_glue.then(|| ws[..i].iter().rev().take(3).find(|p| !glue(p))).flatten();
            // "قابل ثبت نیست" (is not registrable): the ability word before the presence word
            // makes it registrability.
            let before = before.filter(|p| {
                let at = ws[..i].iter().rposition(|x| x == *p).unwrap_or(0);
                !(at >= 1 && ws[at - 1] == "قابل")
            });
            if let Some(p) = after.into_iter().chain(before).find(|p| presence(p)) {
                let modal = matches!(*w, "cannot" | "can't" | "couldn't")
                    || (i >= 1 && negated_modal(&ws, i - 1))
                    || (i >= 2 && negated_modal(&ws, i - 2));
                if modal && (p.starts_with("regist") || p.starts_with("enregistr")) {
                    continue;
                }
                return Some(format!("{w} … {p}"));
            }
            if let Some(o) = negated_object(&ws, i) {
                return Some(format!("{w} … {o}"));
            }
            if let Some(c) = negated_container(&ws, i) {
                return Some(format!("{w} … {c}"));
            }
        }
    }
    None
}

/// Whether a sentence is about the queried name: it names a domain (a dotted word) or says
/// domain, name, query, object, result, record… ("No data protection applies" is not).
pub(super) fn about_name(sentence: &str, ws: &[&str]) -> bool {
    let lists = word_lists();
    let m = morph_lists();
    ws.iter().any(|w| w.contains('.') && !w.starts_with('.') && !w.ends_with('.'))
        || ws.iter().any(|w| {
            listed(&lists.subject, w)
                || matches!(*w, "record" | "records" | "entry" | "entries" | "match")
                || (w.len() > 4 && m.objects.iter().filter(|o| o.len() >= 5).any(|o| w.starts_with(o.as_str())))
        })
        || lists.subject.iter().any(|l| !l.is_ascii() && sentence.contains(l.as_str()))
}

/// Whether the word of absence at `i` bears on the name or its record: a word-beginning one
/// ("absent", "отсутствует") is a predicate wherever it stands; a short one ("brak", "nincs",
/// "yok", "нет") only when the word after it is the object, a presence word or the name, or
/// when it ends the sentence ("kayıt yok") — "Brak serwerów DNS" is about name servers.
fn absence_bears(ws: &[&str], i: usize, presence: impl Fn(&str) -> bool) -> bool {
    let lists = word_lists();
    let m = morph_lists();
    if !listed(&m.absence_words, ws[i]) {
        return true;
    }
    match ws.iter().skip(i + 1).find(|w| !listed(&lists.glue, w) && !listed(&m.such, w)) {
        None => true,
        Some(next) => {
            presence(next)
                || (next.contains('.') && !next.starts_with('.'))
                || m.objects.iter().any(|o| next.starts_with(o.as_str()))
        }
    }
}

/// A negating determiner on the queried object ("*no such name* registered: x", "*aucun
/// domaine* correspondant", "*kein Domain* mit diesem Namen"): the object noun is followed by
/// nothing, the name, a presence word or a preposition — not by another noun ("No domain
/// status listed", "No name servers": a modifier of something else).
fn negated_object<'a>(ws: &[&'a str], i: usize) -> Option<&'a str> {
    let lists = word_lists();
    let m = morph_lists();
    if !listed(&m.determiners, ws[i]) {
        return None;
    }
    let mut j = i + 1;
    while j < ws.len() && (listed(&m.such, ws[j]) || listed(&lists.glue, ws[j])) {
        j += 1;
    }
    let is_object = |w: &str| m.objects.iter().any(|o| w.starts_with(o.as_str()));
    let object = *ws.get(j).filter(|w| is_object(w))?;
    let mut k = j + 1;
    while k < ws.len() && is_object(ws[k]) {
        k += 1;
    }
    let ok = match ws.get(k) {
        None => true,
        Some(next) => {
            (next.contains('.') && !next.starts_with('.'))
                || listed(&m.prepositions, next)
                || (!lists.not_presence.iter().any(|n| next.starts_with(n.as_str()))
                    && lists.presence.iter().any(|stem| next.starts_with(stem.as_str())))
        }
    };
    ok.then_some(object)
}

/// A not-found statement whose subject is the registry or its database rather than the name:
/// "The registry database contains no entry for x.zz", "Our records show nothing under x.zz",
/// "This registry does not hold a registration for x.zz", "Database lookup for x.zz returned
/// nothing", "La base de données du registre ne contient aucune entrée pour x.zz", "База данных
/// реестра не содержит записей о домене x.zz". In one short statement sentence (see
/// [`statement_sentences`]) that names a domain: a verb of holding, showing or returning (the
/// table's `holding_stems`) negated by one of the two words before it, or followed (articles
/// and auxiliaries skipped) by a nothing word or a negating determiner; and before the verb, the
/// registry as its subject (a container of records — registry, database, records — or a word by
/// which the registry names itself: "we", "wir"). The sentence names a domain, or the verb's
/// object is the queried object in the singular ("We could not find the requested domain on our
/// system"). "The registry database contains no personal data" names neither; a sentence about
/// another part of the record is no statement.
pub(super) fn negated_holding(line: &str) -> Option<String> {
    let lists = word_lists();
    let m = morph_lists();
    for (sentence, ws) in statement_sentences(line) {
        let names_domain = ws.iter().any(|w| {
            w.contains('.')
                && !w.starts_with('.')
                && !w.ends_with('.')
                && !w.contains(['@', '/'])
                && !["whois.", "www.", "rdap.", "http"].iter().any(|p| w.starts_with(p))
        });
        if ws.iter().any(|w| matches!(*w, "below" | "above" | "shown" | "following")) {
            continue;
        }
        let _ = sentence;
        for (i, w) in ws.iter().enumerate() {
            // The name in the sentence, or the queried object as the verb's object ("We could not
            // find the requested domain on our system").
            let object_after = ws.iter().skip(i + 1).take(3).any(|x| listed(&m.singular_objects, x));
            if !names_domain && !object_after {
                continue;
            }
            if !starts_any(w, &m.holding_stems) || (w.len() <= 3 && !listed(&m.holding_stems, w)) {
                continue;
            }
            let subject = ws[..i].iter().any(|s| starts_any(s, &m.containers) || listed(&m.speakers, s));
            if !subject || ws[..i].iter().any(|x| listed(&lists.relatives, x)) {
                continue;
            }
            let negated_before = ws[i.saturating_sub(2)..i].iter().any(|x| listed(&lists.negations, x));
            let next = ws.iter().skip(i + 1).find(|x| !listed(&lists.glue, x) || listed(&m.determiners, x));
            let nothing_after = next.is_some_and(|x| listed(&m.nothing, x) || listed(&m.determiners, x));
            if negated_before || nothing_after {
                return Some(format!("{w} (negated holding)"));
            }
        }
    }
    None
}
