#!/usr/bin/env python3
"""Rewrites the widget snippet in docs/widget-and-portal.md with the current version and SRI hash of
api/static/widget.js (the same values the server computes: SHA-384, version = first 12 hex digits).
`--check` only compares and exits 1 when they differ."""
import base64
import hashlib
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
digest = hashlib.sha384((root / "api/static/widget.js").read_bytes()).digest()
version, integrity = digest[:6].hex(), "sha384-" + base64.b64encode(digest).decode()
doc_name = "docs/widget-and-portal.md"
doc_path = root / doc_name
doc = doc_path.read_text(encoding="utf-8")
new = re.sub(r"/widget\.js\?v=[0-9a-f]+", f"/widget.js?v={version}", doc)
new = re.sub(r'integrity="sha384-[A-Za-z0-9+/=]+"', f'integrity="{integrity}"', new)
if "--check" in sys.argv:
    if new != doc:
        print(f"{doc_name} widget snippet is stale: v={version} integrity={integrity}", file=sys.stderr)
        sys.exit(1)
    print(f"{doc_name} widget snippet is current: v={version}")
else:
    doc_path.write_text(new, encoding="utf-8")
    print(f"{doc_name}: widget.js?v={version} integrity={integrity}")
