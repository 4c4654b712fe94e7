"""Schemathesis hooks for dsa's contract run (loaded by .ci/contract.sh via SCHEMATHESIS_HOOKS).

`application/x-ndjson` (the streaming form of /v1/domains/bulk) has no built-in reader: this one
checks the stream's framing itself — every line is a JSON object, every line but the last is a
domain entry carrying its `domain`, the last is the summary (`"summary": true`) or, when the
request's time ran out, an error line — and hands the text to schemathesis, which checks it
against the documented body (a string of media type `application/x-ndjson`). Each line is
validated against the line schema (`x-itemSchema`) by .ci/contract_live.py.

A bulk job's results (`/v1/jobs/{id}/results`) are NDJSON too, without a summary: one result per
line (each with its `domain` and `charged`), an empty page allowed. A job's upload may be NDJSON
(one JSON value per line): generated bodies are sent as text.
"""

import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson_upload(ctx, value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return (json.dumps(value) + "\n").encode("utf-8")


@schemathesis.deserializer("application/x-ndjson")
def ndjson(ctx, response):
    text = response.content.decode("utf-8")
    if "/v1/jobs/" in str(getattr(response, "url", "") or getattr(response.request, "url", "")):
        for line in text.split("\n"):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict) or "domain" not in row or "charged" not in row:
                raise ValueError(f"a job result line is not a result: {row!r}")
        return text
    if not text.endswith("\n"):
        raise ValueError("NDJSON stream does not end with a newline")
    lines = [json.loads(line) for line in text.split("\n") if line.strip()]
    if not lines:
        raise ValueError("empty NDJSON stream")
    *entries, summary = lines
    for entry in entries:
        if not isinstance(entry, dict) or "domain" not in entry or entry.get("summary"):
            raise ValueError(f"NDJSON entry line is not a domain entry: {entry!r}")
    timed_out = isinstance(summary, dict) and summary.get("success") is False and "domain" not in summary
    if not timed_out and (not isinstance(summary, dict) or summary.get("summary") is not True):
        raise ValueError(f"NDJSON stream does not end with a summary line: {summary!r}")
    if not timed_out and summary.get("checked") is not None and summary["checked"] != len(entries):
        raise ValueError(f"summary says {summary['checked']} checked, stream has {len(entries)} entries")
    return text
