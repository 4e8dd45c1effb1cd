"""A node's GPU fragmentation against a workload (the FGD paper's F_n(M)), in milli.

For one task class m, the fragment of node n is the idle GPU capacity m
cannot use: all of it when m needs no GPU, may not run on n's model, or
finds too little CPU or too few GPUs with room for it there; otherwise the
idle capacity of the GPUs too full for m's per-GPU request. The node's
fragmentation is the popularity-weighted sum over the workload's classes.

Written so that it costs per GPU *demand*, not per class: with weights that
sum to 1, F = idle - sum over demands j of W_j * [n has d_j GPUs with q_j
free] * (the milli free on those GPUs), where W_j is the weight of the classes
of demand j that n's CPU and model admit. The demands are kept in order of
q_j, so a GPU has room for a prefix of them: how long a prefix, per GPU, is
all that is read of the GPUs (`Parts`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cluster.gpus import MILLI_PER_GPU
from shards.plugins.gpu_placement.workload import Classes

# up to this many columns numpy's cumsum is faster than a loop over the rows
_COLUMNS = 200


@dataclass(frozen=True, slots=True)
class Demands:
    """The GPU-needing classes of a workload grouped by demand (GPUs, milli each, models),
    the demands in order of milli per GPU.

    The classes a node's CPU admits are those asking for at most its free CPU: with the
    classes in order of CPU, a prefix of them. `weight[j, i]` is the weight of demand
    j's classes among the first i, so one `searchsorted` of each node's free CPU, and a
    gather, give every demand's admitted weight."""

    per_device: np.ndarray  # int64 [J], ascending
    devices: np.ndarray  # int64 [J]
    cpu: np.ndarray  # int64 [K]: the GPU classes' CPU, ascending
    weight: np.ndarray  # float64 [J, K + 1]
    allowed: np.ndarray  # float64 [J, models + 1]: 1 where demand j may run on model c
    rooms: np.ndarray  # int64 [1001]: `room` of each milli free a GPU may have
    of_class: np.ndarray  # int64 [classes]: each class's demand (-1: it needs no GPU)

    @classmethod
    def of(cls, classes: Classes, vocab: dict[str, int]) -> Demands:
        allowed_k = classes.allowed(vocab)
        groups: dict[tuple[int, int, bytes], list[int]] = {}
        for k, task in enumerate(classes.tasks):
            if task.gpu:
                key = (task.gpu.per_device, task.gpu.devices, allowed_k[k].tobytes())
                groups.setdefault(key, []).append(k)
        order = sorted(groups)
        ranked = sorted((int(classes.cpu[k]), j, k) for j, g in enumerate(order) for k in groups[g])
        each = np.zeros((len(ranked) + 1, len(order)))
        for i, (_, j, k) in enumerate(ranked, 1):
            each[i, j] = classes.weight[k]
        allowed = [allowed_k[groups[group][0]] for group in order]
        per_device = np.array([per for per, _, _ in order], dtype=np.int64)
        of_class = np.full(len(classes.tasks), -1, dtype=np.int64)
        for j, group in enumerate(order):
            of_class[groups[group]] = j
        return cls(
            per_device,
            np.array([devices for _, devices, _ in order], dtype=np.int64),
            np.array([cpu for cpu, _, _ in ranked], dtype=np.int64),
            each.cumsum(axis=0).T.copy(),
            np.array(allowed, dtype=np.float64).reshape(len(order), len(vocab) + 1),
            np.searchsorted(per_device, np.arange(MILLI_PER_GPU + 1), side="right"),
            of_class,
        )

    def admitted(self, cpu_free: np.ndarray, model: np.ndarray) -> np.ndarray:
        """float64 [J, R]: W_j, the weight of each demand's classes a node admits."""
        weight = self.weight[:, np.searchsorted(self.cpu, cpu_free, side="right")]
        weight *= self.allowed[:, model]
        return weight

    def room(self, free: np.ndarray) -> np.ndarray:
        """int64, the shape of `free`: for how many demands (the first, in order of milli
        per GPU) each GPU has room (none below 0 milli)."""
        return self.rooms.take(free, mode="clip")


