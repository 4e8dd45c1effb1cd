"""What the cross-pod rules need to see of the cluster: nodes and the pods on them, by peer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cluster.objects import Node, Peer

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def default_namespace_labels(namespace: str) -> dict[str, str]:
    """The label every namespace carries; all we know of a namespace until they are watched."""
    return {NAMESPACE_NAME_LABEL: namespace}


class ClusterView(Protocol):
    def node_names(self) -> Iterable[str]: ...

    def node(self, name: str) -> Node: ...

    def peers_on(self, name: str) -> Mapping[Peer, int]:
        """The pods on a node, counted by peer."""

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """Labels of a namespace, for namespaceSelector (empty until namespaces are watched)."""


@dataclass
class StaticView:
    """A view held in memory: for tests, and as the binder's committed view."""

    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Counter[Peer]] = field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)

    def node_names(self) -> Iterable[str]:
        return self.nodes.keys()

    def node(self, name: str) -> Node:
        return self.nodes[name]

    def peers_on(self, name: str) -> Mapping[Peer, int]:
        return self.pods.get(name) or {}

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.namespaces.get(namespace) or default_namespace_labels(namespace)

    def add(self, name: str, peer: Peer, pods: int = 1) -> None:
        counts = self.pods.setdefault(name, Counter())
        counts[peer] += pods
        if counts[peer] <= 0:
            del counts[peer]
