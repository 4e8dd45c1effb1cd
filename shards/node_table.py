"""A shard's columnar copy of the nodes, kept in step with the store by deltas.

One row per node, one column per resource. Usage is held in two parts:
`used`, the committed truth as last synced from the store, and `assumed`,
this shard's own placements the binder has not yet settled. What a pod may
use on a node is `alloc - used - assumed`, in exact int64. GPUs are also
held per device (`gpu_used`, `gpu_assumed`: milli per GPU, cluster/gpus.py).
"""

from __future__ import annotations

import hashlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from cluster import resources as res
from cluster.crosspod.view import default_namespace_labels
from cluster.gpus import GPU, MILLI_PER_GPU, NUMA, NVLINK
from cluster.memo import Memo, T
from cluster.objects import Node, Peer, Taint
from cluster.store import Delta, Store
from cluster.volumes.needs import Attachable
from shards.attached_volumes import AttachedVolumes
from shards.gpu_fit import Locality

HostPortKey = tuple[str, str, int]  # (protocol, bind ip, port)
Ports = tuple[HostPortKey, ...]
_FIRST_COLUMNS = (res.PODS, res.CPU, res.MEMORY, res.NONZERO_CPU, res.NONZERO_MEMORY)


ScalarT = TypeVar("ScalarT", bound=np.generic)
_WIDE = 48  # past this many columns, gathering the cells beats gathering whole rows


def take_rows(
    matrix: npt.NDArray[ScalarT], rows: slice | np.ndarray, cols: np.ndarray | None = None
) -> npt.NDArray[ScalarT]:
    """`matrix[rows]`, or `matrix[rows][:, cols]`: numpy's `take` gathers whole rows of
    a 2-D array several times faster than indexing with an array (7 against 25 us for
    1,000 rows here). A few columns of many (a cluster where each node has a resource
    of its own) are gathered alone (31 us against 6.4 ms for 1,000 rows of 5,005)."""
    if isinstance(rows, slice):
        return matrix[rows] if cols is None else matrix[rows, cols]
    if cols is None:
        return matrix.take(rows, 0)
    if matrix.shape[1] > _WIDE:
        cells: npt.NDArray[ScalarT] = matrix[rows[:, None], cols]
        return cells
    return matrix.take(rows, 0)[:, cols]


def row_numbers(rows: slice | np.ndarray, size: int) -> npt.NDArray[np.intp]:
    """The row numbers `rows` picks out of `size`: an array of them is itself; a slice's
    are built alone, not cut out of every row's (a class searched over one node)."""
    if isinstance(rows, slice):
        return np.arange(*rows.indices(size))
    return rows


# past one selected peer column in this many, pods_of keeps the selection's sums per row
_DENSE_PEERS = 8
_DENSE_KEPT = 32  # selections kept so, the least recently read dropped


