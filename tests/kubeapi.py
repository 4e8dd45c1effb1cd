"""A small stateful Kubernetes API server, over real HTTP, for the adapter's tests.

No kube-apiserver can be installed here, so this speaks the subset of the
REST API the adapter uses, with the behaviours it has to survive:

- list and watch with resourceVersion, bookmarks, `timeoutSeconds`; a watch
  from a version older than the compacted history gets 410 Gone (as an ERROR
  event, as the real server sends it);
- the `pods/binding` subresource, with 409 on a second binding, 404 for a
  pod or node that is not there;
- events, the pod status subresource (merge patch of conditions), leases
  with optimistic concurrency (409 on a stale resourceVersion);
- PodGroups as a custom resource, PriorityClasses, PodDisruptionBudgets,
  namespaces;
- faults on demand: `throttle` answers 429 with Retry-After, `drop_watches`
  closes every open watch, `compact` forgets history.

kmock (an asyncio mock driven by per-test rules) has none of the binding or
resourceVersion semantics, and mockernetes is not on the package index, so
this is ours. It serves loopback only.
"""

from __future__ import annotations

import bisect
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cluster.adapter import Binding
from cluster.manifests import node_from_manifest, podgroup_from_manifest
from cluster.simulator import SimulatedCluster

# resource -> (list path prefix, kind, namespaced)
RESOURCES = {
    "nodes": ("/api/v1", "Node", False),
    "pods": ("/api/v1", "Pod", True),
    "namespaces": ("/api/v1", "Namespace", False),
    "events": ("/api/v1", "Event", True),
    "priorityclasses": ("/apis/scheduling.k8s.io/v1", "PriorityClass", False),
    "poddisruptionbudgets": ("/apis/policy/v1", "PodDisruptionBudget", True),
    "podgroups": ("/apis/scheduling.x-k8s.io/v1alpha1", "PodGroup", True),
    "leases": ("/apis/coordination.k8s.io/v1", "Lease", True),
    "elasticquotas": ("/apis/scheduling.x-k8s.io/v1alpha1", "ElasticQuota", True),
    "reservations": ("/apis/scheduling.koordinator.sh/v1alpha1", "Reservation", False),
}
_PATH = re.compile(
    r"^(?P<prefix>/api/v1|/apis/[^/]+/[^/]+)"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>binding|status))?$"
)


@dataclass
class _Change:
    version: int
    kind: str  # resource
    type: str  # ADDED, MODIFIED, DELETED
    obj: dict[str, Any]


