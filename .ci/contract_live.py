"""Live contract check (issue 30): real answers of a running dsa, validated against the served
OpenAPI document with every object schema *closed*.

Called by .ci/contract.sh after schemathesis, against the same standalone dsa on the registry
simulator:  python .ci/contract_live.py BASE_URL KEY FREE_KEY
  KEY       a reseller server key with pricing and a purchase button (as .ci/contract.sh makes)
  FREE_KEY  a key whose per-minute limit is small (the 429 cases)

Every operation of the document is called, for its success forms and its error cases (400, 403,
404, 415, 429, 502), and every answer must:
  * have a status the operation documents, in a media type documented for that status;
  * validate (JSON Schema 2020-12, the `jsonschema` package) against the documented schema where
    every object is closed with `unevaluatedProperties: false`: a member the document does not
    describe, a missing required member, a `null` where the schema allows none, a value outside
    an `enum` all fail;
  * for the NDJSON form, frame as lines, each valid against the line schema (`x-itemSchema`);
  * for an error, carry a text that the documented example of that status shows for at least one
    of the calls made (digits aside: limits differ per plan), so the examples stay real.
Any problem is printed and the exit status is 1.
"""

import copy
import json
import re
import sys
import time

import jsonschema
import requests

BASE, KEY, FREE = sys.argv[1], sys.argv[2], sys.argv[3]
DOC = requests.get(f"{BASE}/v1/openapi.json", timeout=30).json()
problems: list[str] = []
calls = 0
# (operation id, status) -> (documented texts, texts seen)
error_texts: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
# Which schema fragments each call exercised: pointer -> seen
covered: set[str] = set()


