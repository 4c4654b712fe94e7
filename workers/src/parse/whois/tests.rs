//! Unit tests of the WHOIS reader.

use super::dates::*;
use super::lines::*;
use super::markers::*;
use super::*;
use time::macros::datetime;

fn read(text: &str, server: Option<&str>, suffix: &str) -> WhoisReading {
    read_whois(text.as_bytes(), server, suffix, None)
}

#[test]
fn marker_data_loads_and_validates() {
    let n = validate_marker_data().expect("the shipped marker data is valid");
    assert!(n > 10, "expected a good number of families, got {n}");
}

#[test]
fn marker_syntax() {
    let m = compile_marker("^domain * not found").expect("valid");
    assert!(m.matches("domain foo.tn not found"));
    assert!(!m.matches("the domain foo.tn not found"));
    let m = compile_marker("=not found").expect("valid");
    assert!(m.matches("not found"));
    assert!(!m.matches("not found: x"));
    let m = compile_marker("^registrar:").expect("valid");
    assert!(m.matches("registrar: x"));
    assert!(!m.matches("registrar:"));
    assert!(compile_marker("Upper").is_err());
    assert!(compile_marker("").is_err());
}

#[test]
fn bad_marker_data_is_rejected() {
    assert!(matches!(load_markers("{}"), Err(MarkerDataError::Json(_))));
    let dup = r#"{"version":1,"generic":{"available":["=x"]},"families":{
        "a.example":{"about":"a","suffixes":["x"]},"b.example":{"about":"b","suffixes":["x"]}}}"#;
    assert!(matches!(load_markers(dup), Err(MarkerDataError::Invalid(_))));
}

#[test]
fn normalising_lines() {
    assert_eq!(normalise("%% No entries found in the AFNIC Database."), "no entries found in the afnic database");
    assert_eq!(normalise("Status:             AVAILABLE"), "status: available");
    assert_eq!(normalise("object:. . . . . . .x.dz"), "object: x.dz");
    assert_eq!(normalise("Domain Name      : x.kr"), "domain name: x.kr");
    assert_eq!(
        normalise(">>> Domain x.love is available for registration"),
        "domain x.love is available for registration"
    );
}

#[test]
fn af_no_object_found_is_available() {
    let text = "Domain Name: u34jedzcq.af\nDomain Status: No Object Found\n";
    let r = read(text, Some("whois.nic.af"), "af");
    assert_eq!(r.class, WhoisClass::Available);
    assert_eq!(r.record.domain.as_deref(), Some("u34jedzcq.af"));
}

#[test]
fn com_af_registered() {
    let text = "Domain Name: google.com.af\nRegistry Domain ID: D1-AF\nRegistrar WHOIS Server: whois.markmonitor.com\n\
        Updated Date: 2023-04-01T10:00:00.0Z\nCreation Date: 2009-02-02T00:00:00.0Z\n\
        Registry Expiry Date: 2025-02-02T00:00:00.0Z\nRegistrar: MarkMonitor Inc.\n\
        Domain Status: clientTransferProhibited https://icann.org/epp#clientTransferProhibited\n\
        Name Server: NS1.GOOGLE.COM\nName Server: ns2.google.com.\nDNSSEC: unsigned\n";
    let r = read(text, None, "com.af");
    assert_eq!(r.class, WhoisClass::Registered);
    assert!(!r.pending_delete);
    assert_eq!(r.record.domain.as_deref(), Some("google.com.af"));
    assert_eq!(r.record.registrar.as_deref(), Some("MarkMonitor Inc."));
    assert_eq!(r.record.status, vec!["clientTransferProhibited".to_owned()]);
    assert_eq!(r.record.nameservers, vec!["ns1.google.com".to_owned(), "ns2.google.com".to_owned()]);
    assert_eq!(r.record.created_at, Some(datetime!(2009-02-02 0:00 UTC)));
    assert_eq!(r.record.expires_at, Some(datetime!(2025-02-02 0:00 UTC)));
    assert_eq!(r.record.dnssec, Some(false));
    assert_eq!(r.record.registrar_whois_server.as_deref(), Some("whois.markmonitor.com"));
}

