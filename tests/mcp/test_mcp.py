"""dsa's MCP server driven by the official MCP Python SDK (`mcp` on PyPI), over both transports.

Run by .ci/mcp.sh against a standalone dsa on the registry simulator (dsa-sim). Environment:

  DSA_MCP_BASE   the running dsa, e.g. http://127.0.0.1:18931 (`/mcp` and the REST API)
  DSA_BIN        the dsa binary (`dsa keys create`, `dsa usage`, and `dsa mcp` for stdio)
  DSA_CONFIG     its configuration (the same store for the server, the CLI and `dsa mcp`)

Every test makes its own keys. What is checked, per transport (Streamable HTTP at /mcp, with the
modern `server/discover` negotiation and the legacy `initialize` handshake; stdio by `dsa mcp`):
the six tools are listed with valid JSON Schemas; each tool's structured result validates against
its output schema and has the shape of the matching REST answer; the credits charged are the REST
call's (the answers' `credits_*` and the ledger read by `dsa usage`); a bad key and exhausted
credits give the REST error texts. Exit status 1 when any test fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import traceback
from typing import Any

import httpx2 as httpx
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.client.streamable_http import streamable_http_client

BASE = os.environ["DSA_MCP_BASE"].rstrip("/")
DSA = os.environ["DSA_BIN"]
CONFIG = os.environ["DSA_CONFIG"]

TOOLS = {"check_domain", "check_domains", "whois", "dns_records", "suggest_domains", "list_tlds"}
INVALID_KEY = "Invalid or disabled client key."
EXHAUSTED = "Monthly credit limit reached"

# tool → (arguments, REST path, REST query, ledger endpoint or None when free)
CALLS: list[tuple[str, dict[str, Any], str, dict[str, str], str | None]] = [
    ("check_domain", {"domain": "example.com"}, "/v1/domains/check", {"domain": "example.com"}, "check"),
    ("check_domain", {"domain": "dsa-demo-available.com"}, "/v1/domains/check",
     {"domain": "dsa-demo-available.com"}, "check"),
    ("check_domains", {"domains": ["example.com", "example.net", "exa_mple.com"]}, "/v1/domains/bulk",
     {"domains": "example.com,example.net,exa_mple.com"}, "bulk"),
    ("whois", {"domain": "example.com"}, "/v1/whois", {"domain": "example.com"}, "whois"),
    ("dns_records", {"domain": "example.com", "types": ["A", "MX"]}, "/v1/dns",
     {"domain": "example.com", "types": "A,MX"}, "dns"),
    ("suggest_domains", {"keyword": "kabul bakery", "tlds": [".com", ".net"], "limit": 5},
     "/v1/domains/suggest", {"keyword": "kabul bakery", "tlds": ".com,.net", "limit": "5"}, "suggest"),
    ("list_tlds", {"contains": "com", "limit": 500}, "/v1/tlds", {}, None),
]


def dsa(*args: str) -> str:
    """Runs the dsa CLI on the test configuration; its standard output."""
    out = subprocess.run([DSA, *args], capture_output=True, text=True, timeout=60,
                         env=os.environ | {"DSA_CONFIG": CONFIG, "DSA_LOG": "warn"})
    if out.returncode != 0:
        raise RuntimeError(f"dsa {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def new_key(*extra: str) -> str:
    out = dsa("keys", "create", "--kind", "server", "--plan", "free", *extra)
    key = next((w for w in out.split() if w.startswith("dsa_")), None)
    assert key, f"no key in {out!r}"
    return key


def usage(key: str) -> dict[str, Any]:
    return json.loads(dsa("usage", key, "--json"))


def rest(key: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
    r = httpx.get(f"{BASE}{path}", params={"client_key": key, **query}, timeout=30)
    return r.status_code, r.json()


def shape(value: Any) -> Any:
    """A value's shape: object keys with their shapes, a list by its first element, a scalar by type."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def http_client(key: str, mode: str = "auto", bearer: bool = False) -> Client:
    if bearer:
        transport = streamable_http_client(f"{BASE}/mcp", http_client=create_mcp_http_client(
            headers={"Authorization": f"Bearer {key}"}))
        return Client(transport, mode=mode)
    return Client(f"{BASE}/mcp?client_key={key}", mode=mode)