class NodeTable:
    def __init__(self, capacity: int = 1024) -> None:
        self.columns: list[str] = list(_FIRST_COLUMNS)
        self.columns_key = tuple(self.columns)  # the columns as they are now, for caches
        self.col: dict[str, int] = {c: i for i, c in enumerate(self.columns)}
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.specs: list[Node | None] = []
        self.store_version = 0
        self.spec_epoch = 0  # bumped whenever a node's labels, taints or flags change
        cap, width = capacity, len(self.columns)
        self.alive = np.zeros(cap, dtype=bool)
        self.unschedulable = np.zeros(cap, dtype=bool)
        self.version = np.zeros(cap, dtype=np.int64)
        self.alloc = np.zeros((cap, width), dtype=np.int64)
        self.used = np.zeros((cap, width), dtype=np.int64)
        self.assumed = np.zeros((cap, width), dtype=np.int64)
        self.changed_rows: list[int] = []  # rows whose usage changed since the last mark
        # milli used per GPU (one column per GPU of the node with the most), and assumed
        self.gpu_used = np.zeros((cap, 0), dtype=np.int64)
        self.gpu_assumed = np.zeros((cap, 0), dtype=np.int64)
        # host ports in use, only for the few nodes that have any
        self.ports: dict[int, Counter[HostPortKey]] = {}
        self.assumed_ports: dict[int, Counter[HostPortKey]] = {}
        self.volumes = AttachedVolumes()  # NodeVolumeLimits' volumes attached per node
        # pods per node by peer (a column per distinct kind of pod), committed and assumed
        self.peers: list[Peer] = []
        self.peer_col: dict[str, int] = {}
        self.peer_pods = np.zeros((cap, 0), dtype=np.int32)
        self.assumed_peer_pods = np.zeros((cap, 0), dtype=np.int32)
        # the selections of many peer columns `pods_of` was asked for (a selector over
        # namespaces selects a kind per namespace): weights over the columns, and the pods
        # per row, kept as pods are assumed, forgotten and synced
        self._dense: OrderedDict[bytes, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        # namespaces' labels, for namespaceSelector; bumped version when any changes
        self.namespaces: dict[str, dict[str, str]] = {}
        self.namespaces_version = 0
        self.ranking_start = 0.0  # where this shard's fixed ranking of the nodes begins
        self._labels: dict[str, tuple[int, np.ndarray, dict[str, int]]] = {}
        self._taints: tuple[int, np.ndarray, list[tuple[Taint, ...]]] | None = None
        self._derived = Memo()

    @property
    def size(self) -> int:
        return len(self.names)

    # --- shape ------------------------------------------------------------------

    def ensure_columns(self, names: Iterable[str]) -> bool:
        """Add a column for every resource not yet known; True if any was added."""
        new = list(dict.fromkeys(n for n in names if n not in self.col))
        if not new:
            return False
        for name in new:
            self.col[name] = len(self.columns)
            self.columns.append(name)
        self.columns_key = tuple(self.columns)
        pad = ((0, 0), (0, len(new)))
        self.alloc = np.pad(self.alloc, pad)
        self.used = np.pad(self.used, pad)
        self.assumed = np.pad(self.assumed, pad)
        return True

    def _grow(self, rows: int) -> None:
        cap = len(self.alive)
        if rows <= cap:
            return
        new_cap = max(rows, cap * 2)
        extra = new_cap - cap
        self.alive = np.concatenate([self.alive, np.zeros(extra, dtype=bool)])
        self.unschedulable = np.concatenate([self.unschedulable, np.zeros(extra, dtype=bool)])
        self.version = np.concatenate([self.version, np.zeros(extra, dtype=np.int64)])
        pad = ((0, extra), (0, 0))
        self.alloc = np.pad(self.alloc, pad)
        self.used = np.pad(self.used, pad)
        self.assumed = np.pad(self.assumed, pad)
        self.peer_pods = np.pad(self.peer_pods, pad)
        self.assumed_peer_pods = np.pad(self.assumed_peer_pods, pad)
        self.gpu_used = np.pad(self.gpu_used, pad)
        self.gpu_assumed = np.pad(self.gpu_assumed, pad)

    def _gpu_width(self, gpus: int) -> None:
        """Room for nodes with `gpus` GPUs in the per-GPU columns."""
        extra = gpus - self.gpu_used.shape[1]
        if extra > 0:
            pad = ((0, 0), (0, extra))
            self.gpu_used = np.pad(self.gpu_used, pad)
            self.gpu_assumed = np.pad(self.gpu_assumed, pad)

    def _row(self, name: str) -> int:
        row = self.index.get(name)
        if row is None:
            row = len(self.names)
            self._grow(row + 1)
            self.names.append(name)
            self.specs.append(None)
            self.index[name] = row
        return row

    # --- sync -------------------------------------------------------------------

    def sync(self, store: Store, awaited: Sequence[str] = ()) -> Delta:
        """Apply the store's changes since the last sync; returns them."""
        delta = store.changes_since(self.store_version, self.columns, awaited)
        if self.ensure_columns(r for node in delta.specs for r in node.allocatable):
            delta = store.changes_since(self.store_version, self.columns, awaited)
        unknown = {i for entries in delta.peers.values() for i, _ in entries} - self.peer_col.keys()
        for peer_id, peer in store.peers(sorted(unknown)).items():
            self.peer_column(peer_id, peer)
        self.apply(delta)
        return delta

    def peer_column(self, peer_id: str, peer: Peer) -> int:
        """The column counting pods of this peer, added on first sight."""
        col = self.peer_col.get(peer_id)
        if col is None:
            col = self.peer_col[peer_id] = len(self.peers)
            self.peers.append(peer)
            if col >= self.peer_pods.shape[1]:
                # room for twice as many: pods with a label of their own (a StatefulSet's
                # pod-name) are each a peer, and widening by one was quadratic
                pad = ((0, 0), (0, max(col, 8)))
                self.peer_pods = np.pad(self.peer_pods, pad)
                self.assumed_peer_pods = np.pad(self.assumed_peer_pods, pad)
        return col

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.namespaces.get(namespace) or default_namespace_labels(namespace)

    def apply(self, delta: Delta) -> None:
        if delta.apply_namespaces(self.namespaces):
            self.namespaces_version += 1
        for node in delta.specs:
            self._set_spec(node)
        self._drop(delta.deleted)
        if delta.names:
            rows = np.fromiter(
                (self.index[n] for n in delta.names), dtype=np.intp, count=len(delta.names)
            )
            self.used[rows] = delta.usage
            self.version[rows] = delta.versions
            if self.ports:
                for row in rows.tolist():
                    self.ports.pop(row, None)
            self.peer_pods[rows] = 0
            self.gpu_used[rows] = 0
        for name, used in delta.gpus.items():
            self._gpu_width(len(used))
            self.gpu_used[self.index[name], : len(used)] = used
        for name, entries in delta.peers.items():
            row = self.index[name]
            for peer_id, pods in entries:
                self.peer_pods[row, self.peer_col[peer_id]] = pods
        self._recount(delta)
        for name, in_use in delta.ports.items():
            self.ports[self.index[name]] = Counter(
                {(protocol, ip, port): pods for protocol, port, ip, pods in in_use}
            )
        for name in delta.names:
            self.volumes.set_committed(self.index[name], delta.attached.get(name, ()))
        self.store_version = max(self.store_version, delta.version)

    def _drop(self, deleted: list[str]) -> None:
        """Nodes gone: their rows stay, empty and dead."""
        for name in deleted:
            row = self.index.get(name)
            if row is not None:
                self.alive[row] = False
                self.specs[row] = None
                self.used[row] = 0
                self.peer_pods[row] = 0
                self.gpu_used[row] = 0
                self.volumes.set_committed(row, ())
                self.spec_epoch += 1

    def _set_spec(self, node: Node) -> None:
        self.ensure_columns(node.allocatable)
        row = self._row(node.name)
        self.specs[row] = node
        self.alive[row] = True
        self.unschedulable[row] = node.unschedulable
        self.alloc[row] = 0
        for name, amount in node.allocatable.items():
            self.alloc[row, self.col[name]] = amount
        self._gpu_width(node.allocatable.get(GPU, 0))
        self.spec_epoch += 1

    # --- this shard's own placements -----------------------------------------------

    def assume(
        self,
        row: int,
        request: np.ndarray,
        ports: Ports = (),
        peer: int = -1,
        gpus: Sequence[int] = (),
        per_gpu: int = 0,
        volumes: Sequence[Attachable] = (),
    ) -> None:
        """Count one of this shard's own placements until the store holds it: its
        requests, host ports, peer, `per_gpu` milli on each of its `gpus`, and the
        volumes it attaches there."""
        self.assumed[row, : len(request)] += request
        if volumes:
            self.volumes.assume(row, self.counted_on(row, volumes), 1)
        if gpus:
            self.gpu_assumed[row, list(gpus)] += per_gpu
        if ports:
            self.assumed_ports.setdefault(row, Counter()).update(ports)
        if peer >= 0:
            self.assumed_peer_pods[row, peer] += 1
            self._count(row, peer, 1)
        self.changed_rows.append(row)

    def forget(
        self,
        row: int,
        request: np.ndarray,
        ports: Ports = (),
        peer: int = -1,
        gpus: Sequence[int] = (),
        per_gpu: int = 0,
        volumes: Sequence[Attachable] = (),
    ) -> None:
        """Undo `assume` for one pod."""
        self.assumed[row, : len(request)] -= request
        if volumes:
            self.volumes.assume(row, self.counted_on(row, volumes), -1)
        if gpus:
            self.gpu_assumed[row, list(gpus)] -= per_gpu
        if ports:
            held = self.assumed_ports[row]
            held.subtract(ports)
            if not +held:
                del self.assumed_ports[row]
        if peer >= 0:
            self.assumed_peer_pods[row, peer] -= 1
            self._count(row, peer, -1)
        self.changed_rows.append(row)

    def in_use(
        self, rows: slice | np.ndarray, cols: np.ndarray | None = None
    ) -> npt.NDArray[np.int64]:
        """Per row and column (every one, or `cols`), what is committed and assumed."""
        return take_rows(self.used, rows, cols) + take_rows(self.assumed, rows, cols)

    def pods_of(self, peers: np.ndarray, rows: slice | np.ndarray) -> npt.NDArray[np.int64]:
        """Per row, how many pods of the selected peer columns it holds (committed and assumed)."""
        cols = np.flatnonzero(peers)
        if not len(cols):
            return np.zeros(self.alive[rows].shape, dtype=np.int64)
        if len(cols) * _DENSE_PEERS < len(peers):
            # pick the few selected columns before the rows: never copy every peer column
            committed = self.peer_pods[:, cols][rows]
            assumed = self.assumed_peer_pods[:, cols][rows]
            few: npt.NDArray[np.int64] = committed.sum(axis=1, dtype=np.int64) + assumed.sum(
                axis=1, dtype=np.int64
            )
            return few
        # many: picking them would copy them all at every call; their sum is kept instead
        key = peers.tobytes()
        kept = self._dense.get(key)
        if kept is None or not self._current(*kept):
            weights = np.zeros(self.peer_pods.shape[1], dtype=self.peer_pods.dtype)
            weights[cols] = 1
            counts = self._summed(weights, slice(None))
            kept = self._dense[key] = (weights, counts)
            if len(self._dense) > _DENSE_KEPT:
                self._dense.popitem(last=False)
        else:
            self._dense.move_to_end(key)
        held: npt.NDArray[np.int64] = kept[1][rows]
        return held

    def _count(self, row: int, peer: int, pods: int) -> None:
        """A pod of `peer` assumed on `row` (or forgotten): into the kept sums."""
        for weights, counts in self._dense.values():
            # sums of a table since grown are counted afresh when next read
            if self._current(weights, counts) and weights[peer]:
                counts[row] += pods

    def _recount(self, delta: Delta) -> None:
        """Rows whose committed pods the store changed: their kept sums counted again."""
        if not self._dense or not (delta.names or delta.deleted or delta.peers):
            return
        named = (*delta.names, *delta.deleted, *delta.peers)
        rows = np.unique(np.array([self.index[n] for n in named if n in self.index], np.intp))
        for weights, counts in self._dense.values():
            if self._current(weights, counts):
                counts[rows] = self._summed(weights, rows)

    def _summed(self, weights: np.ndarray, rows: slice | np.ndarray) -> npt.NDArray[np.int64]:
        """Per row, the committed and assumed pods of the peer columns `weights` selects."""
        held = take_rows(self.peer_pods, rows) @ weights
        held += take_rows(self.assumed_peer_pods, rows) @ weights
        summed: npt.NDArray[np.int64] = held.astype(np.int64)
        return summed

    def _current(self, weights: np.ndarray, counts: np.ndarray) -> bool:
        """Kept sums still shaped like the table (it grows by rows and by peer columns)."""
        return len(weights) == self.peer_pods.shape[1] and len(counts) == len(self.alive)

    def gpu_count(self, rows: slice | np.ndarray) -> np.ndarray:
        """Per row, how many GPUs the node has."""
        col = self.col.get(GPU)
        if col is None:
            return np.zeros(self.alive[rows].shape, dtype=np.int64)
        return self.alloc[rows, col]

    def gpu_free(self, rows: slice | np.ndarray) -> npt.NDArray[np.int64]:
        """Per row and GPU, the milli free (committed and assumed taken off); 0 for the
        columns beyond the node's own GPUs, so that they never fit and add nothing."""
        free = MILLI_PER_GPU - take_rows(self.gpu_used, rows) - take_rows(self.gpu_assumed, rows)
        free *= take_rows(self._gpus_present(), rows)
        return free

    def gpu_groups(self, kind: str) -> np.ndarray:
        """int64 [rows, GPU columns]: each GPU's NVLink island or NUMA node (`kind`, as
        the node's topology annotation says; -1 where it says nothing)."""
        width = self.gpu_used.shape[1]

        def groups() -> np.ndarray:
            out = np.full((len(self.alive), width), -1, dtype=np.int64)
            for row, spec in enumerate(self.specs):
                if spec is not None and (spec.gpu_topology.nvlink or spec.gpu_topology.numa):
                    given = spec.gpu_topology.groups(kind, spec.allocatable.get(GPU, 0))
                    out[row, : len(given)] = given
            return out

        return self.derived(("gpu groups", kind, width, len(self.alive)), groups)

    def locality(self, row: int, required: str = "") -> Locality:
        """One node's GPU groups, for choosing GPUs there."""
        return Locality(self.gpu_groups(NVLINK)[row], self.gpu_groups(NUMA)[row], required)

    def _gpus_present(self) -> np.ndarray:
        """int64 [rows, GPU columns]: 1 where the node has that GPU."""
        width = self.gpu_used.shape[1]

        def present() -> np.ndarray:
            every = slice(0, len(self.alive))
            return (np.arange(width) < self.gpu_count(every)[:, None]).astype(np.int64)

        return self.derived(("gpus present", width, len(self.alive)), present)

    def counted_on(self, row: int, volumes: Sequence[Attachable]) -> Sequence[Attachable]:
        """The volumes that count on a node: CSI ones, and those of in-tree plugins its
        CSINode says are migrated there."""
        if not any(v.plugin for v in volumes):
            return volumes
        spec = self.specs[row]
        migrated = spec.migrated_plugins if spec is not None else ()
        return [v for v in volumes if not v.plugin or v.plugin in migrated]

    def volume_limit(self, key: str) -> npt.NDArray[np.int64]:
        """Per row, how many volumes of a limit key the node may attach (-1: no limit)."""

        def limits() -> npt.NDArray[np.int64]:
            out = np.full(len(self.alive), -1, dtype=np.int64)
            for row, spec in enumerate(self.specs):
                if spec is not None and spec.volume_limits:
                    out[row] = dict(spec.volume_limits).get(key, -1)
            return out

        return self.derived(("volume limit", key, len(self.alive)), limits)

    def migrated(self, plugin: str) -> npt.NDArray[np.bool_]:
        """Per row, whether the node's CSINode says this in-tree plugin is migrated there."""

        def migrated() -> npt.NDArray[np.bool_]:
            out = np.zeros(len(self.alive), dtype=bool)
            for row, spec in enumerate(self.specs):
                out[row] = spec is not None and plugin in spec.migrated_plugins
            return out

        return self.derived(("migrated", plugin, len(self.alive)), migrated)

    def host_ports(self, row: int) -> Counter[HostPortKey]:
        """Host ports in use on a node: committed and assumed."""
        return self.ports.get(row, Counter()) + self.assumed_ports.get(row, Counter())

    # --- derived columns, cached until a spec changes ------------------------------

    def label_codes(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Per row, a code for the value of label `key` (-1 where the node lacks it)."""
        cached = self._labels.get(key)
        if cached is not None and cached[0] == self.spec_epoch:
            return cached[1], cached[2]
        vocab: dict[str, int] = {}
        codes = np.full(self.size, -1, dtype=np.int32)
        for row, spec in enumerate(self.specs):
            if spec is not None and key in spec.labels:
                codes[row] = vocab.setdefault(spec.labels[key], len(vocab))
        self._labels[key] = (self.spec_epoch, codes, vocab)
        return codes, vocab

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A value computed from node specs alone, kept until a spec changes."""
        return self._derived.get(self.spec_epoch, key, compute)

    def named(self, rows: slice | np.ndarray, name: str) -> npt.NDArray[np.bool_]:
        """Per row of `rows`, whether it is the node called `name` (none, if unknown)."""
        found: npt.NDArray[np.bool_] = row_numbers(rows, self.size) == self.index.get(name, -1)
        return found

    def node_priority(self, seed: int) -> np.ndarray:
        """Per row, a fixed rank (0 .. rows-1, higher first) drawn from `seed` and the node's
        name, so that every shard with the seed ranks the nodes alike, each from its own
        `ranking_start` (a share of the way round the one order)."""
        start = self.ranking_start
        return self.derived(("priority", seed, start), lambda: _ranks(self.names, seed, start))

    def taint_groups(self) -> tuple[np.ndarray, list[tuple[Taint, ...]]]:
        """Per row, the index of its set of taints in a short list of distinct sets."""
        if self._taints is not None and self._taints[0] == self.spec_epoch:
            return self._taints[1], self._taints[2]
        groups: dict[tuple[Taint, ...], int] = {(): 0}
        codes = np.zeros(self.size, dtype=np.int32)
        for row, spec in enumerate(self.specs):
            if spec is not None and spec.taints:
                codes[row] = groups.setdefault(spec.taints, len(groups))
        self._taints = (self.spec_epoch, codes, list(groups))
        return codes, list(groups)


def _ranks(names: Sequence[str], seed: int, start: float) -> np.ndarray:
    digests = [
        int.from_bytes(hashlib.blake2b(f"{seed}/{n}".encode(), digest_size=8).digest(), "big")
        for n in names
    ]
    ranks = np.empty(len(names), dtype=np.int64)
    ranks[np.argsort(np.array(digests, dtype=np.uint64), kind="stable")] = np.arange(len(names))
    return (ranks + int(start * len(names))) % max(len(names), 1)