#[test]
fn redemption_is_registered_pending_delete() {
    let text = "Domain Name: EXAMPLE.COM\nRegistrar: Some Registrar, Inc.\nCreation Date: 2001-01-01T00:00:00Z\n\
        Domain Status: redemptionPeriod https://icann.org/epp#redemptionPeriod\n\
        Domain Status: pendingDelete https://icann.org/epp#pendingDelete\n";
    let r = read(text, Some("whois.verisign-grs.com"), "com");
    assert_eq!(r.class, WhoisClass::Registered);
    assert!(r.pending_delete);
}

#[test]
fn throttled_answers_are_rate_limited() {
    for (text, server, suffix) in [
        ("WHOIS LIMIT EXCEEDED - SEE WWW.PIR.ORG/WHOIS FOR DETAILS\n", Some("whois.pir.org"), "org"),
        ("%% Too many requests...\n%% No entries found in the AFNIC Database.\n", Some("whois.nic.fr"), "fr"),
        ("request limit exceeded for 127.0.0.1\n", None, "pl"),
        ("The WHOIS query quota for 127.0.0.1 has been exceeded\n", Some("whois.nic.uk"), "uk"),
    ] {
        assert_eq!(read(text, server, suffix).class, WhoisClass::RateLimited, "{text}");
    }
}

#[test]
fn empty_answer_is_unknown() {
    assert_eq!(read("", Some("whois.verisign-grs.com"), "com").class, WhoisClass::Unknown);
    assert_eq!(read("\n% comment only\n", None, "zz").class, WhoisClass::Unknown);
    assert_eq!(read("", None, "").class, WhoisClass::Unknown);
}

#[test]
fn unrecognised_text_is_never_available() {
    for text in ["Service temporarily unavailable.", "Invalid input", "hello", "Domain Name: x.com"] {
        assert_ne!(read(text, None, "com").class, WhoisClass::Available, "{text}");
    }
}

#[test]
fn wrong_server_no_match_is_unknown() {
    let r = read("No match for domain \"GOOGLE.COM.ET\".\n", Some("whois.verisign-grs.com"), "com.et");
    assert_eq!(r.class, WhoisClass::Unknown);
    let r = read("No match for domain \"NOPE.COM\".\n", Some("whois.verisign-grs.com"), "com");
    assert_eq!(r.class, WhoisClass::Available);
}

#[test]
fn latin1_bytes_decode() {
    // "Nincs találat / No match" in ISO-8859-1 (0xE1 = á): not valid UTF-8.
    let raw = b"Nincs tal\xe1lat / No match\n";
    assert_eq!(decode(raw, None), "Nincs találat / No match\n");
    assert_eq!(decode(raw, Some("iso-8859-1")), "Nincs találat / No match\n");
    assert_eq!(decode("día".as_bytes(), None), "día");
    assert_eq!(read_whois(raw, Some("whois.nic.hu"), "hu", None).class, WhoisClass::Available);
    // KOI8-R given by label.
    assert_eq!(decode(b"\xf0\xd2\xc9\xd7\xc5\xd4", Some("koi8-r")), "Привет");
}

#[test]
fn odd_input_never_panics() {
    let odd = [
        "İstanbul: İİİ\nDomain Name: x.com.tr\nCreated on 2001-Aug-23.",
        "Registrar:\n\n\n   \t\n:::\n[\n[]\n[ ]: x\n. . . . .\n....: ....",
        "domain:Class-Name:\nRecord created on İ 2005",
        "ÿ\u{feff}\r\n%%\n##\n>>> <<<\n*** ***",
        "Name Server 1: 1.2.3.4\nExpiration Date: 99/99/9999 99:99:99 +99:99",
        "nserver: ns1.example.com. 2001:db8::1\nstatus: ok - Normal state.",
    ];
    for text in odd {
        for (i, _) in text.char_indices() {
            let (head, tail) = text.split_at(i);
            let _ = read(head, None, "com");
            let _ = read(tail, Some("whois.nic.uk"), "co.uk");
        }
    }
    for b in 0..=255u8 {
        let _ = read_whois(&[b, b':', b' ', 0xc3, b'\n', b'x'], None, "x", None);
    }
}

