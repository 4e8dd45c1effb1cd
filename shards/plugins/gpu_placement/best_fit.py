"""Best fit: the node left with the least CPU and GPU after the pod, as the FGD paper's
baseline scores it: `int(100 * (1 - s))`, s the mean of the CPU and GPU left, each
over the largest node's (128 cores, 8 GPUs)."""

from __future__ import annotations

import numpy as np

from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import MAX_CPU, MAX_GPU, Policy, gpu_after
from shards.plugins.gpu_placement.workload import TaskClass, Workload


class BestFit(Policy):
    name = "best-fit"

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        left = 0.5 * (nodes.cpu_free - task.cpu) / MAX_CPU + 0.5 * gpu_after(nodes, task) / MAX_GPU
        return np.trunc(100.0 * (1.0 - left)).astype(np.int64)
