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
import numpy.typing as npt

from cluster.gpus import MILLI_PER_GPU
from shards.gpu_fit import Locality, fitting
from shards.plugins.gpu_placement.fragmentation import Demands, Parts, demands, prefix_sums
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import Policy
from shards.plugins.gpu_placement.workload import Classes, TaskClass, Workload


class FragmentationGradientDescent(Policy):
    name = "fgd"

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        return fgd_scores(nodes, task, workload.classes())

    def choose(
        self, node: NodeGpus, task: TaskClass, workload: Workload, local: Locality
    ) -> tuple[int, ...]:
        if not task.gpu.share:
            return super().choose(node, task, workload, local)
        return fgd_share_gpu(node, task, workload.classes())


def fgd_scores(nodes: NodeGpus, task: TaskClass, classes: Classes) -> np.ndarray:
    """int64 0..100 per row: FGD's score against these classes."""
    return sigmoid_score(growth(nodes, task, demands(classes, nodes.vocab)).min(axis=1))


def fgd_share_gpu(node: NodeGpus, task: TaskClass, classes: Classes) -> tuple[int, ...]:
    """The GPU of the one-row `node` a share goes on: the best score, the lower index
    among equals, as the paper's plugin picks. GPUs with as much free are alike: where
    all that fit have the same, the first is the choice, unscored."""
    free = node.free[0]
    fit = np.flatnonzero(fitting(free, task.gpu))
    if not len(fit) or (free[fit] == free[fit[0]]).all():
        return tuple(fit[:1].tolist())
    scores = sigmoid_score(growth(node, task, demands(classes, node.vocab))[0])
    return (int(fit[scores[fit].argmax()]),)


def growth(nodes: NodeGpus, task: TaskClass, d: Demands) -> np.ndarray:
    """float64 [R, choices], milli: how much each node's fragmentation grows if the pod goes
    there, per GPU a share may take (inf where it cannot), or in one column otherwise."""
    parts = Parts.of(nodes.free, d)
    before = parts.usable_by(d.admitted(nodes.cpu_free, nodes.model), 0, d)
    admitted = d.admitted(nodes.cpu_free - task.cpu, nodes.model)
    if task.gpu.share:
        return _share_growth(nodes.free, task.gpu.share, parts, before, admitted, d)
    # whole GPUs are taken untouched: every demand has one GPU fewer with room, each
    taken = task.gpu.whole
    after = parts.usable_by(admitted, taken, d)
    return (before - after - MILLI_PER_GPU * taken)[:, None]


def _share_growth(
    free: np.ndarray,
    share: int,
    parts: Parts,
    before: np.ndarray,
    admitted: np.ndarray,
    d: Demands,
) -> np.ndarray:
    """Per GPU g: a share on it leaves room for the demands up to `room(free - share)`,
    takes it away from those on to `room(free)` (one GPU and its milli fewer), and
    changes nothing beyond. Each of the three is a range of the demands, so F after
    is read from prefix sums over the demands at two places per GPU."""
    rows = len(free)
    terms = np.empty((len(d.per_device), 4, rows))
    kept, lost = terms[:, 1], terms[:, 3]
    np.multiply(admitted, parts.count >= d.devices[:, None], out=kept)
    np.multiply(admitted, parts.count > d.devices[:, None], out=lost)
    np.multiply(kept, parts.usable, out=terms[:, 0])
    np.multiply(lost, parts.usable, out=terms[:, 2])
    sums = prefix_sums(terms)
    # each GPU's four sums where its room stays and where it went: [4, R, G] each
    flat, at = sums.ravel(), np.arange(rows)[:, None] + (np.arange(4) * rows)[:, None, None]
    stays = flat.take(d.room(free - share) * 4 * rows + at)
    goes = flat.take(parts.room * 4 * rows + at)
    after = (
        stays[0]
        - share * stays[1]
        + goes[2]
        - stays[2]
        - free * (goes[3] - stays[3])
        + sums[-1, 0][:, None]
        - goes[0]
    )
    grown: npt.NDArray[np.float64] = before[:, None] - after - share
    grown[free < share] = np.inf
    return grown


def sigmoid_score(growth: np.ndarray) -> np.ndarray:
    """int 0..100: 100 * sigmoid(-growth in GPUs), as the paper's plugin scores."""
    with np.errstate(over="ignore"):
        return (100.0 / (1.0 + np.exp(growth / 1000.0))).astype(np.int64)
