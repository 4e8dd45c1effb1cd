"""The HTTP client for kube-scheduler's scheduler extenders (k8s.io/kube-scheduler/extender/v1).

A shard asks each configured extender, after its own plugins, which nodes it
may still use and how it scores them, as kube-scheduler v1.30 does. The wire
format is upstream's: JSON of Go structs without json tags, so the field names
are the Go names ("Pod", "Nodes", "NodeNames", "FailedNodes", "Host", "Score").

Every failure (timeout, refused connection, a status other than 200, an answer
that is not the expected JSON, names nodes it was not asked about, or carries
an Error) is one `ExtenderError`, so the caller applies upstream's rule in one
place: an ignorable extender's failed filter is skipped, a failed prioritize
only loses that extender's scores.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cluster.objects import Node
from cluster.resources import CPU
from shards.extender_config import ExtenderConfig, ExtenderTLSConfig

MAX_EXTENDER_PRIORITY = 10  # extenderv1.MaxExtenderPriority
MAX_NODE_SCORE = 100  # framework.MaxNodeScore
DEFAULT_TIMEOUT_S = 5.0  # upstream's DefaultExtenderTimeout, used when httpTimeout is unset or 0
_READ_CHUNK = 1 << 16


class ExtenderError(RuntimeError):
    """A call to an extender failed or its answer could not be trusted."""


@dataclass(frozen=True)
class FilterAnswer:
    """What an extender's filter decided about the nodes it was sent.

    `failed` and `unresolvable` map node names to the extender's reasons; a
    node in both is only in `unresolvable`, which takes precedence upstream.
    """

    passed: tuple[str, ...]
    failed: dict[str, str]
    unresolvable: dict[str, str]


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """A field of a decoded Go struct: Go's decoder matches names case-insensitively."""
    if name in obj:
        return obj[name]
    lower = name.lower()
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() == lower:
            return value
    return None


def _quantity(resource: str, amount: int) -> str:
    """An allocatable amount as a Kubernetes quantity string: CPU is kept in millicores."""
    return f"{amount}m" if resource == CPU else str(amount)


def node_object(node: Node) -> dict[str, Any]:
    """The v1.Node an extender sees: the parts optimist keeps of a node."""
    taints = []
    for t in node.taints:
        taint = {"key": t.key, "effect": t.effect}
        if t.value:
            taint["value"] = t.value
        taints.append(taint)
    return {
        "metadata": {"name": node.name, "labels": dict(node.labels)},
        "spec": {"taints": taints, "unschedulable": node.unschedulable},
        "status": {"allocatable": {r: _quantity(r, a) for r, a in node.allocatable.items()}},
    }


class _Connection(http.client.HTTPConnection):
    """HTTP, or HTTPS with our own context and SNI name (http.client lacks a serverName)."""

    def __init__(
        self,
        host: str,
        port: int | None,
        timeout: float,
        context: ssl.SSLContext | None,
        server_name: str,
    ) -> None:
        default_port = http.client.HTTPS_PORT if context else http.client.HTTP_PORT
        super().__init__(host, port or default_port, timeout=timeout)
        self._tls = context
        self._server_name = server_name

    def connect(self) -> None:
        super().connect()
        if self._tls is not None:
            self.sock = self._tls.wrap_socket(
                self.sock, server_hostname=self._server_name or self.host
            )


def _tls_context(tls: ExtenderTLSConfig, enable_https: bool) -> ssl.SSLContext:
    """The TLS settings upstream's makeTransport builds, for https:// URLs.

    As upstream: enableHTTPS without a CA turns verification off; an explicit
    insecure with a CA is refused; otherwise the given CA, or the system roots.
    """
    ca_file, ca_data = tls.ca_file, tls.ca_data
    has_ca = bool(ca_file or ca_data)
    if tls.insecure and has_ca:
        raise ValueError("tlsConfig: a CA cannot be given together with insecure")
    if has_ca:
        cadata = base64.b64decode(ca_data).decode("ascii") if ca_data else None
        context = ssl.create_default_context(cafile=ca_file or None, cadata=cadata)
    else:
        context = ssl.create_default_context()
    if tls.insecure or (enable_https and not has_ca):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert_data, key_data = tls.cert_data, tls.key_data
    cert_file, key_file = tls.cert_file, tls.key_file
    has_cert, has_key = bool(cert_data or cert_file), bool(key_data or key_file)
    if has_cert != has_key:
        raise ValueError("tlsConfig: a client certificate needs both a certificate and a key")
    if has_cert:
        # ssl loads client certificates from files only: write inline data to a
        # private directory for the moment it takes to load them.
        scratch = tempfile.mkdtemp(prefix="optimist-extender-")
        try:
            if cert_data:
                cert_file = os.path.join(scratch, "cert.pem")
                with open(cert_file, "wb") as f:
                    f.write(base64.b64decode(cert_data))
            if key_data:
                key_file = os.path.join(scratch, "key.pem")
                with open(key_file, "wb") as f:
                    f.write(base64.b64decode(key_data))
            context.load_cert_chain(cert_file, key_file)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return context


