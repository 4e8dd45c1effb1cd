"""A batch's equivalence classes, its units as a shard is to place them, and a batch out
with a shard."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cluster.messages import UnitRequest
from cluster.objects import Pod, SchedulingSpec
from dispatcher.queue import QueuedUnit

# a pod as a shard is to judge it at this attempt: its volumes resolved
Resolve = Callable[[Pod], Pod]


@dataclass(slots=True)
class BatchClasses:
    """The specs of a batch's pods, once each: pods with equal specs share a class, which
    a shard judges once."""

    specs: list[SchedulingSpec] = field(default_factory=list)
    _index: dict[SchedulingSpec, int] = field(default_factory=dict)

    def of(self, spec: SchedulingSpec) -> int:
        """The class index of a spec, a new class if none is equal to it."""
        index = self._index.get(spec)
        if index is None:
            index = self._index[spec] = len(self.specs)
            self.specs.append(spec)
        return index

    def request(
        self, unit: QueuedUnit, judged: list[Pod], manifests: bool, preempt: bool
    ) -> UnitRequest:
        """The unit to place, its pods as judged at this attempt (`Resolve`), in this
        batch's classes; with the pods' manifests where extenders need them, and what
        each pod's own volumes hold where any has some."""
        return UnitRequest(
            unit.key,
            [(pod.key, self.of(pod.spec)) for pod in judged],
            unit.min_member,
            [dict(p.manifest or {}) for p in unit.pods] if manifests else [],
            preempt,
            [unit.nominated.get(p.key, "") for p in unit.pods] if unit.nominated else [],
            [p.attached for p in judged] if any(p.attached for p in judged) else [],
            [p.exclusive for p in judged] if any(p.exclusive for p in judged) else [],
        )


@dataclass(slots=True)
class InFlightBatch:
    shard: int
    classes: list[SchedulingSpec]
    units: dict[str, list[int]]  # unit key -> the class of each of its pods, in order
