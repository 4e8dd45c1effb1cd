"""What the cross-pod rules need to see of the cluster: nodes and the pods on them, by peer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from cluster.objects import Node, Peer

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_DERIVED_KEPT = 1024
T = TypeVar("T")


def default_namespace_labels(namespace: str) -> dict[str, str]:
    """The label every namespace carries; all we know of a namespace until they are watched."""
    return {NAMESPACE_NAME_LABEL: namespace}


class ClusterView(Protocol):
    def node_names(self) -> Iterable[str]: ...

    def node(self, name: str) -> Node: ...

    def peers_on(self, name: str) -> Mapping[Peer, int]:
        """The pods on a node, counted by peer."""

    def placed(self) -> Mapping[Peer, Mapping[str, int]]:
        """Where the pods are, by peer: peer -> node -> pods (only nodes holding some)."""

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """Labels of a namespace, for namespaceSelector (empty until namespaces are watched)."""

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A value computed from the node specs alone, kept until they change."""


@dataclass
class StaticView:
    """A view held in memory: for tests, and as the binder's committed view."""

    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Counter[Peer]] = field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    holders: dict[Peer, dict[str, int]] = field(default_factory=dict)  # `pods`, by peer
    # bumped by whoever changes a node's spec in `nodes` (adding or removing one is seen)
    spec_version: int = 0
    _derived: dict[Hashable, Any] = field(default_factory=dict, repr=False)
    _derived_for: tuple[int, int] = (-1, -1)

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        now = (self.spec_version, len(self.nodes))
        if self._derived_for != now:
            self._derived.clear()
            self._derived_for = now
        if key not in self._derived:
            if len(self._derived) >= _DERIVED_KEPT:
                del self._derived[next(iter(self._derived))]
            self._derived[key] = compute()
        return self._derived[key]  # type: ignore[no-any-return]

    def node_names(self) -> Iterable[str]:
        return self.nodes.keys()

    def node(self, name: str) -> Node:
        return self.nodes[name]

    def peers_on(self, name: str) -> Mapping[Peer, int]:
        return self.pods.get(name) or {}

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.namespaces.get(namespace) or default_namespace_labels(namespace)

    def placed(self) -> Mapping[Peer, Mapping[str, int]]:
        return self.holders

    def add(self, name: str, peer: Peer, pods: int = 1) -> None:
        counts = self.pods.setdefault(name, Counter())
        counts[peer] += pods
        self._hold(name, peer, counts[peer])
        if counts[peer] <= 0:
            del counts[peer]

    def set_pods(self, name: str, counts: Counter[Peer]) -> None:
        """Replace what a node holds (a fresh count from the store)."""
        for peer in self.pods.pop(name, Counter()):
            self._hold(name, peer, 0)
        if counts:
            self.pods[name] = counts
            for peer, pods in counts.items():
                self._hold(name, peer, pods)

    def _hold(self, name: str, peer: Peer, pods: int) -> None:
        nodes = self.holders.setdefault(peer, {})
        if pods > 0:
            nodes[name] = pods
        else:
            nodes.pop(name, None)
            if not nodes:
                del self.holders[peer]