def closed(schema, in_all_of=False):
    """A copy of `schema` with every object schema that lists properties closed. The members of an
    `allOf` stay open (their parent is closed and sees their properties through `allOf`)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k == "allOf":
            out[k] = [closed(s, in_all_of=True) for s in v]
        elif k == "$ref" and in_all_of:
            out[k] = v + "__open"
        elif k in ("properties", "patternProperties", "$defs"):
            out[k] = {name: closed(s) for name, s in v.items()}
        elif k == "example":
            continue  # not JSON Schema; a nested example need not be closed-valid
        else:
            out[k] = closed(v)
    lists_members = "properties" in schema or "allOf" in schema
    if lists_members and not in_all_of and "additionalProperties" not in schema:
        out["unevaluatedProperties"] = False
    return out


SCHEMAS = DOC["components"]["schemas"]
ROOT = {"components": {"schemas": {}}}
for name, schema in SCHEMAS.items():
    ROOT["components"]["schemas"][name] = closed(schema)
    ROOT["components"]["schemas"][name + "__open"] = closed(schema, in_all_of=True)
    # An open variant keeps its own nested members closed but not itself.
    ROOT["components"]["schemas"][name + "__open"].pop("unevaluatedProperties", None)
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


def validate(value, schema, where):
    root = dict(ROOT, **closed(schema))
    validator = jsonschema.Draft202012Validator(root, format_checker=FORMATS)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    for e in errors[:5]:
        path = "/".join(str(p) for p in e.absolute_path)
        problems.append(f"{where}: at /{path}: {e.message[:300]}")
    return not errors


# The closing works: each of these bodies breaks the document in one way and must be refused.
_check_ref = {"$ref": "#/components/schemas/CheckResponse"}
_good = {"success": True, "domain": "example.com", "available": False, "message": "Taken", "credits_cost": 1,
         "credits_remaining": 9, "verdict": {"status": "taken", "method": "dns", "authoritative": True, "cached": False,
                                             "stale": False, "checked_at": "2026-11-23T13:31:41Z", "tld": ".com",
                                             "unicode": "example.com"}}
assert validate(_good, _check_ref, "self-check"), problems
for _name, _bad in [
    ("an undescribed member", dict(_good, extra=1)),
    ("an undescribed nested member", dict(_good, verdict=dict(_good["verdict"], extra=1))),
    ("a missing required member", {k: v for k, v in _good.items() if k != "credits_cost"}),
    ("null where none is allowed", dict(_good, message=None)),
    ("an omitted-when-absent member sent as null", dict(_good, demo=None)),
    ("a value outside the enum", dict(_good, message="Maybe")),
]:
    if validate(_bad, _check_ref, "self-check"):
        sys.exit(f"contract live: the closed schemas accept {_name}: the check itself is broken")
problems.clear()


def operation(path, method):
    op = DOC["paths"][path][method]
    return op["operationId"], op


def call(method, path, *, template=None, params=None, headers=None, json_body=None, data=None, expect=None):
    """One request, checked against the document; returns the response."""
    global calls
    calls += 1
    template = template or path
    op_id, op = operation(template, method)
    r = requests.request(method.upper(), BASE + path, params=params, headers=headers, json=json_body,
                         data=data, timeout=60)
    status = str(r.status_code)
    where = f"{method.upper()} {path} {params or ''} -> {status}"
    if expect is not None and r.status_code != expect:
        problems.append(f"{where}: expected {expect} ({r.text[:200]})")
    documented = op["responses"].get(status)
    if documented is None:
        problems.append(f"{where}: status {status} is not documented for {op_id}")
        return r
    media = r.headers.get("content-type", "").split(";")[0].strip()
    content = documented.get("content", {})
    if media not in content:
        problems.append(f"{where}: media type {media!r} not documented (documented: {list(content)})")
        return r
    form = content[media]
    if media == "application/json":
        body = r.json()
        if validate(body, form["schema"], where):
            covered.add(f"{op_id} {status}")
        if int(status) >= 400:
            examples = set()
            if "example" in form:
                examples.add(form["example"]["error"])
            for ex in form.get("examples", {}).values():
                examples.add(ex["value"]["error"])
            documented_texts, seen = error_texts.setdefault((op_id, status), (examples, set()))
            seen.add(body.get("error", ""))
    elif media == "application/x-ndjson":
        text = r.text
        if not text.endswith("\n"):
            problems.append(f"{where}: the stream does not end with a newline")
        lines = [line for line in text.split("\n") if line]
        if not lines:
            problems.append(f"{where}: empty stream")
        ok = True
        for i, line in enumerate(lines):
            ok &= validate(json.loads(line), form["x-itemSchema"], f"{where} line {i + 1}")
        if ok:
            covered.add(f"{op_id} {status} stream")
    else:
        covered.add(f"{op_id} {status} {media}")
    return r


K = {"client_key": KEY}
NDJSON = {"Accept": "application/x-ndjson"}

# --- Availability, in every form the server answers.
for domain in ["example.com", "dsa-demo-available.com", "dsa-demo-available.net", "bücher.de", "www.example.com.af",
               "lapsed-brand.com", "suspended-shop.com", "wikipedia.org", "gov.af", "ministry.gov.af"]:
    call("get", "/v1/domains/check", params={**K, "domain": domain})
call("get", "/v1/domains/check", params={**K, "domain": "dsa-demo-available.com", "commission_percent": "12.5",
                                          "redirect_url": "https://shop.example/cart", "include_price": 1}, expect=200)
call("get", "/v1/domains/check", params={**K, "domain": "dsa-demo-available.com", "redirect_checkout": "true"}, expect=200)
call("get", "/v1/domains/check", params={**K}, expect=400)
call("get", "/v1/domains/check", params={**K, "domain": "exa_mple.com"}, expect=400)
call("get", "/v1/domains/check", params={**K, "domain": "example.com", "redirect_checkout": "2"}, expect=400)
call("get", "/v1/domains/check", params={"client_key": "dsa_server_nope", "domain": "example.com"}, expect=403)
call("get", "/v1/domains/check", params={**K, "domain": "example.ai"}, expect=502)
# Demo checks (no key): allowed, then the demo limit (429) for the same session.
demo = requests.Session()
for _ in range(4):
    calls += 1
    r = demo.get(f"{BASE}/v1/domains/check", params={"domain": "example.com"}, timeout=60)
    op_id, op = operation("/v1/domains/check", "get")
    where = f"GET demo check -> {r.status_code}"
    documented = op["responses"].get(str(r.status_code))
    if documented is None:
        problems.append(f"{where}: status not documented")
        continue
    validate(r.json(), documented["content"]["application/json"]["schema"], where)

for params, status in [({**K, "domain": "dsa-demo-available.com", "include_price": "1"}, 200),
                       ({**K, "domain": "example.com"}, 200), ({"domain": "example.net"}, 200),
                       ({**K}, 400), ({"client_key": "dsa_server_nope", "domain": "example.com"}, 403),
                       ({**K, "domain": "example.ai"}, 502)]:
    call("get", "/domain-check", params=params, expect=status)

# --- Bulk: JSON and the NDJSON stream, GET and POST.
bulk_example = DOC["paths"]["/v1/domains/bulk"]["get"]["responses"]["200"]["content"]["application/json"]["example"]
listed = ",".join([d["domain"] for d in bulk_example["domains"]] + [e["input"] for e in bulk_example["invalid"]])
r = call("get", "/v1/domains/bulk", params={**K, "domains": listed}, expect=200)
if r.status_code == 200:
    real = {e["input"]: e["error"] for e in r.json()["invalid"]}
    for e in bulk_example["invalid"]:
        if real.get(e["input"]) != e["error"]:
            problems.append(f"bulk example: invalid {e['input']!r} reads {e['error']!r}, the server says {real.get(e['input'])!r}")
call("get", "/v1/domains/bulk", params={**K, "domains": listed + ",example.ai, ,EXAMPLE.com"}, headers=NDJSON, expect=200)
call("get", "/v1/domains/bulk", params={**K, "domains": "example.ai"}, expect=502)
call("get", "/v1/domains/bulk", params={**K, "domains": ",".join(["example.com"] * 11)}, expect=400)
call("get", "/v1/domains/bulk", params={**K}, expect=400)
call("get", "/v1/domains/bulk", params={"client_key": "dsa_server_nope", "domains": "example.com"}, expect=403)
call("post", "/v1/domains/bulk", params=K, json_body={"domains": ["example.com", "dsa-demo-available.org", "x"]}, expect=200)
call("post", "/v1/domains/bulk", params=K, json_body={"domains": ["example.com", "dsa-demo-available.org"]},
     headers=NDJSON, expect=200)
call("post", "/v1/domains/bulk", params=K, data="domains=example.com", headers={"Content-Type": "text/plain"}, expect=415)
call("post", "/v1/domains/bulk", params=K, json_body={"names": []}, expect=400)
call("post", "/v1/domains/bulk", json_body={"domains": ["example.com"]}, expect=400)

# --- Bulk jobs (issue 26): a submission in every format, the job followed to its end, its results
# in both forms, a cancel, the list; and the refusals.
r = call("post", "/v1/jobs/bulk-check", params=K, json_body=["example.com", "dsa-demo-available.com", "exa_mple.com",
                                                              "EXAMPLE.com"], expect=202)
job = r.json().get("id", "missing") if r.status_code == 202 else "missing"
for media, text in [("text/plain", "example.com\n"), ("application/x-ndjson", '"example.com"\n{"domain": "dsa-demo-available.net"}\n'),
                    ("text/csv", "domain\nexample.com\n")]:
    call("post", "/v1/jobs/bulk-check", params=K, data=text, headers={"Content-Type": media}, expect=202)
call("post", "/v1/jobs/bulk-check", params=K, data="<a/>", headers={"Content-Type": "application/xml"}, expect=415)
call("post", "/v1/jobs/bulk-check", params=K, data="[1]", headers={"Content-Type": "application/json"}, expect=400)
call("post", "/v1/jobs/bulk-check", json_body=["example.com"], expect=400)
call("post", "/v1/jobs/bulk-check", params={"client_key": "dsa_server_nope"}, json_body=["example.com"], expect=403)
JOB, RESULTS = "/v1/jobs/{id}", "/v1/jobs/{id}/results"
for _ in range(200):
    r = call("get", f"/v1/jobs/{job}", template=JOB, params=K, expect=200)
    if r.status_code != 200 or r.json().get("state") == "done":
        break
    time.sleep(0.1)
call("get", f"/v1/jobs/{job}/results", template=RESULTS, params=K, expect=200)
call("get", f"/v1/jobs/{job}/results", template=RESULTS, params={**K, "format": "csv", "limit": 2}, expect=200)
call("get", f"/v1/jobs/{job}/results", template=RESULTS, params={**K, "limit": 0}, expect=400)
call("get", f"/v1/jobs/{job}/results", template=RESULTS, expect=400)
call("get", "/v1/jobs/no-such-job/results", template=RESULTS, params=K, expect=404)
call("get", f"/v1/jobs/{job}/results", template=RESULTS, params={"client_key": "dsa_server_nope"}, expect=403)
call("get", "/v1/jobs/no-such-job", template=JOB, params=K, expect=404)
call("get", f"/v1/jobs/{job}", template=JOB, expect=400)
call("get", f"/v1/jobs/{job}", template=JOB, params={"client_key": "dsa_server_nope"}, expect=403)
r = call("post", "/v1/jobs/bulk-check", params=K, data="".join(f"dsa-contract-cancel-{i}.com\n" for i in range(50)),
         headers={"Content-Type": "text/plain"}, expect=202)
cancel = r.json().get("id", "missing") if r.status_code == 202 else "missing"
call("delete", f"/v1/jobs/{cancel}", template=JOB, params=K, expect=200)
call("delete", "/v1/jobs/no-such-job", template=JOB, params=K, expect=404)
call("delete", f"/v1/jobs/{cancel}", template=JOB, expect=400)
call("delete", f"/v1/jobs/{cancel}", template=JOB, params={"client_key": "dsa_server_nope"}, expect=403)
call("get", "/v1/jobs", params=K, expect=200)
call("get", "/v1/jobs", params={**K, "limit": "x"}, expect=400)
call("get", "/v1/jobs", expect=400)
call("get", "/v1/jobs", params={"client_key": "dsa_server_nope"}, expect=403)

# --- WHOIS, DNS, suggestions, catalogue, operations.
for domain in ["example.com", "google.com", "private-shop.com", "wikipedia.org", "dsa-demo-available.net", "nic.af"]:
    call("get", "/v1/whois", params={**K, "domain": domain})
call("get", "/v1/whois", params={**K}, expect=400)
call("get", "/v1/whois", params={"client_key": "dsa_server_nope", "domain": "example.com"}, expect=403)
call("get", "/v1/whois", params={**K, "domain": "example.ai"}, expect=502)
for domain, types in [("google.com", "A,AAAA,MX,NS,TXT"), ("google.com", "CNAME,SOA,CAA,SRV"),
                      ("_sip._tcp.google.com", "SRV"), ("nope-nothing-here.com", None), ("example.com", None)]:
    call("get", "/v1/dns", params={**K, "domain": domain, **({"types": types} if types else {})}, expect=200)
call("get", "/v1/dns", params={**K, "domain": "example.com", "types": "A,PTR"}, expect=400)
call("get", "/v1/dns", params={**K}, expect=400)
call("get", "/v1/dns", params={"client_key": "dsa_server_nope", "domain": "example.com"}, expect=403)
call("get", "/v1/domains/suggest", params={**K, "keyword": "best pizza place"}, expect=200)
call("get", "/v1/domains/suggest", params={**K, "keyword": "bitcoin", "tlds": ".com,.net,.af", "limit": 5, "check": 1}, expect=200)
call("get", "/v1/domains/suggest", params={**K, "keyword": "x"}, expect=400)
call("get", "/v1/domains/suggest", params={**K}, expect=400)
call("get", "/v1/domains/suggest", params={"client_key": "dsa_server_nope", "keyword": "pizza"}, expect=403)
call("get", "/v1/domains/suggest", params={**K, "keyword": "kabul bakery", "tlds": ".com,.net,.dev", "limit": 5,
                                            "verify": 2}, expect=200)
call("get", "/v1/domains/suggest", params={**K, "keyword": "pizza", "limit": 5, "verify": 9}, expect=400)
# --- Watches (our extension): create (201, then 200 for the same domain), read, list, events, delete.
BAD = {"client_key": "dsa_server_nope"}
fresh = f"dsa-contract-watch-{int(time.time())}.com"  # not one schemathesis has watched already
r = call("post", "/v1/watches", params=K, json_body={"domain": fresh, "note": "contract"}, expect=201)
watch_id = r.json().get("watch", {}).get("id", "wch_missing")
call("post", "/v1/watches", params=K, json_body={"domain": fresh.upper()}, expect=200)
# A second fresh name: schemathesis may already have watched the documented example names.
call("post", "/v1/watches", params=K, json_body={"domain": f"dsa-contract-watch-{int(time.time())}-free.com",
                                                  "events": ["domain.available"]}, expect=201)
call("post", "/v1/watches", params=K, json_body={"domain": "example.com", "events": ["domain.gone"]}, expect=400)
call("post", "/v1/watches", params=K, json_body={"domain": "exa_mple.com"}, expect=400)
call("post", "/v1/watches", json_body={"domain": "example.com"}, expect=400)
call("post", "/v1/watches", params=BAD, json_body={"domain": "example.com"}, expect=403)
call("post", "/v1/watches", params=K, data="domain=example.com", headers={"Content-Type": "text/plain"}, expect=415)
call("get", "/v1/watches", params=K, expect=200)
call("get", "/v1/watches", params={**K, "limit": 1}, expect=200)
call("get", "/v1/watches", params={**K, "limit": 0}, expect=400)
call("get", "/v1/watches", expect=400)
call("get", "/v1/watches", params=BAD, expect=403)
time.sleep(2)  # the first check of the new watches (state no longer unknown)
for template, path in [("/v1/watches/{id}", f"/v1/watches/{watch_id}"),
                       ("/v1/watches/{id}/events", f"/v1/watches/{watch_id}/events")]:
    call("get", path, template=template, params=K, expect=200)
    call("get", path, template=template, expect=400)
    call("get", path, template=template, params=BAD, expect=403)
    call("get", template.replace("{id}", "wch_nope"), template=template, params=K, expect=404)
call("get", f"/v1/watches/{watch_id}/events", template="/v1/watches/{id}/events", params={**K, "after": "evt_nope"},
     expect=400)
call("delete", "/v1/watches/wch_nope", template="/v1/watches/{id}", params=K, expect=404)
call("delete", f"/v1/watches/{watch_id}", template="/v1/watches/{id}", expect=400)
call("delete", f"/v1/watches/{watch_id}", template="/v1/watches/{id}", params=BAD, expect=403)
call("delete", f"/v1/watches/{watch_id}", template="/v1/watches/{id}", params=K, expect=200)
# --- MCP over Streamable HTTP: the JSON-RPC envelope of each answer, and the keyed prelude's refusals.
MCP = {"Accept": "application/json, text/event-stream"}
def rpc(n, method, params=None):
    return {"jsonrpc": "2.0", "id": n, "method": method, **({"params": params} if params is not None else {})}
call("post", "/mcp", params=K, headers=MCP, json_body=rpc(1, "initialize", {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "contract-live", "version": "1"}}),
    expect=200)
call("post", "/mcp", params=K, headers=MCP, json_body=rpc(2, "tools/list"), expect=200)
call("post", "/mcp", params=K, headers=MCP,
     json_body=rpc(3, "tools/call", {"name": "check_domain", "arguments": {"domain": "example.com"}}), expect=200)
call("post", "/mcp", params={"client_key": "dsa_server_nope"}, headers=MCP, json_body=rpc(4, "tools/list"), expect=403)
call("post", "/mcp", headers=MCP, json_body=rpc(5, "tools/list"), expect=400)
call("get", "/v1/tlds", expect=200)
for tld in [".com", "com.af", ".co.uk", ".gov.af"]:
    call("get", f"/v1/tlds/{tld}", template="/v1/tlds/{tld}")
call("get", "/v1/tlds/.zzz", template="/v1/tlds/{tld}", expect=404)
call("get", "/v1/tlds/.invalid-tld", template="/v1/tlds/{tld}", expect=404)
call("get", "/healthz", expect=200)
call("get", "/readyz", expect=200)
call("get", "/", expect=200)
call("get", "/widget.js", expect=200)
call("get", "/assets/front.css", expect=200)

# --- Webhooks (issue 25): a webhook on loopback where nothing listens, so its deliveries fail and
# show their attempts.
HOOK = "http://127.0.0.1:9/dsa-contract"
r = call("post", "/v1/webhooks", params=K, json_body={"url": HOOK, "event_types": ["domain.available"],
                                                      "description": "contract"}, expect=201)
hook = r.json()["webhook"]["id"]
one = "/v1/webhooks/{id}"
call("post", "/v1/webhooks", params=K, json_body={"url": "https://10.0.0.1/x"}, expect=400)
call("post", "/v1/webhooks", json_body={"url": HOOK}, expect=400)
call("post", "/v1/webhooks", params={"client_key": "dsa_server_nope"}, json_body={"url": HOOK}, expect=403)
call("post", "/v1/webhooks", params=K, data="url=x", headers={"Content-Type": "text/plain"}, expect=415)
call("get", "/v1/webhooks", params=K, expect=200)
call("get", "/v1/webhooks", expect=400)
call("get", f"/v1/webhooks/{hook}", template=one, params=K, expect=200)
call("get", "/v1/webhooks/wh_nope", template=one, params=K, expect=404)
call("post", f"/v1/webhooks/{hook}/test", template=one + "/test", params=K, expect=202)
call("post", "/v1/webhooks/wh_nope/test", template=one + "/test", params=K, expect=404)
for _ in range(100):
    listed = requests.get(f"{BASE}/v1/webhooks/{hook}/deliveries", params=K, timeout=30).json()
    if listed.get("deliveries") and listed["deliveries"][0]["attempts"] > 0:
        break
    time.sleep(0.1)
else:
    problems.append("webhooks: the test event was never attempted")
r = call("get", f"/v1/webhooks/{hook}/deliveries", template=one + "/deliveries", params={**K, "limit": 1}, expect=200)
delivery = (r.json().get("deliveries") or [{"id": "dlv_none"}])[0]["id"]
call("get", f"/v1/webhooks/{hook}/deliveries", template=one + "/deliveries", params={**K, "limit": 0}, expect=400)
call("get", f"/v1/webhooks/{hook}/deliveries", template=one + "/deliveries", expect=400)
retry = one + "/deliveries/{delivery_id}/retry"
call("post", f"/v1/webhooks/{hook}/deliveries/{delivery}/retry", template=retry, params=K, expect=202)
call("post", f"/v1/webhooks/{hook}/deliveries/dlv_nope/retry", template=retry, params=K, expect=404)
call("post", f"/v1/webhooks/{hook}/rotate-secret", template=one + "/rotate-secret", params=K, expect=200)
call("post", f"/v1/webhooks/{hook}/enable", template=one + "/enable", params=K, expect=200)
call("delete", f"/v1/webhooks/{hook}", template=one, params=K, expect=200)
call("delete", f"/v1/webhooks/{hook}", template=one, params=K, expect=404)

# --- 429: the free key's per-minute limit, on every metered operation.
metered = [
    ("get", "/v1/domains/check", None, {"domain": "example.com"}, None),
    ("get", "/domain-check", None, {"domain": "example.com"}, None),
    ("get", "/v1/domains/bulk", None, {"domains": "example.com"}, None),
    ("post", "/v1/domains/bulk", None, {}, {"domains": ["example.com"]}),
    ("get", "/v1/whois", None, {"domain": "example.com"}, None),
    ("get", "/v1/dns", None, {"domain": "example.com"}, None),
    ("get", "/v1/domains/suggest", None, {"keyword": "pizza"}, None),
    ("get", "/v1/watches", None, {}, None),
    ("post", "/v1/watches", None, {}, {"domain": "example.com"}),
    ("get", "/v1/watches/wch_nope", "/v1/watches/{id}", {}, None),
    ("delete", "/v1/watches/wch_nope", "/v1/watches/{id}", {}, None),
    ("get", "/v1/watches/wch_nope/events", "/v1/watches/{id}/events", {}, None),
    ("get", "/v1/jobs", None, {}, None),
    ("get", "/v1/jobs/no-such-job", "/v1/jobs/{id}", {}, None),
    ("get", "/v1/jobs/no-such-job/results", "/v1/jobs/{id}/results", {}, None),
    ("delete", "/v1/jobs/no-such-job", "/v1/jobs/{id}", {}, None),
    ("post", "/v1/jobs/bulk-check", None, {}, ["example.com"]),
]
for method, path, template, params, body in metered:
    for attempt in range(12):
        r = call(method, path, template=template, params={"client_key": FREE, **params}, json_body=body)
        if r.status_code == 429:
            if not r.headers.get("retry-after", "").isdigit():
                problems.append(f"{method.upper()} {path}: 429 without a Retry-After in seconds")
            break
    else:
        problems.append(f"{method.upper()} {path}: the free key's per-minute limit never answered 429")

# --- The documented examples of JSON bodies are valid against the same closed schemas.
examples_checked = 0
for path, item in DOC["paths"].items():
    for method, op in item.items():
        for status, response in op["responses"].items():
            form = response.get("content", {}).get("application/json")
            if not form:
                continue
            bodies = [form["example"]] if "example" in form else []
            bodies += [e["value"] for e in form.get("examples", {}).values()]
            for body in bodies:
                examples_checked += 1
                validate(body, form["schema"], f"the example of {method.upper()} {path} {status}")
for name, schema in SCHEMAS.items():
    if "example" in schema:
        examples_checked += 1
        validate(schema["example"], {"$ref": f"#/components/schemas/{name}"}, f"the example of schema {name}")

# --- Every operation was called, and its error examples are texts the server really sends.
def digits_aside(text):
    return re.sub(r"\d+", "N", text)

for path, item in DOC["paths"].items():
    for method, op in item.items():
        if not any(c.startswith(op["operationId"] + " ") for c in covered):
            problems.append(f"{method.upper()} {path}: no valid answer was seen")
for (op_id, status), (documented, seen) in sorted(error_texts.items()):
    if not documented:
        problems.append(f"{op_id} {status}: no example")
    elif not {digits_aside(t) for t in documented} & {digits_aside(t) for t in seen}:
        problems.append(f"{op_id} {status}: the example {sorted(documented)} matches none of the texts the "
                        f"server sent: {sorted(seen)}")

print(f"contract live: {calls} calls, {len(covered)} (operation, status, form) combinations valid against the closed schemas, "
      f"{len(error_texts)} error examples compared with real answers, {examples_checked} documented examples validated")
if problems:
    print(f"contract live: {len(problems)} problem(s):", file=sys.stderr)
    for p in problems:
        print("  " + p, file=sys.stderr)
    sys.exit(1)
