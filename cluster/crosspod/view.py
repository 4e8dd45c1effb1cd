"""What the cross-pod rules need to see of the cluster: nodes and the pods on them, by peer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cluster.memo import Memo, T
from cluster.objects import Node, Peer

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def default_namespace_labels(namespace: str) -> dict[str, str]:
    """The label every namespace carries: all there is to know of one nobody has told of."""
    return {NAMESPACE_NAME_LABEL: namespace}


class ClusterView(Protocol):
    def node_names(self) -> Iterable[str]: ...

    def node(self, name: str) -> Node: ...

    def peers_on(self, name: str) -> Mapping[Peer, int]:
        """The pods on a node, counted by peer."""

    def placed(self) -> Mapping[Peer, Mapping[str, int]]:
        """Where the pods are, by peer: peer -> node -> pods (only nodes holding some)."""

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """Labels of a namespace, for namespaceSelector: the cluster's, as the store has
        them, or the one label every namespace carries."""

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A value computed from the node specs alone, kept until they change."""

    def counted(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A value computed from the node specs and the pods on them, kept until either
        changes: a pod's candidates are checked against the same counts."""

    def pods_by_domain(self, peer: Peer, key: str) -> Mapping[str, int]:
        """Per value of label `key`, the pods of this peer on nodes with that value (nodes
        without the key left out)."""


@dataclass
class StaticView:
    """A view held in memory: for tests, and as the binder's committed view."""

    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Counter[Peer]] = field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    holders: dict[Peer, dict[str, int]] = field(default_factory=dict)  # `pods`, by peer
    # bumped by whoever changes a node's spec in `nodes` (adding or removing one is seen)
    spec_version: int = 0
    pods_version: int = 0  # bumped whenever a node's pods change
    _derived: Memo = field(default_factory=Memo, repr=False)
    _counted: Memo = field(default_factory=Memo, repr=False)
    # peer -> key -> value -> pods, for the (peer, key) pairs asked for so far; kept up to
    # date as pods move, dropped when a node's spec changes (`_by_domain_for`)
    _by_domain: dict[Peer, dict[str, Counter[str]]] = field(default_factory=dict, repr=False)
    _by_domain_for: tuple[int, int] = (-1, -1)

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        return self._derived.get((self.spec_version, len(self.nodes)), key, compute)

    def counted(self, key: Hashable, compute: Callable[[], T]) -> T:
        state = (self.spec_version, len(self.nodes), self.pods_version)
        return self._counted.get(state, key, compute)

    def pods_by_domain(self, peer: Peer, key: str) -> Mapping[str, int]:
        keys = self._domains_of(peer)
        counts = keys.get(key)
        if counts is None:
            counts = keys[key] = Counter()
            for name, pods in self.holders.get(peer, {}).items():
                value = self.nodes[name].labels.get(key) if name in self.nodes else None
                if value is not None:
                    counts[value] += pods
        return counts

    def _domains_of(self, peer: Peer) -> dict[str, Counter[str]]:
        if self._by_domain_for != (self.spec_version, len(self.nodes)):
            self._by_domain.clear()
            self._by_domain_for = (self.spec_version, len(self.nodes))
        return self._by_domain.setdefault(peer, {})

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
        self.pods_version += 1
        nodes = self.holders.setdefault(peer, {})
        tracked = self._domains_of(peer) if peer in self._by_domain else {}
        if tracked and name in self.nodes:
            moved = max(pods, 0) - nodes.get(name, 0)
            labels = self.nodes[name].labels
            for key, counts in tracked.items():
                if key in labels:
                    counts[labels[key]] += moved
        if pods > 0:
            nodes[name] = pods
        else:
            nodes.pop(name, None)
            if not nodes:
                del self.holders[peer]
