"""The metrics over HTTP (`/metrics`, `/healthz`, `/readyz`) and the /debug endpoints
on demand: a profile, a pod explained. kube-scheduler serves these from
`cmd/kube-scheduler/app/server.go`, apart from the metrics' definitions.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import yaml
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from optimist.explain import Explainer, ExplainError
from optimist.metrics.definitions import SchedulerMetrics
from optimist.profiling import Profiler, ProfilingError


class MetricsServer:
    """`/metrics`, `/healthz` and `/readyz` over HTTP, in a thread of the control process.

    `/healthz` answers while the process serves at all; `/readyz` only while `ready()`
    holds (the platform is up and scheduling). With a `profiler`, `/debug/profile` too,
    to clients on loopback only (`optimist.profiling`).
    """

    def __init__(
        self,
        metrics: SchedulerMetrics,
        address: str,
        ready: Callable[[], bool] = lambda: True,
        profiler: Profiler | None = None,
        explainer: Explainer | None = None,
    ) -> None:
        host, _, port = address.rpartition(":")
        self.metrics, self.ready, self.profiler = metrics, ready, profiler
        self.explainer = explainer
        self._server = make_server(
            host.strip("[]") or "127.0.0.1", int(port), self._app, handler_class=_QuietHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        # the bound socket's own address (getsockname): its host is a str, though the
        # stubs allow the bytes an address may be given as
        assert isinstance(host, str)
        return f"{host}:{port}"

    def __enter__(self) -> MetricsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _app(self, environ: dict[str, Any], start: Callable[..., Any]) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/debug/profile" and self.profiler is not None:
            status, kind, body = self._profile(environ, self.profiler)
        elif path == "/debug/explain" and self.explainer is not None:
            status, kind, body = self._explain(environ, self.explainer)
        elif path == "/metrics":
            body, kind = self._exposition(environ), CONTENT_TYPE_LATEST
            status = "200 OK"
        elif path == "/healthz":
            body, kind, status = b"ok", "text/plain", "200 OK"
        elif path == "/readyz":
            ok = self.ready()
            body, kind = (b"ok" if ok else b"not ready"), "text/plain"
            status = "200 OK" if ok else "503 Service Unavailable"
        else:
            body, kind, status = b"not found", "text/plain", "404 Not Found"
        start(status, [("Content-Type", kind), ("Content-Length", str(len(body)))])
        return [body]

    def _exposition(self, environ: dict[str, Any]) -> bytes:
        """Every metric, or those `?name[]=` names (as Prometheus's client libraries
        serve them): a frequent scraper that wants a few need not pay for all."""
        names = urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).get("name[]")
        registry = self.metrics.registry
        return generate_latest(registry.restricted_registry(names) if names else registry)

    @staticmethod
    def _explain(environ: dict[str, Any], explainer: Explainer) -> tuple[str, str, bytes]:
        """`GET ?pod=NAMESPACE/NAME&top=N`: the pod explained (`optimist.explain`), as JSON;
        `POST` a pod manifest (JSON or YAML) for a what-if."""
        if not _loopback(environ):
            return "403 Forbidden", "text/plain", b"explanations are for clients on loopback only"
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        given = query.get("top", ["0"])[0]
        if not given.isdigit():
            return "400 Bad Request", "text/plain", f"top: {given!r} is not a count".encode()
        try:
            manifest = None
            if environ.get("REQUEST_METHOD") == "POST":
                manifest = _manifest(environ)
            found = explainer.explain(query.get("pod", [""])[0], manifest, int(given))
        except ExplainError as err:
            return f"{err.status} {HTTPStatus(err.status).phrase}", "text/plain", str(err).encode()
        return "200 OK", "application/json", json.dumps(found.to_json()).encode()

    @staticmethod
    def _profile(environ: dict[str, Any], profiler: Profiler) -> tuple[str, str, bytes]:
        """A pstats file of `?target=` (control, or shard-N) over `?seconds=` (10)."""
        if not _loopback(environ):
            return "403 Forbidden", "text/plain", b"profiles are for clients on loopback only"
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        target = query.get("target", ["control"])[0]
        given = query.get("seconds", ["10"])[0]
        try:
            seconds = float(given)
        except ValueError:
            return "400 Bad Request", "text/plain", f"seconds: {given!r} is not a number".encode()
        try:
            stats = profiler.profile(target, seconds)
        except ProfilingError as err:
            return f"{err.status} {HTTPStatus(err.status).phrase}", "text/plain", str(err).encode()
        return "200 OK", "application/octet-stream", stats


def _loopback(environ: dict[str, Any]) -> bool:
    return ipaddress.ip_address(environ.get("REMOTE_ADDR") or "0.0.0.0").is_loopback


_MAX_MANIFEST = 1 << 20


def _manifest(environ: dict[str, Any]) -> Any:
    """A request's body, a pod manifest in JSON or YAML (a 400 if it is neither)."""
    try:
        size = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        size = -1
    if not 0 < size <= _MAX_MANIFEST:
        raise ExplainError(
            400, f"the body must hold a pod manifest of at most {_MAX_MANIFEST} bytes"
        )
    try:
        return yaml.safe_load(environ["wsgi.input"].read(size))
    except yaml.YAMLError as err:
        raise ExplainError(400, f"the body is neither JSON nor YAML: {err}") from None


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged: one a second would drown everything else."""
