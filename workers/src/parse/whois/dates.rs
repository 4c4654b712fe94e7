//! Dates as registries print them: ISO 8601, `dd-mon-yyyy`, `dd.mm.yyyy`, US `mm/dd/yyyy`
//! (family `date_order`), month names in several languages, times and zones.

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

use super::markers::DateOrder;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Num(u64, usize),
    Word(String),
    Sep(char),
}

pub(super) fn tokenize(s: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() {
            let mut n: u64 = 0;
            let mut len = 0;
            while let Some(&d) = chars.peek() {
                let Some(v) = d.to_digit(10) else { break };
                n = n.saturating_mul(10).saturating_add(u64::from(v));
                len += 1;
                chars.next();
            }
            out.push(Tok::Num(n, len));
        } else if c.is_alphabetic() {
            let mut w = String::new();
            while let Some(&d) = chars.peek() {
                if !d.is_alphabetic() {
                    break;
                }
                w.extend(d.to_lowercase());
                chars.next();
            }
            out.push(Tok::Word(w));
        } else {
            if !c.is_whitespace() {
                out.push(Tok::Sep(c));
            }
            chars.next();
        }
    }
    out
}

pub(super) fn month_from_word(w: &str) -> Option<Month> {
    english_month(w).or_else(|| Month::try_from(crate::parse::lexicon::month_number(w)?).ok())
}

fn english_month(w: &str) -> Option<Month> {
    const NAMES: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    if w.len() < 3 {
        return None;
    }
    let idx = NAMES.iter().position(|n| w.starts_with(n))?;
    // Reject words that merely start like a month ("marketing", "decision").
    const FULL: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    if !(w.len() == 3 || FULL[idx].starts_with(w) || w == "sept") {
        return None;
    }
    Month::try_from(u8::try_from(idx + 1).ok()?).ok()
}

pub(super) fn make_date(y: u32, m: u32, d: u32) -> Option<Date> {
    if !(1980..=2200).contains(&y) {
        return None;
    }
    let month = Month::try_from(u8::try_from(m).ok()?).ok()?;
    Date::from_calendar_date(i32::try_from(y).ok()?, month, u8::try_from(d).ok()?).ok()
}

/// Parses the date formats registries print, returning UTC.
///
/// ISO 8601 with or without time, fraction, `Z` or offset (`2019-01-01T10:00:00+02:00`,
/// `2019-01-01 10:00:00`, `2019-01-01`), `2019.01.01`, `2019/01/01`, `20190101`, `2012. 05. 19.`,
/// `01-Jan-2019`, `01 January 2019`, `Jan 01 2019`, `Tue Dec 12 2000`, `01.02.2019`, and
/// `01/02/2019` (day first unless `order` says month first or the numbers decide), CJK
/// `2019年03月12日`, month names of the language table (`12 mars 2019`, `12 de marzo de 2019`,
/// `12 марта 2019`). Times
/// without a zone are taken as UTC; a few zone abbreviations (JST, CET, ...) are understood.
pub(crate) fn parse_date(s: &str, order: DateOrder) -> Option<OffsetDateTime> {
    // "2019年03月12日" (Chinese, Japanese), "2019년 03월 12일" (Korean): the year, month and day
    // markers are separators.
    let s: String = s
        .chars()
        .map(|c| match c {
            '年' | '月' | '년' | '월' => '-',
            '日' | '일' => ' ',
            _ => c,
        })
        .collect();
    // "12 de marzo de 2019": filler words between the parts are dropped.
    let toks: Vec<Tok> = tokenize(&s)
        .into_iter()
        .filter(|t| !matches!(t, Tok::Word(w) if crate::parse::lexicon::is_date_filler(w)))
        .collect();
    for start in 0..toks.len() {
        if let Some((date, next)) = date_at(&toks, start, order) {
            let (time, offset) = time_at(&toks, next);
            let dt = PrimitiveDateTime::new(date, time).assume_offset(offset).to_offset(UtcOffset::UTC);
            return Some(dt);
        }
    }
    None
}

