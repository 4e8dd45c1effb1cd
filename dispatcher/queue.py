"""The scheduling queue: active (priority, then arrival), backoff (by expiry), and
unschedulable (by the cluster events each unit waits for).

Active and backoff are heaps with lazy deletion: moving a unit bumps its
generation, and heap entries of an older generation are skipped when they
surface. A unit bound to one shard (its node is in that shard's partition)
waits in that shard's own active heap; every other unit in the shared one.
Unschedulable units are indexed by event, so an event costs the units it
moves, not the units that wait.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from cluster.explanation import Standing
from cluster.lifecycle import PodState, check_transition
from cluster.objects import Pod


@dataclass(frozen=True, slots=True)
class Backoff:
    """kube-scheduler's pod backoff: initial, doubling per attempt, capped."""

    initial_s: float = 1.0
    max_s: float = 10.0

    def duration(self, attempts: int) -> float:
        # capped before it is raised: 2 ** 1024 is no float (a unit tried for days)
        doubled: int = 2 ** min(max(attempts - 1, 0), 64)  # typeshed: int ** int is Any
        return min(self.initial_s * doubled, self.max_s)


ANY_SHARD = -1


@dataclass(slots=True)
class QueuedUnit:
    key: str
    pods: list[Pod]
    priority: int
    arrival: int
    state: PodState = PodState.ACTIVE
    attempts: int = 0  # scheduling attempts that ended without a commit
    conflicts: int = 0
    lost: int = 0  # batches in a row it went out in and came back without its answer
    reason: str = ""  # why the last attempt found no node
    plugins: tuple[str, ...] = ()  # the filters that rejected nodes in that attempt
    requeue_on: frozenset[str] = frozenset()  # the cluster events that may let it fit
    backoff_until: float = 0.0  # when its backoff after the last failed attempt ends
    unschedulable_since: float = 0.0
    sent_mark: int = 0  # the dispatcher's event count when its last attempt was sent
    generation: int = 0
    group: str = ""  # the PodGroup, for a gang
    min_member: int = 1  # pods that must be placed together (a gang's minMember)
    placed: list[str] = field(default_factory=list)  # pods of the placement being committed
    # after a preemption: pod -> the node room is reserved on for it, and the
    # victims whose deletion the unit waits for before it is tried there (None,
    # not empty containers, while it has none: a million queued units stay small)
    nominated: dict[str, str] | None = None
    victims: set[str] | None = None
    preemption: str = ""  # what came of its last look for victims ("": none taken)
    since: float = 0.0  # when the unit became complete (a gang's timeout counts from here)
    shard: int = ANY_SHARD  # the shard that should try it, when its node is in a partition

    def move(self, new: PodState) -> None:
        check_transition(self.key, self.state, new)
        self.state = new
        self.generation += 1

    def standing(self, now: float, quota: str, preemption: str) -> Standing:
        """Where it stands, for `optimist explain`: `quota`, what its quota says of its
        first pod; `preemption`, what came of its last look for victims."""
        waiting = self.state in (PodState.UNSCHEDULABLE, PodState.PREEMPTING)
        return Standing(
            state=self.state.value,
            attempts=self.attempts,
            reason=self.reason,
            plugins=list(self.plugins),
            waits_for=sorted(self.requeue_on) if self.state is PodState.UNSCHEDULABLE else [],
            backoff_left_s=max(self.backoff_until - now, 0.0),
            waiting_s=now - (self.unschedulable_since if waiting else self.since),
            quota=self.reason if self.state is PodState.QUOTA_WAIT else quota,
            preemption=preemption,
            group=self.group,
            min_member=self.min_member,
        )


