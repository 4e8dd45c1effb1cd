"""The node store split across Redis servers: each partition owns the nodes that hash to
it, and commits what lands on them in its own scripts.

A unit whose pods all land in one partition commits there in one script, in one
batch per partition, the partitions side by side. A unit that spans partitions
commits in two steps, its home being the partition of its first pod:

1. reserve: its part in each partition is committed as a reservation that
   expires (commit.lua with a reservation), all partitions at once. If one
   refuses, or does not answer, every part is given back.
2. confirm at home: the decision. From here the unit is committed. Then the
   other parts are confirmed.

A coordinator that dies, or a partition that is away, between the steps leaves
reservations that expire. Whoever sweeps (`settle_expired`) asks the home for
each expired part: committed there means confirm, anything else (the home
aborted, never decided, or lost its data) means give it back, and the home
is told that it is aborted, so that no late confirmation can follow. A part
whose home does not answer waits for the next sweep: it is no pod's yet,
since no pod of a unit is bound before every part is confirmed.
"""

from __future__ import annotations

import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import TypeVar

from cluster.messages import Decision, PodPlacement, UnitOutcome
from cluster.objects import Node, SchedulingSpec
from cluster.store.node_store import (
    STORE_ERRORS,
    Committed,
    EpochChanged,
    NodeStore,
)

T = TypeVar("T")
R = TypeVar("R")
UNAVAILABLE = "unavailable"  # the status of a unit whose partition did not answer


