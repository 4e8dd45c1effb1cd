"""Preemption (upstream's DefaultPreemption): which lower-priority pods to evict, where.

For a unit that fits nowhere, the shard names the nodes where only room is
missing. Here each pod of the unit gets a node and victims: on each node,
every pod of lower priority is taken away in thought; if the pod then fits,
the victims are given back one by one, the most important first (those a
disruption budget protects before the others), as long as it still fits.
What is left are the victims. Of the nodes tried, the one chosen has, in
this order: the fewest budget violations, the lowest highest victim
priority, the lowest sum of priorities, the fewest victims, the latest
start of its most important victims. A gang preempts for every member or
not at all. With elastic quota, pods of a quota that uses more than it may
now can be evicted too, whatever their priority (`reclaiming`). The store
then evicts and reserves in one step (`preempt.lua`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from binder.preemption_args import DefaultPreemptionArgs
from cluster import resources as res
from cluster.inventory import BoundPod, BoundPods
from cluster.quota import QuotaTree
from cluster.store import Store

_INT32_OFFSET = 2**31  # upstream adds MaxInt32 + 1 to each priority before summing

# Nodes tried per pod where a profile sets none: at least this share of the nodes
# named, and never fewer than this many (v1's defaults)
_DEFAULT_ARGS = DefaultPreemptionArgs()


@dataclass(frozen=True, slots=True)
class Preemptor:
    """One pod of a unit that asks to preempt, and the nodes the shard named for it."""

    key: str
    priority: int
    requests: tuple[tuple[str, int], ...]  # as SchedulingSpec.requests
    nodes: Sequence[str]
    quota: str | None = None  # the leaf quota it counts against, if any
    profile: str = "default-scheduler"


def lower_priority(pod: Preemptor, victim: BoundPod) -> bool:
    return victim.priority < pod.priority


def reclaiming(tree: Callable[[], QuotaTree | None]) -> Callable[[Preemptor, BoundPod], bool]:
    """Who may be evicted with elastic quota (`tree` gives the quotas now, if any): a pod
    of lower priority, or any pod of another quota that uses more than its runtime quota
    (it must give borrowed room back; the most important of its pods are still
    reprieved first)."""

    def may_evict(pod: Preemptor, victim: BoundPod) -> bool:
        if victim.priority < pod.priority:
            return True
        quotas = tree()
        if quotas is None:
            return False
        over = quotas.over_runtime()
        if not over:
            return False
        theirs = quotas.leaf_for(victim.namespace, victim.labels)
        return theirs in over and theirs != pod.quota

    return may_evict


@dataclass(slots=True)
class Candidate:
    node: str
    victims: list[BoundPod]  # most important first
    violations: int  # victims whose eviction a disruption budget does not allow

    def rank(self) -> tuple[int, int, int, int, int]:
        """Smaller is better: upstream's pickOneNodeForPreemption, criterion by criterion."""
        if not self.victims:
            return (0, -_INT32_OFFSET, 0, 0, 0)
        top = self.victims[0].priority
        earliest = min(v.started for v in self.victims if v.priority == top)
        return (
            self.violations,
            top,
            sum(v.priority + _INT32_OFFSET for v in self.victims),
            len(self.victims),
            -earliest,
        )


@dataclass(slots=True)
class Plan:
    """Where each pod of the unit goes once its victims are gone."""

    nominated: dict[str, str] = field(default_factory=dict)  # pod key -> node
    victims: list[BoundPod] = field(default_factory=list)


def _shift(room: dict[str, int], requests: Sequence[tuple[str, int]], sign: int) -> None:
    """Give (`sign` 1) or take (-1) a pod's requests to or from `room`."""
    for name, amount in requests:
        room[name] = room.get(name, 0) + sign * amount


