"""Histograms that travel: counts per bucket, kept where the time is spent (a shard)
and merged into the one registry of the control process.

A shard observes its own timings into `Histograms` and sends the counts back
with its result (`ShardResult.observed`), so that nothing is lost with a shard
process and one `/metrics` serves every shard. The buckets are part of the
metric's definition, so both sides take them from here.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import Any


def exponential(start: float, factor: float, count: int) -> list[float]:
    """Prometheus' ExponentialBuckets, as kube-scheduler's metrics use them."""
    return [start * factor**i for i in range(count)]


# one series of a histogram as it travels: its label values, its counts per bucket, their sum
Series = tuple[tuple[str, ...], list[int], float]

# scheduler_framework_extension_point_duration_seconds
EXTENSION_POINT_BUCKETS = exponential(0.0001, 2, 12)
# scheduler_plugin_execution_duration_seconds
PLUGIN_BUCKETS = exponential(0.00001, 1.5, 20)


class Histograms:
    """The series of one histogram, by label values: counts per bucket (the last: above
    every bound) and the sum of what was observed."""

    __slots__ = ("buckets", "series")

    def __init__(self, buckets: Sequence[float]) -> None:
        self.buckets = list(buckets)
        self.series: dict[tuple[str, ...], list[Any]] = {}  # labels -> [counts, sum]

    def observe(self, labels: tuple[str, ...], value: float, count: int = 1) -> None:
        """`count` observations of `value` at once."""
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = [[0] * (len(self.buckets) + 1), 0.0]
        series[0][bisect.bisect_left(self.buckets, value)] += count
        series[1] += value * count

    def merge(self, labels: tuple[str, ...], counts: Sequence[int], total: float) -> None:
        """Observations made elsewhere, over the same buckets."""
        if len(counts) != len(self.buckets) + 1:
            raise ValueError(f"{len(counts)} bucket counts for {len(self.buckets)} buckets")
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = [[0] * (len(self.buckets) + 1), 0.0]
        mine = series[0]
        for i, count in enumerate(counts):
            mine[i] += count
        series[1] += total

    def __iter__(self) -> Iterator[tuple[tuple[str, ...], list[int], float]]:
        for labels, (counts, total) in self.series.items():
            yield labels, counts, total

    def to_wire(self) -> list[Series]:
        return list(self)

    def take(self) -> list[Series]:
        """Everything observed so far, as it travels; and start again from nothing."""
        wire = self.to_wire()
        self.series = {}
        return wire
