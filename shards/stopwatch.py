"""Where a shard's time goes while it decides: by extension point, and by plugin.

kube-scheduler times each pod's scheduling cycle. A shard judges a class over
many nodes, and often many pods, in one call, so the time of each extension
point is summed as it is spent and shared out among the pods it decided
(`ShardCore` marks before each unit, or run of alike units, and attributes
after): the sum is exact, and each pod's value is its share of its unit's.

Plugins are timed one call at a time, only in sampled batches (one in
`PLUGIN_SAMPLE_EVERY`), as kube-scheduler samples its plugin metrics: timing
every call of every plugin costs more than the rest of a fast batch.
"""

from __future__ import annotations

import time

from cluster.histogram import EXTENSION_POINT_BUCKETS, PLUGIN_BUCKETS, Histograms, Series

FILTER, SCORE = 0, 1  # the extension points timed, as indices of `Stopwatch.seconds`
PLUGIN_SAMPLE_EVERY = 10  # batches


class Stopwatch:
    __slots__ = ("_batches", "plugins", "points", "sampling", "seconds")

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0]  # per extension point, summed since the shard began
        self.sampling = False  # this batch times each plugin call
        # (extension_point, status, profile): per pod, its share of its unit's time
        self.points = Histograms(EXTENSION_POINT_BUCKETS)
        # (plugin, extension_point, status): per call
        self.plugins = Histograms(PLUGIN_BUCKETS)
        self._batches = 0

    def batch(self) -> None:
        """A batch begins: it is sampled or not."""
        self.sampling = self._batches % PLUGIN_SAMPLE_EVERY == 0
        self._batches += 1

    def mark(self) -> tuple[float, float]:
        return self.seconds[FILTER], self.seconds[SCORE]

    def attribute(self, mark: tuple[float, float], profile: str, placed: int, failed: int) -> None:
        """The time spent since `mark` was on `placed` pods that found a node and `failed`
        that did not, all of `profile`: each gets an equal share of Filter. Score is the
        placed pods' (a pod that fits nowhere is not scored), unless none was placed and
        scoring took time all the same (a gang that was placed in part, then undone)."""
        pods = placed + failed
        if not pods:
            return
        filtered = (self.seconds[FILTER] - mark[FILTER]) / pods
        if placed:
            self.points.observe(("Filter", "Success", profile), filtered, placed)
        if failed:
            self.points.observe(("Filter", "Unschedulable", profile), filtered, failed)
        scored = self.seconds[SCORE] - mark[SCORE]
        if placed:
            self.points.observe(("Score", "Success", profile), scored / placed, placed)
        elif scored > 0:
            self.points.observe(("Score", "Unschedulable", profile), scored / failed, failed)

    def plugin(self, name: str, point: str, started: float) -> None:
        """A sampled plugin call begun at `started` (time.perf_counter()) has returned."""
        self.plugins.observe((name, point, "Success"), time.perf_counter() - started)

    def take(self) -> tuple[list[Series], list[Series]]:
        """What the result carries back: both histograms' counts since the last batch."""
        return self.points.take(), self.plugins.take()