/// The order of day and month the answer itself shows, for a registry we have no family for: a
/// numeric date whose second number is above 12 (`03/25/2021`) can only be month first, one
/// whose first is above 12 (`25/03/2021`) only day first. `Mdy` when the answer has dates of the
/// first kind and none of the second; `Dmy` (the common order) otherwise.
pub(super) fn order_in(text: &str) -> DateOrder {
    let (mut dmy, mut mdy) = (0, 0);
    for line in text.lines().filter(|l| l.len() <= 200) {
        let toks = tokenize(line);
        for w in toks.windows(5) {
            if let (Some((a, al)), true, Some((b, bl)), true, Some((_, 4))) =
                (num(w.first()), is_date_sep(w.get(1)), num(w.get(2)), is_date_sep(w.get(3)), num(w.get(4)))
                && al <= 2
                && bl <= 2
            {
                if a > 12 && b <= 12 {
                    dmy += 1;
                } else if b > 12 && a <= 12 && b <= 31 {
                    mdy += 1;
                }
            }
        }
    }
    if mdy > 0 && dmy == 0 { DateOrder::Mdy } else { DateOrder::Dmy }
}

pub(super) fn num(t: Option<&Tok>) -> Option<(u32, usize)> {
    match t {
        Some(Tok::Num(n, l)) => Some((u32::try_from(*n).ok()?, *l)),
        _ => None,
    }
}

pub(super) fn is_date_sep(t: Option<&Tok>) -> bool {
    matches!(t, Some(Tok::Sep('-' | '.' | '/' | ',')))
}

/// Tries to read a date starting at token `i`; returns it and the index after it.
pub(super) fn date_at(t: &[Tok], i: usize, order: DateOrder) -> Option<(Date, usize)> {
    let at = |k: usize| t.get(k);
    // Skip a separator run between fields (e.g. "2012. 05. 19." or "01-Jan-2019").
    let skip = |mut k: usize| {
        while is_date_sep(at(k)) {
            k += 1;
        }
        k
    };
    match at(i) {
        Some(Tok::Num(y, 4)) => {
            let y = &u32::try_from(*y).ok()?;
            let j = skip(i + 1);
            if j == i + 1 {
                return None;
            }
            // YYYY-MM-DD, YYYY.MM.DD, YYYY/MM/DD, YYYY. MM. DD.
            if let Some((m, _)) = num(at(j)).filter(|(_, l)| *l <= 2) {
                let k = skip(j + 1);
                let (d, _) = num(at(k)).filter(|(_, l)| *l <= 2)?;
                return make_date(*y, m, d).map(|date| (date, k + 1));
            }
            // YYYY-Mon-DD
            if let Some(Tok::Word(w)) = at(j) {
                let m = month_from_word(w)?;
                let k = skip(j + 1);
                let (d, _) = num(at(k)).filter(|(_, l)| *l <= 2)?;
                return make_date(*y, u32::from(u8::from(m)), d).map(|date| (date, k + 1));
            }
            None
        }
        // 20100101 (.il, .hr) and 20121216134104 (.ua, date and time run together).
        Some(Tok::Num(n, 8)) => {
            let n = u32::try_from(*n).ok()?;
            make_date(n / 10000, (n / 100) % 100, n % 100).map(|date| (date, i + 1))
        }
        Some(Tok::Num(n, 14)) => {
            let d = u32::try_from(n / 1_000_000).ok()?;
            make_date(d / 10000, (d / 100) % 100, d % 100).map(|date| (date, i + 1))
        }
        Some(Tok::Num(a, l)) if *l <= 2 => {
            let a = &u32::try_from(*a).ok()?;
            let mut j = skip(i + 1);
            // Ordinal suffix: "9th November 2009".
            if let Some(Tok::Word(w)) = at(j)
                && matches!(w.as_str(), "st" | "nd" | "rd" | "th")
            {
                j = skip(j + 1);
            }
            match at(j) {
                // DD-Mon-YYYY, DD Mon YYYY
                Some(Tok::Word(w)) => {
                    let m = month_from_word(w)?;
                    let k = skip(j + 1);
                    // Four-digit year, or two digits as in GoDaddy's "13-Apr-10".
                    let (y, yl) = num(at(k))?;
                    let y = match yl {
                        4 => y,
                        2 if y < 70 => 2000 + y,
                        2 => 1900 + y,
                        _ => return None,
                    };
                    make_date(y, u32::from(u8::from(m)), *a).map(|date| (date, k + 1))
                }
                // DD.MM.YYYY, DD/MM/YYYY, MM/DD/YYYY
                Some(Tok::Num(b, bl)) if *bl <= 2 && j > i + 1 => {
                    let b = &u32::try_from(*b).ok()?;
                    let k = skip(j + 1);
                    if k == j + 1 {
                        return None;
                    }
                    // Four-digit year, or two digits as in Red.es's "16/09/03".
                    let (y, yl) = num(at(k))?;
                    let y = match yl {
                        4 => y,
                        2 if matches!(at(k + 1), None | Some(Tok::Sep(_))) && y < 70 => 2000 + y,
                        2 if matches!(at(k + 1), None | Some(Tok::Sep(_))) => 1900 + y,
                        _ => return None,
                    };
                    let (d, m) = if *a > 12 {
                        (*a, *b)
                    } else if *b > 12 {
                        (*b, *a)
                    } else {
                        match order {
                            DateOrder::Dmy => (*a, *b),
                            DateOrder::Mdy => (*b, *a),
                        }
                    };
                    make_date(y, m, d).map(|date| (date, k + 1))
                }
                _ => None,
            }
        }
        // Mon DD YYYY, Mon DD HH:MM:SS ZZZ YYYY, "September 9 2009".
        Some(Tok::Word(w)) => {
            let m = month_from_word(w)?;
            let j = skip(i + 1);
            let (d, dl) = num(at(j))?;
            if dl > 2 {
                return None;
            }
            let k = skip(j + 1);
            // A time and zone may sit between the day and the year (C `asctime` style).
            (k..t.len().min(k + 8)).find_map(|scan| match num(at(scan)) {
                Some((y, 4)) if !matches!(at(scan + 1), Some(Tok::Sep(':'))) => {
                    make_date(y, u32::from(u8::from(m)), d).map(|date| (date, scan + 1))
                }
                _ => None,
            })
        }
        _ => None,
    }
}