def stdio_client(key: str, mode: str = "auto", relay: bool = False) -> Client:
    """`dsa mcp`, running the service in process; with `relay`, `dsa mcp --server` relaying to BASE."""
    params = StdioServerParameters(command=DSA, args=["mcp", *(["--server", BASE] if relay else [])],
                                   env={"DSA_CONFIG": CONFIG, "DSA_CLIENT_KEY": key, "DSA_LOG": "warn"})
    return Client(params, mode=mode)


async def listed_tools(client: Client) -> dict[str, Any]:
    listing = await client.list_tools()
    return {t.name: t for t in listing.tools}


def check_tool_list(tools: dict[str, Any]) -> None:
    assert set(tools) == TOOLS, f"tools listed: {sorted(tools)}"
    for name, tool in tools.items():
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema.get("type") == "object", f"{name}: input schema is not an object"
        assert tool.output_schema, f"{name}: no output schema"
        Draft202012Validator.check_schema(tool.output_schema)
        assert tool.output_schema.get("type") == "object", f"{name}: output schema is not an object"
        assert "credit" in tool.description.lower() or "free" in tool.description.lower(), \
            f"{name}: the description does not say what it costs"
    # Inputs are typed: the REST endpoints' numbers, booleans and lists are JSON types here.
    assert tools["check_domains"].input_schema["properties"]["domains"]["maxItems"] == 10
    assert "domain" in tools["check_domain"].input_schema["required"]


