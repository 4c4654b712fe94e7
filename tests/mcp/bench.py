"""The MCP `check_domain` round trip against the REST check's, for a cached verdict (issue 27's note).

Usage (by .ci/mcp.sh --bench N): bench.py N, with DSA_MCP_BASE, DSA_BIN and DSA_CONFIG as for
test_mcp.py. One reseller key; the name's verdict is cached by a first call. Then N rounds, each
timing, alternately first:

  rest     GET /v1/domains/check?client_key=…&domain=…            (one HTTP/1.1 keep-alive client)
  mcp      POST /mcp, one JSON-RPC tools/call of check_domain     (the same client)
  mcp-sdk  the official Python SDK's Client.call_tool over /mcp   (its own client; adds the SDK's
           parsing and output-schema validation)

and prints the medians and p95s, the ratios to REST, and the median of the per-round MCP/REST
ratios (the two timed back to back). Every call is a charged check (1 credit).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

import httpx2 as httpx
from mcp import Client

BASE = os.environ["DSA_MCP_BASE"].rstrip("/")
DOMAIN = "example.com"


def key() -> str:
    out = subprocess.run([os.environ["DSA_BIN"], "keys", "create", "--plan", "reseller"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return next(w for w in out.split() if w.startswith("dsa_"))


def summary(name: str, samples: list[float], rest_p50: float | None) -> str:
    ordered = sorted(samples)
    p50, p95 = statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]
    ratio = f"  {p50 / rest_p50:.2f}x REST" if rest_p50 else ""
    return f"{name:8} p50 {p50 * 1000:7.3f} ms  p95 {p95 * 1000:7.3f} ms{ratio}"


async def main(rounds: int) -> None:
    k = key()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "check_domain", "arguments": {"domain": DOMAIN}}}
    body = json.dumps(call).encode()
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-06-18"}
    rest, mcp, sdk = [], [], []
    with httpx.Client(base_url=BASE) as http:
        assert http.get("/v1/domains/check", params={"client_key": k, "domain": DOMAIN}).status_code == 200
        for i in range(rounds):
            order = ("rest", "mcp") if i % 2 == 0 else ("mcp", "rest")
            for which in order:
                started = time.perf_counter()
                if which == "rest":
                    r = http.get("/v1/domains/check", params={"client_key": k, "domain": DOMAIN})
                    elapsed = time.perf_counter() - started
                    assert r.status_code == 200 and r.json()["verdict"]["cached"], r.text
                    rest.append(elapsed)
                else:
                    r = http.post(f"/mcp?client_key={k}", content=body, headers=headers)
                    elapsed = time.perf_counter() - started
                    result = r.json()["result"]
                    assert not result["isError"] and result["structuredContent"]["verdict"]["cached"], r.text
                    mcp.append(elapsed)
    async with Client(f"{BASE}/mcp?client_key={k}") as client:
        await client.list_tools()
        for _ in range(rounds):
            started = time.perf_counter()
            result = await client.call_tool("check_domain", {"domain": DOMAIN})
            sdk.append(time.perf_counter() - started)
            assert not result.is_error
    rest_p50 = statistics.median(rest)
    print(f"bench: {rounds} cached check_domain round trips each, {BASE}")
    print(summary("rest", rest, None))
    print(summary("mcp", mcp, rest_p50))
    print(summary("mcp-sdk", sdk, rest_p50))
    # Each round timed REST and MCP back to back: the median of the per-round ratios is less
    # sensitive to a busy machine than the ratio of the medians.
    paired = statistics.median(m / r for m, r in zip(mcp, rest))
    print(f"paired   median of per-round mcp/rest ratios {paired:.2f}x")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