#[test]
fn reserved_answers() {
    assert_eq!(read("Reserved by Registry\n", Some("whois.nic.io"), "io").class, WhoisClass::Reserved);
    assert_eq!(read("Name is restricted from registration\n", None, "aero").class, WhoisClass::Reserved);
}

#[test]
fn nominet_blocks() {
    let text = "    Domain name:\n        google.co.uk\n\n    Registrant:\n        Google Inc.\n\n\
        Registrar:\n        Markmonitor Inc. t/a MarkMonitor Inc. [Tag = MARKMONITOR]\n        URL: http://www.markmonitor.com\n\n\
        Relevant dates:\n        Registered on: 14-Feb-1999\n        Expiry date:  14-Feb-2026\n        Last updated:  10-Jan-2025\n\n\
        Registration status:\n        Registered until expiry date.\n\n    Name servers:\n        ns1.google.com\n        ns2.google.com    192.0.2.1\n";
    let r = read(text, Some("whois.nic.uk"), "co.uk");
    assert_eq!(r.class, WhoisClass::Registered);
    assert_eq!(r.record.domain.as_deref(), Some("google.co.uk"));
    assert_eq!(r.record.registrant.org.as_deref(), Some("Google Inc."));
    assert_eq!(r.record.nameservers, vec!["ns1.google.com".to_owned(), "ns2.google.com".to_owned()]);
    assert_eq!(r.record.created_at, Some(datetime!(1999-02-14 0:00 UTC)));
    assert_eq!(r.record.expires_at, Some(datetime!(2026-02-14 0:00 UTC)));
    assert_eq!(r.record.status, vec!["Registered until expiry date".to_owned()]);
}

/// The lexicon-driven rules of the generic field reader, on made-up answers of a server no
/// family describes.
#[test]
fn generic_field_rules() {
    let zz = |text: &str| read(text, Some("whois.nic.zz"), "zz").record;
    // Registrant contact object found by its handle; a run of "changed:" lines; "expired:".
    let r = zz("domain:   example.zz\nholder-c: AB12-ZZ\nstatus:   ACTIVE\nnserver:  ns1.example.net\n\
        created:  2001-02-03\nexpired:  2030-02-03\nchanged:  2005-01-01\nchanged:  2020-06-07\n\n\
        nic-hdl:  XY9-ZZ\ncountry:  DE\n\nnic-hdl:  AB12-ZZ\ncontact:  Example Org\ncountry:  FR\n");
    assert_eq!(r.registrant.country.as_deref(), Some("FR"));
    assert_eq!(r.updated_at, Some(datetime!(2020-06-07 0:00 UTC)));
    assert_eq!(r.expires_at, Some(datetime!(2030-02-03 0:00 UTC)));
    // Role-prefixed country keys, country names, DNSSEC in another language.
    let r = zz("Domain Name: example.zz\nowner-country: Deutschland\nadmin-country: US\nDNSSEC: nein\n");
    assert_eq!(r.registrant.country.as_deref(), Some("DE"));
    assert_eq!(r.dnssec, Some(false));
    // YAML tags open a block; wrapped explanations are not statuses; expiry in a status.
    let r = zz("name: example.zz\nstatus: OK-UNTIL 20300203000000\n\
        Status: LOCKED\n\tThis feature is provided to protect against fraudulent acquisition of the name.\n\
        registrar: !Registrar\n  name: Example Registrar\n  web: http://registrar.example\n");
    assert_eq!(r.registrar.as_deref(), Some("Example Registrar"));
    assert_eq!(r.status, vec!["OK-UNTIL 20300203000000".to_owned(), "LOCKED".to_owned()]);
    assert_eq!(r.expires_at, Some(datetime!(2030-02-03 0:00 UTC)));
    // A registrant address whose last line is the country.
    let r = zz(
        "Domain: example.zz\n\nRegistrant\n  Name: Example\n  Address: Via Roma 1\n           Roma\n           IT\n  Created: 2001-01-01\n",
    );
    assert_eq!(r.registrant.country.as_deref(), Some("IT"));
}

