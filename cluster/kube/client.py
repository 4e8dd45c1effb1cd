"""Requests to the API server, through the official client, as client-go makes them.

The official `kubernetes` client does the configuration (kubeconfig or
in-cluster), TLS and authentication; this module adds what a scheduler needs
of client-go and the generated client does not give: a token bucket for
`clientConnection.qps`/`burst`, retries of 429 and 5xx with backoff (and the
server's Retry-After), and raw JSON objects, which the manifest parsers read
as they are, rather than the generated model classes.
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

import urllib3
from kubernetes import client as k8s
from kubernetes import config

log = logging.getLogger(__name__)

POOL_CONNECTIONS = 32
RETRIED = frozenset({429, 500, 502, 503, 504})
_AUTH = ["BearerToken"]


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
        return min(self.first_s * 2**attempt, self.cap_s)


class KubeClient:
    """JSON in and out over the official client's connection; thread-safe."""

    def __init__(
        self,
        api: k8s.ApiClient,
        qps: float = 50.0,
        burst: int = 100,
        backoff: Backoff = Backoff(),
    ) -> None:
        self.api = api
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
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(config_file=path, client_configuration=configuration)
        return cls.for_configuration(configuration, **kwargs)

    @classmethod
    def for_configuration(cls, configuration: k8s.Configuration, **kwargs: Any) -> KubeClient:
        # urllib3 would retry a 429 with Retry-After on its own, unseen and uncounted:
        # the retries are this class's, all of them
        configuration.retries = False
        # bindings in parallel, a watch per informer, the reports: one connection each
        configuration.connection_pool_maxsize = POOL_CONNECTIONS
        return cls(k8s.ApiClient(configuration), **kwargs)

    def request(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout_s: float = 30.0,
    ) -> dict[str, Any]:
        """One request, retried on 429, 5xx and broken connections; the answer's JSON."""
        for attempt in range(self.backoff.tries):
            self.bucket.take()
            try:
                response = self._send(method, path, query, body, content_type, timeout_s)
            except (urllib3.exceptions.HTTPError, OSError) as err:
                if attempt + 1 == self.backoff.tries:
                    raise ApiError(0, "Unreachable", str(err)) from None
                self._wait(attempt, None, f"{method} {path}: {err}")
                continue
            data = response.read()
            if 200 <= response.status < 300:
                return json.loads(data) if data else {}
            status = _status(data)
            if response.status in RETRIED and attempt + 1 < self.backoff.tries:
                why = f"{method} {path}: {response.status} {status.get('message', '')}"
                self._wait(attempt, response.getheader("Retry-After"), why)
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
            response = self._send("GET", path, query, None, "application/json", (5.0, timeout_s))
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise ApiError(0, "Unreachable", str(err)) from None
        try:
            if response.status != 200:
                status = _status(response.read())
                raise ApiError(
                    response.status, str(status.get("reason", "")), str(status.get("message"))
                )
            pending = b""
            for chunk in response.response.stream(65536, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            log.info("watch of %s dropped: %s", path, err)
        finally:
            response.response.release_conn()

    def _send(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None,
        body: Any,
        content_type: str,
        timeout: float | tuple[float, float],
    ) -> Any:
        resource = f"{path}?{urlencode(query)}" if query else path
        method, url, headers, payload, _ = self.api.param_serialize(
            method,
            resource,
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=_AUTH,
        )
        return self.api.call_api(method, url, headers, payload, _request_timeout=timeout)

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
