"""A shard's scheduling cycle: sync, then place every unit of a batch.

For each equivalence class the filters and scorers run once over all nodes;
after a pod is placed, only the node it went to is judged again. A unit is
placed whole in the shard's own table or not at all.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict

import numpy as np

from cluster.messages import Decision, PodPlacement, ShardBatch, ShardResult, UnitRequest
from cluster.objects import SchedulingSpec
from cluster.store import NodeStore
from shards.framework import PodClass, Profile
from shards.node_table import NodeTable

_CLASS_CACHE = 4096


class ClassState:
    """One equivalence class's scores over the nodes, during one batch (-1: infeasible)."""

    __slots__ = ("_why", "mark", "pod", "profile", "scores", "static", "table")

    def __init__(self, pod: PodClass, profile: Profile, table: NodeTable) -> None:
        self.pod, self.profile, self.table = pod, profile, table
        every = slice(0, table.size)
        self.static = profile.feasible(pod, table, every, dynamic=False)
        self.scores = self._evaluate(every, self.static)
        self.mark = len(table.changed_rows)
        self._why: tuple[int, Counter[str]] | None = None

    def _evaluate(self, rows: np.ndarray | slice, static: np.ndarray) -> np.ndarray:
        ok = static & self.profile.feasible(self.pod, self.table, rows, dynamic=True)
        return np.where(ok, self.profile.score(self.pod, self.table, rows), -1)

    def _catch_up(self) -> None:
        log = self.table.changed_rows
        if len(log) > self.mark:
            rows = np.unique(np.asarray(log[self.mark :], dtype=np.intp))
            self.scores[rows] = self._evaluate(rows, self.static[rows])
            self.mark = len(log)

    def best(self, rng: np.random.Generator) -> int:
        """The highest-scoring feasible row, ties broken uniformly at random; -1 if none."""
        self._catch_up()
        if not len(self.scores):
            return -1
        top = self.scores.max()
        if top < 0:
            return -1
        ties = np.flatnonzero(self.scores == top)
        return int(ties[rng.integers(len(ties))]) if len(ties) > 1 else int(ties[0])

    def why(self) -> Counter[str]:
        """Why no node fits, computed once until the table changes again."""
        mark = len(self.table.changed_rows)
        if self._why is None or self._why[0] != mark:
            self._why = (mark, self.profile.explain(self.pod, self.table))
        return self._why[1]


class ShardCore:
    """Everything a shard does, without Ray: the actor is a thin shell around this."""

    def __init__(self, shard_id: int, store: NodeStore, profile: Profile, seed: int) -> None:
        self.shard_id = shard_id
        self.store = store
        self.profile = profile
        self.table = NodeTable()
        self.rng = np.random.default_rng(seed)
        # unit -> (rows, requests) this shard placed and assumes until it sees the
        # unit committed in the store (then the store's usage holds it) or the
        # dispatcher says its batch is settled (committed or refused)
        self._assumed: dict[str, tuple[list[int], list[np.ndarray]]] = {}
        self._batch_units: dict[int, list[str]] = {}
        self._classes: OrderedDict[bytes, PodClass] = OrderedDict()

    def handle(self, batch: ShardBatch) -> ShardResult:
        started = time.perf_counter()
        for batch_id in batch.resolved:
            for unit in self._batch_units.pop(batch_id, []):
                self._stop_assuming(unit)
        delta = self.table.sync(self.store, list(self._assumed))
        for unit in delta.committed:
            self._stop_assuming(unit)
        synced = time.perf_counter()
        decisions = self._decide(batch)
        return ShardResult(
            shard=self.shard_id,
            batch_id=batch.batch_id,
            store_version=self.table.store_version,
            decisions=decisions,
            sync_s=synced - started,
            decide_s=time.perf_counter() - synced,
        )

    def _stop_assuming(self, unit: str) -> None:
        rows, requests = self._assumed.pop(unit, ([], []))
        self.table.forget(rows, requests)

    def _compile(self, spec: SchedulingSpec) -> PodClass:
        digest = spec.digest
        pod = self._classes.get(digest)
        if pod is None:
            pod = self._classes[digest] = PodClass.compile(spec, self.table)
            if len(self._classes) > _CLASS_CACHE:
                self._classes.popitem(last=False)
        else:
            self._classes.move_to_end(digest)
        return pod

    def _decide(self, batch: ShardBatch) -> list[Decision]:
        self.table.changed_rows.clear()
        classes = [self._compile(spec) for spec in batch.classes]
        states: dict[int, ClassState] = {}
        decisions = []
        placed = []
        for unit in batch.units:
            decision = self._place(unit, classes, states)
            if decision.placed:
                self._assumed[unit.key] = (
                    [self.table.index[p.nodes[0]] for p in decision.placements],
                    [classes[p.cls].request for p in decision.placements],
                )
                placed.append(unit.key)
            decisions.append(decision)
        if placed:
            self._batch_units[batch.batch_id] = placed
        return decisions

    def _place(
        self, unit: UnitRequest, classes: list[PodClass], states: dict[int, ClassState]
    ) -> Decision:
        """All pods of the unit placed in the table, or none and the reasons."""
        chosen: list[int] = []
        for _, cls in unit.pods:
            state = states.get(cls)
            if state is None:
                state = states[cls] = ClassState(classes[cls], self.profile, self.table)
            row = state.best(self.rng)
            if row < 0:
                # the reasons count the unit's own pods placed so far, then those are undone
                reasons = dict(state.why())
                self.table.forget(chosen, [classes[c].request for _, c in unit.pods[: len(chosen)]])
                alive = int(self.table.alive[: self.table.size].sum())
                return Decision(unit.key, [], reasons, alive)
            self.table.assume(row, classes[cls].request)
            chosen.append(row)
        names, versions = self.table.names, self.table.version
        return Decision(
            unit.key,
            [
                PodPlacement(pod, cls, [names[row]], [int(versions[row])])
                for (pod, cls), row in zip(unit.pods, chosen, strict=True)
            ],
        )