#[test]
fn date_formats() {
    let d = |s: &str| parse_date(s, DateOrder::Dmy);
    assert_eq!(d("2019-01-01T10:00:00Z"), Some(datetime!(2019-01-01 10:00 UTC)));
    assert_eq!(d("2019-01-01T10:00:00.123Z"), Some(datetime!(2019-01-01 10:00 UTC)));
    assert_eq!(d("2019-01-01T10:00:00+02:00"), Some(datetime!(2019-01-01 8:00 UTC)));
    assert_eq!(d("2019-01-01T10:00:00-0700"), Some(datetime!(2019-01-01 17:00 UTC)));
    assert_eq!(d("2019-01-01 10:00:00"), Some(datetime!(2019-01-01 10:00 UTC)));
    assert_eq!(d("2019-01-01"), Some(datetime!(2019-01-01 0:00 UTC)));
    assert_eq!(d("2019.01.02"), Some(datetime!(2019-01-02 0:00 UTC)));
    assert_eq!(d("2012. 05. 19."), Some(datetime!(2012-05-19 0:00 UTC)));
    assert_eq!(d("01-Jan-2019"), Some(datetime!(2019-01-01 0:00 UTC)));
    assert_eq!(d("14-feb-2009 10:00:00 UTC"), Some(datetime!(2009-02-14 10:00 UTC)));
    assert_eq!(d("01/02/2019"), Some(datetime!(2019-02-01 0:00 UTC)));
    assert_eq!(parse_date("01/02/2019", DateOrder::Mdy), Some(datetime!(2019-01-02 0:00 UTC)));
    assert_eq!(d("12/31/2019"), Some(datetime!(2019-12-31 0:00 UTC)));
    assert_eq!(d("31.12.2019 10:11:12"), Some(datetime!(2019-12-31 10:11:12 UTC)));
    assert_eq!(d("Tue Dec 12 2000"), Some(datetime!(2000-12-12 0:00 UTC)));
    assert_eq!(d("Wed Jan 22 22:06:14 GMT 2014"), Some(datetime!(2014-01-22 0:00 UTC)));
    assert_eq!(d("September 9 2009"), Some(datetime!(2009-09-09 0:00 UTC)));
    assert_eq!(d("2017/06/01 01:05:09 (JST)"), Some(datetime!(2017-05-31 16:05:09 UTC)));
    assert_eq!(d("20100101"), Some(datetime!(2010-01-01 0:00 UTC)));
    assert_eq!(d("2012-Aug-01"), Some(datetime!(2012-08-01 0:00 UTC)));
    assert_eq!(d("before Aug-1996"), None);
    assert_eq!(d("1 year"), None);
    assert_eq!(d("-"), None);
}

#[test]
fn key_tables_load_and_bad_tables_are_rejected() {
    use super::keys::load_key_tables;
    assert!(super::keys::validate_key_tables().is_ok());
    let ok = r#"{"version": 1, "fields": [["created on", "created_1"]], "blocks": [["holder", "registrant"]]}"#;
    assert!(load_key_tables(ok).is_ok());
    for bad in [
        r#"{"version": 1, "fields": [["x", "colour"]], "blocks": []}"#,
        r#"{"version": 1, "fields": [["Domain", "domain"]], "blocks": []}"#,
        r#"{"version": 1, "fields": [["x", "domain"], ["x", "status"]], "blocks": []}"#,
        r#"{"version": 1, "fields": [], "blocks": [["x", "cellar"]]}"#,
        r#"{"version": 2, "fields": [], "blocks": []}"#,
        r#"{"version": 1, "fields": {}, "blocks": []}"#,
    ] {
        assert!(load_key_tables(bad).is_err(), "{bad}");
    }
}

