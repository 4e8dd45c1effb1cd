"""What the resource scorers share: the requested and allocatable amounts they judge.

Upstream's `resourceAllocationScorer` decides per node and resource what is
requested (what is on the node plus the pod) and what is allocatable; a
resource it leaves out gets allocatable 0, and every scorer skips those.
Requested counts what is committed and assumed on the node plus the pod (as
the pod is weighed, `PodClass.weighed`); for CPU and memory the
NodeResourcesFit strategies use the non-zero amounts (a container that asks
for nothing counts as 100m / 200Mi), while BalancedAllocation uses the
actual requests.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cluster import resources as res
from shards.framework import PodClass, Rows
from shards.node_table import NodeTable, take_rows

_NONZERO_COLUMN = {res.CPU: res.NONZERO_CPU, res.MEMORY: res.NONZERO_MEMORY}


@dataclass(frozen=True, slots=True)
class ResourceWeight:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceWeight(res.CPU), ResourceWeight(res.MEMORY))


def is_scalar(name: str) -> bool:
    """Upstream's IsScalarResourceName: extended, hugepages, prefixed native, attachable volumes."""
    return (
        res.is_extended(name)
        or "kubernetes.io/" in name
        or name.startswith(("hugepages-", "attachable-volumes-"))
    )


def _usage_column(name: str, use_requested: bool) -> str | None:
    """The column upstream reads this resource's request from; None if it never scores it."""
    if name in _NONZERO_COLUMN:
        return name if use_requested else _NONZERO_COLUMN[name]
    if name == res.EPHEMERAL_STORAGE or is_scalar(name):
        return name
    return None


def requested_and_capacity(
    pod: PodClass,
    table: NodeTable,
    rows: Rows,
    resources: tuple[ResourceWeight, ...],
    *,
    use_requested: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Two int64 arrays [rows, resources]: requested with the pod, and allocatable.

    Both are 0 where upstream leaves the resource out: a scalar resource the
    pod does not ask for, a resource the node does not have, or one upstream
    never scores (such as `pods`).
    """
    layout = _layout(table.columns_key, resources, use_requested)
    scored, cap_cols, used_cols = layout.scored, layout.capacity, layout.usage
    request = pod.weighed
    if len(request) < len(table.columns):  # the class was laid out before a column was added
        request = np.pad(request, (0, len(table.columns) - len(request)))
    asked = request[used_cols]
    if layout.scalar.any():
        kept = ~layout.scalar | (asked != 0)
        scored, cap_cols, used_cols, asked = (a[kept] for a in (scored, cap_cols, used_cols, asked))
    capacity = take_rows(table.alloc, rows, cap_cols)
    requested = table.in_use(rows, used_cols) + asked
    if not capacity.all():
        requested[capacity == 0] = 0
    if len(scored) == len(resources):
        return requested, capacity
    full_requested = np.zeros((len(capacity), len(resources)), dtype=np.int64)
    full_capacity = np.zeros_like(full_requested)
    full_requested[:, scored], full_capacity[:, scored] = requested, capacity
    return full_requested, full_capacity


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where the resources a scorer judges are found in a table's columns."""

    scored: np.ndarray  # intp: positions in `resources` the table has
    capacity: np.ndarray  # intp: their allocatable columns
    usage: np.ndarray  # intp: the columns their requests are read from
    scalar: np.ndarray  # bool: scored only when the pod asks for it


@functools.lru_cache(maxsize=256)
def _layout(
    columns: tuple[str, ...], resources: tuple[ResourceWeight, ...], use_requested: bool
) -> _Layout:
    """Worked out once per table layout, not per class: classes differ in amounts only."""
    col = {name: i for i, name in enumerate(columns)}
    scored, cap_cols, used_cols, scalar = [], [], [], []
    for i, resource in enumerate(resources):
        source = _usage_column(resource.name, use_requested)
        if source not in col or resource.name not in col:
            continue  # no node has it: allocatable is 0 everywhere
        scored.append(i)
        cap_cols.append(col[resource.name])
        used_cols.append(col[source])
        scalar.append(is_scalar(resource.name))
    return _Layout(
        np.array(scored, dtype=np.intp),
        np.array(cap_cols, dtype=np.intp),
        np.array(used_cols, dtype=np.intp),
        np.array(scalar, dtype=bool),
    )


def divisors(capacity: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Capacity to divide by: 1 where a resource does not count (its score is left out
    anyway); the capacity itself, with no copy, when every node counts every resource."""
    return capacity if counted.all() else np.where(counted, capacity, 1)


def weighted_sums(
    scores: np.ndarray, counted: np.ndarray, resources: tuple[ResourceWeight, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the sum of score x weight and the sum of weights, over the counted resources."""
    weights = np.where(counted, _weights(resources), 0)
    return (scores * weights).sum(axis=1), weights.sum(axis=1)


def weighted_mean(
    scores: np.ndarray, counted: np.ndarray, resources: tuple[ResourceWeight, ...]
) -> npt.NDArray[np.int64]:
    """The integer weighted mean over the counted resources; 0 where none counts, as upstream."""
    if counted.all():  # every node has every resource: one divisor for all rows
        weights = _weights(resources)
        total: npt.NDArray[np.int64] = (
            scores.sum(axis=1) if (weights == 1).all() else (scores * weights).sum(axis=1)
        )
        return total // int(weights.sum())
    total, sums = weighted_sums(scores, counted, resources)
    return np.where(sums > 0, total // np.maximum(sums, 1), 0)


@functools.lru_cache(maxsize=64)
def _weights(resources: tuple[ResourceWeight, ...]) -> np.ndarray:
    weights = np.array([r.weight for r in resources], dtype=np.int64)
    weights.flags.writeable = False
    return weights
