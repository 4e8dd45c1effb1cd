"""The node store split across Redis servers: each partition owns the nodes that hash to
it, and commits what lands on them in its own scripts. It answers as NodeStore does, so
the runtime, the shards and the binder use either.

A unit whose pods all land in one partition commits there in one script, in one
batch per partition, the partitions side by side. A unit that spans partitions
commits in two steps, its home being the partition of its first pod:

1. reserve: its part in each partition is committed as a reservation that
   expires (commit.lua with a reservation), all partitions at once. If one
   refuses, every part is given back.
2. confirm at home: the decision. From here the unit is committed. Then the
   other parts are confirmed.

A coordinator that dies, or a partition that fails, between the steps leaves
reservations. Whoever sweeps (`settle_expired`) asks the home for each expired
part: committed there means confirm, anything else (the home aborted, never
decided, or lost its data) means give it back, and the home records 'aborted', so
that no late confirmation can follow. A part whose home does not answer waits for
the next sweep: it is no pod's yet, since no pod of a unit is bound before its
home decided. A commit that met a failing partition raises once the others are
done, as NodeStore's does; the caller then asks `committed_placements`, which
settles at once every unit still in doubt and says what was committed.

What lives in one place: namespaces, in partition 0. Holds and preemption work
within one partition (a plan whose victims and holds span partitions is refused,
and tried again as any refused plan). Fences for several binders are not kept.
"""

from __future__ import annotations

import time
import zlib
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import TypeVar

import numpy as np
import redis

from cluster.messages import Conflict, Decision, PodPlacement, Status, UnitOutcome
from cluster.objects import Node, Peer, Pod, SchedulingSpec
from cluster.redis_server import connect
from cluster.store.keys import Keys
from cluster.store.node_store import (
    STORE_ERRORS,
    Committed,
    Delta,
    EpochChanged,
    Fences,
    Hold,
    NodeStore,
    Preempted,
    Released,
)

