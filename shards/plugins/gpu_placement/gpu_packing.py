"""GPU packing, the FGD paper's baseline: shares first onto GPUs already in use, then
whole GPUs onto nodes already in use, and only then onto untouched nodes.

In three tiers of score, as the paper's simulator has them: a share that fits a GPU in
use scores 50..100 (the fuller that GPU, the higher); a pod that takes untouched GPUs
of a node in use, 33..49 (the fewer GPUs it takes, the higher); a pod on a node with
every GPU untouched, by how many those are. CPU-only pods score alike everywhere.
"""

from __future__ import annotations

import numpy as np

from shards.gpu_fit import least_free_index
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import Policy
from shards.plugins.gpu_placement.workload import TaskClass, Workload


class GpuPacking(Policy):
    name = "gpu-packing"

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        if not task.gpu:
            return np.zeros(len(nodes.count), dtype=np.int64)
        untouched = (nodes.free == 1000).sum(axis=1)
        whole_node = np.maximum(33 - untouched, untouched)
        if task.gpu.share:
            chosen = least_free_index(nodes.free, task.gpu.share)
            free = nodes.free[np.arange(len(chosen)), np.maximum(chosen, 0)]
            in_use = np.maximum(100 - (free * 100 // 1000) // 10, 50)
            tier = np.where(free == 1000, 49, in_use)
        else:
            tier = np.full(len(untouched), max(50 - task.gpu.whole, 33))
        return np.where(untouched == nodes.count, whole_node, tier).astype(np.int64)