#[test]
fn tonic_name_server_lines_are_a_registration() {
    // Tonic's whole registered answer: the banner, then `<label> <name server>` per delegation.
    let r =
        read("Tonic whoisd V1.1\nshop ns1.example-dns.net\nshop ns2.example-dns.net.\n", Some("whois.tonic.to"), "to");
    assert_eq!(r.class, WhoisClass::Registered);
    assert_eq!(r.record.nameservers, ["ns1.example-dns.net", "ns2.example-dns.net"]);
    let r = read("Tonic whoisd V1.1\nNo match for shop\n", None, "to");
    assert_eq!(r.class, WhoisClass::Available);
    // Elsewhere two words on a line are not a delegation.
    let r = read("Example whoisd V1.1\nshop ns1.example-dns.net\n", Some("whois.example.invalid"), "invalid");
    assert_eq!(r.class, WhoisClass::Unknown);
}

#[test]
fn nic_uruguay_zone_record_is_not_the_name_asked() {
    // Asked about a com.uy name (a zone it does not hold), NIC-Uruguay prints the zone's record.
    let text = "Servidor Whois de NIC-Uruguay (.UY)\n\nPor informacion sobre dominios bajo COM.UY dirigirse a \
                https://nic.anteldata.com.uy/dns/consultaWhois/whois.action\n\n   Nombre de Dominio: com.uy\n   \
                Fecha de Creacion: 1990-09-10 00:00:00\n\n   Estatus del dominio: ACTIVO\n";
    for suffix in ["uy", "com.uy"] {
        assert_eq!(read(text, Some("whois.nic.org.uy"), suffix).class, WhoisClass::Unknown, "{suffix}");
    }
    // Its own names are read as usual.
    let own = text.replace("Nombre de Dominio: com.uy", "Nombre de Dominio: tienda.org.uy");
    assert_eq!(read(&own, Some("whois.nic.org.uy"), "org.uy").class, WhoisClass::Registered);
    let free = "Servidor Whois de NIC-Uruguay (.UY)\n\nNo match for \"tienda.com.uy\".\n";
    assert_eq!(read(free, Some("whois.nic.org.uy"), "com.uy").class, WhoisClass::Unknown);
    assert_eq!(read(free, Some("whois.nic.org.uy"), "uy").class, WhoisClass::Available);
}

#[test]
fn comment_marks_other_than_percent_and_hash() {
    for prefix in [";", "--", "//", ">>>"] {
        let text = format!(
            "{prefix} Terms of use: by querying you agree.\n{prefix} No entries found for the selected source.\n"
        );
        let r = read(&text, None, "zz");
        assert_eq!(r.class, WhoisClass::Available, "{prefix}");
    }
    // A rule of dashes is decoration, not a comment.
    assert_eq!(comment_body("-----------"), None);
    assert_eq!(comment_body("-- "), None);
    assert_eq!(comment_body("% x"), Some("x"));
}

#[test]
fn an_answer_printed_entirely_as_comments_is_read_as_content() {
    // Every line behind a comment mark: the facts are there, and a remark that mentions
    // availability must not free the name.
    let text = "% domain:   nic.zz\n% holder-c:   ZZ1-REG\n% nserver:   ns1.nic.zz\n% nserver:   ns2.nic.zz\n% expire-date:   2030-05-26\n% remarks:   only available for registration in the nic.zz zone if not found\n";
    let r = read(text, None, "zz");
    assert_eq!(r.class, WhoisClass::Registered, "{:?}", r.marker);
    assert_eq!(r.record.nameservers, vec!["ns1.nic.zz".to_owned(), "ns2.nic.zz".to_owned()]);
}