@dataclass(slots=True)
class SchedulingQueue:
    backoff: Backoff = field(default_factory=Backoff)
    _active: dict[int, list[tuple[int, int, int, QueuedUnit]]] = field(default_factory=dict)
    _backoff: list[tuple[float, int, int, QueuedUnit]] = field(default_factory=list)
    active_count: int = 0
    backoff_units: dict[str, QueuedUnit] = field(default_factory=dict)
    unschedulable_units: dict[str, QueuedUnit] = field(default_factory=dict)
    quota_waiting: dict[str, QueuedUnit] = field(default_factory=dict)  # over their quota
    preempting: dict[str, QueuedUnit] = field(default_factory=dict)  # awaiting their victims
    # event -> the unschedulable units waiting for it, by key
    _waiting_on: dict[str, dict[str, QueuedUnit]] = field(default_factory=dict)
    # (since, generation, unit) in the order units became unschedulable
    _unschedulable_order: deque[tuple[float, int, QueuedUnit]] = field(default_factory=deque)

    def push_active(self, unit: QueuedUnit) -> None:
        heap = self._active.setdefault(unit.shard, [])
        heapq.heappush(heap, (-unit.priority, unit.arrival, unit.generation, unit))
        self.active_count += 1

    def pop_active(self, shard: int = ANY_SHARD) -> QueuedUnit | None:
        """The first active unit for this shard: its own or a shared one, by priority."""
        heaps = []
        for heap in (self._active.get(ANY_SHARD), self._active.get(shard)):
            while heap and not _current(heap[0]):
                heapq.heappop(heap)
            if heap:
                heaps.append(heap)
        if not heaps:
            return None
        first = heaps[0] if len(heaps) == 1 else min(heaps, key=lambda h: h[0][:2])
        _, _, _, unit = heapq.heappop(first)
        self.active_count -= 1
        return unit

    def push_backoff(self, unit: QueuedUnit) -> None:
        """A BACKOFF unit, until its `backoff_until`."""
        heapq.heappush(self._backoff, (unit.backoff_until, unit.arrival, unit.generation, unit))
        self.backoff_units[unit.key] = unit

    def push_unschedulable(self, unit: QueuedUnit) -> None:
        """An UNSCHEDULABLE unit, until one of its `requeue_on` events or the timeout."""
        self.unschedulable_units[unit.key] = unit
        for event in unit.requeue_on:
            self._waiting_on.setdefault(event, {})[unit.key] = unit
        self._unschedulable_order.append((unit.unschedulable_since, unit.generation, unit))

    def remove(self, unit: QueuedUnit) -> None:
        """Forget a waiting unit; its heap entry is skipped when it surfaces."""
        if unit.state is PodState.ACTIVE:
            self.active_count -= 1
        elif unit.state is PodState.BACKOFF:
            del self.backoff_units[unit.key]
        elif unit.state is PodState.QUOTA_WAIT:
            del self.quota_waiting[unit.key]
        elif unit.state is PodState.PREEMPTING:
            self.preempting.pop(unit.key, None)
        elif unit.state is PodState.UNSCHEDULABLE:
            del self.unschedulable_units[unit.key]
            for event in unit.requeue_on:
                del self._waiting_on[event][unit.key]

    def waiting_for(self, event: str) -> list[QueuedUnit]:
        """The unschedulable units this event may help, taken out of the index."""
        units = list(self._waiting_on.pop(event, {}).values())
        for unit in units:
            del self.unschedulable_units[unit.key]
            for other in unit.requeue_on - {event}:
                del self._waiting_on[other][unit.key]
        return units

    def waited_too_long(self, now: float, timeout_s: float) -> list[QueuedUnit]:
        """The unschedulable units that have waited `timeout_s` or more, taken out."""
        units = []
        order = self._unschedulable_order
        while order and order[0][0] + timeout_s <= now:
            _, generation, unit = order.popleft()
            if generation == unit.generation and unit.state is PodState.UNSCHEDULABLE:
                self.remove(unit)
                units.append(unit)
        return units

    def retry(self, unit: QueuedUnit, now: float) -> None:
        """UNSCHEDULABLE -> ACTIVE, or BACKOFF while its backoff is not over yet (the unit
        was taken out of the unschedulable index already)."""
        if now < unit.backoff_until:
            unit.move(PodState.BACKOFF)
            self.push_backoff(unit)
        else:
            unit.move(PodState.ACTIVE)
            self.push_active(unit)

    def activate(self, unit: QueuedUnit) -> None:
        """A waiting unit (backoff, unschedulable, quota, preempting) to the active queue."""
        self.remove(unit)
        unit.move(PodState.ACTIVE)
        self.push_active(unit)

    def activate_quota_waiting(self) -> None:
        """Every unit its quota held back is judged again."""
        for unit in list(self.quota_waiting.values()):
            self.activate(unit)

    def flush_expired(self, now: float) -> int:
        """Move every unit whose backoff is over to the active queue."""
        moved = 0
        while self._backoff and self._backoff[0][0] <= now:
            _, _, generation, unit = heapq.heappop(self._backoff)
            if generation == unit.generation and unit.state is PodState.BACKOFF:
                self.activate(unit)
                moved += 1
        return moved


def _current(entry: tuple[int, int, int, QueuedUnit]) -> bool:
    """A heap entry still stands for its unit (lazy deletion skips the others)."""
    unit = entry[3]
    return entry[2] == unit.generation and unit.state is PodState.ACTIVE
