"""Random, the FGD paper's baseline: any node that fits, drawn afresh for every pod, and
any GPU there that fits. Every node scores alike; the profile breaks the tie with a
fresh coin whatever `tieBreak` says (a fixed ranking of the nodes would pack)."""

from __future__ import annotations

import numpy as np

from shards.gpu_fit import Locality, choose
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import Policy
from shards.plugins.gpu_placement.workload import TaskClass, Workload


class Random(Policy):
    name = "random"
    ranks_ties = False

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        return np.zeros(len(nodes.count), dtype=np.int64)

    def choose(
        self, node: NodeGpus, task: TaskClass, workload: Workload, local: Locality
    ) -> tuple[int, ...]:
        rank = self.rng.permutation(node.free.shape[1])
        return choose(node.free[0], task.gpu, rank, local)