#[test]
fn a_not_found_value_of_another_field_is_not_the_answer() {
    let text = "Domain: x.zz\nRegistrant Fax: not found\nDS Records: no records found\n% Availability: see https://x.zz/check to see if a name is available\n";
    assert_eq!(read(text, None, "zz").class, WhoisClass::Unknown);
}

#[test]
fn registration_evidence_the_markers_do_not_name() {
    // A RIPE-style domain object: contact handles next to the domain's name.
    let ripe = "domain:   example.zz\nadmin-c:  AB12-ZZ\ntech-c:   AB12-ZZ\nchanged:  2003-03-28\n\n% not found handles are hidden\n";
    assert_eq!(read(ripe, None, "zz").class, WhoisClass::Registered);
    // A holder named, in a registry's own words, with a quota notice (reduced information).
    let holder =
        "% Query rate limit exceeded. Reduced information.\n\ndomain:  example.zz\nowner:   Example University\n";
    assert_eq!(read(holder, None, "zz").class, WhoisClass::Registered);
    let named = "Domain Name: example.zz\nRegistrant Name: Jane Doe\n";
    let r = read(named, None, "zz");
    assert_eq!((r.class, r.record.registrant.org.as_deref()), (WhoisClass::Registered, None));
    // Blank or not-found values are no evidence.
    let blank = "Domain Name: example.zz\nRegistrant Name:\nadmin-c:\nRegistrar: unknown\nNo match for example.zz\n";
    assert_eq!(read(blank, None, "zz").class, WhoisClass::Available);
    let none = "Domain Name: example.zz\nRegistrant Name: not found\nStatus: free\n";
    assert_eq!(read(none, None, "zz").class, WhoisClass::Available);
}

#[test]
fn a_reserved_status_value_is_reserved_under_any_key() {
    let text =
        "Nome de domínio / Domain Name: x.zz\nData de registo / Creation Date: 09/02/2009\nEstado / Status: RESERVED\n";
    assert_eq!(read(text, None, "zz").class, WhoisClass::Reserved);
    let text = "domain: x.zz\ncreated: 2001-01-01\nstate: reservado\n";
    assert_eq!(read(text, None, "zz").class, WhoisClass::Reserved);
    // A registered name that a court blocked is still registered.
    let text = "domain: x.zz\ncreated: 2001-01-01\nstatus: BLOCKED\n";
    assert_eq!(read(text, None, "zz").class, WhoisClass::Registered);
    assert_eq!(read("\nRestricted\n", None, "zz").class, WhoisClass::Reserved);
}

#[test]
fn an_error_next_to_a_not_found_wording_is_no_answer() {
    assert_eq!(read("Invalid query or domain name not known in the Registry\n", None, "zz").class, WhoisClass::Unknown);
    assert_eq!(read("Invalid query or domain not found\n", None, "zz").class, WhoisClass::Unknown);
}

#[test]
fn an_answer_all_in_capitals_keeps_its_statements() {
    let text = "% IANA WHOIS SERVER\n% FOR MORE INFORMATION ON IANA, VISIT HTTP://WWW.IANA.ORG\n% THIS QUERY RETURNED 0 OBJECTS.\n";
    assert_eq!(read(text, None, "zz").class, WhoisClass::Available);
    let text = "domain name: x.zz\nthe domain x.zz was not found.\n";
    assert_eq!(read(text, None, "zz").class, WhoisClass::Available);
}

