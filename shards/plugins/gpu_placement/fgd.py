"""Fragmentation gradient descent (Weng et al., ATC'23): go where fragmentation grows least.

The score is `int(100 * sigmoid(-dF))`, dF the growth of the node's
fragmentation (`fragmentation.py`) in whole GPUs if the pod goes there; a
share goes on the GPU of that node where the growth is least.

A pod changes one node by little: its CPU, and either one GPU (a share) or
some untouched GPUs (whole ones). So the fragmentation after is worked out
from the node's parts before, changed by that GPU alone, for every GPU a
share may take at once, without building each node's state after.
"""

from __future__ import annotations

import numpy as np

from shards.gpus import Locality, fitting
from shards.plugins.gpu_placement.fragmentation import Demands, collect, demands
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import Policy
from shards.plugins.gpu_placement.workload import TaskClass, Workload


class FragmentationGradientDescent(Policy):
    name = "fgd"

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        grown = growth(nodes, task, demands(workload.classes(), nodes.vocab))
        return sigmoid_score(grown.min(axis=1))

    def choose(
        self, node: NodeGpus, task: TaskClass, workload: Workload, local: Locality
    ) -> tuple[int, ...]:
        """A share goes on the GPU with the best score, the lower index among equals, as the
        paper's plugin picks; untouched GPUs are all alike."""
        if not task.gpu.share:
            return super().choose(node, task, workload, local)
        scores = sigmoid_score(growth(node, task, demands(workload.classes(), node.vocab))[0])
        scores[~fitting(node.free[0], task.gpu)] = -1
        return (int(scores.argmax()),) if scores.max() >= 0 else ()


def growth(nodes: NodeGpus, task: TaskClass, demands: Demands) -> np.ndarray:
    """float64 [R, choices], milli: how much each node's fragmentation grows if the pod goes
    there, per GPU a share may take (inf where it cannot), or in one column otherwise."""
    free = nodes.free
    idle = free.sum(axis=1).astype(np.float64)
    usable = demands.usable(free)  # [R, J, G]
    count = usable.sum(axis=-1)
    stranded = np.where(usable, 0, free[:, None, :]).sum(axis=-1)
    before = collect(idle, count, stranded, demands.admitted(nodes.cpu_free, nodes.model), demands)
    admitted = demands.admitted(nodes.cpu_free - task.cpu, nodes.model)
    gpu = task.gpu
    if gpu.share:
        # the share on GPU g changes that GPU alone: [R, G, J] after, for every g
        per = demands.per_device[None, None, :]
        old = free[:, :, None]
        new = old - gpu.share
        was, now = old >= per, new >= per
        count_after = count[:, None, :] - was + now
        stranded_after = stranded[:, None, :] - np.where(was, 0, old) + np.where(now, 0, new)
        after = collect(
            (idle - gpu.share)[:, None],
            count_after,
            stranded_after,
            admitted[:, None, :],
            demands,
        )
        grown = after - before[:, None]
        grown[~fitting(free, gpu)] = np.inf
        return grown
    if gpu.whole:
        # untouched GPUs have room for every demand and strand nothing, before or after
        after = collect(idle - 1000 * gpu.whole, count - gpu.whole, stranded, admitted, demands)
    else:
        after = collect(idle, count, stranded, admitted, demands)
    return (after - before)[:, None]


def sigmoid_score(growth: np.ndarray) -> np.ndarray:
    """int 0..100: 100 * sigmoid(-growth in GPUs), as the paper's plugin scores."""
    with np.errstate(over="ignore"):
        return (100.0 / (1.0 + np.exp(growth / 1000.0))).astype(np.int64)
