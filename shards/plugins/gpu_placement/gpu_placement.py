"""GPUPlacement: score nodes, and choose GPUs inside the node, by a GPU placement policy.

The policy is chosen per profile (`args.policy`, names in `POLICIES`). The
plugin learns the workload from the pods its shard is sent (`observe`),
scores nothing on clusters without GPUs, and hands the scheduler its
policy's choice of GPUs inside the chosen node (`choose_gpus`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from shards.framework import PodClass, Rows, ScorePlugin
from shards.node_table import NodeTable
from shards.plugins.gpu_placement.best_fit import BestFit
from shards.plugins.gpu_placement.dot_product import DotProduct
from shards.plugins.gpu_placement.fgd import FragmentationGradientDescent
from shards.plugins.gpu_placement.fgd_capacity import CapacityFgd
from shards.plugins.gpu_placement.fgd_scarcity import ScarcityFgd
from shards.plugins.gpu_placement.fgd_sliver import SliverFgd
from shards.plugins.gpu_placement.gpu_clustering import GpuClustering
from shards.plugins.gpu_placement.gpu_packing import GpuPacking
from shards.plugins.gpu_placement.gpu_placement_args import GPUPlacementArgs
from shards.plugins.gpu_placement.node_gpus import NodeGpus, task_of
from shards.plugins.gpu_placement.policy import Policy
from shards.plugins.gpu_placement.random_policy import Random
from shards.plugins.gpu_placement.workload import DEFAULT_WINDOW, Classes, TaskClass, Workload

# policy name -> how to make it from the seed (only random draws from it)
POLICIES: dict[str, Callable[[int], Policy]] = {
    Random.name: Random,
    BestFit.name: lambda seed: BestFit(),
    DotProduct.name: lambda seed: DotProduct(),
    GpuPacking.name: lambda seed: GpuPacking(),
    GpuClustering.name: lambda seed: GpuClustering(),
    FragmentationGradientDescent.name: lambda seed: FragmentationGradientDescent(),
    CapacityFgd.name: lambda seed: CapacityFgd(),
    ScarcityFgd.name: lambda seed: ScarcityFgd(),
    SliverFgd.name: lambda seed: SliverFgd(),
}
_MEMO = 1024  # task classes whose scores of every node are kept


class GPUPlacement(ScorePlugin):
    name = "GPUPlacement"
    dynamic = True

    def __init__(
        self, policy: Policy, window: int = DEFAULT_WINDOW, tie_seed: int | None = None
    ) -> None:
        self.policy = policy
        self.workload = Workload(window)
        # the profile breaks ties among the best nodes by a fixed priority of the nodes
        # drawn from this seed, not by a fresh coin each time (None: the coin)
        self.tie_seed = tie_seed
        # per task: the classes and the row changes it was scored with, and the scores
        self._memo: OrderedDict[TaskClass, tuple[Classes, np.ndarray, np.ndarray]] = OrderedDict()
        self._state: np.ndarray | None = None  # every row as last seen (`NodeGpus.state`)
        self._changes = np.zeros(0, dtype=np.int64)  # per row, changes seen since

    @classmethod
    def from_args(cls, wire: Mapping[str, Any]) -> GPUPlacement:
        args = GPUPlacementArgs.from_wire(wire)
        policy = POLICIES[args.policy](args.priority_seed)
        ranked = args.tie_break == "nodePriority" and policy.ranks_ties
        return cls(policy, args.window, args.priority_seed if ranked else None)

    def observe(self, pods: Sequence[tuple[PodClass, int]]) -> None:
        for pod, count in pods:
            self.workload.observe([task_of(pod)] * count)

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        if not table.gpu_used.shape[1]:  # no node has GPUs: nothing to tell apart
            return np.zeros(table.alive[rows].shape, dtype=np.int64)
        nodes, task = NodeGpus.of(table, rows), task_of(pod)
        every = isinstance(rows, slice) and rows == slice(0, table.size)
        if not (every and self.policy.memo):
            return self.policy.score(nodes, task, self.workload)
        return self._remembered(nodes, task)

    def _remembered(self, nodes: NodeGpus, task: TaskClass) -> np.ndarray:
        """Every row's score, worked out again only for the rows that changed since this
        task's last full scoring: a class's first search of each batch scores every node,
        and most of them are as they were. Tasks that differ in their GPU models alone
        share it (`Policy.score` reads no models: the filters keep a pod off the others),
        which bound to models in many ways are several times as many."""
        state = nodes.state()
        if self._state is None or self._state.shape != state.shape:
            self._state, self._changes = state, np.zeros(len(state), dtype=np.int64)
            self._memo.clear()
        else:
            moved = (state != self._state).any(axis=1)
            self._changes[moved] += 1
            self._state = state
        classes = self.workload.classes()
        task = replace(task, models=None)
        memo = self._memo.pop(task, None)
        if memo is None or memo[0] is not classes:
            scores = self.policy.score(nodes, task, self.workload)
        else:
            scores, stale = memo[2], np.flatnonzero(memo[1] != self._changes)
            if len(stale):
                scores[stale] = self.policy.score(nodes.take(stale), task, self.workload)
        self._memo[task] = (classes, self._changes.copy(), scores)
        if len(self._memo) > _MEMO:
            self._memo.popitem(last=False)
        return scores.copy()

    def choose_gpus(self, table: NodeTable, row: int, pod: PodClass) -> tuple[int, ...]:
        node, task = NodeGpus.of(table, slice(row, row + 1)), task_of(pod)
        self.policy.placed(table.names[row], task)
        local = table.locality(row, pod.spec.gpu_locality)
        return self.policy.choose(node, task, self.workload, local)