#[test]
fn status_values_and_epp_statuses_speak_under_any_key() {
    // A free status under a localised key, with no registration: available.
    for text in [
        "Doména: x.zz\nStav: volná\n",
        "Nombre de dominio: x.zz\nEstado: disponible\n",
        "域名：x.zz\n域名状态：可注册\n",
    ] {
        assert_eq!(read(text, None, "zz").class, WhoisClass::Available, "{text}");
    }
    // A free status next to registration evidence: registered (the evidence wins).
    assert_eq!(read("Domain: x.zz\nStatus: free\nCreated: 2001-01-01\n", None, "zz").class, WhoisClass::Registered);
    // A status that says registered in the registry's words is a registration too.
    for text in
        ["Dominio: x.zz\nEstado: activo\n", "Alan adı: x.zz\nDurum: aktif\n", "domain: x.zz\nstate: delegated\n"]
    {
        assert_eq!(read(text, None, "zz").class, WhoisClass::Registered, "{text}");
    }
    // EPP statuses alone are a registration.
    let r = read("Domain: x.zz\nStatus: clientTransferProhibited\n", None, "zz");
    assert_eq!((r.class, r.marker.as_deref()), (WhoisClass::Registered, Some("field:status clientTransferProhibited")));
    // Pending delete in a registry's own words, as a status value.
    let r =
        read("Nombre de dominio: x.zz\nFecha de creación: 2010-01-01\nEstado: pendiente de eliminación\n", None, "zz");
    assert_eq!((r.class, r.pending_delete), (WhoisClass::Registered, true));
    // …but not from a notice about the policy.
    let r = read(
        "Domain: x.zz\nCreated: 2010-01-01\n% Names in redemption period may be restored if the registrar asks.\n",
        None,
        "zz",
    );
    assert_eq!((r.class, r.pending_delete), (WhoisClass::Registered, false));
}

#[test]
fn an_answer_about_another_name_gives_no_verdict() {
    let zone = "Nombre de Dominio: com.uy\nFecha de Creacion: 1990-01-01\nEstatus del dominio: ACTIVO\n";
    let r = read_whois_for("example.com.uy", zone.as_bytes(), None, "com.uy", None);
    assert_eq!(r.class, WhoisClass::Unknown, "{:?}", r.marker);
    let other = "Domain Name: other.zz\nDomain Status: No Object Found\n";
    assert_eq!(read_whois_for("asked.zz", other.as_bytes(), None, "zz", None).class, WhoisClass::Unknown);
    // The same name in another form or case is the same answer.
    let idn = "Domain: bäckerei.de\nStatus: connect\nNserver: ns1.example.de\n";
    assert_eq!(read_whois_for("xn--bckerei-5wa.de", idn.as_bytes(), None, "de", None).class, WhoisClass::Registered);
    let caps = "Domain Name: ASKED.ZZ.\nCreation Date: 2001-01-01\n";
    assert_eq!(read_whois_for("asked.zz", caps.as_bytes(), None, "zz", None).class, WhoisClass::Registered);
    // No echo: the answer is taken as the answer to the query.
    assert_eq!(read_whois_for("asked.zz", b"No match for ASKED.ZZ\n", None, "zz", None).class, WhoisClass::Available);
}

#[test]
fn a_relative_clause_after_the_answer_keeps_it() {
    assert_eq!(read("No entries found that match your query.\n", None, "zz").class, WhoisClass::Available);
    assert_eq!(
        read("% A domain that is not found here may be held elsewhere.\n", None, "zz").class,
        WhoisClass::Unknown
    );
}

#[test]
fn a_not_found_statement_about_another_name_gives_no_verdict_for_the_name_asked() {
    use super::read_whois_for;
    let other = read_whois_for("vexq.com", b"No match for \"OTHER-NAME.COM\".\n", None, "com", None);
    assert_eq!(other.class, WhoisClass::Unknown, "{:?}", other.marker);
    let lexicon = read_whois_for("vexq.ir", "دامنه other.ir آزاد است\n".as_bytes(), None, "ir", None);
    assert_eq!(lexicon.class, WhoisClass::Unknown, "{:?}", lexicon.marker);
    // The name asked, in any case or as a U-label, and names in URLs or hosts, keep the verdict.
    for (asked, answer) in [
        ("vexq.com", "No match for \"VEXQ.COM\".\n"),
        ("xn--bcher-kva.de", "Domain: bücher.de\nStatus: free\n"),
        ("vexq.ir", "No entries found for vexq.ir. See https://www.nic.ir/other.ir for help.\n"),
        ("vexq.com", "No match for \"VEXQ.COM\". More at verisign.com.\n"),
        ("vexq.com", "No match for \"VEXQ.COM\".\n>>> Last update of whois database: whois.verisign-grs.com <<<\n"),
    ] {
        let r = read_whois_for(asked, answer.as_bytes(), None, asked.rsplit('.').next().unwrap_or(""), None);
        assert_eq!(r.class, WhoisClass::Available, "{asked}: {answer} → {:?}", r.marker);
    }
}

