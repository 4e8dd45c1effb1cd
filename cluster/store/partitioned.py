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
    Reservation,
)

T = TypeVar("T")
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
        outcomes: dict[str, UnitOutcome] = {}
        single: dict[int, list[Decision]] = defaultdict(list)
        spanning: list[tuple[Decision, dict[int, Decision]]] = []
        for decision in decisions:
            parts = self._parts(decision)
            if len(parts) == 1:
                [(i, part)] = parts.items()
                single[i].append(part)
            else:
                spanning.append((decision, parts))
        batches = {
            i: self._pool.submit(self._guard, i, self.stores[i].commit, classes, part, mode)
            for i, part in single.items()
        }
        for decision, parts in spanning:
            outcomes[decision.unit] = self._commit_spanning(classes, decision, parts, mode)
        for i, future in batches.items():
            committed = future.result()
            for decision, outcome in zip(
                single[i],
                committed.outcomes if committed else [None] * len(single[i]),
                strict=True,
            ):
                outcomes[decision.unit] = outcome or _unavailable(decision.unit, i)
        return [outcomes[d.unit] for d in decisions]

    def _parts(self, decision: Decision) -> dict[int, Decision]:
        """The unit cut by partition, each pod with the candidates in the partition of
        its first one: a pod moves within its partition, never across."""
        placements: dict[int, list[PodPlacement]] = defaultdict(list)
        for p in decision.placements:
            home = self.partition_of(p.nodes[0])
            kept = [k for k, n in enumerate(p.nodes) if self.partition_of(n) == home]
            placements[home].append(
                replace(p, nodes=[p.nodes[k] for k in kept], versions=[p.versions[k] for k in kept])
            )
        first = self.partition_of(decision.placements[0].nodes[0])
        order = [first, *sorted(set(placements) - {first})]  # home first
        return {i: replace(decision, placements=placements[i]) for i in order}

    def _commit_spanning(
        self,
        classes: Sequence[SchedulingSpec],
        decision: Decision,
        parts: dict[int, Decision],
        mode: str,
    ) -> UnitOutcome:
        unit, home = decision.unit, next(iter(parts))
        reservation = Reservation(self.clock() + self.ttl_s, home)
        reserving = {
            i: self._pool.submit(
                self._guard,
                i,
                self.stores[i].commit,
                classes,
                [part],
                mode,
                None,
                None,
                reservation,
            )
            for i, part in parts.items()
        }
        reserved: dict[int, UnitOutcome] = {}
        for i, future in reserving.items():
            committed = future.result()
            reserved[i] = committed.outcomes[0] if committed else _unavailable(unit, i)
        refused = [o for o in reserved.values() if o.status != "committed"]
        if refused:
            self._give_back(unit, parts, home)
            return refused[0]
        decided = self._guard(home, self.stores[home].settle, unit, "confirm", True, self._keep_s)
        if decided != "confirmed":  # a sweeper aborted it meanwhile, or home is away
            self._give_back(unit, parts, home)
            return UnitOutcome(unit, "conflict", detail="its reservation ran out before the commit")
        confirming = [
            self._pool.submit(self._guard, i, self.stores[i].settle, unit, "confirm", False, 1)
            for i in parts
            if i != home
        ]
        for future in confirming:
            future.result()  # a part not confirmed now is by a sweeper: home says 'committed'
        self.spanning_commits += 1
        where: dict[str, tuple[str, list[int]]] = {}
        for i, part in parts.items():
            gpus = reserved[i].gpus or [[] for _ in part.placements]
            for p, node, chosen in zip(part.placements, reserved[i].nodes, gpus, strict=True):
                where[p.pod] = (node, chosen)
        pods = [p.pod for p in decision.placements]
        return UnitOutcome(
            unit, "committed", nodes=[where[p][0] for p in pods], gpus=[where[p][1] for p in pods]
        )

    def _reserve(
        self,
        i: int,
        classes: Sequence[SchedulingSpec],
        part: Decision,
        mode: str,
        reservation: Reservation,
    ) -> Committed | None:
        commit = partial(self.stores[i].commit, reservation=reservation)
        return self._guard(i, commit, classes, [part], mode)

    def _give_back(self, unit: str, parts: dict[int, Decision], home: int) -> None:
        """Every reserved part of the unit goes back; home decides 'aborted'. A part that
        cannot be reached now is given back by a sweeper once its reservation expires."""
        for i in parts:
            self._guard(i, self.stores[i].settle, unit, "abort", i == home, self._keep_s)

    def settle_expired(self, now: float | None = None) -> int:
        """Settle every reservation whose time is up, as its home decides (module
        docstring); returns how many were settled. A partition or home that does not
        answer is left for the next sweep."""
        now = self.clock() if now is None else now
        settled = 0
        for i, store in enumerate(self.stores):
            held = self._guard(i, store.reservations)
            for unit, r in (held or {}).items():
                if r.expires_at > now:
                    continue
                home = self.stores[r.home]
                decision = self._guard(r.home, home.settle, unit, "resolve", True, self._keep_s)
                if decision is None:
                    continue  # home away: ask again next time
                if i != r.home:
                    action = "confirm" if decision == "committed" else "abort"
                    if self._guard(i, store.settle, unit, action, False, 1) is None:
                        continue
                settled += 1
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
