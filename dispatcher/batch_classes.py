"""A batch's equivalence classes, and a batch out with a shard."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cluster.objects import Pod, SchedulingSpec

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


@dataclass(slots=True)
class InFlightBatch:
    shard: int
    classes: list[SchedulingSpec]
    units: dict[str, list[int]]  # unit key -> the class of each of its pods, in order
