"""Small loopback HTTP servers for the tests: a scripted server (retries), a proxy in front of the
live server (idempotency, dropped event streams) and a webhook receiver."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import urlsplit


class Recorded:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.method, self.path, self.headers, self.body = method, path, headers, body
        self.at = time.monotonic()


Reply = Tuple[int, Dict[str, str], bytes]


class _Server:
    def __init__(self, handler: type) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self.requests: List[Recorded] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _read(h: BaseHTTPRequestHandler) -> Recorded:
    n = int(h.headers.get("Content-Length") or 0)
    body = h.rfile.read(n) if n else b""
    return Recorded(h.command, h.path, {k.lower(): v for k, v in h.headers.items()}, body)


class ScriptedServer(_Server):
    """Answers each request with the next reply of the script of its path (the last one repeats)."""

    def __init__(self) -> None:
        self.scripts: Dict[str, List[Reply]] = {}
        super().__init__(_ScriptedHandler)

    def script(self, path: str, *replies: Reply) -> None:
        self.scripts[path] = list(replies)

    def hits(self, path: str) -> List[Recorded]:
        return [r for r in self.requests if r.path.split("?")[0] == path]


class _ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        srv: ScriptedServer = self.server.owner  # type: ignore[attr-defined]
        rec = _read(self)
        path = rec.path.split("?")[0]
        with srv.lock:
            srv.requests.append(rec)
            script = srv.scripts.get(path)
            if not script:
                reply: Reply = (404, {}, json.dumps({"error": {"message": "no script", "type": "invalid_request_error", "param": None, "code": "not_found"}}).encode())
            else:
                reply = script.pop(0) if len(script) > 1 else script[0]
        status, headers, body = reply
        self.send_response(status)
        headers = {"Content-Type": "application/json", **headers}
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


def error_body(code: str, message: str = "scripted", type_: str = "invalid_request_error", **extra: Any) -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "param": None, "code": code, **extra}}).encode()


class Proxy(_Server):
    """Forwards every request to ``upstream``; ``decide(recorded, status)`` may return ``"swallow"``
    to close the client's connection instead of answering (the server did the work), and
    ``cut_sse_after`` closes the first event stream after that many events."""

    def __init__(self, upstream: str) -> None:
        u = urlsplit(upstream)
        self.upstream_host, self.upstream_port = u.hostname or "127.0.0.1", u.port or 80
        self.decide: Callable[[Recorded, int], str] = lambda rec, status: "forward"
        self.cut_sse_after: Optional[int] = None
        self.cuts = 0
        self.replies: List[Tuple[Recorded, int, Dict[str, str], bytes]] = []
        super().__init__(_ProxyHandler)


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        proxy: Proxy = self.server.owner  # type: ignore[attr-defined]
        rec = _read(self)
        with proxy.lock:
            proxy.requests.append(rec)
        conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=300)
        headers = {k: v for k, v in rec.headers.items() if k not in ("host", "connection", "accept-encoding")}
        conn.request(rec.method, rec.path, body=rec.body or None, headers=headers)
        resp = conn.getresponse()
        resp_headers = {k.lower(): v for k, v in resp.getheaders()}
        if resp_headers.get("content-type", "").startswith("text/event-stream"):
            self._stream(proxy, resp, resp_headers)
            conn.close()
            return
        body = resp.read()
        conn.close()
        with proxy.lock:
            proxy.replies.append((rec, resp.status, resp_headers, body))
            action = proxy.decide(rec, resp.status)
        if action == "swallow":
            # The server did the work; the client never hears of it.
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(resp.status)
        for k, v in resp_headers.items():
            if k not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, proxy: Proxy, resp: http.client.HTTPResponse, headers: Dict[str, str]) -> None:
        self.send_response(resp.status)
        for k, v in headers.items():
            if k not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        cut = None
        with proxy.lock:
            if proxy.cut_sse_after is not None and proxy.cuts == 0:
                cut = proxy.cut_sse_after
        events = 0
        while True:
            line = resp.readline()
            if not line:
                return
            self.wfile.write(line)
            self.wfile.flush()
            if line in (b"\n", b"\r\n"):
                events += 1
                if cut is not None and events >= cut:
                    with proxy.lock:
                        proxy.cuts += 1
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class Receiver(_Server):
    """A webhook receiver: records every POST, answers 200."""

    def __init__(self) -> None:
        super().__init__(_ReceiverHandler)

    def wait_for(self, pred: Callable[[Recorded], bool], timeout: float = 60.0) -> Recorded:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for r in self.requests:
                    if pred(r):
                        return r
            time.sleep(0.1)
        raise AssertionError(f"no matching delivery within {timeout}s; got {len(self.requests)}")


class _ReceiverHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        srv: Receiver = self.server.owner  # type: ignore[attr-defined]
        rec = _read(self)
        rec.headers = {k.lower(): v for k, v in self.headers.items()}
        with srv.lock:
            srv.requests.append(rec)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
