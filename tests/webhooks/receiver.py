"""A webhook receiver for Sovereign's end-to-end tests.

It verifies every message with the official Standard Webhooks library
(`standardwebhooks`), as a real receiver would, and processes each
webhook-id once: a message whose id was processed already is answered 200
and counted as a duplicate, not processed again.

    python receiver.py --host 127.0.0.2

prints "PORT <n>" once it listens. The test drives it through two control
routes (no signature):

    POST /_control/config  {"paths": {"/a": {"secrets": ["whsec_…"], "require_all": false,
                            "fail_first": 2, "fail_types": ["workflow.run.succeeded"]}}}
    GET  /_control/state   what each path received

Any other POST is a delivery to that path. A path that is not configured
answers 404. A message whose signature does not verify (with any of the
path's secrets, or with every one of them when require_all is set) is
answered 400 and counted in "rejected". The first fail_first attempts of
a message whose event type is in fail_types are answered 500 (forced
failures), after verification.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook, WebhookVerificationError

lock = threading.Lock()
config = {}  # path -> settings
state = {}  # path -> what it received


def path_state(path):
    return state.setdefault(path, {
        "processed": {},    # webhook-id -> event
        "attempts": {},     # webhook-id -> attempts seen (verified)
        "duplicates": {},   # webhook-id -> times seen again after processing
        "conflicts": [],    # webhook-ids seen with two different events
        "rejected": 0,
        "rejections": [],
        "signatures": {},   # webhook-id -> number of signatures in the last message
        "last": None,       # the last verified message: headers and body
    })


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/_control/state":
            with lock:
                return self.reply(200, state)
        self.reply(404, {"error": "no such path"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path == "/_control/config":
            with lock:
                config.clear()
                config.update(json.loads(body)["paths"])
            return self.reply(200, {"ok": True})
        with lock:
            cfg = config.get(self.path)
            if cfg is None:
                return self.reply(404, {"error": "not configured"})
            st = path_state(self.path)
            headers = {k: v for k, v in self.headers.items()}
            checks = []
            for secret in cfg["secrets"]:
                try:
                    Webhook(secret).verify(body, headers)
                    checks.append(True)
                except WebhookVerificationError as e:
                    checks.append(False)
                    st["rejections"].append(str(e))
            ok = all(checks) if cfg.get("require_all") else any(checks)
            if not checks or not ok:
                st["rejected"] += 1
                return self.reply(400, {"error": "signature does not verify"})
            msg_id = headers.get("webhook-id") or headers.get("Webhook-Id")
            event = json.loads(body)
            st["attempts"][msg_id] = st["attempts"].get(msg_id, 0) + 1
            st["signatures"][msg_id] = len((headers.get("webhook-signature") or headers.get("Webhook-Signature")).split(" "))
            st["last"] = {"headers": headers, "body": body.decode()}
            if event["type"] in cfg.get("fail_types", []) and st["attempts"][msg_id] <= cfg.get("fail_first", 0):
                return self.reply(500, {"error": "forced failure"})
            if msg_id in st["processed"]:
                # Already processed: acknowledge, do not process again.
                st["duplicates"][msg_id] = st["duplicates"].get(msg_id, 0) + 1
                if st["processed"][msg_id]["id"] != event["id"]:
                    st["conflicts"].append(msg_id)
                return self.reply(200, {"duplicate": True})
            st["processed"][msg_id] = event
            return self.reply(200, {"ok": True})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    print("PORT %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