async def call(client: Client, tools: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{name}({args}) failed: {text}"
    body = result.structured_content
    assert isinstance(body, dict), f"{name}: no structured content"
    Draft202012Validator(tools[name].output_schema).validate(body)
    assert json.loads(text) == body, f"{name}: the text content is not the structured result"
    return body


async def calls_match_rest(client: Client, key: str, label: str, same_process: bool) -> tuple[dict[str, int], int]:
    """Calls every tool, each next to its REST call on the same key, and compares them.

    `same_process`: the MCP server is the REST server (HTTP), so each MCP answer's
    `credits_remaining` is exactly the REST answer's less the MCP cost. Over stdio, `dsa mcp` is
    another process on the same store: its own answers count down by their costs, and the
    ledger (checked by the callers) holds both processes' charges.
    """
    tools = await listed_tools(client)
    check_tool_list(tools)
    spent: dict[str, int] = {}
    last_mcp_remaining: int | None = None
    before = usage(key)["used"]
    for name, args, path, query, endpoint in CALLS:
        status, via_rest = rest(key, path, query)
        assert status == 200, f"{label} REST {path}: {status} {via_rest}"
        via_mcp = await call(client, tools, name, args)
        if name == "list_tlds":
            wanted = [e for e in via_rest["tlds"] if "com" in e["tld"]]
            assert via_mcp["tlds"] == wanted and via_mcp["count"] == len(wanted), f"{label}: list_tlds filter"
            continue
        assert shape(via_mcp) == shape(via_rest), f"{label} {name}: shape differs\nMCP  {via_mcp}\nREST {via_rest}"
        assert via_mcp["credits_cost"] == via_rest["credits_cost"], f"{label} {name}: cost differs"
        # Charged as REST: the MCP call, made right after, left exactly its cost less.
        exact = via_rest["credits_remaining"] - via_mcp["credits_cost"]
        if same_process:
            assert via_mcp["credits_remaining"] == exact, f"{label} {name}: {via_rest} then {via_mcp}"
        else:
            # Two processes on one store: `dsa mcp` re-reads the other's charges, `dsa serve`
            # does not, so only its own calls are sure to count down by their costs; the
            # ledger, checked by the caller, is exact.
            if last_mcp_remaining is not None:
                assert via_mcp["credits_remaining"] <= last_mcp_remaining - via_mcp["credits_cost"], \
                    f"{label} {name}: {last_mcp_remaining} then {via_mcp}"
        last_mcp_remaining = via_mcp["credits_remaining"]
        if name == "check_domain":
            assert (via_mcp["domain"], via_mcp["available"]) == (via_rest["domain"], via_rest["available"])
        if name == "check_domains":
            assert [e["domain"] for e in via_mcp["domains"]] == [e["domain"] for e in via_rest["domains"]]
            assert via_mcp["invalid"] == via_rest["invalid"] and via_mcp["invalid"], f"{label}: invalid entries"
        if name == "suggest_domains":
            assert [s["domain"] for s in via_mcp["suggestions"]] == [s["domain"] for s in via_rest["suggestions"]]
        if name == "dns_records":
            # The same records; TTLs count down in the resolvers' caches between the two calls.
            without_ttl = lambda records: {t: [{k: v for k, v in r.items() if k != "ttl"} for r in rs]  # noqa: E731
                                           for t, rs in records.items()}
            assert without_ttl(via_mcp["records"]) == without_ttl(via_rest["records"]), (via_mcp, via_rest)
        if name == "whois":
            assert via_mcp["whois"] == via_rest["whois"]
        spent[endpoint] = spent.get(endpoint, 0) + via_rest["credits_cost"] + via_mcp["credits_cost"]
    return spent, before


async def test_http_tools_match_rest_and_are_charged_as_rest() -> None:
    key = new_key()
    async with http_client(key) as client:
        # The SDK's default negotiation found the current protocol (`server/discover`).
        assert client.protocol_version == "2026-07-28", client.protocol_version
        spent, before = await calls_match_rest(client, key, "http", same_process=True)
    after = usage(key)
    assert after["used"] - before == sum(spent.values()), f"ledger used {after['used']}, spent {spent}"
    for endpoint, credits in spent.items():
        assert after["by_endpoint"].get(endpoint) == credits, f"ledger {after['by_endpoint']} vs spent {spent}"


async def test_http_legacy_handshake_with_bearer_key() -> None:
    key = new_key()
    async with http_client(key, mode="legacy", bearer=True) as client:
        # The `initialize` handshake of the protocol versions before 2026-07-28.
        assert client.protocol_version < "2026-07-28", client.protocol_version
        tools = await listed_tools(client)
        check_tool_list(tools)
        body = await call(client, tools, "check_domain", {"domain": "example.org"})
        assert body["credits_cost"] == 1 and body["domain"] == "example.org"
    assert usage(key)["by_endpoint"] == {"check": 1}


async def test_http_tool_errors_carry_the_rest_text() -> None:
    key = new_key()
    async with http_client(key) as client:
        bad = await client.call_tool("check_domain", {"domain": "exa_mple.com"})
        status, via_rest = rest(key, "/v1/domains/check", {"domain": "exa_mple.com"})
        assert bad.is_error and status == 400
        assert bad.content[0].text == via_rest["error"], (bad.content[0].text, via_rest)
        assert bad.meta and bad.meta.get("dsa/status") == 400, bad.meta
        typed = await client.call_tool("check_domains", {"domains": "example.com"})
        assert typed.is_error and "Invalid arguments for check_domains" in typed.content[0].text
    assert usage(key)["used"] == 0, "errors are not charged"


async def test_http_bad_key_and_origin_are_refused_before_mcp() -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    r = httpx.post(f"{BASE}/mcp?client_key=dsa_server_not_a_key", json=init, headers=headers)
    assert (r.status_code, r.json()["error"]) == (403, INVALID_KEY), r.text
    r = httpx.post(f"{BASE}/mcp", json=init, headers=headers | {"Authorization": "Bearer dsa_server_not_a_key"})
    assert (r.status_code, r.json()["error"]) == (403, INVALID_KEY), r.text
    key = new_key()
    r = httpx.post(f"{BASE}/mcp?client_key={key}", json=init, headers=headers | {"Origin": "http://evil.example"})
    assert r.status_code == 403 and "Server keys" in r.json()["error"], r.text
    r = httpx.get(f"{BASE}/mcp?client_key={key}", headers=headers)
    assert r.status_code == 405 and r.json()["success"] is False, r.text
    failed = False
    try:
        async with http_client("dsa_server_not_a_key") as client:
            await client.list_tools()
    except Exception:  # noqa: BLE001 - the SDK's own error type for an HTTP 403 is its business
        failed = True
    assert failed, "the SDK connected with an invalid key"


async def test_stdio_tools_match_rest_and_are_charged_as_rest() -> None:
    key = new_key()
    async with stdio_client(key) as client:
        assert client.protocol_version == "2026-07-28", client.protocol_version
        spent, before = await calls_match_rest(client, key, "stdio", same_process=False)
        async with http_client(key) as http:
            stdio_tools = {n: (t.input_schema, t.output_schema) for n, t in (await listed_tools(client)).items()}
            http_tools = {n: (t.input_schema, t.output_schema) for n, t in (await listed_tools(http)).items()}
            assert stdio_tools == http_tools, "the two transports list different schemas"
    after = usage(key)
    assert after["used"] - before == sum(spent.values()), f"ledger used {after['used']}, spent {spent}"
    for endpoint, credits in spent.items():
        assert after["by_endpoint"].get(endpoint) == credits, f"ledger {after['by_endpoint']} vs spent {spent}"


async def test_stdio_bad_key_answers_the_rest_text() -> None:
    # Over the `initialize` handshake this time (the other stdio tests negotiate 2026-07-28).
    async with stdio_client("dsa_server_not_a_key", mode="legacy") as client:
        assert client.protocol_version < "2026-07-28", client.protocol_version
        tools = await listed_tools(client)
        assert set(tools) == TOOLS
        result = await client.call_tool("check_domain", {"domain": "example.com"})
        assert result.is_error and result.content[0].text == INVALID_KEY, result
        assert result.meta and result.meta.get("dsa/status") == 403


async def test_stdio_relay_to_a_running_server() -> None:
    """`dsa mcp --server URL`: the server's /mcp does the work, so it is one process with REST."""
    key = new_key()
    async with stdio_client(key, relay=True) as client:
        spent, before = await calls_match_rest(client, key, "relay", same_process=True)
    after = usage(key)
    assert after["used"] - before == sum(spent.values()), f"ledger used {after['used']}, spent {spent}"
    async with stdio_client(key, mode="legacy", relay=True) as client:
        assert client.protocol_version < "2026-07-28", client.protocol_version
        tools = await listed_tools(client)
        assert (await call(client, tools, "check_domain", {"domain": "example.com"}))["credits_cost"] == 1
    # A bad key is refused by the server's prelude: the relay answers its text as the error.
    failed = None
    try:
        async with stdio_client("dsa_server_not_a_key", relay=True) as client:
            await client.list_tools()
    except Exception as e:  # noqa: BLE001 - the SDK's error type is its business; the text is ours
        failed = e
    assert failed is not None and INVALID_KEY in repr(failed), repr(failed)


async def test_exhausted_credits_on_both_transports() -> None:
    key = new_key()
    names = [f"mcp-exhaust-{i}.com" for i in range(10)]
    # 490 of the free plan's 500 credits through REST, the last 10 through MCP: one allowance.
    for _ in range(49):
        status, body = rest(key, "/v1/domains/bulk", {"domains": ",".join(names)})
        assert status == 200 and body["credits_cost"] == 10, body
    async with http_client(key) as client:
        tools = await listed_tools(client)
        last = await call(client, tools, "check_domains", {"domains": names})
        assert last["credits_remaining"] == 0, last
        refused = await client.call_tool("check_domain", {"domain": "example.com"})
        assert refused.is_error and refused.content[0].text == EXHAUSTED, refused
        assert refused.meta.get("dsa/status") == 429 and refused.meta.get("dsa/retry_after_secs", 0) > 0
    status, body = rest(key, "/v1/domains/check", {"domain": "example.com"})
    assert (status, body["error"]) == (429, EXHAUSTED)
    async with stdio_client(key) as client:
        refused = await client.call_tool("whois", {"domain": "example.com"})
        assert refused.is_error and refused.content[0].text == EXHAUSTED, refused
    assert usage(key)["used"] == 500


TESTS = [
    test_http_tools_match_rest_and_are_charged_as_rest,
    test_http_legacy_handshake_with_bearer_key,
    test_http_tool_errors_carry_the_rest_text,
    test_http_bad_key_and_origin_are_refused_before_mcp,
    test_stdio_tools_match_rest_and_are_charged_as_rest,
    test_stdio_bad_key_answers_the_rest_text,
    test_stdio_relay_to_a_running_server,
    test_exhausted_credits_on_both_transports,
]


def main() -> int:
    wanted = sys.argv[1:]
    failures = 0
    for test in TESTS:
        if wanted and not any(w in test.__name__ for w in wanted):
            continue
        started = time.monotonic()
        try:
            asyncio.run(asyncio.wait_for(test(), timeout=180))
            print(f"PASS {test.__name__} ({time.monotonic() - started:.1f} s)", flush=True)
        except Exception:  # noqa: BLE001 - report every failure, then fail the run
            failures += 1
            print(f"FAIL {test.__name__}", flush=True)
            traceback.print_exc()
    print(f"mcp: {failures} failed" if failures else "mcp: all passed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
