"""Every pod as the API server tells it, through one watch: what the API bench measures
(a pod is scheduled when the watch first shows its `spec.nodeName`; it stands
reported unschedulable while its PodScheduled condition says False)."""

from __future__ import annotations

import bisect
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from benchmarks.controlplane.control_plane import ControlPlaneError
from cluster.cluster_adapter import Binding
from cluster.manifests import condition, condition_true, pod_group, terminated
from optimist.kube.client import Backoff, KubeClient
from optimist.kube.informer import Informer, object_key

SETTLE_S = 3.0  # nothing bound for this long, and every pod left reported unschedulable
# a verdict given before the bench's last change of the cluster stands once this long
# has passed since the change: a pod refused before a node was added is retried after
# its backoff, 10 s at most in both schedulers (a verdict given since stands at once)
RETRY_S = 11.0


WATCH_RETRY = Backoff(first_s=0.05, cap_s=0.25)


def _unschedulable(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """The PodScheduled condition's reason and message if it says False, else None."""
    scheduled = condition(pod, "PodScheduled")
    if scheduled is None or scheduled.get("status") != "False":
        return None
    return str(scheduled.get("reason") or "Unschedulable"), str(scheduled.get("message") or "")


class PodWatch:
    """Every pod as the server tells it: when each was first seen bound and where, each
    binding seen (a pod that moved shows twice), and the ones reported unschedulable;
    on a living cluster, when each was first seen Running and Ready."""

    def __init__(self, client: KubeClient) -> None:
        self.lock = threading.Lock()
        self.bound_at: dict[str, float] = {}
        self.running_at: dict[str, float] = {}
        self.ready_at: dict[str, float] = {}
        self.ended: set[str] = set()  # succeeded or failed: it will never be Ready now
        # pods a controller made (they name an owner), as first seen: (key, when, pod)
        self.arrived: list[tuple[str, float, dict[str, Any]]] = []
        self.nodes: dict[str, str] = {}
        self.bind_log: list[Binding] = []
        self.bind_times: list[float] = []  # when each of bind_log was seen, in order
        # PodGroup -> its pods deleted after they were bound (a finished gang may go)
        self.departed_members: Counter[str] = Counter()
        self.unschedulable: dict[str, str] = {}  # pod -> the condition's reason
        self.said_at: dict[str, float] = {}  # pod -> when its verdict last changed
        # pod -> the message of the last PodScheduled False it was given, kept once it is
        # bound: why a pod waited as long as it did
        self.last_said: dict[str, str] = {}
        self.gone: set[str] = set()
        self.terminating: set[str] = set()  # deleted with a grace period, not yet gone
        # pods being deleted (a finalizer may keep one for long): never placed, as
        # upstream's scheduler skips them, so no wait is for them
        self.deleting: set[str] = set()
        self.nominated: set[str] = set()  # unbound, waiting for the victims it preempted
        self.last_change = time.perf_counter()  # a binding or a deletion
        self.last_made = self.last_change  # the bench's last change of the cluster
        # the pod events the server sent, every one a scheduler's informer decodes too:
        # on a living cluster each pod's Running and Ready come on top of its binding
        self.events = 0
        # the bench's instrument: a watch cut by a fault (a server killed) is taken up
        # again within a quarter second, so that what it times is the schedulers', not
        # its own backoff's (a scheduler's watches back off up to 30 s)
        self.informer = Informer(client, "/api/v1/pods", self._seen, backoff=WATCH_RETRY)

    def __enter__(self) -> PodWatch:
        self.informer.start()
        if not self.informer.synced.wait(60):
            self.informer.stop()
            raise ControlPlaneError("kube-apiserver: the watch of pods did not sync within 60 s")
        return self

    def __exit__(self, *_: object) -> None:
        self.informer.stop()

    def _seen(self, kind: str, obj: dict[str, Any]) -> None:
        key, now = object_key(obj), time.perf_counter()
        node = str((obj.get("spec") or {}).get("nodeName") or "")
        with self.lock:
            self.events += 1
            if kind == "DELETED":
                if key in self.nodes and key not in self.gone and (group := pod_group(obj)):
                    self.departed_members[group] += 1
                self.gone.add(key)
                self.terminating.discard(key)
                self.deleting.discard(key)
                self.nominated.discard(key)
                self.unschedulable.pop(key, None)
                self.last_change = now  # room freed: a preemptor may go next
                return
            meta, status = obj.get("metadata") or {}, obj.get("status") or {}
            if kind == "ADDED" and meta.get("ownerReferences"):
                self.arrived.append((key, now, obj))
            if meta.get("deletionTimestamp"):
                self.terminating.add(key)
                self.deleting.add(key)
            if status.get("nominatedNodeName") and not node:
                self.nominated.add(key)
            if status.get("phase") == "Running":
                self.running_at.setdefault(key, now)
            if condition_true(obj, "Ready"):
                self.ready_at.setdefault(key, now)
            if terminated(obj):
                self.ended.add(key)
            if node:
                if self.nodes.get(key) != node:
                    self.nodes[key] = node
                    self.bind_log.append(Binding(key, node))
                    self.bind_times.append(now)
                    self.bound_at.setdefault(key, now)
                    self.last_change = now
                self.unschedulable.pop(key, None)
                self.nominated.discard(key)
            else:
                self._verdict(key, obj, now)

    def _verdict(self, key: str, obj: dict[str, Any], now: float) -> None:
        """An unbound pod's PodScheduled False, and when it last changed."""
        if (said := _unschedulable(obj)) is not None:
            if (self.unschedulable.get(key), self.last_said.get(key)) != said:
                self.said_at[key] = now
            self.unschedulable[key], self.last_said[key] = said

    def history(self) -> tuple[list[Binding], Counter[str]]:
        """Every binding seen, and each gang's pods deleted since they were bound: what
        the checker needs beyond the server's state now."""
        with self.lock:
            return list(self.bind_log), Counter(self.departed_members)

    def bound_after(self, at: float) -> float | None:
        """When the first binding after `at` (a perf_counter reading) was seen, if one
        has been."""
        with self.lock:
            i = bisect.bisect_right(self.bind_times, at)
            return self.bind_times[i] if i < len(self.bind_times) else None

    def bind_times_between(self, start: float, end: float) -> list[float]:
        """When each binding seen between two perf_counter readings was seen."""
        with self.lock:
            times = self.bind_times
            return times[bisect.bisect_right(times, start) : bisect.bisect_right(times, end)]

    def take_arrived(self) -> list[tuple[str, float, dict[str, Any]]]:
        with self.lock:
            taken, self.arrived = self.arrived, []
        return taken

    def take_terminating(self) -> list[str]:
        with self.lock:
            taken, self.terminating = list(self.terminating), set()
        return taken

    def made(self) -> None:
        """The bench changed the cluster (made or deleted objects): verdicts given before
        may no longer hold."""
        with self.lock:
            self.last_made = time.perf_counter()

    def attempted(self, keys: Iterable[str]) -> bool:
        """Whether each of `keys` was bound, reported unschedulable, or deleted: tried
        once at least (upstream's barrier stage Attempted)."""
        with self.lock:
            return all(
                k in self.bound_at or k in self.unschedulable or self._leaving(k) for k in keys
            )

    def _leaving(self, key: str) -> bool:
        """Deleted, or being deleted: no scheduler places it."""
        return key in self.gone or key in self.deleting

    def left(self, keys: Iterable[str]) -> tuple[list[str], bool]:
        """The pods of `keys` neither bound nor deleted (nor being deleted), and whether
        they have settled: each reported unschedulable, since the bench's last change or
        RETRY_S after it, none waiting on victims it preempted, and nothing bound or
        deleted for SETTLE_S."""
        with self.lock:
            left = [k for k in keys if k not in self.bound_at and not self._leaving(k)]
            now = time.perf_counter()
            stale = now - self.last_made < RETRY_S  # verdicts from before it may not hold
            settled = all(
                k in self.unschedulable
                and k not in self.nominated
                and not (stale and self.said_at[k] < self.last_made)
                for k in left
            )
            return left, now - self.last_change >= SETTLE_S and settled
