"""GPUs inside a node, as a shard judges them: which fit a pod, and which it takes.

Whole GPUs and shares are one rule (cluster/gpus.py): a pod takes `devices`
GPUs with `per_device` milli free on each. The fit filter asks `fits` (and
`fits_within` for a pod whose GPUs must share an NVLink island or a NUMA
node); the scheduler asks the profile's GPU policy which GPUs of the chosen
node the pod gets, `least_free` unless a policy plugin says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cluster.gpus import NUMA, NVLINK, GpuDemand


@dataclass(frozen=True, slots=True)
class Locality:
    """One node's GPU groups (per GPU: its NVLink island, its NUMA node; -1: none), and
    which kind of group the pod's GPUs must share ("" for none: then it prefers one)."""

    nvlink: np.ndarray
    numa: np.ndarray
    required: str = ""


def fitting(free: np.ndarray, demand: GpuDemand) -> np.ndarray:
    """Per row and GPU of `free` (milli free, `NodeTable.gpu_free`): can it take the pod."""
    return free >= demand.per_device


def fits(free: np.ndarray, demand: GpuDemand) -> npt.NDArray[np.bool_]:
    """Per row: enough of its GPUs can take the pod."""
    able: npt.NDArray[np.int64] = fitting(free, demand).sum(axis=1)
    return able >= demand.devices


def fits_within(free: np.ndarray, demand: GpuDemand, groups: np.ndarray) -> np.ndarray:
    """Per row: enough GPUs of one group (`groups`, per row and GPU) can take the pod."""
    able = fitting(free, demand)
    ok = np.zeros(len(free), dtype=bool)
    for group in range(int(groups.max(initial=-1)) + 1):
        ok |= (able & (groups == group)).sum(axis=1) >= demand.devices
    return ok


def _one_group(
    able: npt.NDArray[np.intp], groups: np.ndarray, devices: int
) -> npt.NDArray[np.intp] | None:
    """Of the GPUs `able`, those of the group that holds `devices` of them and the
    fewest beyond (leaving larger groups whole), the lower group first; None if none."""
    ids, counts = np.unique(groups[able][groups[able] >= 0], return_counts=True)
    enough = counts >= devices
    if not enough.any():
        return None
    best = ids[enough][np.argmin(counts[enough])]
    chosen: npt.NDArray[np.intp] = able[groups[able] == best]
    return chosen


def choose(
    free: np.ndarray, demand: GpuDemand, rank: np.ndarray, local: Locality | None = None
) -> tuple[int, ...]:
    """The `devices` GPUs of one node (`free`, per GPU) with the lowest `rank` among
    those that fit, the lower index first among equals; () if too few fit. Several GPUs
    come from one NVLink island if one can hold them, else from one NUMA node, unless
    `local` requires one of those (then from it or none)."""
    able = np.flatnonzero(fitting(free, demand))
    if len(able) < demand.devices:
        return ()
    if local is not None and (demand.devices > 1 or local.required):
        for kind, groups in ((NVLINK, local.nvlink), (NUMA, local.numa)):
            within = _one_group(able, groups, demand.devices)
            if within is not None:
                able = within
                break
            if local.required == kind:
                return ()
    best = able[np.lexsort((able, rank[able]))][: demand.devices]
    return tuple(sorted(best.tolist()))


def least_free(
    free: np.ndarray, demand: GpuDemand, local: Locality | None = None
) -> tuple[int, ...]:
    """Best fit inside the node: the GPUs with the least room that still take the pod,
    which leaves the emptiest GPUs whole for pods that need whole ones."""
    return choose(free, demand, free, local)


def least_free_index(free: np.ndarray, share: int) -> npt.NDArray[np.intp]:
    """Per row of `free` [R, G]: the GPU `least_free` gives a share there (-1 if none)."""
    room = np.where(free >= share, free, np.iinfo(np.int64).max)
    best: npt.NDArray[np.intp] = room.argmin(axis=1)
    best[room[np.arange(len(room)), best] == np.iinfo(np.int64).max] = -1
    return best
