# Generates workers/tests/unseen/handmade_longtail.txt (the long disclaimers are composed from
# one block of invented terms, so the buried-line cases stay readable in this script).
TERMS = """CONDITIONS FOR USING THIS LOOKUP SERVICE
The data in this registry's WHOIS database is provided for information purposes only.
It is intended to assist persons in obtaining information about or related to a domain
name registration record. The registry does not guarantee its accuracy.
By submitting a query you agree to use this data only for lawful purposes and that under
no circumstances will you use this data to allow, enable or otherwise support the
transmission of mass unsolicited commercial advertising or solicitations via e-mail,
telephone or facsimile, or to enable high volume, automated, electronic processes that
apply to the registry or its systems.
Copying, bundling, resale or redistribution of these records in any form needs the
written permission of the registry operator beforehand.
The registry operator reserves the right to restrict your access to the WHOIS database
whenever it judges that the stability of the service requires it.
The registry operator may restrict or terminate your access to the WHOIS database for
anyone who does not respect the conditions set out here.
The registry operator reserves the right to modify these terms at any time.
Personal data of natural persons is withheld in accordance with applicable law.
Contact details of the registrant are available to parties with a legitimate interest
through the registry's disclosure request form.
Queries are logged. Excessive querying will lead to a temporary block of the source
address; the limit is published on the registry's web site.
Please note that the WHOIS service is not a substitute for a formal search of the
trademark registers.
Domain names in this zone are registered on a first come, first served basis through
accredited registrars only. The registry does not sell names to the public.
For questions about a domain name, contact the sponsoring registrar shown in the record.
For abuse reports, write to the registry's abuse desk; reports about content are
forwarded to the registrar and to the hosting provider where known.
The registry publishes the full list of accredited registrars on its web site.
A name that is shown with the status "inactive" is registered but not delegated.
A name in its redemption period can be restored only by its last registrar.
Dates are given in UTC unless stated otherwise.
Name servers are listed in no particular order.
This service answers queries for second-level names in this zone only.
Queries for third-level names or for other zones return an error.
Internationalised names must be asked in their A-label (xn--) form.
The registry accepts no liability for any loss arising from the use of this service.
These terms are governed by the law of the registry's seat.
Copyright (c) 2026 the registry operator. All rights reserved."""

terms = TERMS.split("\n")
assert len(terms) >= 38, len(terms)

def buried(verdict_line, at, prefix="", head=None, tail=None):
    # The verdict goes between two sentences of the terms (as registries print it), never inside
    # a wrapped sentence.
    assert at == 0 or terms[at - 1].endswith("."), (at, terms[at - 1])
    lines = [prefix + t if prefix else t for t in terms]
    lines.insert(at, verdict_line)
    out = []
    if head: out += head
    out += lines
    if tail: out += tail
    return "\n".join(out)

cases = []
def case(want, cid, text):
    cases.append((want, cid, text.strip("\n")))

# ---------------------------------------------------------------------------------------
# Class 1: the registry or its database is the subject of the not-found statement.
case("available", "lt-subj-db-contains-no-entry", "The registry database contains no entry for qwzx-free.gy.")
case("available", "lt-subj-records-show-nothing", "Our records show nothing under qwzx-free.bz.")
case("available", "lt-subj-registry-has-no-record", "% .zz WHOIS\nThe registry has no record of the domain qwzx-free.zz.")
case("available", "lt-subj-db-holds-no-data", "Our database holds no data on qwzx-free.mv.")
case("available", "lt-subj-we-have-no-registration", "We have no registration for qwzx-free.tl on file.")
case("available", "lt-subj-registry-knows-nothing", "The registry knows of no domain named qwzx-free.sr.")
case("available", "lt-subj-db-returned-nothing", "Database lookup for qwzx-free.gq returned nothing.")
case("available", "lt-subj-registry-does-not-hold", "This registry does not hold a registration for qwzx-free.cf.")
case("available", "lt-subj-no-entries-in-registry", "There are no entries in the registry for qwzx-free.km.")
case("available", "lt-subj-records-contain-no", "Registry records contain no domain matching qwzx-free.dj.")
case("available", "lt-subj-es-base-no-contiene", "La base de datos del registro no contiene ningún registro para qwzx-free.hn.")
case("available", "lt-subj-fr-base-ne-contient", "La base de données du registre ne contient aucune entrée pour qwzx-free.ga.")
case("available", "lt-subj-de-datenbank-enthaelt", "Die Datenbank der Registry enthält keinen Eintrag für qwzx-free.li.")
case("available", "lt-subj-pt-base-nao-contem", "A base de dados do registro não contém nenhum registro para qwzx-free.ao.")
case("available", "lt-subj-it-database-non-contiene", "Il database del registro non contiene alcuna voce per qwzx-free.sm.")
case("available", "lt-subj-ru-baza-ne-soderzhit", "База данных реестра не содержит записей о домене qwzx-free.kz.")
case("available", "lt-subj-nl-database-bevat-geen", "De database van het register bevat geen gegevens over qwzx-free.sr.")
# traps: the registry/database is the subject, but the sentence is not about this name.
case("registered", "lt-subj-trap-db-contains-no-personal",
"""Domain Name: qwzx-taken.gy
Registrar: Example Registrar Ltd
Creation Date: 2019-04-02
Registry Expiry Date: 2027-04-02
Name Server: ns1.example-dns.zz
Name Server: ns2.example-dns.zz
The registry database contains no personal data of natural persons.""")
case("registered", "lt-subj-trap-records-show-nothing-else",
"""domain:   qwzx-taken.bz
status:   active
created:  2021-01-10
nserver:  ns1.qwzx-taken.bz
Our records show nothing further about the holder; ask the registrar.""")
case("no_verdict", "lt-subj-trap-db-unavailable", "The registry database contains no data at the moment: maintenance in progress. Please try again later.")
case("no_verdict", "lt-subj-trap-registry-no-record-of-query", "The registry has no record of your query format. Use: whois <domain>")

