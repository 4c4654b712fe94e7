# Second long-tail set, written after the class fixes and read once before any change: the
# generalisation check of those fixes on new wordings of the same classes.
TERMS = """Use of this service
This WHOIS server is run by the registry for the technical coordination of the zone.
The information below is supplied as is, without any warranty of completeness.
Users must not harvest, mine or republish the records returned here.
Requests are counted per source address and per day; addresses that send more than the
published daily number may be refused service for the rest of the day.
Personal contact details are shown only where the holder has agreed to their publication.
Law enforcement bodies may ask for withheld details through the registry's legal desk.
Registration and renewal are handled by the accredited registrars, never by the registry.
Names in the grace period after expiry may still be renewed by their holder.
Names in the redemption period are not yet free and cannot be registered by others.
Names that have been deleted become free again after a short waiting time.
Some strings are withheld from registration by policy; the list is published online.
Premium names are sold at prices set by the registry through its registrars.
A query for a name that does not exist returns a short notice to that effect.
Dates are shown in ISO 8601 form in coordinated universal time.
The registry may change these conditions without notice.
(c) 2026 Example Registry Services. All rights reserved."""
terms = TERMS.split("\n")

def buried(line, at, prefix="", head=None):
    assert at == 0 or terms[at - 1].endswith(".") or terms[at-1] == "Use of this service", (at, terms[at-1])
    lines = [prefix + t if prefix else t for t in terms]
    if line:
        lines.insert(at, line)
    return "\n".join((head or []) + lines)

cases = []
def case(want, cid, text):
    cases.append((want, cid, text.strip("\n")))

# registry / database as subject
case("available", "lt2-subj-registry-lists-no", "The .zz registry lists no domain called qwzx-free.zz.")
case("available", "lt2-subj-search-of-register", "A search of the register for qwzx-free.zz found nothing.")
case("available", "lt2-subj-we-hold-no-record", "We hold no record of qwzx-free.zz.")
case("available", "lt2-subj-system-returned-no-data", "% Registry WHOIS\nThe system returned no data for qwzx-free.zz")
case("available", "lt2-subj-de-register-kennt", "Das Register kennt keine Domain qwzx-free.zz.")
case("available", "lt2-subj-fr-registre-ne-possede", "Le registre ne possède aucun enregistrement pour qwzx-free.zz.")
case("available", "lt2-subj-es-registro-no-tiene", "El registro no tiene ningún dominio qwzx-free.zz.")
case("available", "lt2-subj-pt-nao-possui", "O registro não possui o domínio qwzx-free.zz.")
case("registered", "lt2-subj-trap-registry-holds", "The registry holds the following record for qwzx-taken.zz:\nDomain: qwzx-taken.zz\nCreated: 2015-06-01\nRegistrar: Example Registrar Ltd\nName Server: ns1.example-dns.zz")
case("no_verdict", "lt2-subj-trap-db-unreachable", "The registry database returned no answer for qwzx-free.zz: backend unreachable, try again later.")
case("registered", "lt2-subj-trap-no-dnssec", "Domain: qwzx-taken.zz\nCreated: 2015-06-01\nRegistrar: Example Registrar Ltd\nThe registry holds no DS records for qwzx-taken.zz.")
# glued
case("available", "lt2-glue-status-colon-free-comma", "qwzx-free.zz,status:free")
case("available", "lt2-glue-available-flag", "domain=qwzx-free.zz&available=1")
case("available", "lt2-glue-dotted-code", "RESULT:NOT.FOUND")
case("available", "lt2-glue-nosuchdomain", "ERROR:NOSUCHDOMAIN:qwzx-free.zz")
case("available", "lt2-glue-json-spaces", '{ "name": "qwzx-free.zz", "state": "not_registered" }')
case("available", "lt2-glue-key-value-semicolons-spaces", "domain: qwzx-free.zz; status: available; checked: 2026-05-01")
case("available", "lt2-glue-pascal", "QueryResult=NoMatch")
case("reserved", "lt2-glue-reserved-pipe", "qwzy-held.zz|RESERVED")
case("registered", "lt2-glue-trap-registered-json", '{"domain":"qwzx-taken.zz","status":"active","created":"2017-01-01","registrar":"Example Registrar Ltd"}')
case("no_verdict", "lt2-glue-trap-nonotice", "NONOTICE")
case("no_verdict", "lt2-glue-trap-error-code", "ERR_INTERNAL;CODE=500")
# terse
case("reserved", "lt2-terse-reserved-domain", "Reserved domain")
case("reserved", "lt2-terse-not-registrable", "Not registrable.")
case("reserved", "lt2-terse-blocked-name", "Blocked name")
case("reserved", "lt2-terse-it-riservato", "Riservato")
case("reserved", "lt2-terse-pl-zastrzezona", "Nazwa zastrzeżona")
case("reserved", "lt2-terse-with-name-status", "qwzy-held.zz RESERVED")
case("available", "lt2-terse-free-name", "qwzx-free.zz free")
case("available", "lt2-terse-not-registered", "NOT REGISTERED")
case("no_verdict", "lt2-terse-trap-permission-denied", "Permission denied")
case("no_verdict", "lt2-terse-trap-restricted-access", "Restricted access")
case("no_verdict", "lt2-terse-trap-ok", "OK")
# buried
case("available", "lt2-buried-not-in-register", buried("qwzx-free.zz is not in the register.", 3))
case("available", "lt2-buried-status-available", buried("Status: AVAILABLE", 7, head=["Query: qwzx-free.zz", ""]))
case("available", "lt2-buried-percent", buried("% No entries found for qwzx-free.zz", 12, prefix="% "))
case("available", "lt2-buried-at-end", buried("Domain qwzx-free.zz not found.", 18))
case("reserved", "lt2-buried-withheld", buried("qwzy-held.zz is withheld from registration by policy.", 13))
case("registered", "lt2-buried-pending-delete", buried("", 0, head=["Domain: qwzx-taken.zz", "Status: redemptionPeriod", "Created: 2012-02-02", "Registrar: Example Registrar Ltd", ""]))
case("no_verdict", "lt2-buried-trap-only-terms", buried("", 0))
case("no_verdict", "lt2-buried-trap-notice-line", buried("", 0, head=["Welcome to the .zz WHOIS service.", ""]))

with open("workers/tests/unseen/handmade_longtail_check.txt", "w") as f:
    f.write("""# Hand-made WHOIS answers, second long-tail set (issue 28, part 2): new wordings of the four
# classes of handmade_longtail.txt, written AFTER the reader was changed for those classes and
# read once before any further change: its first reading is the check of how the class fixes
# generalise (see PROVENANCE.md). WRITTEN BY THE DSA AUTHORS, NOT RECORDINGS; names and terms
# are invented. Same format and id prefixes as handmade_longtail.txt (lt2-).

""")
    for want, cid, text in cases:
        f.write(f"==== {want} {cid} ====\n{text}\n")
print(len(cases))
