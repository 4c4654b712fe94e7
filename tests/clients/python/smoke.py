"""Smoke flow of the Python client that openapi-python-client generates from dsa's served document.

Run by .ci/clients.sh against a standalone dsa on the registry simulator:
    python smoke.py BASE_URL KEY FREE_KEY
KEY is a reseller server key with pricing and a purchase button, FREE_KEY a key with a small
per-minute limit (for the 429). The generated package `dsa_client` is in ./generated.

Every operation of the document is called once through the generated functions, the NDJSON bulk
stream is read line by line with each line parsed by the generated line models, and the error
cases come back as the generated `ErrorBody`. Every result is checked; any failure exits 1.
`mypy --strict` runs over this file and the generated package.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TypeVar

from dsa_client import AuthenticatedClient, Client
from dsa_client.api.availability import check_domain
from dsa_client.api.bulk import bulk_check_domains, bulk_check_domains_post
from dsa_client.api.catalogue import get_tld, list_tlds
from dsa_client.api.dns import lookup_dns
from dsa_client.api.front_page import domain_check_short, front_page, front_stylesheet, widget_script
from dsa_client.api.operations import healthz, readyz
from dsa_client.api.suggestions import suggest_domains
from dsa_client.api.webhooks import (
    create_webhook,
    delete_webhook,
    enable_webhook,
    get_webhook,
    list_webhook_deliveries,
    list_webhooks,
    retry_webhook_delivery,
    rotate_webhook_secret,
    test_webhook,
)
from dsa_client.api.watches import create_watch, delete_watch, get_watch, list_watch_events, list_watches
from dsa_client.api.whois import lookup_whois
from dsa_client.models import (
    BulkEntry,
    BulkRequest,
    BulkResponse,
    BulkSummary,
    CheckResponse,
    CheckResponseMessage,
    CreatedWebhook,
    CreateWebhook,
    DeletedWebhook,
    DeliveryList,
    DnsResponse,
    DnsType,
    DomainCheckResponse,
    ErrorBody,
    FlagType0,
    Liveness,
    LiveStatus,
    Purchase,
    Readiness,
    ReadyStatus,
    RetryAnswer,
    RotatedSecret,
    Status,
    SuggestResponse,
    TestAnswer,
    TldDetail,
    TldList,
    WatchCreated,
    WatchDeleted,
    WatchEvents,
    WatchList,
    WatchRequest,
    WatchResponse,
    WebhookAnswer,
    WebhookList,
    WhoisResponse,
)
from dsa_client.types import Response

T = TypeVar("T")
failures: list[str] = []
calls = 0


def check(condition: bool, what: str) -> None:
    if not condition:
        failures.append(what)


def typed(response: Response[Any], kind: type[T], status: int, what: str) -> T | None:
    """The parsed body of `response` if it has `status` and the generated type `kind`."""
    global calls
    calls += 1
    got = response.parsed
    if response.status_code != status or not isinstance(got, kind):
        failures.append(f"{what}: expected {status} {kind.__name__}, got {int(response.status_code)} "
                        f"{type(got).__name__}: {response.content[:200]!r}")
        return None
    return got


def main(base: str, key: str, free: str) -> int:
    # dsa reads the key from the query string: httpx sends these params with every request. The
    # generated client's bearer `token` is not used by dsa (any non-empty value).
    keyed = AuthenticatedClient(base_url=base, token="unused", httpx_args={"params": {"client_key": key}})
    anonymous = Client(base_url=base)
    bad_key = AuthenticatedClient(base_url=base, token="unused", httpx_args={"params": {"client_key": "dsa_server_nope"}})
    limited = AuthenticatedClient(base_url=base, token="unused", httpx_args={"params": {"client_key": free}})

    # Availability: taken, then available with a price and a checkout button.
    taken = typed(check_domain.sync_detailed(client=keyed, domain="example.com"), CheckResponse, 200, "check taken")
    if taken:
        check(not taken.available and taken.message == CheckResponseMessage.TAKEN, f"example.com taken: {taken}")
        check(taken.verdict.status == Status.TAKEN, f"verdict status {taken.verdict.status}")
    free_name = typed(check_domain.sync_detailed(client=keyed, domain="dsa-demo-available.com", redirect_checkout=True),
                      CheckResponse, 200, "check available")
    if free_name:
        check(free_name.available and free_name.message == CheckResponseMessage.AVAILABLE, "available")
        check(isinstance(free_name.purchase, Purchase) and "domain=dsa-demo-available.com" in free_name.purchase.url,
              f"purchase button for an available name: {free_name.to_dict()}")
    short = typed(domain_check_short.sync_detailed(client=keyed, domain="dsa-demo-available.net", include_price=FlagType0.VALUE_1),
                  DomainCheckResponse, 200, "domain-check")
    if short:
        check(short.available and short.tld == ".net" and short.price is not None, f"domain-check: {short}")

    # Bulk, JSON form: typed as BulkResponse.
    bulk = typed(bulk_check_domains.sync_detailed(client=keyed, domains="example.com,dsa-demo-available.org,exa_mple.com"),
                 BulkResponse, 200, "bulk GET")
    if bulk:
        check([e.domain for e in bulk.domains] == ["example.com", "dsa-demo-available.org"], f"bulk order {bulk.domains}")
        check(bulk.total == 3 and len(bulk.invalid) == 1 and bulk.credits_cost == 2, f"bulk totals {bulk.to_dict()}")
    posted = typed(bulk_check_domains_post.sync_detailed(client=keyed, body=BulkRequest(domains=["example.net", "google.com"])),
                   BulkResponse, 200, "bulk POST")
    if posted:
        check(all(e.success for e in posted.domains), f"bulk POST entries {posted.to_dict()}")

    # Bulk, NDJSON stream: read line by line, each line typed with the generated line models.
    http = keyed.get_httpx_client()
    entries: list[BulkEntry] = []
    summaries: list[BulkSummary] = []
    with http.stream("GET", "/v1/domains/bulk", params={"client_key": key, "domains": "example.com,dsa-demo-available.dev,x"},
                     headers={"Accept": "application/x-ndjson"}) as stream:
        global calls
        calls += 1
        check(stream.status_code == 200, f"stream status {stream.status_code}")
        check(stream.headers.get("content-type", "").startswith("application/x-ndjson"), "stream media type")
        for line in stream.iter_lines():
            if not line:
                continue
            value = json.loads(line)
            if value.get("summary") is True:
                summaries.append(BulkSummary.from_dict(value))
            elif "domain" in value:
                entries.append(BulkEntry.from_dict(value))
            else:
                failures.append(f"stream line that is neither an entry nor the summary: {line}")
    check(sorted(e.domain for e in entries) == ["dsa-demo-available.dev", "example.com"], f"stream entries {entries}")
    check(len(summaries) == 1 and summaries[0].checked == 2 and summaries[0].total == 3, f"stream summary {summaries}")

    # WHOIS, DNS, suggestions.
    whois = typed(lookup_whois.sync_detailed(client=keyed, domain="example.com"), WhoisResponse, 200, "whois")
    if whois:
        check(whois.lookup.registered and whois.whois is not None, f"whois registered: {whois.to_dict()}")
    unregistered = typed(lookup_whois.sync_detailed(client=keyed, domain="dsa-demo-available.net"), WhoisResponse, 200,
                         "whois unregistered")
    if unregistered:
        check(unregistered.whois is None and not unregistered.lookup.registered, "whois of a free name is null")
    dns = typed(lookup_dns.sync_detailed(client=keyed, domain="google.com", types="A,MX,SOA"), DnsResponse, 200, "dns")
    if dns:
        check(dns.types_queried == [DnsType.A, DnsType.MX, DnsType.SOA], f"dns types {dns.types_queried}")
        soa = dns.records.additional_properties.get("SOA", [])
        check(len(soa) == 1 and isinstance(soa[0].serial, int) and soa[0].serial > 0, f"SOA {soa}")
    suggest = typed(suggest_domains.sync_detailed(client=keyed, keyword="best pizza", tlds=".com,.af", limit=5, check=FlagType0.VALUE_1),
                    SuggestResponse, 200, "suggest")
    if suggest:
        check(suggest.total == len(suggest.suggestions) <= 5, f"suggest total {suggest.total}")
        check(all(s.tld in (".com", ".af", ".com.af") for s in suggest.suggestions), "suggestions stay in the TLDs asked")

    # Watches (our extension): create, read, list, events, delete.
    created = typed(create_watch.sync_detailed(client=keyed, body=WatchRequest(domain="example.com", note="smoke")),
                    WatchCreated, 201, "watch create")
    if created:
        wid = created.watch.id
        check(created.watch.domain == "example.com" and created.credits_cost == created.watch.monthly_fee,
              f"watch created: {created.to_dict()}")
        one = typed(get_watch.sync_detailed(wid, client=keyed), WatchResponse, 200, "watch get")
        check(one is not None and one.watch.id == wid, "watch get")
        listed = typed(list_watches.sync_detailed(client=keyed), WatchList, 200, "watch list")
        check(listed is not None and any(w.id == wid for w in listed.watches), "watch listed")
        events = typed(list_watch_events.sync_detailed(wid, client=keyed), WatchEvents, 200, "watch events")
        check(events is not None and isinstance(events.events, list), "watch events")
        gone = typed(delete_watch.sync_detailed(wid, client=keyed), WatchDeleted, 200, "watch delete")
        check(gone is not None and gone.deleted, "watch deleted")

    # Webhooks (our extension): register, read, list, a test event and its delivery, retry,
    # rotate, enable, delete. The URL is a public address nothing answers at: the attempts fail,
    # which the flow does not depend on.
    hook = typed(create_webhook.sync_detailed(client=keyed, body=CreateWebhook(url="https://93.184.215.14/dsa-smoke",
                                                                               event_types=["domain.available"])),
                 CreatedWebhook, 201, "webhook create")
    if hook:
        hid = hook.webhook.id
        check(hook.secret.startswith("whsec_") and hook.webhook.event_types == ["domain.available"],
              f"webhook created: {hook.to_dict()}")
        one_hook = typed(get_webhook.sync_detailed(hid, client=keyed), WebhookAnswer, 200, "webhook get")
        check(one_hook is not None and one_hook.webhook.id == hid, "webhook get")
        hooks = typed(list_webhooks.sync_detailed(client=keyed), WebhookList, 200, "webhook list")
        check(hooks is not None and any(h.id == hid for h in hooks.webhooks), "webhook listed")
        tested = typed(test_webhook.sync_detailed(hid, client=keyed), TestAnswer, 202, "webhook test")
        check(tested is not None and tested.event_id.startswith("evt_"), f"webhook test: {tested}")
        # The test event becomes a delivery once the delivery loop has fanned it out.
        deliveries = None
        for _ in range(40):
            deliveries = typed(list_webhook_deliveries.sync_detailed(hid, client=keyed), DeliveryList, 200,
                               "webhook deliveries")
            if deliveries is None or deliveries.deliveries:
                break
            time.sleep(0.25)
        if deliveries is not None:
            check(len(deliveries.deliveries) == 1 and tested is not None
                  and deliveries.deliveries[0].event_id == tested.event_id, f"deliveries: {deliveries.to_dict()}")
            if deliveries.deliveries:
                did = deliveries.deliveries[0].id
                retried = typed(retry_webhook_delivery.sync_detailed(hid, did, client=keyed), RetryAnswer, 202,
                                "webhook retry")
                check(retried is not None and retried.delivery_id == did, f"retry: {retried}")
        rotated = typed(rotate_webhook_secret.sync_detailed(hid, client=keyed), RotatedSecret, 200, "webhook rotate")
        check(rotated is not None and rotated.secret.startswith("whsec_") and rotated.secret != hook.secret,
              "webhook rotated")
        enabled = typed(enable_webhook.sync_detailed(hid, client=keyed), WebhookAnswer, 200, "webhook enable")
        check(enabled is not None and enabled.webhook.id == hid, "webhook enable")
        dropped = typed(delete_webhook.sync_detailed(hid, client=keyed), DeletedWebhook, 200, "webhook delete")
        check(dropped is not None and dropped.deleted, "webhook deleted")

    # Catalogue and operations (free operations: no key).
    tlds = typed(list_tlds.sync_detailed(client=anonymous), TldList, 200, "tlds")
    if tlds:
        check(tlds.count == len(tlds.tlds) and any(t.tld == ".com" for t in tlds.tlds), "tld list")
    detail = typed(get_tld.sync_detailed(".com", client=anonymous), TldDetail, 200, "tld detail")
    if detail:
        check(detail.registry_suffix == ".com", f"tld detail {detail.registry_suffix}")
    live = typed(healthz.sync_detailed(client=anonymous), Liveness, 200, "healthz")
    check(live is not None and live.status == LiveStatus.OK, "healthz ok")
    ready = typed(readyz.sync_detailed(client=anonymous), Readiness, 200, "readyz")
    check(ready is not None and ready.status == ReadyStatus.READY, "readyz ready")
    page = typed(front_page.sync_detailed(client=anonymous), str, 200, "front page")
    check(page is not None and "<html" in page.lower(), "front page is HTML")
    script = widget_script.sync_detailed(client=anonymous)
    calls += 1
    check(script.status_code == 200 and b"function" in script.content, "widget script")
    sheet = front_stylesheet.sync_detailed(client=anonymous)
    calls += 1
    check(sheet.status_code == 200 and b"{" in sheet.content, "stylesheet")

    # Error cases, each as the generated ErrorBody.
    cases: list[tuple[Response[Any], int, str]] = [
        (check_domain.sync_detailed(client=bad_key, domain="example.com"), 403, "Invalid or disabled client key."),
        (check_domain.sync_detailed(client=keyed, domain=""), 400, "Missing required parameter: domain."),
        (bulk_check_domains.sync_detailed(client=keyed, domains=",".join(["example.com"] * 11)), 400, "Too many domains"),
        (get_tld.sync_detailed(".zzz", client=anonymous), 404, "Unsupported TLD: .zzz"),
        (check_domain.sync_detailed(client=keyed, domain="example.ai"), 502, "Upstream"),
    ]
    for response, status, text in cases:
        error = typed(response, ErrorBody, status, f"error {status}")
        if error:
            check(error.success is False and error.error.startswith(text), f"{status}: {error.error!r}")
    limited_status = []
    for _ in range(10):
        response = lookup_dns.sync_detailed(client=limited, domain="example.com")
        limited_status.append(int(response.status_code))
        if response.status_code == 429:
            error = typed(response, ErrorBody, 429, "error 429")
            check(error is not None and "per minute" in error.error, f"429 text: {error}")
            check(response.headers.get("retry-after", "").isdigit(), "429 Retry-After")
            break
    else:
        failures.append(f"the free key never got a 429: {limited_status}")

    print(f"python client: {calls} calls")
    if failures:
        print(f"python client: {len(failures)} failure(s):", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