# ---------------------------------------------------------------------------------------
# Class 2: not-found markers run together with other tokens.
case("available", "lt-glue-not-found-underscore", "NOT_FOUND")
case("available", "lt-glue-nomatch-percent", "%%NOMATCH%%")
case("available", "lt-glue-status-free-semicolon", "domain:qwzx-free.zz;status:free;")
case("available", "lt-glue-result-notfound", "RESULT=NOTFOUND;DOMAIN=qwzx-free.ac")
case("available", "lt-glue-err-no-such-domain", "ERR_NO_SUCH_DOMAIN qwzx-free.tm")
case("available", "lt-glue-bracket-not-found", "[qwzx-free.nr][NOT-FOUND]")
case("available", "lt-glue-status-available-pipe", "qwzx-free.to|status=available|")
case("available", "lt-glue-nodomain-camel", "ResultCode: DomainNotFound")
case("available", "lt-glue-no-match-dash", "*** NO-MATCH *** qwzx-free.gs")
case("available", "lt-glue-not-registered-underscore", "qwzx-free.pn: NOT_REGISTERED")
case("available", "lt-glue-notfound-colon", "notfound:qwzx-free.ms")
case("available", "lt-glue-json-ish", '{"domain":"qwzx-free.vc","status":"AVAILABLE"}')
case("available", "lt-glue-domain-free-tag", "<status>free</status><domain>qwzx-free.lc</domain>")
# traps
case("registered", "lt-glue-trap-status-ok",
"""domain:qwzx-taken.zz;status:ok;created:2018-06-01;nserver:ns1.example-dns.zz;""")
case("reserved", "lt-glue-trap-status-reserved", "domain:qwzy-held.zz;status:reserved;")
case("rate_limited", "lt-glue-trap-rate-limit", "ERR_RATE_LIMIT_EXCEEDED")
case("no_verdict", "lt-glue-trap-handler", "whois_handler=notfound_page_disabled")
case("registered", "lt-glue-trap-available-flag",
"""Domain Name: qwzx-taken.lc
Registrar: Example Registrar Ltd
Creation Date: 2020-03-03
Name Server: ns1.example-dns.zz
auto_renew_available=yes""")

# ---------------------------------------------------------------------------------------
# Class 3: terse one-line restricted/reserved answers.
case("reserved", "lt-terse-reserved", "reserved")
case("reserved", "lt-terse-restricted-name", "Restricted name.")
case("reserved", "lt-terse-blocked", "BLOCKED")
case("reserved", "lt-terse-reserved-name-caps", "RESERVED NAME")
case("reserved", "lt-terse-prohibited", "Prohibited.")
case("reserved", "lt-terse-name-restricted", "qwzy-held.zz: restricted")
case("reserved", "lt-terse-reserved-by-registry", "Reserved by registry decision")
case("reserved", "lt-terse-not-available-reserved", "Not available (reserved)")
case("reserved", "lt-terse-withheld", "Withheld.")
case("reserved", "lt-terse-es-reservado", "Reservado.")
case("reserved", "lt-terse-fr-reserve", "Réservé")
case("reserved", "lt-terse-de-gesperrt", "Gesperrt")
case("reserved", "lt-terse-ru-zarezervirovan", "Зарезервирован")
case("reserved", "lt-terse-zh-baoliu", "保留域名")
case("reserved", "lt-terse-banner-blocked", "% .zz WHOIS server\n\nBLOCKED\n")
# terse other classes (the same shape, other words)
case("available", "lt-terse-free", "free")
case("available", "lt-terse-available", "AVAILABLE")
case("available", "lt-terse-not-found", "Not found.")
case("available", "lt-terse-nomatch", "NOMATCH")
# traps
case("no_verdict", "lt-terse-trap-rights-reserved", "All rights reserved")
case("no_verdict", "lt-terse-trap-access-restricted", "Access restricted.")
case("no_verdict", "lt-terse-trap-blocked-ip", "Your IP is blocked.")
case("no_verdict", "lt-terse-trap-error", "ERROR")
case("no_verdict", "lt-terse-trap-prohibited-query", "Query prohibited.")