/// Characters whose lower-case form has another UTF-8 length or more characters (issue 32):
/// offsets found in a lower-cased copy of a line must never slice the line itself.
const CASE_SHIFTERS: &[&str] = &[
    "\u{130}", "\u{2126}", "\u{1e9e}", "\u{fb01}", "\u{3a3}", "\u{3c2}", "\u{212a}", "\u{212b}", "\u{1c5}", "\u{390}",
];

#[test]
fn a_status_with_case_shifting_letters_before_until_reads_without_panicking() {
    // The answer of the finding: `İ` (U+0130) grows by a byte when lower-cased, `Ω` (U+2126 OHM
    // SIGN, written escaped: an editor's normalisation turns it into U+03A9) shrinks by one, so
    // the lengths agree and the old length check let the shifted offset through.
    let answer = "Domain Name: f.com\nRegistrar: Example Registrar\nDomain Status: \u{130} until\u{2126} 2026-01-01\n";
    let reading = read(answer, None, "com");
    assert_eq!(reading.class, WhoisClass::Registered);
    for a in CASE_SHIFTERS {
        for b in CASE_SHIFTERS {
            for status in [
                format!("{a} until{b} 2026-01-01"),
                format!("{a}{a} UNTIL {b} 2026-01-01"),
                format!("ok-{a}until 2026-01-01{b}"),
                format!("{a} until 2026-01-01"),
                format!("{a}{b}-until: 01.02.2026"),
            ] {
                let answer = format!("Domain Name: f.com\nRegistrar: R\nDomain Status: {status}\n");
                let reading = read(&answer, None, "com");
                assert_eq!(reading.class, WhoisClass::Registered, "{status:?}");
            }
        }
    }
}

#[test]
fn a_status_until_date_after_case_shifting_letters_is_the_expiry() {
    // Offsets map back to the value, so the date is read whatever precedes the word.
    for a in CASE_SHIFTERS {
        let answer = format!("Domain Name: f.com\nRegistrar: R\nDomain Status: {a}K OK-UNTIL 2026-01-01\n");
        let reading = read(&answer, None, "com");
        let expires = reading.record.expires_at.map(|d| d.date());
        assert_eq!(expires, Some(time::macros::date!(2026 - 01 - 01)), "{answer:?}");
    }
}

#[test]
fn a_date_key_without_colon_after_case_shifting_letters_reads_the_date_from_the_line() {
    // "Record created on <date>" found in the lower-cased line; the value comes from the line.
    for a in CASE_SHIFTERS {
        let line = format!("Record created on 2005-04-15 {a}");
        let (key, value) = keys::split_key_value(&line).expect("a date key");
        assert!(key.starts_with("record created"), "{line:?} → {key:?}");
        assert!(value.contains("2005-04-15"), "{line:?} → {value:?}");
    }
    // A key whose own letters shift ("İ" in a Turkish key) still yields the value after it.
    for a in CASE_SHIFTERS {
        for b in CASE_SHIFTERS {
            let line = format!("{a}{b} record created on 2005-04-15");
            let _ = keys::split_key_value(&line);
            let _ = read(&format!("Domain Name: f.com\n{line}\n"), None, "com");
        }
    }
}