@dataclass
class FakeKubeAPI:
    """The server's state; `start()` serves it on 127.0.0.1 and returns its URL."""

    objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(
        default_factory=lambda: {r: {} for r in RESOURCES}
    )
    history: list[_Change] = field(default_factory=list)
    version: int = 1
    compacted: int = 0  # watches from a version below this get 410 Gone
    bindings: list[tuple[str, str]] = field(default_factory=list)  # (pod key, node), in order
    requests: list[tuple[str, str, bool]] = field(default_factory=list)  # (method, path, watch)
    _throttled: int = 0
    _retry_after: int = 1
    _watch_epoch: int = 0
    _abruptly: bool = False  # the last drop_watches cut the connections mid-stream
    open_watches: int = 0
    # continue token -> (the snapshot's version, the items still to send)
    pages: dict[str, tuple[int, list[dict[str, Any]]]] = field(default_factory=dict)
    _lock: threading.Condition = field(default_factory=threading.Condition)

    # --- state ------------------------------------------------------------

    def put(self, resource: str, obj: dict[str, Any], event: str | None = None) -> dict[str, Any]:
        with self._lock:
            meta = obj.setdefault("metadata", {})
            if not meta.get("name"):
                suffix = uuid.uuid4().hex[:5]
                meta["name"] = f"{meta.get('generateName', 'obj-')}{suffix}"
            namespaced = RESOURCES[resource][2]
            if namespaced:
                meta.setdefault("namespace", "default")
            key = (meta.get("namespace", "") if namespaced else "", meta["name"])
            old = self.objects[resource].get(key)
            meta.setdefault("uid", old["metadata"]["uid"] if old else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ"))
            self.version += 1
            meta["resourceVersion"] = str(self.version)
            self.objects[resource][key] = obj
            kind = event or ("MODIFIED" if old else "ADDED")
            self.history.append(_Change(self.version, resource, kind, json.loads(json.dumps(obj))))
            self._lock.notify_all()
            return obj

    def delete(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            obj = self.objects[resource].pop((namespace, name), None)
            if obj is None:
                return None
            self.version += 1
            obj["metadata"]["resourceVersion"] = str(self.version)
            self.history.append(_Change(self.version, resource, "DELETED", obj))
            self._lock.notify_all()
            return obj

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self.objects[resource].get((namespace, name))

    def pods_bound(self) -> dict[str, str]:
        """pod key -> node, of every pod with spec.nodeName."""
        with self._lock:
            return {
                f"{ns}/{name}": pod["spec"]["nodeName"]
                for (ns, name), pod in self.objects["pods"].items()
                if pod.get("spec", {}).get("nodeName")
            }

    def events_for(self, pod_key: str) -> list[dict[str, Any]]:
        namespace, name = pod_key.split("/", 1)
        with self._lock:
            return [
                e
                for e in self.objects["events"].values()
                if e.get("involvedObject", {}).get("name") == name
                and e.get("involvedObject", {}).get("namespace") == namespace
            ]

    def as_cluster(self, scheduler_names: frozenset[str]) -> SimulatedCluster:
        """The state as the invariant checker reads a cluster: nodes, pod manifests, the
        pods bound, every binding made, the PodGroups."""
        with self._lock:
            cluster = SimulatedCluster(scheduler_names)
            for obj in self.objects["nodes"].values():
                node = node_from_manifest(obj)
                cluster.nodes[node.name] = node
            for (namespace, name), obj in self.objects["pods"].items():
                key = f"{namespace}/{name}"
                cluster.pod_manifests[key] = obj
                if obj.get("spec", {}).get("nodeName"):
                    cluster.bindings[key] = obj["spec"]["nodeName"]
            cluster.bind_log = [Binding(pod, node) for pod, node in self.bindings]
            for obj in self.objects["podgroups"].values():
                group = podgroup_from_manifest(obj)
                cluster.pod_groups[group.key] = group
            return cluster

    # --- faults -----------------------------------------------------------

    def throttle(self, requests: int, retry_after_s: int = 1) -> None:
        """The next `requests` requests get 429 Too Many Requests, with Retry-After."""
        with self._lock:
            self._throttled, self._retry_after = requests, retry_after_s

    def drop_watches(self, abruptly: bool = False) -> None:
        """Close every open watch, as a restarted API server or a proxy does; `abruptly`:
        cut the connection without ending the chunked reply, as a crash does."""
        with self._lock:
            self._abruptly = abruptly
            self._watch_epoch += 1
            self._lock.notify_all()

    def compact(self) -> None:
        """Forget history: a watch resumed from an older version gets 410 Gone."""
        with self._lock:
            self.compacted = self.version + 1
            self.history.clear()
            self._watch_epoch += 1  # etcd compaction ends the watches that were open
            self._lock.notify_all()

    # --- serving ----------------------------------------------------------

    def start(self) -> str:
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self.drop_watches()
        self._server.shutdown()
        self._server.server_close()

    def _take_throttle(self) -> int | None:
        with self._lock:
            if self._throttled <= 0:
                return None
            self._throttled -= 1
            return self._retry_after

    def _changes(
        self, resource: str, since: int, timeout_s: float, bookmarks: bool
    ) -> Iterator[dict[str, Any]]:
        """Watch events after `since`, until the watch must end; a bookmark when idle.
        Nothing is yielded with the lock held: the reader writes to a socket meanwhile."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            epoch = self._watch_epoch
            expired = since < self.compacted - 1
            if not expired:
                self.open_watches += 1
        if expired:
            yield _status(410, "Expired", f"too old resource version: {since}")
            return
        try:
            yield from self._stream(resource, since, epoch, deadline, bookmarks)
        finally:
            with self._lock:
                self.open_watches -= 1

    def _stream(
        self, resource: str, since: int, epoch: int, deadline: float, bookmarks: bool
    ) -> Iterator[dict[str, Any]]:
        sent = since
        while time.monotonic() < deadline:
            mark = None
            with self._lock:
                fresh = self._after(sent, resource)
                if not fresh:
                    self._lock.wait(min(0.5, max(deadline - time.monotonic(), 0)))
                    fresh = self._after(sent, resource)
                if self._watch_epoch != epoch:
                    return
                if not fresh and bookmarks:
                    kind = RESOURCES[resource][1]
                    mark = {"kind": kind, "metadata": {"resourceVersion": str(self.version)}}
                    sent = self.version
            if mark is not None:
                yield {"type": "BOOKMARK", "object": mark}
            for change in fresh:
                sent = change.version
                yield {"type": change.type, "object": change.obj}

    def _after(self, version: int, resource: str) -> list[_Change]:
        """The changes of `resource` after `version` (the lock is held): history is in
        version order, so a watch reads only what is new to it."""
        start = bisect.bisect_right(self.history, version, key=lambda c: c.version)
        return [c for c in self.history[start:] if c.kind == resource]


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure"}
    return {
        "type": "ERROR",
        "object": {**status, "message": message, "reason": reason, "code": code},
    }


class _Handler(BaseHTTPRequestHandler):
    api: FakeKubeAPI
    _raw: bytes = b""  # the request's body
    protocol_version = "HTTP/1.1"
    # a reply's headers and body in one segment: else Nagle's algorithm and the client's
    # delayed ACK hold every reply back ~40 ms
    disable_nagle_algorithm = True
    wbufsize = 1 << 16

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `api.requests` instead."""

    def _reply(
        self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _fail(self, code: int, reason: str, message: str, **headers: str) -> None:
        self._reply(code, _status(code, reason, message)["object"], headers)

    def _body(self) -> dict[str, Any]:
        return json.loads(self._raw or b"{}")

    def _route(self) -> tuple[re.Match[str] | None, dict[str, list[str]]]:
        url = urlsplit(self.path)
        self.api.requests.append((self.command, url.path, "watch=true" in url.query))
        return _PATH.match(url.path), parse_qs(url.query)

    def _handle(self) -> None:
        # read the body whatever the answer: left unread, it would be taken for the
        # next request on this keep-alive connection
        self._raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        match, query = self._route()
        retry = self.api._take_throttle()
        if retry is not None:
            self._fail(429, "TooManyRequests", "slow down", **{"Retry-After": str(retry)})
            return
        if match is None or match["resource"] not in RESOURCES:
            self._fail(404, "NotFound", f"no such path {self.path}")
            return
        resource, namespace, name = match["resource"], match["ns"] or "", match["name"]
        method = getattr(self, f"_{self.command.lower()}_{match['sub'] or 'object'}", None)
        if method is None:
            self._fail(405, "MethodNotAllowed", f"{self.command} {self.path}")
            return
        method(resource, namespace, name, query)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _get_object(self, resource: str, namespace: str, name: str | None, query: Any) -> None:
        if name:
            obj = self.api.get(resource, namespace, name)
            if obj is None:
                self._fail(404, "NotFound", f'{resource} "{name}" not found')
            else:
                self._reply(200, obj)
            return
        if query.get("watch", ["false"])[0] in ("true", "1"):
            self._watch(resource, query)
            return
        limit = int(query.get("limit", ["0"])[0] or 0)
        token = query.get("continue", [""])[0]
        with self.api._lock:
            if token:  # the rest of a snapshot taken at its first page
                page = self.api.pages.pop(token, None)
                if page is None or page[0] < self.api.compacted - 1:
                    self._fail(410, "Expired", "the continue token has expired")
                    return
                version, items = page
            else:
                version = self.api.version
                items = [
                    o
                    for (ns, _), o in sorted(self.api.objects[resource].items())
                    if not namespace or ns == namespace
                ]
            meta: dict[str, Any] = {"resourceVersion": str(version)}
            if limit and len(items) > limit:
                items, rest = items[:limit], items[limit:]
                meta["continue"] = uuid.uuid4().hex
                meta["remainingItemCount"] = len(rest)
                self.api.pages[meta["continue"]] = (version, rest)
            kind = RESOURCES[resource][1]
            listed = {"kind": f"{kind}List", "apiVersion": "v1", "items": items, "metadata": meta}
            self._reply(200, listed)

    def _watch(self, resource: str, query: dict[str, list[str]]) -> None:
        since = int(query.get("resourceVersion", ["0"])[0] or 0)
        timeout_s = float(query.get("timeoutSeconds", ["300"])[0])
        bookmarks = query.get("allowWatchBookmarks", ["false"])[0] == "true"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            for event in self.api._changes(resource, since, timeout_s, bookmarks):
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()
            if self.api._abruptly:
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _post_object(self, resource: str, namespace: str, name: str | None, query: Any) -> None:
        obj = self._body()
        meta = obj.setdefault("metadata", {})
        if namespace:
            meta["namespace"] = namespace
        if meta.get("name") and self.api.get(resource, namespace, meta["name"]) is not None:
            self._fail(409, "AlreadyExists", f'{resource} "{meta["name"]}" already exists')
            return
        self._reply(201, self.api.put(resource, obj))

    def _put_object(self, resource: str, namespace: str, name: str | None, query: Any) -> None:
        obj = self._body()
        with self.api._lock:
            old = self.api.get(resource, namespace, name or "")
            if old is None:
                self._fail(404, "NotFound", f'{resource} "{name}" not found')
                return
            given = obj.get("metadata", {}).get("resourceVersion")
            if given != old["metadata"]["resourceVersion"]:
                message = (
                    f'Operation cannot be fulfilled on {resource} "{name}": the object '
                    "has been modified; please apply your changes to the latest version"
                )
                self._fail(409, "Conflict", message)
                return
            obj["metadata"]["namespace"] = namespace
            self._reply(200, self.api.put(resource, obj))

    def _delete_object(self, resource: str, namespace: str, name: str | None, query: Any) -> None:
        obj = self.api.delete(resource, namespace, name or "")
        if obj is None:
            self._fail(404, "NotFound", f'{resource} "{name}" not found')
        else:
            self._reply(200, obj)

    def _post_binding(self, resource: str, namespace: str, name: str | None, query: Any) -> None:
        body = self._body()
        node = body.get("target", {}).get("name", "")
        with self.api._lock:
            pod = self.api.get("pods", namespace, name or "")
            if pod is None:
                self._fail(404, "NotFound", f'pods "{name}" not found')
                return
            bound = pod.get("spec", {}).get("nodeName")
            if bound:
                message = (
                    f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} '
                    f'is already assigned to node "{bound}"'
                )
                self._fail(409, "Conflict", message)
                return
            if self.api.get("nodes", "", node) is None:
                self._fail(404, "NotFound", f'nodes "{node}" not found')
                return
            pod.setdefault("spec", {})["nodeName"] = node
            self.api.bindings.append((f"{namespace}/{name}", node))
            self.api.put("pods", pod)
        self._reply(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})

    def _patch_object(self, resource: str, namespace: str, name: str | None, query: Any) -> None:
        """A merge patch of top-level fields (what an event's count update needs) and of
        the metadata's labels and annotations (what a pod's GPU indices need)."""
        patch = self._body()
        with self.api._lock:
            obj = self.api.get(resource, namespace, name or "")
            if obj is None:
                self._fail(404, "NotFound", f'{resource} "{name}" not found')
                return
            obj.update({k: v for k, v in patch.items() if k != "metadata"})
            for key in ("labels", "annotations"):
                given = patch.get("metadata", {}).get(key)
                if given:
                    obj["metadata"].setdefault(key, {}).update(given)
            self._reply(200, self.api.put(resource, obj))

    def _patch_status(self, resource: str, namespace: str, name: str | None, query: Any) -> None:
        patch = self._body().get("status", {})
        with self.api._lock:
            obj = self.api.get(resource, namespace, name or "")
            if obj is None:
                self._fail(404, "NotFound", f'{resource} "{name}" not found')
                return
            status = obj.setdefault("status", {})
            for key, value in patch.items():
                if key != "conditions":
                    status[key] = value
                    continue
                conditions = {c["type"]: c for c in status.get("conditions", [])}
                for condition in value:  # merged by type, as the strategic merge patch does
                    conditions[condition["type"]] = {
                        **conditions.get(condition["type"], {}),
                        **condition,
                    }
                status["conditions"] = list(conditions.values())
            self._reply(200, self.api.put(resource, obj))
