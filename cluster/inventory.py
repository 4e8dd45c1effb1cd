"""The pods bound in the cluster, by node, with what preemption weighs of each.

The node store counts usage per node; preemption must also know which pods
make it up, their priority and how long they have run. This inventory is
kept beside the store from what the scheduler binds and what the cluster
says was deleted (and, for a cluster that already runs pods, what it had).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from cluster.objects import Pod, SchedulingSpec


@dataclass(frozen=True, slots=True)
class BoundPod:
    key: str
    node: str
    priority: int
    requests: tuple[tuple[str, int], ...]  # as SchedulingSpec.requests
    started: int  # the order it was bound in: a later pod has a larger number
    namespace: str
    labels: tuple[tuple[str, str], ...]
    # what it was scheduled as, for `optimist explain`: the fields above are its own,
    # so keeping it holds only the rest (affinity, tolerations, ...) a little longer
    spec: SchedulingSpec | None = None

    @property
    def amounts(self) -> dict[str, int]:
        """The requests as a map (read-only): one per distinct set of requests."""
        return _as_map(self.requests)

    @classmethod
    def of(cls, pod: Pod, node: str, started: int) -> BoundPod:
        spec = pod.spec
        return cls(
            pod.key, node, pod.priority, spec.requests, started, pod.namespace, spec.labels, spec
        )


class BoundPods:
    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, BoundPod]] = {}
        self._by_namespace: dict[str, dict[str, BoundPod]] = {}
        self._node_of: dict[str, str] = {}
        self._priorities: Counter[int] = Counter()
        self._started = 0
        self._claim_users: dict[str, set[str]] = {}  # claim (namespace/name) -> pod keys
        self._claims_of: dict[str, tuple[str, ...]] = {}  # pod key -> its claims

    def add(self, pod: Pod, node: str) -> None:
        if pod.key in self._node_of:
            return
        self._started += 1
        bound = BoundPod.of(pod, node, self._started)
        self._by_node.setdefault(node, {})[pod.key] = bound
        self._by_namespace.setdefault(pod.namespace, {})[pod.key] = bound
        self._node_of[pod.key] = node
        self._priorities[pod.priority] += 1
        if pod.volumes:
            claims = tuple(f"{pod.namespace}/{v.claim}" for v in pod.volumes)
            self._claims_of[pod.key] = claims
            for claim in claims:
                self._claim_users.setdefault(claim, set()).add(pod.key)

    def remove(self, keys: Iterable[str]) -> None:
        """Pods deleted; keys of pods not bound are ignored."""
        for key in keys:
            node = self._node_of.pop(key, None)
            if node is None:
                continue
            pods = self._by_node[node]
            gone = pods.pop(key)
            if not pods:
                del self._by_node[node]
            namespace = self._by_namespace[gone.namespace]
            del namespace[key]
            if not namespace:
                del self._by_namespace[gone.namespace]
            self._priorities[gone.priority] -= 1
            if not self._priorities[gone.priority]:
                del self._priorities[gone.priority]
            for claim in self._claims_of.pop(key, ()):
                users = self._claim_users[claim]
                users.discard(key)
                if not users:
                    del self._claim_users[claim]

    def using(self, claim: str) -> Collection[str]:
        """The bound pods whose volumes name a claim (namespace/name)."""
        return self._claim_users.get(claim, ())

    def get(self, key: str) -> BoundPod | None:
        node = self._node_of.get(key)
        return None if node is None else self._by_node[node][key]

    def __iter__(self) -> Iterator[BoundPod]:
        for pods in self._by_node.values():
            yield from pods.values()

    def on(self, node: str) -> Iterable[BoundPod]:
        return self._by_node.get(node, {}).values()

    def in_namespace(self, namespace: str) -> Iterable[BoundPod]:
        return self._by_namespace.get(namespace, {}).values()

    def lowest_priority(self) -> int | None:
        """The lowest priority of a bound pod (None: no pod bound): only a pod above it
        may find victims by priority."""
        return min(self._priorities) if self._priorities else None


@lru_cache(maxsize=4096)
def _as_map(requests: tuple[tuple[str, int], ...]) -> dict[str, int]:
    return dict(requests)
