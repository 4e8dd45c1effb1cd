"""Random, the FGD paper's baseline: every node a fresh random score for every pod."""

from __future__ import annotations

import numpy as np

from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import Policy
from shards.plugins.gpu_placement.workload import TaskClass, Workload


class Random(Policy):
    name = "random"
    memo = False

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        return self.rng.integers(0, 101, size=len(nodes.count), dtype=np.int64)
