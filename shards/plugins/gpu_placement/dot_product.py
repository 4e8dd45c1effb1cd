"""Dot product (Tetris-like alignment), the FGD paper's baseline: `int(100 * (1 - dot / 2))`,
dot the product of the node's free CPU and GPU with the pod's request, each over the
largest node's: the node whose room lines up least with the request is kept for others."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import MAX_CPU, MAX_GPU, Policy
from shards.plugins.gpu_placement.workload import TaskClass, Workload


class DotProduct(Policy):
    name = "dot-product"

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        gpu = task.gpu.devices * task.gpu.per_device
        dot = (nodes.cpu_free / MAX_CPU) * (task.cpu / MAX_CPU)
        dot = dot + (nodes.free.sum(axis=1) / MAX_GPU) * (gpu / MAX_GPU)
        score: npt.NDArray[np.int64] = np.trunc(100.0 * (1.0 - dot / 2.0)).astype(np.int64)
        return score
