"""A fault-injecting proxy in front of the real API server, for the faults a real
server cannot be made to produce on demand: a storm of 429s, and watches cut (at
the end of a chunk, as a restarted server ends them, or mid-stream, as a crash or
a cut cable does). Everything else is the real server's answer, passed through.

It also holds requests in flight (`hold`): a client killed meanwhile never had them
reach the server, as a binding lost with the process that sent it.

It serves TLS with a certificate of the control plane's CA, and passes each
request's Authorization header on, so a client sees the same server, with the
same users, as without it. It records every request, and each answer's status,
for tests that count what a client asked.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

_PASSED = ("Authorization", "Content-Type", "Accept", "User-Agent")


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str  # without the query
    watch: bool
    status: int  # what the client was answered (0: cut before an answer)


class _Watch:
    """An open watch: its upstream connection, closed to end it from another thread."""

    def __init__(self, upstream: http.client.HTTPSConnection) -> None:
        self.upstream = upstream
        self.abruptly = False

    def cut(self, abruptly: bool) -> None:
        self.abruptly = abruptly
        sock = self.upstream.sock
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class FaultProxy:
    """Serves on 127.0.0.1 while the context lasts; `url` is where to point a client."""

    def __init__(self, upstream: str, serving: ssl.SSLContext, trusting: ssl.SSLContext) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 443)
        self.serving, self.trusting = serving, trusting
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._throttled = 0
        self._retry_after = 1
        self._watches: set[_Watch] = set()
        self._hold: str | None = None  # requests whose path ends so wait, then are dropped
        self._released = threading.Event()
        self.held: list[str] = []  # the paths of the requests held so far

    def __enter__(self) -> FaultProxy:
        handler = type("Handler", (_Handler,), {"proxy": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.socket = self.serving.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        return self

    def __exit__(self, *_: object) -> None:
        self.drop()
        self.drop_watches()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    # --- faults -----------------------------------------------------------------

    def throttle(self, requests: int, retry_after_s: int = 1) -> None:
        """The next `requests` requests get 429 Too Many Requests, with Retry-After."""
        with self._lock:
            self._throttled, self._retry_after = requests, retry_after_s

    def drop_watches(self, abruptly: bool = False) -> None:
        """End every open watch: cleanly (the chunked reply ends), or `abruptly` (the
        connection is cut mid-reply)."""
        with self._lock:
            watches = list(self._watches)
        for watch in watches:
            watch.cut(abruptly)

    def hold(self, path_end: str) -> None:
        """Requests whose path ends with `path_end` wait here, unanswered, until `drop`."""
        with self._lock:
            self._hold = path_end
            self._released.clear()

    def drop(self) -> None:
        """The requests held are dropped (their connections closed, nothing passed on),
        and no more are held."""
        with self._lock:
            self._hold = None
        self._released.set()

    @property
    def open_watches(self) -> int:
        with self._lock:
            return len(self._watches)

    # --- for the handler ------------------------------------------------------------

    def _held(self, path: str) -> bool:
        """Whether the request for `path` is to be dropped, after waiting for `drop`."""
        with self._lock:
            if self._hold is None or not path.endswith(self._hold):
                return False
            self.held.append(path)
        self._released.wait()
        return True

    def _take_throttle(self) -> int | None:
        with self._lock:
            if self._throttled <= 0:
                return None
            self._throttled -= 1
            return self._retry_after

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    @contextmanager
    def _watching(self, watch: _Watch) -> Iterator[None]:
        with self._lock:
            self._watches.add(watch)
        try:
            yield
        finally:
            with self._lock:
                self._watches.discard(watch)


class _Handler(BaseHTTPRequestHandler):
    proxy: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._forward()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _forward(self) -> None:
        url = urlsplit(self.path)
        watch = parse_qs(url.query).get("watch", ["false"])[0] in ("true", "1")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if self.proxy._held(url.path):
            self.proxy._record(Request(self.command, url.path, watch, 0))
            self.close_connection = True
            return
        retry_after = self.proxy._take_throttle()
        if retry_after is not None:
            self.proxy._record(Request(self.command, url.path, watch, 429))
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "TooManyRequests",
                "message": "too many requests (the test's fault proxy)",
                "code": 429,
            }
            self._reply(429, json.dumps(status).encode(), {"Retry-After": str(retry_after)})
            return
        upstream = http.client.HTTPSConnection(
            *self.proxy.upstream, context=self.proxy.trusting, timeout=None if watch else 60
        )
        headers = {k: v for k in _PASSED if (v := self.headers.get(k)) is not None}
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            self.proxy._record(Request(self.command, url.path, watch, answer.status))
            if watch and answer.status == 200:
                self._stream(upstream, answer)
            else:
                kept = {k: v for k in ("Content-Type", "Retry-After") if (v := answer.getheader(k))}
                self._reply(answer.status, answer.read(), kept)
        except OSError:
            self.proxy._record(Request(self.command, url.path, watch, 0))
            self.close_connection = True
        finally:
            upstream.close()

    def _reply(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(
        self, upstream: http.client.HTTPSConnection, answer: http.client.HTTPResponse
    ) -> None:
        watch = _Watch(upstream)
        self.send_response(200)
        self.send_header("Content-Type", answer.getheader("Content-Type") or "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with self.proxy._watching(watch):
            try:
                while chunk := answer.read1(65536):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            except (OSError, http.client.HTTPException):
                pass  # cut: upstream closed under the read
        if watch.abruptly:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # no last chunk: a crash's end
            return
        try:  # the reply ends; the connection stays open for the next, as the server's
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