def demands(classes: Classes, vocab: dict[str, int]) -> Demands:
    """`Demands.of`, kept with the classes for as long as they last."""
    return classes.kept(("demands", tuple(vocab)), lambda: Demands.of(classes, vocab))


@dataclass(frozen=True, slots=True)
class Parts:
    """Nodes' GPUs as the demands see them: all that F is made of, beside the CPU.

    Demand-major ([J, R]): what is summed over the demands runs down the first axis,
    a whole row of nodes at a time."""

    idle: np.ndarray  # float64 [R]: milli free on all GPUs
    room: np.ndarray  # int64 [R, G]: `Demands.room` of each GPU
    count: np.ndarray  # int64 [J, R]: the GPUs with room for one device of demand j
    usable: np.ndarray  # float64 [J, R]: the milli free on those

    @classmethod
    def of(cls, free: np.ndarray, d: Demands) -> Parts:
        """From `free` [R, G], milli per GPU: the GPUs tallied by how far their room
        goes, then summed from the longest room down."""
        rows, width = len(free), len(d.per_device) + 1
        room = d.room(free)
        at = (room * rows + np.arange(rows)[:, None]).ravel()
        tally = np.empty((width, 2, rows))
        tally[:, 0] = np.bincount(at, minlength=width * rows).reshape(width, rows)
        tally[:, 1] = np.bincount(at, free.ravel(), width * rows).reshape(width, rows)
        onward = suffix_sums(tally)
        return cls(onward[0, 1], room, onward[1:, 0], onward[1:, 1])

    def fragmentation(self, admitted: np.ndarray, d: Demands) -> npt.NDArray[np.float64]:
        """float64 [R]: F, with `admitted` the weights W [J, R] the nodes' CPU admits."""
        return self.idle - self.usable_by(admitted, 0, d)

    def usable_by(self, admitted: np.ndarray, fewer: int, d: Demands) -> npt.NDArray[np.float64]:
        """float64 [R]: the idle milli the workload can use (F = idle - this), with
        `fewer` of the untouched GPUs gone (taken whole): each demand's `reach`, weighted
        by `admitted` [J, R]."""
        usable: npt.NDArray[np.float64] = (admitted * self.reach(fewer, d)).sum(axis=0)
        return usable

    def reach(self, fewer: int, d: Demands) -> np.ndarray:
        """float64 [J, R]: per demand, the milli free on the GPUs with room for one of its
        devices where the node has enough of them, else 0; with `fewer` of the untouched
        GPUs gone (they have room for every demand, so each loses them alike)."""
        enough = self.count >= d.devices[:, None] + fewer
        return np.where(enough, self.usable - MILLI_PER_GPU * fewer, 0.0)


def fragmentation(
    free: np.ndarray, cpu_free: np.ndarray, model: np.ndarray, demands: Demands
) -> np.ndarray:
    """float64 [R]: F_n(M) of nodes with `free` [R, G] milli per GPU, `cpu_free` and
    `model` [R]."""
    return Parts.of(free, demands).fragmentation(demands.admitted(cpu_free, model), demands)


def prefix_sums(x: np.ndarray) -> np.ndarray:
    """[n + 1, ...]: the sums of `x`'s first i rows. numpy's cumsum down the first axis
    goes one column at a time: past ~200 columns (a few dozen nodes' worth) adding a row
    at a time is faster, ten times for a thousand nodes."""
    out = np.zeros((len(x) + 1, *x.shape[1:]))
    if x[0].size <= _COLUMNS:
        np.cumsum(x, axis=0, out=out[1:])
        return out
    for i, row in enumerate(x):
        np.add(out[i], row, out=out[i + 1])
    return out


def suffix_sums(x: np.ndarray) -> np.ndarray:
    """The shape of `x`: the sums of its rows from i on (as `prefix_sums`, from the end)."""
    if x[0].size <= _COLUMNS:
        return x[::-1].cumsum(axis=0, dtype=np.float64)[::-1]
    out = x.astype(np.float64)
    for i in range(len(x) - 2, -1, -1):
        out[i] += out[i + 1]
    return out
