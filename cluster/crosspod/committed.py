"""The committed pods and nodes, kept in step with the store by deltas, for exact re-checks."""

from __future__ import annotations

from collections import Counter

from cluster.crosspod.view import StaticView
from cluster.objects import Peer
from cluster.store import Store


class CommittedView(StaticView):
    """A StaticView of the store's committed truth: node specs and pods by peer."""

    def __init__(self) -> None:
        super().__init__()
        self.version = 0
        self._peers: dict[str, Peer] = {}

    def sync(self, store: Store) -> None:
        delta = store.changes_since(self.version, [])
        unknown = {i for entries in delta.peers.values() for i, _ in entries} - self._peers.keys()
        self._peers.update(store.peers(sorted(unknown)))
        if delta.apply_namespaces(self.namespaces):  # namespaceSelector: every answer may move
            self.pods_version += 1
        if delta.specs or delta.deleted or delta.namespaces:
            self.spec_version += 1
        for node in delta.specs:
            self.nodes[node.name] = node
        for name in delta.deleted:
            self.nodes.pop(name, None)
            self.set_pods(name, Counter())
        for name in delta.names:
            entries = delta.peers.get(name, [])
            self.set_pods(name, Counter({self._peers[i]: pods for i, pods in entries}))
        self.version = delta.version

    def keeping_away(self) -> list[Peer]:
        """Peers ever committed with required anti-affinity: pods they select need a re-check."""
        return [peer for peer in self._peers.values() if peer.anti_affinity_required]
