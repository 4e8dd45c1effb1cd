"""A node's GPU fragmentation against a workload (the FGD paper's F_n(M)), in milli.

For one task class m, the fragment of node n is the idle GPU capacity m
cannot use: all of it when m needs no GPU, may not run on n's model, or
finds too little CPU or too few GPUs with room for it there; otherwise the
idle capacity of the GPUs too full for m's per-GPU request. The node's
fragmentation is the popularity-weighted sum over the workload's classes.

Written so that it costs per GPU *demand*, not per class: with weights that
sum to 1, F = idle - sum over demands j of W_j * [n has d_j GPUs with q_j
free] * (idle - stranded_j), where W_j is the weight of the classes of demand
j that n's CPU and model admit, and stranded_j the idle milli on n's GPUs
with less than q_j free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shards.plugins.gpu_placement.workload import Classes

_SPAN = 1 << 40  # beyond any node's millicores: keeps each demand's CPU keys apart


@dataclass(frozen=True, slots=True)
class Demands:
    """The GPU-needing classes of a workload grouped by demand (GPUs, milli each, models).

    The classes of demand j that a node's CPU admits are those asking for at most its
    free CPU: with each demand's class CPUs sorted, their weight is a cumulative sum
    read at one `searchsorted`, for every node and demand in one call (`keys` holds
    demand j's CPUs shifted by j x _SPAN, in order)."""

    per_device: np.ndarray  # int64 [J]
    devices: np.ndarray  # int64 [J]
    keys: np.ndarray  # int64 [classes]: CPU + j * _SPAN, sorted
    cumulative: np.ndarray  # float64 [classes + 1]: weight of the keys before each
    start: np.ndarray  # int64 [J]: where demand j's keys begin
    allowed: np.ndarray  # bool [J, models + 1]

    @classmethod
    def of(cls, classes: Classes, vocab: dict[str, int]) -> Demands:
        allowed_k = classes.allowed(vocab)
        groups: dict[tuple[int, int, bytes], list[int]] = {}
        for k, task in enumerate(classes.tasks):
            if task.gpu:
                key = (task.gpu.devices, task.gpu.per_device, allowed_k[k].tobytes())
                groups.setdefault(key, []).append(k)
        keys, weights, start = [], [], []
        for j, ks in enumerate(groups.values()):
            start.append(len(keys))
            for k in sorted(ks, key=lambda k: classes.cpu[k]):
                keys.append(int(classes.cpu[k]) + j * _SPAN)
                weights.append(float(classes.weight[k]))
        return cls(
            np.array([per for _, per, _ in groups], dtype=np.int64),
            np.array([devices for devices, _, _ in groups], dtype=np.int64),
            np.array(keys, dtype=np.int64),
            np.concatenate(([0.0], np.cumsum(weights))),
            np.array(start, dtype=np.int64),
            np.array([allowed_k[ks[0]] for ks in groups.values()], dtype=bool).reshape(
                len(groups), len(vocab) + 1
            ),
        )

    def admitted(self, cpu_free: np.ndarray, model: np.ndarray) -> np.ndarray:
        """float64 [..., J]: W_j, the weight of each demand's classes a node admits."""
        shift = np.arange(len(self.start), dtype=np.int64) * _SPAN
        # a node short of CPU (below 0 after a pod) admits nothing: -1 stays in its demand
        query = np.maximum(cpu_free, -1)[..., None] + shift
        weight = self.cumulative[np.searchsorted(self.keys, query, side="right")]
        weight -= self.cumulative[self.start]
        return weight * np.moveaxis(self.allowed[:, model], 0, -1)

    def usable(self, free: np.ndarray) -> np.ndarray:
        """bool [..., J, G]: which GPUs have room for one device of each demand."""
        return free[..., None, :] >= self.per_device[:, None]


def demands(classes: Classes, vocab: dict[str, int]) -> Demands:
    """`Demands.of`, kept with the classes for as long as they last."""
    key = ("demands", tuple(vocab))
    found = classes.derived.get(key)
    if found is None:
        found = classes.derived[key] = Demands.of(classes, vocab)
    return found


def fragmentation(
    free: np.ndarray, cpu_free: np.ndarray, model: np.ndarray, demands: Demands
) -> np.ndarray:
    """float64 [R]: F_n(M) of nodes with `free` [R, G] milli per GPU, `cpu_free` and
    `model` [R]."""
    idle = free.sum(axis=-1).astype(np.float64)
    usable = demands.usable(free)
    count = usable.sum(axis=-1)
    stranded = np.where(usable, 0, free[..., None, :]).sum(axis=-1)
    return collect(idle, count, stranded, demands.admitted(cpu_free, model), demands)


def collect(
    idle: np.ndarray, count: np.ndarray, stranded: np.ndarray, admitted: np.ndarray, d: Demands
) -> np.ndarray:
    """F from its parts: idle [...], and per demand [..., J] the GPUs with room, the
    stranded milli and the admitted weight."""
    usable = np.where(count >= d.devices, idle[..., None] - stranded, 0.0)
    return idle - (admitted * usable).sum(axis=-1)
