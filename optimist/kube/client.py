"""Requests to the API server, as client-go makes them.

The official `kubernetes` client reads the configuration (kubeconfig or
in-cluster) and keeps the credentials fresh; the bytes go over `transport`,
which costs a quarter of the official path's CPU. This module adds what a
scheduler needs of client-go and the generated client does not give: a token
bucket for `clientConnection.qps`/`burst`, retries of 429 and 5xx with
backoff (and the server's Retry-After), and raw JSON objects, which the
manifest parsers read as they are, rather than the generated model classes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from kubernetes import client as k8s
from kubernetes import config

from optimist.kube.transport import Response, Transport

log = logging.getLogger(__name__)

POOL_CONNECTIONS = 32  # idle ones kept: bindings in parallel, the reports, the lease
RETRIED = frozenset({429, 500, 502, 503, 504})
MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    """A request the API server refused, with its HTTP status and the Status' reason."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message


class TokenBucket:
    """client-go's rate limiter: `qps` tokens a second, at most `burst` saved up."""

    def __init__(self, qps: float, burst: int) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"clientConnection: qps {qps} and burst {burst} must be positive")
        self.qps, self.burst = qps, burst
        self._tokens = float(burst)
        self._at = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> None:
        """Wait, if need be, until a request may go."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.qps)
            self._at = now
            self._tokens -= 1
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait:
            time.sleep(wait)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits between retries: doubling from `first_s` up to `cap_s`, `tries` in all."""

    first_s: float = 0.2
    cap_s: float = 10.0
    tries: int = 6

    def wait_s(self, attempt: int, retry_after: str | None) -> float:
        if retry_after and retry_after.isdigit():
            return min(float(retry_after), self.cap_s)
        doubled: int = 2**attempt  # attempts count from 0; typeshed: int ** int is Any
        return min(self.first_s * doubled, self.cap_s)


class KubeClient:
    """JSON in and out; thread-safe."""

    def __init__(
        self,
        transport: Transport,
        qps: float = 50.0,
        burst: int = 100,
        backoff: Backoff = Backoff(),
    ) -> None:
        self.transport = transport
        self.bucket = TokenBucket(qps, burst)
        self.backoff = backoff
        self.retries = 0  # requests retried after a 429, a 5xx or a broken connection

    @classmethod
    def for_host(cls, host: str, **kwargs: Any) -> KubeClient:
        """A client of the server at `host` (http:// on loopback, in tests)."""
        configuration = k8s.Configuration()
        configuration.host = host
        return cls.for_configuration(configuration, **kwargs)

    @classmethod
    def for_kubeconfig(cls, path: str | None, **kwargs: Any) -> KubeClient:
        """From a kubeconfig file, or in-cluster (the pod's service account) if None."""
        configuration = k8s.Configuration()
        if path is None:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]  # kubernetes leaves it unannotated (checked only under --strict)
        else:
            config.load_kube_config(config_file=path, client_configuration=configuration)  # type: ignore[no-untyped-call]  # kubernetes leaves it unannotated (checked only under --strict)
        return cls.for_configuration(configuration, **kwargs)

    @classmethod
    def for_configuration(cls, configuration: k8s.Configuration, **kwargs: Any) -> KubeClient:
        return cls(Transport(configuration, POOL_CONNECTIONS), **kwargs)

    def sibling(self, qps: float, burst: int) -> KubeClient:
        """A client over the same connections with a rate limit of its own."""
        return KubeClient(self.transport, qps, burst, self.backoff)

    def request(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout_s: float = 30.0,
        answer: bool = True,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """One request, retried on 429, 5xx and broken connections; the answer's JSON
        (without `answer`, {}: a write whose answer nobody reads is not decoded). With a
        `deadline` (time.monotonic()), no try outlasts it, and none starts after it: a
        lease renewal must fail in time, even on a connection that answers nothing."""
        for attempt in range(self.backoff.tries):
            if deadline is not None:
                timeout_s = deadline - time.monotonic()
                if timeout_s <= 0:
                    raise ApiError(0, "Timeout", f"{method} {path}: no answer by its deadline")
            self.bucket.take()
            try:
                response = self._send(method, path, query, body, content_type, timeout_s)
            except OSError as err:
                if attempt + 1 == self.backoff.tries:
                    raise ApiError(0, "Unreachable", str(err)) from None
                self._wait(attempt, None, f"{method} {path}: {err}")
                continue
            data = response.body
            if 200 <= response.status < 300:
                return json.loads(data) if data and answer else {}
            status = _status(data)
            if response.status in RETRIED and attempt + 1 < self.backoff.tries:
                why = f"{method} {path}: {response.status} {status.get('message', '')}"
                self._wait(attempt, response.headers.get("retry-after"), why)
                continue
            raise ApiError(
                response.status, str(status.get("reason", "")), str(status.get("message", data))
            )
        raise AssertionError("unreachable")  # the loop returns or raises

    def stream(
        self, path: str, query: dict[str, str], timeout_s: float
    ) -> Iterator[dict[str, Any]]:
        """A watch: its events as they come, until the server ends it or the connection
        drops (the caller resumes from the last version it saw). Raises ApiError if the
        server refuses it or cannot be reached (no retry: the informer decides)."""
        self.bucket.take()
        try:
            response, pieces = self.transport.stream(
                f"{path}?{urlencode(query)}", self._headers("application/json"), 5.0, timeout_s
            )
        except OSError as err:
            raise ApiError(0, "Unreachable", str(err)) from None
        if response.status != 200:
            status = _status(response.body)
            raise ApiError(
                response.status, str(status.get("reason", "")), str(status.get("message"))
            )
        pending = b""
        try:
            for piece in pieces:
                pending += piece
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except OSError as err:
            log.info("watch of %s dropped: %s", path, err)

    def _send(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None,
        body: Any,
        content_type: str,
        timeout_s: float,
    ) -> Response:
        target = f"{path}?{urlencode(query)}" if query else path
        payload = None if body is None else json.dumps(body).encode()
        return self.transport.request(
            method, target, self._headers(content_type), payload, timeout_s
        )

    def _headers(self, content_type: str) -> dict[str, str]:
        """Accept, Content-Type, and the credentials as they are now (a token read
        from a file or an exec plugin is refreshed by the configuration)."""
        headers = {"Accept": "application/json", "Content-Type": content_type}
        for auth in self.transport.configuration.auth_settings().values():
            # each is a dict (an APIKeyAuthSetting); mypy reads a TypedDict's values as object
            if isinstance(auth, dict) and auth["in"] == "header" and auth["value"]:
                headers[auth["key"]] = auth["value"]
        return headers

    def _wait(self, attempt: int, retry_after: str | None, why: str) -> None:
        self.retries += 1
        wait = self.backoff.wait_s(attempt, retry_after)
        log.warning("API request failed, retrying in %.1f s: %s", wait, why)
        time.sleep(wait)


def _status(data: bytes) -> dict[str, Any]:
    """A failed request's Status object, or as much of it as can be read."""
    try:
        found = json.loads(data)
    except ValueError:
        return {"message": data[:200].decode(errors="replace")}
    return found if isinstance(found, dict) else {"message": str(found)[:200]}
