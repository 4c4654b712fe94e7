"""A webhook receiver for dsa's tests: verifies every delivery with the `standardwebhooks`
package (PyPI, the Standard Webhooks reference library; version pinned in requirements.txt).

Started by the Rust tests (tests/tests/app/webhooks.rs) on loopback:

    python3 receiver.py [--port N]

prints `PORT <n>` once listening, then serves:

* `POST /_config` {"secrets": [...], "mode": "ok"|"fail"|"redirect"|"huge"|"slow", "delay": s}
  sets the secrets deliveries are verified with and how deliveries are answered;
* `GET /_received` lists every delivery attempt seen: webhook-id, type, which secrets verified
  its signature (indexes into `secrets`), the status answered;
* any other `POST` is a delivery: verified with each secret, recorded, answered per `mode`
  ("ok": 204, "fail": 503, "redirect": 302 to another address, "huge": 200 with 8 MiB of body,
  "slow": 200 after `delay` seconds).
"""

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

LOCK = threading.Lock()
STATE = {"secrets": [], "mode": "ok", "delay": 0.0, "received": []}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _body(self):
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self):
        if self.path == "/_received":
            with LOCK:
                body = json.dumps(STATE["received"]).encode()
            self._answer(200, body, [("content-type", "application/json")])
        else:
            self._answer(404)

    def do_POST(self):
        body = self._body()
        if self.path == "/_config":
            config = json.loads(body)
            with LOCK:
                for k in ("secrets", "mode", "delay"):
                    if k in config:
                        STATE[k] = config[k]
            self._answer(204)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        with LOCK:
            secrets, mode, delay = list(STATE["secrets"]), STATE["mode"], STATE["delay"]
        verified, payload, errors = [], None, []
        for i, secret in enumerate(secrets):
            try:
                payload = Webhook(secret).verify(body, headers)
                verified.append(i)
            except WebhookVerificationError as e:
                errors.append(str(e))
        status = {"ok": 204, "fail": 503, "redirect": 302, "huge": 200, "slow": 200}.get(mode, 204)
        record = {
            "id": headers.get("webhook-id"),
            "timestamp": headers.get("webhook-timestamp"),
            "signatures": len((headers.get("webhook-signature") or "").split()),
            "type": (payload or {}).get("type"),
            "data": (payload or {}).get("data"),
            "verified": verified,
            "errors": errors,
            "status": status,
            "mode": mode,
        }
        with LOCK:
            STATE["received"].append(record)
        if mode == "redirect":
            self._answer(302, b"", [("location", "http://127.0.0.1:1/elsewhere")])
        elif mode == "fail":
            self._answer(503, b"down")
        elif mode == "slow":
            time.sleep(float(delay))
            self._answer(200, b"late")
        elif mode == "huge":
            chunk = b"x" * 65536
            total = 128 * len(chunk)
            self.send_response(200)
            self.send_header("content-length", str(total))
            self.end_headers()
            try:
                for _ in range(128):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            self._answer(204)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