# ---------------------------------------------------------------------------------------
# Class 4: the verdict line buried in a long disclaimer.
case("available", "lt-buried-no-match-mid", buried('No match for domain "QWZX-FREE.ZZ".', 19))
case("available", "lt-buried-not-registered-late",
     buried("The domain qwzx-free.zz is not registered.", 33, head=["Domain query: qwzx-free.zz", ""]))
case("available", "lt-buried-commented", buried("% Domain qwzx-free.zz was not found.", 21, prefix="% "))
case("available", "lt-buried-status-free",
     buried("Domain Status: free", 25, head=["Domain Name: qwzx-free.zz"]))
case("available", "lt-buried-no-data-found-early", buried("No data found for qwzx-free.zz", 2))
case("available", "lt-buried-registry-db-no-entry", buried("The registry database contains no entry for qwzx-free.zz.", 15))
case("available", "lt-buried-es-no-encontrado", buried("El dominio qwzx-free.zz no fue encontrado.", 28))
case("available", "lt-buried-upper", buried("NO OBJECT FOUND FOR QWZX-FREE.ZZ", 23).upper())
case("available", "lt-buried-hash-comments", buried("# qwzx-free.zz: no match", 11, prefix="# "))
case("reserved", "lt-buried-reserved", buried("The domain qwzy-held.zz is reserved by the registry.", 21))
case("rate_limited", "lt-buried-quota", buried("Query limit exceeded for your address. Try again in one hour.", 13))
# traps: long disclaimers that say nothing about this name, or with a registered record.
case("no_verdict", "lt-buried-trap-terms-only", buried("", 0))
case("registered", "lt-buried-trap-record-and-terms",
     buried("", 0, head=["Domain Name: qwzx-taken.zz", "Registrar: Example Registrar Ltd",
                          "Creation Date: 2017-09-14T10:00:00Z", "Registry Expiry Date: 2027-09-14T10:00:00Z",
                          "Name Server: ns1.example-dns.zz", "Name Server: ns2.example-dns.zz", ""]))
case("no_verdict", "lt-buried-trap-hypothetical",
     buried("If a name is not found in this database, it may be available for registration.", 19))
case("registered", "lt-buried-trap-example-not-found",
     buried("Example: a query for an unregistered name returns \"No match\".", 26,
            head=["Domain Name: qwzx-taken.zz", "Registrar: Example Registrar Ltd", "Creation Date: 2016-01-01", ""]))

with open("workers/tests/unseen/handmade_longtail.txt", "w") as f:
    f.write("""# Hand-made WHOIS answers for the long tail of registry wordings (issue 28, part 2).
#
# WRITTEN BY THE DSA AUTHORS, NOT RECORDINGS: names (qwzx-free.<tld>, qwzx-taken.<tld>,
# qwzy-held.<tld>), dates, registrars and the terms of use are invented. Written BEFORE the reader
# was changed for these classes, as a training set: its misses were read and fixed as classes.
# See PROVENANCE.md next to this file.
#
# Four classes, by id prefix (traps of each class, answers that must not be read as the class
# suggests, carry "-trap-"):
#   lt-subj-   the registry or its database is the subject of the not-found statement;
#   lt-glue-   not-found (or status) markers run together with other tokens;
#   lt-terse-  one-line answers (mostly reserved/restricted/blocked);
#   lt-buried- the verdict line inside a long terms-of-use text.
#
# Same format as handmade.txt: "==== <want> <id> ====" at column 0, the answer up to the next one.
# <want>: available | registered | pending_delete | reserved | rate_limited | no_verdict.

""")
    for want, cid, text in cases:
        f.write(f"==== {want} {cid} ====\n{text}\n")
print(len(cases))
