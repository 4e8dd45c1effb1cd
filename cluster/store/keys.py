"""Every Redis key the node store uses, in one place.

All keys share a prefix so that several stores (a test each, or several
clusters) can live in one Redis server without touching each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = "optimist:"

    @property
    def seq(self) -> str:
        """The global version: incremented once by every script that changes a node."""
        return f"{self.prefix}seq"

    @property
    def changes(self) -> str:
        """Sorted set: node name -> the version of its last change."""
        return f"{self.prefix}changes"

    @property
    def pods(self) -> str:
        """Hash: committed pod key -> msgpack [node, unit, resource names, amounts, host
        ports, peer id, GPUs, attached volumes ([limit key, volume] each), ReadWriteOncePod
        claims, free volumes given to its claims ([claim, volume] each)] (commit.lua)."""
        return f"{self.prefix}pods"

    @property
    def units(self) -> str:
        """Hash: committed unit key -> msgpack list of its pod keys."""
        return f"{self.prefix}units"

    @property
    def peers(self) -> str:
        """Hash: peer id -> msgpack Peer (what other pods' affinity and spreading see of a pod)."""
        return f"{self.prefix}peers"

    @property
    def holds(self) -> str:
        """Hash: pod key -> msgpack [node, resource names, amounts, expires at (unix s)]:
        room held for a pod that has not committed yet (a preemptor's), counted in the
        node's usage meanwhile."""
        return f"{self.prefix}holds"

    @property
    def namespaces(self) -> str:
        """Hash: namespace -> its labels (JSON), for namespaceSelector."""
        return f"{self.prefix}namespaces"

    @property
    def namespace_changes(self) -> str:
        """Sorted set: namespace -> the version of its last change."""
        return f"{self.prefix}nschanges"

    @property
    def keep_away(self) -> str:
        """Counter: distinct peers with required anti-affinity ever committed (a fence for
        binders that commit without the cross-pod re-check; binder/fences.py)."""
        return f"{self.prefix}keepaway"

    @property
    def fence_prefix(self) -> str:
        """Counter per namespace (and `*` for any): pods committed there by such binders."""
        return f"{self.prefix}fence:"

    @property
    def epoch(self) -> str:
        """The store's epoch: a token made anew each time the store is built from the
        cluster's truth (`NodeStore.rebuild`), so that no placement computed against a
        store Redis lost is ever applied to the one built after it."""
        return f"{self.prefix}epoch"

    @property
    def reserved(self) -> str:
        """Hash: unit key -> msgpack [expires at (unix s), home partition]: a part of a unit
        that spans partitions, committed here as a reservation until its commit is
        confirmed or given back (partitioned.py)."""
        return f"{self.prefix}reserved"

    @property
    def commit_log(self) -> str:
        """Sorted set: version -> msgpack of what the commit at that version changed
        (commit.lua), the last COMMIT_LOG_KEPT versions (common.lua): a reader close
        behind reads these rather than every changed node's hash (changes_since.lua)."""
        return f"{self.prefix}commitlog"

    def decided(self, unit: str) -> str:
        """String, in the unit's home partition: 'committed' or 'aborted', for as long as
        another partition may still hold a reservation of it."""
        return f"{self.prefix}decided:{unit}"

    @property
    def node_prefix(self) -> str:
        """Hash per node: v, specv, spec (msgpack), a:<resource>, u:<resource>,
        hp (host ports in use), pp (peer id -> pods committed there), vl (volume limit
        key -> volumes it may attach), mp (in-tree plugins migrated to CSI there),
        av (limit key -> volume -> pods attaching it there)."""
        return f"{self.prefix}node:"

    def node(self, name: str) -> str:
        return f"{self.node_prefix}{name}"

    @property
    def claims(self) -> str:
        """Hash: ReadWriteOncePod claim (namespace/name) -> the committed pod using it."""
        return f"{self.prefix}claims"

    @property
    def given_volumes(self) -> str:
        """Hash: a free PersistentVolume given at commit to a claim waiting for its first
        consumer -> that claim (namespace/name), until the pod given it is released."""
        return f"{self.prefix}givenvolumes"

    @property
    def script_keys(self) -> list[str]:
        """KEYS of every script, in this order."""
        return [
            self.seq,
            self.changes,
            self.pods,
            self.units,
            self.peers,
            self.keep_away,
            self.holds,
            self.namespaces,
            self.namespace_changes,
            self.epoch,
            self.reserved,
            self.commit_log,
            self.claims,
            self.given_volumes,
        ]