class HTTPExtender:
    """One configured extender, called over HTTP(S) with upstream's v1 protocol."""

    def __init__(
        self,
        url_prefix: str,
        *,
        filter_verb: str = "",
        prioritize_verb: str = "",
        weight: int = 0,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        node_cache_capable: bool = False,
        managed_resources: Iterable[str] = (),
        ignorable: bool = False,
        enable_https: bool = False,
        tls: ExtenderTLSConfig | None = None,
    ) -> None:
        self.name = url_prefix
        self.filter_verb = filter_verb
        self.prioritize_verb = prioritize_verb
        self.weight = weight
        self.timeout_s = timeout_s if timeout_s > 0 else DEFAULT_TIMEOUT_S
        self.node_cache_capable = node_cache_capable
        self.managed_resources = frozenset(managed_resources)
        self.ignorable = ignorable
        # Upstream takes the scheme from urlPrefix; one without a scheme gets
        # https when enableHTTPS is set, else http.
        prefix = (
            url_prefix
            if "://" in url_prefix
            else (("https://" if enable_https else "http://") + url_prefix)
        )
        parts = urlsplit(prefix.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"extender urlPrefix {url_prefix!r} is not an http(s) URL")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._base_path = parts.path
        tls = tls or ExtenderTLSConfig()
        self._server_name = tls.server_name
        self._tls = _tls_context(tls, enable_https) if parts.scheme == "https" else None

    @classmethod
    def from_config(cls, config: ExtenderConfig) -> HTTPExtender:
        """An extender from one entry of the loaded Configuration's `extenders`."""
        return cls(
            config.url_prefix,
            filter_verb=config.filter_verb,
            prioritize_verb=config.prioritize_verb,
            weight=config.weight,
            timeout_s=config.http_timeout.seconds,
            node_cache_capable=config.node_cache_capable,
            managed_resources=[r.name for r in config.managed_resources],
            ignorable=config.ignorable,
            enable_https=config.enable_https,
            tls=config.tls_config,
        )

    @property
    def has_filter(self) -> bool:
        return bool(self.filter_verb)

    @property
    def has_prioritize(self) -> bool:
        return bool(self.prioritize_verb)

    def __repr__(self) -> str:
        return f"HTTPExtender({self.name!r})"

    def interested(self, manifest: Mapping[str, Any]) -> bool:
        """Upstream's IsInterested: every pod, or only those asking for a managed resource."""
        if not self.managed_resources:
            return True
        spec = manifest.get("spec") or {}
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                resources = (container or {}).get("resources") or {}
                for kind in ("requests", "limits"):
                    if self.managed_resources.intersection(resources.get(kind) or {}):
                        return True
        return False

    def filter(self, manifest: Mapping[str, Any], nodes: list[Node]) -> FilterAnswer:
        """Which of `nodes` the extender lets the pod use, and why it refuses the others."""
        names = [n.name for n in nodes]
        if not self.filter_verb or not nodes:
            return FilterAnswer(tuple(names), {}, {})
        result = self._post(self.filter_verb, self._args(manifest, nodes))
        if not isinstance(result, dict):
            raise ExtenderError(f"extender {self.name}: filter answer is not an object")
        error = _field(result, "Error")
        if error is not None and not isinstance(error, str):
            raise ExtenderError(f"extender {self.name}: Error is not a string")
        if error:
            raise ExtenderError(f"extender {self.name}: {error}")
        sent = set(names)
        by_name = _field(result, "NodeNames")
        listed = _field(result, "Nodes")
        # Upstream reads NodeNames when nodeCacheCapable, else Nodes; an answer
        # in the other form is read too rather than silently dropping every node.
        if by_name is not None and (self.node_cache_capable or listed is None):
            passed = self._names(by_name, "NodeNames")
        elif listed is not None:
            passed = self._listed_names(listed)
        else:
            passed = []
        unknown = [n for n in passed if n not in sent]
        if unknown:
            raise ExtenderError(
                f"extender {self.name}: filter passed nodes it was not sent: {unknown[:5]}"
            )
        unresolvable = self._reasons(result, "FailedAndUnresolvableNodes", sent)
        failed = {
            n: why
            for n, why in self._reasons(result, "FailedNodes", sent).items()
            if n not in unresolvable
        }
        return FilterAnswer(tuple(dict.fromkeys(passed)), failed, unresolvable)

    def prioritize(self, manifest: Mapping[str, Any], nodes: list[Node]) -> dict[str, int]:
        """The extender's raw scores (0..MAX_EXTENDER_PRIORITY) for the nodes it scored.

        Nodes it leaves out score 0, as upstream. Without a prioritize verb
        every node scores 0.
        """
        if not self.prioritize_verb or not nodes:
            return {n.name: 0 for n in nodes}
        result = self._post(self.prioritize_verb, self._args(manifest, nodes))
        if result is None:
            return {}
        if not isinstance(result, list):
            raise ExtenderError(f"extender {self.name}: prioritize answer is not a list")
        sent = {n.name for n in nodes}
        scores: dict[str, int] = {}
        for item in result:
            if not isinstance(item, dict):
                raise ExtenderError(f"extender {self.name}: a host priority is not an object")
            host, score = _field(item, "Host"), _field(item, "Score")
            if not isinstance(host, str) or host not in sent:
                raise ExtenderError(f"extender {self.name}: scored node {host!r} it was not sent")
            if host in scores:
                raise ExtenderError(f"extender {self.name}: scored node {host!r} twice")
            if (
                not isinstance(score, int)
                or isinstance(score, bool)
                or not 0 <= score <= MAX_EXTENDER_PRIORITY
            ):
                raise ExtenderError(
                    f"extender {self.name}: score {score!r} for {host!r} "
                    f"is not an integer in 0..{MAX_EXTENDER_PRIORITY}"
                )
            scores[host] = score
        return scores

    def weighted_scores(self, raw: Mapping[str, int]) -> dict[str, int]:
        """Raw scores as upstream adds them to a node's total: score * weight * 100/10."""
        scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
        return {name: score * self.weight * scale for name, score in raw.items()}

    def _args(self, manifest: Mapping[str, Any], nodes: list[Node]) -> dict[str, Any]:
        """ExtenderArgs: nodes by name to a node-caching extender, else as v1.Node objects."""
        if self.node_cache_capable:
            return {"Pod": dict(manifest), "Nodes": None, "NodeNames": [n.name for n in nodes]}
        items = [node_object(n) for n in nodes]
        return {"Pod": dict(manifest), "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}

    def _names(self, value: Any, what: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ExtenderError(f"extender {self.name}: {what} is not a list of names")
        return value

    def _listed_names(self, value: Any) -> list[str]:
        items = _field(value, "items") if isinstance(value, dict) else None
        if items is None and isinstance(value, dict):
            return []
        if not isinstance(items, list):
            raise ExtenderError(f"extender {self.name}: Nodes is not a node list")
        names = []
        for item in items:
            meta = _field(item, "metadata") if isinstance(item, dict) else None
            name = _field(meta, "name") if isinstance(meta, dict) else None
            if not isinstance(name, str):
                raise ExtenderError(f"extender {self.name}: a passed node has no name")
            names.append(name)
        return names

    def _reasons(self, result: Mapping[str, Any], key: str, sent: set[str]) -> dict[str, str]:
        value = _field(result, key)
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ExtenderError(f"extender {self.name}: {key} is not a map of node to reason")
        unknown = [n for n in value if n not in sent]
        if unknown:
            raise ExtenderError(f"extender {self.name}: {key} names nodes not sent: {unknown[:5]}")
        return dict(value)

    def _post(self, verb: str, args: Mapping[str, Any]) -> Any:
        """POST the JSON to {urlPrefix}/{verb}: one deadline for the whole call, body included."""
        deadline = time.monotonic() + self.timeout_s
        try:
            body = json.dumps(args, separators=(",", ":")).encode()
        except (TypeError, ValueError) as e:
            raise ExtenderError(f"extender {self.name}: the pod cannot be sent as JSON: {e}") from e
        path = f"{self._base_path}/{verb}"
        conn = _Connection(self._host, self._port, self.timeout_s, self._tls, self._server_name)
        try:
            conn.connect()
            sock = conn.sock  # kept: getresponse may hand the socket over to the response
            assert sock is not None
            conn.request(
                "POST",
                path,
                body=body,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
            )
            _until(sock, deadline)
            response = conn.getresponse()
            if response.status != 200:
                status = f"{response.status} {response.reason}"
                raise ExtenderError(f"extender {self.name}: {verb} answered HTTP {status}")
            chunks = []
            while True:
                _until(sock, deadline)
                chunk = response.read1(_READ_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
        except ExtenderError:
            raise
        except (OSError, http.client.HTTPException) as e:
            raise ExtenderError(f"extender {self.name}: {verb} failed: {e!r}") from e
        finally:
            conn.close()
        try:
            return json.loads(b"".join(chunks))
        except ValueError as e:
            raise ExtenderError(f"extender {self.name}: {verb} answer is not JSON: {e}") from e


def _until(sock: socket.socket, deadline: float) -> None:
    """Bound the next socket operation by what is left of the call's time."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("extender call timed out")
    sock.settimeout(left)
