"""The scheduling framework inside a shard: one small interface per extension point.

A plugin answers for many nodes at once: it gets the pod's equivalence
class and the rows of the node table to judge, and returns one array. The
same call judges every node when a class is first seen and a single node
after the shard has placed a pod there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from cluster import resources as res
from cluster.objects import SchedulingSpec
from shards.node_table import NodeTable

Rows = np.ndarray | slice
MAX_NODE_SCORE = 100


@dataclass(slots=True)
class PodClass:
    """An equivalence class, with its requests laid out along the table's columns."""

    spec: SchedulingSpec
    request: np.ndarray  # int64 [columns]
    checked: np.ndarray  # columns the pod requests and the filter must check

    @classmethod
    def compile(cls, spec: SchedulingSpec, table: NodeTable) -> PodClass:
        table.ensure_columns(name for name, _ in spec.requests)
        request = np.zeros(len(table.columns), dtype=np.int64)
        for name, amount in spec.requests:
            request[table.col[name]] = amount
        checked = np.array(
            [table.col[n] for n, a in spec.requests if a > 0 and not res.is_score_only(n)],
            dtype=np.intp,
        )
        return cls(spec, request, checked)


class FilterPlugin(ABC):
    """Filter: which of the given rows can hold the pod."""

    name: ClassVar[str]
    # True when the answer depends on usage, so it must be recomputed for a
    # node after a pod is placed there; False when it depends on specs only.
    dynamic: ClassVar[bool] = False

    @abstractmethod
    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """A boolean per row."""

    @abstractmethod
    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        """Why this plugin rejects the given rows, as kube-scheduler words it."""


class ScorePlugin(ABC):
    """Score: how good each of the given rows is for the pod, 0..MAX_NODE_SCORE."""

    name: ClassVar[str]
    dynamic: ClassVar[bool] = True

    @abstractmethod
    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """An int64 per row."""


@dataclass(slots=True)
class Profile:
    """A scheduler profile: its filters in order and its weighted scorers."""

    name: str
    filters: list[FilterPlugin]
    scorers: list[tuple[ScorePlugin, int]]

    def feasible(self, pod: PodClass, table: NodeTable, rows: Rows, *, dynamic: bool) -> np.ndarray:
        """The AND of the filters that are (dynamic=True) or are not (False) usage-dependent."""
        mask = table.alive[rows].copy()
        for plugin in self.filters:
            if plugin.dynamic == dynamic:
                mask &= plugin.filter(pod, table, rows)
        return mask

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        total = None
        for plugin, weight in self.scorers:
            part = plugin.score(pod, table, rows) * weight
            total = part if total is None else total + part
        if total is None:
            return np.zeros(table.alive[rows].shape, dtype=np.int64)
        return total

    def explain(self, pod: PodClass, table: NodeTable) -> Counter[str]:
        """Per reason, how many nodes the first failing filter rejected, as upstream counts."""
        reasons: Counter[str] = Counter()
        remaining = np.flatnonzero(table.alive[: table.size])
        for plugin in self.filters:
            if not len(remaining):
                break
            ok = plugin.filter(pod, table, remaining)
            if not ok.all():
                reasons.update(plugin.reasons(pod, table, remaining[~ok]))
            remaining = remaining[ok]
        return reasons
