"""GPU clustering, the FGD paper's baseline: pods of one kind of GPU demand together.

Kinds are: a share, or 1, 2, 4, 8 whole GPUs. A node scores 75 for a pod of the only
kind it holds, 50 if it holds that kind among others, 25 if it holds no GPU pod, 0 if
only others; plus up to 25 for how much of 8 GPUs is in use. CPU-only pods score alike.
The kinds a node holds are what this shard placed there (`placed`): with several
shards, each sees its own.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cluster.gpus import GpuDemand
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import MAX_GPU, Policy
from shards.plugins.gpu_placement.workload import TaskClass, Workload


def kind_bit(gpu: GpuDemand) -> int:
    return 0 if not gpu else 1 if gpu.share else 1 << gpu.whole.bit_length()


class GpuClustering(Policy):
    name = "gpu-clustering"
    memo = False  # the kinds a node holds are not in its usage

    def __init__(self) -> None:
        self.kinds: dict[str, int] = {}  # node -> bits of the kinds placed there

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        if not task.gpu:
            return np.zeros(len(nodes.count), dtype=np.int64)
        bit = kind_bit(task.gpu)
        held = np.array([self.kinds.get(n, 0) for n in nodes.names], dtype=np.int64)
        used = (25 * (MAX_GPU - nodes.free.sum(axis=1)) // MAX_GPU).astype(np.int64)
        has = (held & bit) != 0
        score: npt.NDArray[np.int64] = used + np.where(
            has, np.where(held == bit, 75, 50), np.where(held == 0, 25, 0)
        )
        return score

    def placed(self, node: str, task: TaskClass) -> None:
        self.kinds[node] = self.kinds.get(node, 0) | kind_bit(task.gpu)
