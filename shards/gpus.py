"""GPUs inside a node, as a shard judges them: which fit a pod, and which it takes.

Whole GPUs and shares are one rule (cluster/gpus.py): a pod takes `devices`
GPUs with `per_device` milli free on each. The fit filter asks `fits`; the
scheduler asks the profile's GPU policy which GPUs of the chosen node the pod
gets, `least_free` unless a policy plugin says otherwise.
"""

from __future__ import annotations

import numpy as np

from cluster.gpus import GpuDemand


def fitting(free: np.ndarray, demand: GpuDemand) -> np.ndarray:
    """Per row and GPU of `free` (milli free, `NodeTable.gpu_free`): can it take the pod."""
    return free >= demand.per_device


def fits(free: np.ndarray, demand: GpuDemand) -> np.ndarray:
    """Per row: enough of its GPUs can take the pod."""
    return fitting(free, demand).sum(axis=1) >= demand.devices


def choose(free: np.ndarray, demand: GpuDemand, rank: np.ndarray) -> tuple[int, ...]:
    """The `devices` GPUs of one node (`free`, per GPU) with the lowest `rank` among
    those that fit, the lower index first among equals; () if too few fit."""
    able = np.flatnonzero(fitting(free, demand))
    if len(able) < demand.devices:
        return ()
    best = able[np.lexsort((able, rank[able]))][: demand.devices]
    return tuple(sorted(best.tolist()))


def least_free(free: np.ndarray, demand: GpuDemand) -> tuple[int, ...]:
    """Best fit inside the node: the GPUs with the least room that still take the pod,
    which leaves the emptiest GPUs whole for pods that need whole ones."""
    return choose(free, demand, free)


def least_free_index(free: np.ndarray, share: int) -> np.ndarray:
    """Per row of `free` [R, G]: the GPU `least_free` gives a share there (-1 if none)."""
    room = np.where(free >= share, free, np.iinfo(np.int64).max)
    best = room.argmin(axis=1)
    best[room[np.arange(len(room)), best] == np.iinfo(np.int64).max] = -1
    return best