/// Reads an optional `HH:MM[:SS[.fff]]` and zone after a date.
pub(super) fn time_at(t: &[Tok], mut i: usize) -> (Time, UtcOffset) {
    let at = |k: usize| t.get(k);
    if matches!(at(i), Some(Tok::Word(w)) if w == "t") || matches!(at(i), Some(Tok::Sep('/'))) {
        i += 1;
    }
    let mut time = Time::MIDNIGHT;
    if let (Some((h, hl)), Some(Tok::Sep(':')), Some((m, 2))) = (num(at(i)), at(i + 1), num(at(i + 2)))
        && hl <= 2
    {
        let mut s = 0;
        let mut next = i + 3;
        if let (Some(Tok::Sep(':')), Some((sec, 2))) = (at(next), num(at(next + 1))) {
            s = sec;
            next += 2;
            if let (Some(Tok::Sep('.' | ',')), Some(_)) = (at(next), num(at(next + 1))) {
                next += 2;
            }
        }
        // Leap seconds ("23:59:60") are clamped; impossible values leave the time at midnight.
        if let Ok(parsed) = Time::from_hms(
            u8::try_from(h).unwrap_or(99),
            u8::try_from(m).unwrap_or(99),
            u8::try_from(s.min(59)).unwrap_or(99),
        ) {
            time = parsed;
            i = next;
        }
    }
    (time, zone_at(t, i))
}

pub(super) fn zone_at(t: &[Tok], mut i: usize) -> UtcOffset {
    let at = |k: usize| t.get(k);
    if matches!(at(i), Some(Tok::Sep('('))) {
        i += 1;
    }
    let mut base = 0i32;
    if let Some(Tok::Word(w)) = at(i) {
        base = match w.as_str() {
            "z" | "utc" | "gmt" | "ut" => 0,
            "jst" | "kst" => 9 * 60,
            "cet" | "met" => 60,
            "cest" | "mest" | "eet" | "sast" => 120,
            "eest" | "msk" | "eat" | "ast" => 180,
            "brt" | "clst" => -180,
            "brst" => -120,
            "clt" | "edt" => -240,
            "est" | "cdt" => -300,
            "pdt" | "mst" => -420,
            "pst" => -480,
            _ => return UtcOffset::UTC,
        };
        i += 1;
    }
    // "+02:00", "+0200", "+02", "GMT+9:00"
    let sign = match at(i) {
        Some(Tok::Sep('+')) => 1,
        Some(Tok::Sep('-')) => -1,
        _ => return offset_minutes(base),
    };
    let Some((a, al)) = num(at(i + 1)) else {
        return offset_minutes(base);
    };
    let minutes = match al {
        4 => (a / 100) * 60 + a % 100,
        1 | 2 => match (at(i + 2), num(at(i + 3))) {
            (Some(Tok::Sep(':')), Some((mm, 2))) => a * 60 + mm,
            _ => a * 60,
        },
        _ => return offset_minutes(base),
    };
    let minutes = i32::try_from(minutes).unwrap_or(0);
    if minutes > 14 * 60 {
        return offset_minutes(base);
    }
    offset_minutes(base + sign * minutes)
}

pub(super) fn offset_minutes(m: i32) -> UtcOffset {
    UtcOffset::from_whole_seconds(m * 60).unwrap_or(UtcOffset::UTC)
}