T = TypeVar("T")
R = TypeVar("R")
EPOCHS = "|"  # between the partitions' epochs in the store's epoch
_CURSORS = 256  # versions handed out whose per-partition cursors are remembered


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
        self.keys: Keys = self.stores[0].keys
        self.ttl_s = reservation_ttl_s
        self.clock = clock
        self._pool = ThreadPoolExecutor(len(self.stores), thread_name_prefix="partition")
        self._cursors: OrderedDict[int, tuple[int, ...]] = OrderedDict()
        self._last_version = 0
        self.spanning_commits = 0  # units committed in two steps

    def partition_of(self, node: str) -> int:
        """The partition owning `node`: a hash of its name, the same in every process."""
        return zlib.crc32(node.encode()) % len(self.stores)

    def close(self) -> None:
        self._pool.shutdown()

    # --- as NodeStore: epochs ----------------------------------------------------

    @property
    def client(self) -> redis.Redis:
        """Partition 0's client (for what a report says of the server)."""
        return self.stores[0].client

    @property
    def epoch(self) -> str | None:
        epochs = [s.epoch for s in self.stores if s.epoch is not None]
        if len(epochs) < len(self.stores):
            return None
        return EPOCHS.join(epochs)

    def working_epoch(self) -> str:
        return EPOCHS.join(s.working_epoch() for s in self.stores)

    def current_epoch(self) -> str:
        return EPOCHS.join(s.current_epoch() for s in self.stores)

    def open(self) -> str:
        return EPOCHS.join(s.open() for s in self.stores)

    def rebuild(
        self,
        nodes: Iterable[Node],
        namespaces: Mapping[str, Mapping[str, str]],
        pods: Sequence[Pod],
    ) -> list[UnitOutcome]:
        """Every partition built anew from the cluster's truth, each with its nodes and
        the pods bound on them; the namespaces in partition 0."""
        owned_nodes = self._by_partition(nodes, lambda n: n.name)
        owned_pods = self._by_partition(pods, lambda p: p.node_name or "")
        outcomes: list[UnitOutcome] = []
        for i, store in enumerate(self.stores):
            spaces = namespaces if i == 0 else {}
            outcomes += store.rebuild(owned_nodes.get(i, []), spaces, owned_pods.get(i, []))
        return outcomes

    def clear(self) -> None:
        for store in self.stores:
            store.clear()
        self._cursors.clear()

    @property
    def round_trips(self) -> int:
        return sum(s.round_trips for s in self.stores)

    def version(self) -> int:
        """The partitions' versions together: it grows whenever any of them does."""
        return sum(s.version() for s in self.stores)

    # --- as NodeStore: nodes, namespaces, changes ----------------------------------

    def put_nodes(self, nodes: Iterable[Node]) -> int:
        owned = self._by_partition(nodes, lambda n: n.name)
        return sum(self.stores[i].put_nodes(part) for i, part in owned.items())

    def remove_nodes(self, names: Sequence[str]) -> int:
        owned = self._by_partition(names, str)
        return sum(self.stores[i].remove_nodes(part) for i, part in owned.items())

    def put_namespaces(
        self, labels: Mapping[str, Mapping[str, str]], deleted: Sequence[str] = ()
    ) -> int:
        return self.stores[0].put_namespaces(labels, deleted)

    def changes_since(
        self, since: int, columns: Sequence[str], awaited: Sequence[str] = ()
    ) -> Delta:
        """The partitions' changes since the version `since` stood for, merged. Its
        version is this client's name for the partitions' versions now: each partition
        has versions of its own, and a reader keeps only one number."""
        cursor = self._cursors.get(since, (0,) * len(self.stores)) if since else None
        reading = [
            self._pool.submit(s.changes_since, cursor[i] if cursor else 0, columns, awaited)
            for i, s in enumerate(self.stores)
        ]
        deltas = [r.result() for r in reading]
        now = tuple(d.version for d in deltas)
        self._last_version = version = max(self._last_version + 1, sum(now))
        self._cursors[version] = now
        while len(self._cursors) > _CURSORS:
            self._cursors.popitem(last=False)
        return Delta(
            version=version,
            names=[n for d in deltas for n in d.names],
            versions=np.concatenate([d.versions for d in deltas]),
            usage=np.concatenate([d.usage for d in deltas]),
            specs=[n for d in deltas for n in d.specs],
            deleted=[n for d in deltas for n in d.deleted],
            committed=sorted({u for d in deltas for u in d.committed}),
            ports={k: v for d in deltas for k, v in d.ports.items()},
            peers={k: v for d in deltas for k, v in d.peers.items()},
            namespaces=deltas[0].namespaces,
            gpus={k: v for d in deltas for k, v in d.gpus.items()},
            attached={k: v for d in deltas for k, v in d.attached.items()},
            from_log=all(d.from_log for d in deltas),
        )

    def peers(self, ids: Sequence[str]) -> dict[str, Peer]:
        """A peer is stored in each partition its pods were committed in."""
        found: dict[str, Peer] = {}
        for store in self.stores:
            missing = [i for i in ids if i not in found]
            if not missing:
                break
            found.update(store.peers(missing))
        return found

    # --- as NodeStore: units --------------------------------------------------------

    def commit(
        self,
        classes: Sequence[SchedulingSpec],
        decisions: Sequence[Decision],
        mode: str = "fine",
        fences: Fences | None = None,
        epoch: str | None = None,
    ) -> Committed:
        """Commit placed units, each all-or-nothing across partitions; the outcomes in
        the order of `decisions`. `epoch` is the store's as the placements saw it: a
        partition in another refuses (EpochChanged). If a partition fails, the others are
        committed all the same, and the error is raised: `committed_placements` says
        what became of each unit."""
        if fences is not None:
            raise ValueError("a partitioned store keeps no fences: one binder commits")
        epochs = epoch.split(EPOCHS) if epoch else [None] * len(self.stores)
        single: dict[int, list[Decision]] = defaultdict(list)
        spanning: dict[str, tuple[Decision, dict[int, Decision]]] = {}
        for decision in decisions:
            parts = self._parts(decision)
            if len(parts) == 1:
                [(i, part)] = parts.items()
                single[i].append(part)
            else:
                spanning[decision.unit] = (decision, parts)
        errors: list[Exception] = []
        committing = {
            i: self._pool.submit(
                _attempt, partial(self.stores[i].commit, epoch=epochs[i]), classes, units, mode
            )
            for i, units in single.items()
        }
        outcomes = self._commit_spanning(classes, spanning, mode, epochs, errors)
        versions = 0  # the versions the partitions answered with, together
        for i, units in single.items():
            committed = committing[i].result()
            if isinstance(committed, Exception):
                errors.append(committed)
                continue
            versions += committed.version
            outcomes.update(zip((u.unit for u in units), committed.outcomes, strict=True))
        if errors:
            raise errors[0]
        return Committed(versions, [outcomes[d.unit] for d in decisions], 0)

    def _parts(self, decision: Decision) -> dict[int, Decision]:
        """The unit cut by partition, home first, each pod with the candidates in the
        partition of its first one: a pod moves within its partition, never across."""
        placements: dict[int, list[PodPlacement]] = defaultdict(list)
        for p in decision.placements:
            home = self.partition_of(p.nodes[0])
            kept = [k for k, n in enumerate(p.nodes) if self.partition_of(n) == home]
            placements[home].append(
                replace(
                    p,
                    nodes=[p.nodes[k] for k in kept],
                    versions=[p.versions[k] for k in kept],
                    picks=[p.picks[k] for k in kept] if p.picks else [],
                )
            )
        first = self.partition_of(decision.placements[0].nodes[0])
        order = [first, *sorted(set(placements) - {first})]
        return {i: replace(decision, placements=placements[i]) for i in order}

    def _commit_spanning(
        self,
        classes: Sequence[SchedulingSpec],
        spanning: dict[str, tuple[Decision, dict[int, Decision]]],
        mode: str,
        epochs: Sequence[str | None],
        errors: list[Exception],
    ) -> dict[str, UnitOutcome]:
        """The two steps for the units that span partitions, each step one call per
        partition, the partitions side by side. A unit a failing partition leaves in
        doubt is left as it is, for `committed_placements` to settle."""
        if not spanning:
            return {}
        homes = {unit: next(iter(parts)) for unit, (_, parts) in spanning.items()}
        reserved, doubt = self._reserve_spanning(classes, spanning, homes, mode, epochs, errors)
        out: dict[str, UnitOutcome] = {}
        for unit in set(spanning) - doubt:
            refused = [o for o in reserved[unit].values() if o.status != Status.COMMITTED]
            if refused:
                out[unit] = refused[0]
        accepted = [u for u in spanning if u not in out and u not in doubt]
        decided = self._settle_each({u: [homes[u]] for u in accepted}, "confirm", homes, errors)
        others: dict[str, list[int]] = {}
        for unit in accepted:
            answer = decided.get((unit, homes[unit]))
            if answer is None:  # its home failed: in doubt
                continue
            if answer != "confirmed":  # a sweeper aborted it meanwhile
                out[unit] = UnitOutcome.refused(
                    unit, Conflict.PARTITION, "its reservation ran out first"
                )
            else:
                others[unit] = [i for i in spanning[unit][1] if i != homes[unit]]
        # a part not confirmed now is, by a sweeper: its home says 'committed'
        self._settle_each(others, "confirm", homes, [])
        self._settle_each({u: list(spanning[u][1]) for u in out}, "abort", homes, [])
        for unit in others:
            self.spanning_commits += 1
            out[unit] = _whole(spanning[unit][0], spanning[unit][1], reserved[unit])
        for unit in set(spanning) - set(out):  # in doubt: the store says, once asked
            out[unit] = UnitOutcome.refused(
                unit, Conflict.PARTITION, "a partition failed during it"
            )
        return out

    def _reserve_spanning(
        self,
        classes: Sequence[SchedulingSpec],
        spanning: dict[str, tuple[Decision, dict[int, Decision]]],
        homes: dict[str, int],
        mode: str,
        epochs: Sequence[str | None],
        errors: list[Exception],
    ) -> tuple[dict[str, dict[int, UnitOutcome]], set[str]]:
        """Step one: each partition reserves its parts of the units, until the
        reservations' time runs out. Each unit's outcome per partition, and the units a
        failing partition leaves in doubt."""
        by_partition: dict[int, list[Decision]] = defaultdict(list)
        for _, parts in spanning.values():
            for i, part in parts.items():
                by_partition[i].append(part)
        until = self.clock() + self.ttl_s

        def reserve(i: int, units: list[Decision]) -> Committed | Exception:
            at = [homes[u.unit] for u in units]
            commit = partial(self.stores[i].commit, epoch=epochs[i], reserve_until=until, homes=at)
            return _attempt(commit, classes, units, mode)

        reserved: dict[str, dict[int, UnitOutcome]] = defaultdict(dict)
        doubt: set[str] = set()
        for i, committed in self._each(by_partition, reserve):
            units = [u.unit for u in by_partition[i]]
            if isinstance(committed, Exception):
                errors.append(committed)
                doubt.update(units)
                continue
            for unit, outcome in zip(units, committed.outcomes, strict=True):
                reserved[unit][i] = outcome
        return reserved, doubt

    def _settle_each(
        self,
        where: dict[str, list[int]],
        action: str,
        homes: dict[str, int],
        errors: list[Exception],
    ) -> dict[tuple[str, int], str]:
        """settle.lua for each unit on the partitions given, one call per partition, side
        by side: (unit, partition) -> its answer; none where the partition failed (its
        error is kept in `errors`)."""
        work: dict[int, list[str]] = defaultdict(list)
        for unit, partitions in where.items():
            for i in partitions:
                work[i].append(unit)

        def settle(i: int, units: list[str]) -> list[str] | Exception:
            at_home = [homes[u] == i for u in units]
            return _attempt(self.stores[i].settle, units, action, at_home, self._keep_s)

        answers: dict[tuple[str, int], str] = {}
        for i, result in self._each(work, settle):
            if isinstance(result, Exception):
                errors.append(result)
                continue
            answers.update(((unit, i), a) for unit, a in zip(work[i], result, strict=True))
        return answers

    def _each(
        self, work: dict[int, list[T]], call: Callable[[int, list[T]], R]
    ) -> list[tuple[int, R]]:
        """`call(i, items)` for each partition's items, the partitions side by side."""
        futures = {i: self._pool.submit(call, i, items) for i, items in work.items() if items}
        return [(i, f.result()) for i, f in futures.items()]

    def committed_placements(
        self, units: Sequence[str]
    ) -> dict[str, dict[str, tuple[str, list[int]]]]:
        """Of these units, those committed: unit -> pod -> (node, its GPUs there). A unit
        still reserved somewhere is settled first, as its home decided (or aborted, if
        its home never did); a partition that fails to answer raises."""
        asked = set(units)
        holding: dict[str, list[int]] = defaultdict(list)  # unit -> partitions holding it
        homes: dict[str, int] = {}
        for i, store in enumerate(self.stores):
            for unit, r in store.reservations().items():
                if unit in asked:
                    holding[unit].append(i)
                    homes[unit] = r.home
        if holding:
            errors: list[Exception] = []
            self._resolve(holding, homes, errors)
            if errors:
                raise errors[0]
        out: dict[str, dict[str, tuple[str, list[int]]]] = {}
        for store in self.stores:
            for unit, pods in store.committed_placements(units).items():
                out.setdefault(unit, {}).update(pods)
        return out

    def _resolve(
        self, holding: dict[str, list[int]], homes: dict[str, int], errors: list[Exception]
    ) -> int:
        """Settle these units' reservations (unit -> the partitions holding one) as each
        home decides: it resolves the unit, then the other parts are confirmed or given
        back. Returns the reservations settled; a partition that fails is in `errors`."""
        decided = self._settle_each({u: [homes[u]] for u in holding}, "resolve", homes, errors)
        settled = sum(1 for u, ps in holding.items() if homes[u] in ps and (u, homes[u]) in decided)
        for action, answer in (("confirm", "committed"), ("abort", "aborted")):
            away = {
                u: [i for i in ps if i != homes[u]]
                for u, ps in holding.items()
                if decided.get((u, homes[u])) == answer
            }
            settled += len(self._settle_each(away, action, homes, errors))
        return settled

    def settle_expired(self, now: float | None = None) -> int:
        """Settle every reservation whose time is up, as its home decides (module
        docstring); returns how many were settled. A partition or home that does not
        answer is left for the next sweep."""
        now = self.clock() if now is None else now
        expired: dict[str, list[int]] = defaultdict(list)  # unit -> partitions holding it
        homes: dict[str, int] = {}
        for i, store in enumerate(self.stores):
            for unit, r in (self._adopting(i, store.reservations) or {}).items():
                if r.expires_at <= now:
                    expired[unit].append(i)
                    homes[unit] = r.home
        if not expired:
            return 0
        for home in set(homes.values()):  # a home built again since: ask it in its epoch
            self._adopting(home, self.stores[home].working_epoch)
        return self._resolve(expired, homes, [])  # one that fails is asked next time

    def _adopting(self, i: int, call: Callable[[], T]) -> T | None:
        """`call()` on partition `i`, or None if it does not answer. A partition built
        again since (a new epoch) is adopted: what it held before is gone with it."""
        for _ in range(2):
            try:
                return call()
            except EpochChanged as err:
                if not err.ready:
                    return None
                self.stores[i].epoch = None  # work in the partition's new epoch
            except STORE_ERRORS:
                return None
        return None

    @property
    def _keep_s(self) -> float:
        """How long a home keeps its decision: past any reservation's life, and a sweep."""
        return 10 * self.ttl_s

    def observe(self, pods: Sequence[Pod]) -> list[UnitOutcome]:
        """Pods the cluster runs already, each recorded in its node's partition."""
        owned = self._by_partition(pods, lambda p: p.node_name or "")
        found = {o.unit: o for i, part in owned.items() for o in self.stores[i].observe(part)}
        return [found[p.key] for p in pods]

    def release(self, units: Sequence[str] = (), pods: Sequence[str] = ()) -> Released:
        """Give back committed units and pods, wherever they are."""
        results = [s.release(units, pods) for s in self.stores]
        return Released(
            sum(r.version for r in results),
            max(r.units for r in results),  # a unit across partitions is one unit
            sum(r.pods for r in results),
            sum(r.holds for r in results),
        )

    # --- as NodeStore: holds and preemption ----------------------------------------

    def preempt(self, victims: Sequence[str], holds: Sequence[Hold]) -> Preempted:
        """Within one partition, as NodeStore's: victims and holds in more than one are
        refused, and the plan is tried again as any refused one."""
        partitions = {self.partition_of(h.node) for h in holds}
        for i, store in enumerate(self.stores):
            if victims and any(store.client.hmget(store.keys.pods, list(victims))):
                partitions.add(i)
        if len(partitions) > 1:
            return Preempted(
                0, Status.CONFLICT, "the plan spans node-store partitions", Conflict.PARTITION
            )
        return self.stores[partitions.pop() if partitions else 0].preempt(victims, holds)

    def expire_holds(self, now: float) -> int:
        """Holds whose time is up given back, and reservations whose time is up settled
        (the runtime asks every second): how many of both."""
        return sum(s.expire_holds(now) for s in self.stores) + self.settle_expired(now)

    def claim_hold(self, held_as: str, pod: str) -> str:
        """In the partition that holds the room; 'gone' if none does."""
        for store in self.stores:
            if store.client.hexists(store.keys.holds, held_as):
                return store.claim_hold(held_as, pod)
        return "gone"

    def holds(self) -> dict[str, Hold]:
        return {k: h for s in self.stores for k, h in s.holds().items()}

    # --- as NodeStore: the committed truth -----------------------------------------

    def room(self, names: Sequence[str], resources: Sequence[str]) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for i, part in self._by_partition(names, str).items():
            out.update(self.stores[i].room(part, resources))
        return out

    def usage(self, name: str) -> dict[str, int]:
        return self.stores[self.partition_of(name)].usage(name)

    def gpu_usage(self, name: str) -> list[int]:
        return self.stores[self.partition_of(name)].gpu_usage(name)

    def node_names(self) -> set[str]:
        return set().union(*(s.node_names() for s in self.stores))

    def committed_pods(self) -> dict[str, str]:
        return {p: n for s in self.stores for p, n in s.committed_pods().items()}

    def given_volumes(self, names: Collection[str]) -> dict[str, str]:
        """Given in any partition (each keeps those of the pods committed there)."""
        return {v: c for s in self.stores for v, c in s.given_volumes(names).items()}

    def _by_partition(self, items: Iterable[T], node_of: Callable[[T], str]) -> dict[int, list[T]]:
        owned: dict[int, list[T]] = defaultdict(list)
        for item in items:
            owned[self.partition_of(node_of(item))].append(item)
        return owned


Store = NodeStore | PartitionedStore  # what the roles read and commit through


def open_store(urls: Sequence[str], keys: Keys) -> Store:
    """The node store on one Redis, or split over several."""
    stores = [NodeStore(connect(url), keys) for url in urls]
    return stores[0] if len(stores) == 1 else PartitionedStore(stores)


def _attempt(call: Callable[..., T], *args: object) -> T | Exception:
    """`call(*args)`, or the store error it raised: for work done beside other work,
    whose failure is raised once the rest is done."""
    try:
        return call(*args)
    except STORE_ERRORS as err:
        return err


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
        Status.COMMITTED,
        nodes=[where[p][0] for p in pods],
        gpus=[where[p][1] for p in pods],
    )