class PartitionedStore:
    def __init__(
        self,
        stores: Sequence[NodeStore],
        reservation_ttl_s: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not stores:
            raise ValueError("a partitioned store needs one partition at least")
        self.stores = list(stores)
        self.ttl_s = reservation_ttl_s
        self.clock = clock
        self._pool = ThreadPoolExecutor(len(self.stores), thread_name_prefix="partition")
        self.spanning_commits = 0  # units committed in two steps

    def partition_of(self, node: str) -> int:
        """The partition owning `node`: a hash of its name, the same in every process."""
        return zlib.crc32(node.encode()) % len(self.stores)

    def put_nodes(self, nodes: Iterable[Node]) -> None:
        owned: dict[int, list[Node]] = defaultdict(list)
        for node in nodes:
            owned[self.partition_of(node.name)].append(node)
        for i, part in owned.items():
            self.stores[i].put_nodes(part)

    def commit(
        self, classes: Sequence[SchedulingSpec], decisions: Sequence[Decision], mode: str = "fine"
    ) -> list[UnitOutcome]:
        """Commit placed units, each all-or-nothing across partitions; the outcomes in the
        order of `decisions`. A unit whose partition did not answer is `unavailable`:
        whether its commit was applied is known once the partition answers again."""
        single: dict[int, list[Decision]] = defaultdict(list)
        spanning: dict[str, tuple[Decision, dict[int, Decision]]] = {}
        for decision in decisions:
            parts = self._parts(decision)
            if len(parts) == 1:
                [(i, part)] = parts.items()
                single[i].append(part)
            else:
                spanning[decision.unit] = (decision, parts)
        committing = {
            i: self._pool.submit(self._guard, i, self.stores[i].commit, classes, units, mode)
            for i, units in single.items()
        }
        outcomes = self._commit_spanning(classes, spanning, mode) if spanning else {}
        for i, units in single.items():
            outcomes.update(self._outcomes(i, units, committing[i].result()))
        return [outcomes[d.unit] for d in decisions]

    def _parts(self, decision: Decision) -> dict[int, Decision]:
        """The unit cut by partition, home first, each pod with the candidates in the
        partition of its first one: a pod moves within its partition, never across."""
        placements: dict[int, list[PodPlacement]] = defaultdict(list)
        for p in decision.placements:
            home = self.partition_of(p.nodes[0])
            kept = [k for k, n in enumerate(p.nodes) if self.partition_of(n) == home]
            placements[home].append(
                replace(p, nodes=[p.nodes[k] for k in kept], versions=[p.versions[k] for k in kept])
            )
        first = self.partition_of(decision.placements[0].nodes[0])
        order = [first, *sorted(set(placements) - {first})]
        return {i: replace(decision, placements=placements[i]) for i in order}

    def _commit_spanning(
        self,
        classes: Sequence[SchedulingSpec],
        spanning: dict[str, tuple[Decision, dict[int, Decision]]],
        mode: str,
    ) -> dict[str, UnitOutcome]:
        """The two steps for every unit that spans partitions, each step one call per
        partition, the partitions side by side."""
        homes = {unit: next(iter(parts)) for unit, (_, parts) in spanning.items()}
        by_partition: dict[int, list[Decision]] = defaultdict(list)
        for _, parts in spanning.values():
            for i, part in parts.items():
                by_partition[i].append(part)
        until = self.clock() + self.ttl_s

        def reserve(i: int, units: list[Decision]) -> dict[str, UnitOutcome]:
            at = [homes[u.unit] for u in units]
            commit = partial(self.stores[i].commit, reserve_until=until, homes=at)
            return self._outcomes(i, units, self._guard(i, commit, classes, units, mode))

        reserved: dict[str, dict[int, UnitOutcome]] = defaultdict(dict)
        for i, outcomes in self._each(by_partition, reserve):
            for unit, outcome in outcomes.items():
                reserved[unit][i] = outcome
        out: dict[str, UnitOutcome] = {}
        for unit, parts in reserved.items():
            refused = [o for o in parts.values() if o.status != "committed"]
            if refused:
                out[unit] = refused[0]
        accepted = [u for u in spanning if u not in out]
        decided = self._settle_each({u: [homes[u]] for u in accepted}, "confirm", homes)
        others: dict[str, list[int]] = {}
        for unit in accepted:
            if decided.get((unit, homes[unit])) != "confirmed":  # a sweeper aborted it, or away
                out[unit] = UnitOutcome(unit, "conflict", detail="its reservation ran out first")
            else:
                others[unit] = [i for i in spanning[unit][1] if i != homes[unit]]
        # a part not confirmed now is, by a sweeper: its home says 'committed'
        self._settle_each(others, "confirm", homes)
        self._settle_each({u: list(spanning[u][1]) for u in out}, "abort", homes)
        for unit in others:
            self.spanning_commits += 1
            out[unit] = _whole(spanning[unit][0], spanning[unit][1], reserved[unit])
        return out

    def _settle_each(
        self, where: dict[str, list[int]], action: str, homes: dict[str, int]
    ) -> dict[tuple[str, int], str]:
        """settle.lua for each unit on the partitions given, one call per partition, side
        by side: (unit, partition) -> its answer; none where the partition did not answer."""
        work: dict[int, list[str]] = defaultdict(list)
        for unit, partitions in where.items():
            for i in partitions:
                work[i].append(unit)

        def settle(i: int, units: list[str]) -> list[str] | None:
            at_home = [homes[u] == i for u in units]
            return self._guard(i, self.stores[i].settle, units, action, at_home, self._keep_s)

        return {
            (unit, i): answer
            for i, answers in self._each(work, settle)
            for unit, answer in zip(work[i], answers or [], strict=False)
        }

    def _each(
        self, work: dict[int, list[T]], call: Callable[[int, list[T]], R]
    ) -> list[tuple[int, R]]:
        """`call(i, items)` for each partition's items, the partitions side by side."""
        futures = {i: self._pool.submit(call, i, items) for i, items in work.items() if items}
        return [(i, f.result()) for i, f in futures.items()]

    def _outcomes(
        self, i: int, units: list[Decision], committed: Committed | None
    ) -> dict[str, UnitOutcome]:
        if committed is None:
            return {u.unit: _unavailable(u.unit, i) for u in units}
        return {u.unit: o for u, o in zip(units, committed.outcomes, strict=True)}

    def settle_expired(self, now: float | None = None) -> int:
        """Settle every reservation whose time is up, as its home decides (module
        docstring); returns how many were settled. A partition or home that does not
        answer is left for the next sweep."""
        now = self.clock() if now is None else now
        expired: dict[str, list[int]] = defaultdict(list)  # unit -> partitions holding it
        homes: dict[str, int] = {}
        for i, store in enumerate(self.stores):
            for unit, r in (self._guard(i, store.reservations) or {}).items():
                if r.expires_at <= now:
                    expired[unit].append(i)
                    homes[unit] = r.home
        if not expired:
            return 0
        decided = self._settle_each({u: [homes[u]] for u in expired}, "resolve", homes)
        settled = sum(1 for u, ps in expired.items() if homes[u] in ps and (u, homes[u]) in decided)
        for action, answer in (("confirm", "committed"), ("abort", "aborted")):
            away = {
                u: [i for i in ps if i != homes[u]]
                for u, ps in expired.items()
                if decided.get((u, homes[u])) == answer
            }
            settled += len(self._settle_each(away, action, homes))
        return settled

    def release(self, units: Sequence[str] = (), pods: Sequence[str] = ()) -> int:
        """Give back committed units and pods wherever they are; returns pods released."""
        results = [self._guard(i, s.release, units, pods) for i, s in enumerate(self.stores)]
        return sum(r.pods for r in results if r)

    def room(self, names: Sequence[str], resources: Sequence[str]) -> dict[str, dict[str, int]]:
        owned: dict[int, list[str]] = defaultdict(list)
        for name in names:
            owned[self.partition_of(name)].append(name)
        out: dict[str, dict[str, int]] = {}
        for i, part in owned.items():
            out.update(self.stores[i].room(part, resources))
        return out

    @property
    def _keep_s(self) -> float:
        """How long a home keeps its decision: past any reservation's life, and a sweep."""
        return 10 * self.ttl_s

    def _guard(self, i: int, call: Callable[..., T], *args: object) -> T | None:
        """`call` on partition `i`, or None if it does not answer. A partition built
        again since (a new epoch) is adopted: what it held before is gone with it."""
        for _ in range(2):
            try:
                return call(*args)
            except EpochChanged as err:
                if not err.ready:
                    return None
                self.stores[i].epoch = None  # work in the partition's new epoch
            except STORE_ERRORS:
                return None
        return None

    def close(self) -> None:
        self._pool.shutdown()


def _unavailable(unit: str, partition: int) -> UnitOutcome:
    return UnitOutcome(unit, UNAVAILABLE, detail=f"partition {partition} did not answer")


def _whole(
    decision: Decision, parts: dict[int, Decision], reserved: dict[int, UnitOutcome]
) -> UnitOutcome:
    """The committed unit, its parts' nodes and GPUs put back in its pods' order."""
    where: dict[str, tuple[str, list[int]]] = {}
    for i, part in parts.items():
        gpus = reserved[i].gpus or [[] for _ in part.placements]
        for p, node, chosen in zip(part.placements, reserved[i].nodes, gpus, strict=True):
            where[p.pod] = (node, chosen)
    pods = [p.pod for p in decision.placements]
    return UnitOutcome(
        decision.unit,
        "committed",
        nodes=[where[p][0] for p in pods],
        gpus=[where[p][1] for p in pods],
    )