@lru_cache(maxsize=4096)
def checked(requests: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """The requests fit is judged on: asked for, and not the scheduler's score-only ones.
    Kept per distinct set of requests: a dry run asks for it on every node it judges."""
    return tuple((n, a) for n, a in requests if a > 0 and not res.is_score_only(n))


Violating = Callable[[Sequence[BoundPod]], set[str]]  # cluster.disruption's `violating`


def select_victims(
    pod: Preemptor,
    free: dict[str, int],
    pods: Sequence[BoundPod],
    violating: Violating = lambda pods: set(),
    may_evict: Callable[[Preemptor, BoundPod], bool] = lower_priority,
) -> Candidate | None:
    """The fewest pods `may_evict` allows (of lower priority) to evict from one node for
    `pod` to fit, or None if evicting all of them is not enough. `free` is the node's
    room now; `violating` says which of the pods, evicted most important first, a
    disruption budget keeps."""
    need = checked(pod.requests)
    # what is left on the node with the pod on it, per checked resource: it fits at >= 0
    left = [free.get(name, 0) - amount for name, amount in need]
    if min(left, default=0) >= 0:
        return Candidate("", [], 0)
    lower = [p for p in pods if may_evict(pod, p)]
    holds = {p.key: [p.amounts.get(name, 0) for name, _ in need] for p in lower}
    for held in holds.values():
        left = [x + h for x, h in zip(left, held, strict=True)]
    if min(left) < 0:
        return None
    # the most important first: higher priority, then the one running longer
    lower.sort(key=lambda p: (-p.priority, p.started))
    kept = violating(lower)
    victims: list[BoundPod] = []
    violations = 0
    for guarded in (True, False):
        for pod_on_node in lower:
            if (pod_on_node.key in kept) != guarded:
                continue
            stays = [x - h for x, h in zip(left, holds[pod_on_node.key], strict=True)]
            if min(stays) >= 0:
                left = stays  # reprieved
                continue
            victims.append(pod_on_node)
            violations += guarded
    victims.sort(key=lambda p: (-p.priority, p.started))
    return Candidate("", victims, violations)


class PreemptionPlanner:
    def __init__(
        self,
        store: Store,
        inventory: BoundPods,
        rng: np.random.Generator,
        violating: Violating = lambda pods: set(),
        may_evict: Callable[[Preemptor, BoundPod], bool] = lower_priority,
        args: Mapping[str, DefaultPreemptionArgs] | None = None,
    ) -> None:
        self.args = args or {}  # per preempting profile; v1's defaults for the others
        self.store = store
        self.inventory = inventory
        self.rng = rng
        self.violating = violating  # evictions disruption budgets do not allow
        self.may_evict = may_evict

    def plan(self, pods: Sequence[Preemptor]) -> Plan | None:
        """A node and victims for every pod of a unit, or None if one of them finds none."""
        plan = Plan()
        given: dict[str, dict[str, int]] = {}  # node -> room given (+) and taken (-) so far
        taken: set[str] = set()  # victims already chosen for an earlier pod
        for pod in pods:
            found = self._candidates(pod, given, taken)
            if not found:
                return None
            best = min(found, key=Candidate.rank)
            plan.nominated[pod.key] = best.node
            plan.victims.extend(best.victims)
            _took(best, pod, given, taken)
        return plan

    def plan_alike(self, pods: Sequence[Preemptor]) -> list[Plan | None]:
        """Plans for single-pod units alike (the same requests, priority, quota and named
        nodes), one after another as `plan` would make them, from one dry run: each pod
        takes the best candidate left, and only the node it took is judged again (a fresh
        dry run when none is left). The candidates are those the first pod's dry run
        found, where upstream would draw a new random offset for each pod."""
        plans: list[Plan | None] = []
        given: dict[str, dict[str, int]] = {}
        taken: set[str] = set()
        heap: list[tuple[tuple[int, ...], int, Candidate]] = []
        order = itertools.count()
        for pod in pods:
            if not heap:
                heap = [(c.rank(), next(order), c) for c in self._candidates(pod, given, taken)]
                heapq.heapify(heap)
            if not heap:
                plans.append(None)
                continue
            _, _, best = heapq.heappop(heap)
            plans.append(Plan({pod.key: best.node}, list(best.victims)))
            _took(best, pod, given, taken)
            for again in self._judge(pod, [best.node], given, taken):
                heapq.heappush(heap, (again.rank(), next(order), again))
        return plans

    def _candidates(
        self, pod: Preemptor, given: dict[str, dict[str, int]], taken: set[str]
    ) -> list[Candidate]:
        """Upstream's dry run: nodes from a random offset until enough candidates are
        found, or the first that needs no victim at all."""
        nodes = list(pod.nodes)
        if not nodes:
            return []
        args = self.args.get(pod.profile, _DEFAULT_ARGS)
        share = len(nodes) * args.min_candidate_nodes_percentage // 100
        wanted = max(args.min_candidate_nodes_absolute, share, 1)
        start = int(self.rng.integers(len(nodes)))
        order = nodes[start:] + nodes[:start]
        found: list[Candidate] = []
        for i in range(0, len(order), wanted):
            for candidate in self._judge(pod, order[i : i + wanted], given, taken):
                if not candidate.victims:
                    return [candidate]  # fits as it is: nothing to evict
                found.append(candidate)
            if len(found) >= wanted:
                break
        return found

    def _judge(
        self,
        pod: Preemptor,
        nodes: Sequence[str],
        given: dict[str, dict[str, int]],
        taken: set[str],
    ) -> Iterator[Candidate]:
        """The nodes where evicting lets the pod fit, each with its victims; the room of
        each read from the store in one round trip, with this plan's changes."""
        resources = [name for name, _ in checked(pod.requests)]
        for node, free in self.store.room(nodes, resources).items():
            change = given.get(node)
            if change:
                free = dict(free)
                _shift(free, tuple(change.items()), 1)
            on_node = [p for p in self.inventory.on(node) if p.key not in taken]
            candidate = select_victims(pod, free, on_node, self.violating, self.may_evict)
            if candidate is not None:
                candidate.node = node
                yield candidate


def _took(
    best: Candidate, pod: Preemptor, given: dict[str, dict[str, int]], taken: set[str]
) -> None:
    """Note in a plan's books that `pod` goes to `best.node`, its victims gone."""
    taken.update(v.key for v in best.victims)
    change = given.setdefault(best.node, {})
    for victim in best.victims:
        _shift(change, victim.requests, 1)
    _shift(change, pod.requests, -1)
