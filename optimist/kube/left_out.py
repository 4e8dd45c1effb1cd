"""Objects the API server accepted that optimist cannot read: a node whose allocatable
no scheduler can count, an ElasticQuota with min above max, a PodGroup without a
minMember. Each is left out of scheduling, as if it were not there, and said so once
on the object itself, in a Warning event (reason `InvalidObject`) that names the field
and the value: where its owner looks, not only in optimist's log. The rest of the
cluster goes on. An object read again without fault, or deleted, is no longer left out.

They are counted by kind for /metrics (`optimist_objects_left_out`).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

INVALID_OBJECT = "InvalidObject"  # the events' reason


@dataclass(frozen=True, slots=True)
class Involved:
    """The object an event is about, as the Event's involvedObject names it."""

    kind: str
    api_version: str
    namespace: str  # "" for a cluster's object (its events go to default)
    name: str
    uid: str

    @classmethod
    def of(cls, kind: str, path: str, obj: dict[str, Any]) -> Involved:
        """The object `obj` of `kind`, as listed or watched at `path` (its items carry no
        apiVersion: the path names it)."""
        meta = obj.get("metadata") or {}
        parts = path.strip("/").split("/")  # api/v1/... or apis/group/version/...
        version = parts[1] if parts[0] == "api" else f"{parts[1]}/{parts[2]}"
        namespace, uid = str(meta.get("namespace") or ""), str(meta.get("uid") or "")
        return cls(kind, version, namespace, str(meta.get("name") or ""), uid)

    @property
    def key(self) -> str:
        """Kind and namespace/name: unique across kinds."""
        return f"{self.kind}:{self.namespace}/{self.name}"


class LeftOut:
    """The objects left out now, each told once per fault (`tell` sends the event)."""

    def __init__(self, tell: Callable[[Involved, str], None]) -> None:
        self._tell = tell  # an event about the object (Reporter.invalid)
        self._lock = threading.Lock()
        self._why: dict[str, tuple[str, str]] = {}  # key -> (kind, why)

    def refuse(self, involved: Involved, why: str) -> None:
        """`involved` is left out, for `why` (the InvalidObject's message: the object,
        field and value); told unless it was, for the same reason, already."""
        with self._lock:
            if self._why.get(involved.key) == (involved.kind, why):
                return  # a node's heartbeat: the same fault, told already
            self._why[involved.key] = (involved.kind, why)
        log.warning("%s left out: %s", involved.key, why)
        self._tell(involved, f"Left out of scheduling by optimist: {why}")

    def readable(self, kind: str, namespace: str, name: str) -> None:
        """The object was read without fault, or deleted: no longer left out."""
        with self._lock:
            self._why.pop(f"{kind}:{namespace}/{name}", None)

    def by_kind(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(kind for kind, _ in self._why.values()))
