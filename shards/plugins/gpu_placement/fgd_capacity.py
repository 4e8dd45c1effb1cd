"""FGD that counts how many pods a node's CPU still holds, and best fit for GPU shares.

Two changes to `fgd`, each found on the Alibaba trace (docs/gpus.md), and
worth something only together:

- Whole-GPU and CPU-only pods go where fragmentation grows least, as in FGD,
  but a class can use a node's idle GPUs only as far as the node's free CPU
  holds pods of it: FGD counts a node with 8 idle GPUs and the CPU for one
  1-GPU pod as fragment-free for that class, and 7 of those GPUs are left
  stranded. Here the class's usable milli there is at most the pods its CPU
  admits times what each asks for (`Capacities.usable`).
- A share goes on the tightest GPU that takes it, over all nodes (the
  score is the milli left on that GPU, in steps of 10), as an online bin
  packer does: shares leave the slivers of GPU that most of the idle
  capacity at 100% arrived is, and FGD's score, rounded to whole points,
  does not tell the tight GPU from a looser one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from cluster.gpus import MILLI_PER_GPU
from shards.plugins.gpu_placement.fgd import sigmoid_score
from shards.plugins.gpu_placement.fragmentation import Demands, Parts
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import Policy
from shards.plugins.gpu_placement.workload import Classes, TaskClass, Workload


@dataclass(frozen=True, slots=True)
class Capacities:
    """The workload's GPU classes, for F with each class's reach capped by the CPU.

    What is read of the GPUs is per demand (`Demands`, `Parts`), and what the cap reads
    per class; both regardless of the GPU models, which only `weight` tells (per model,
    the popularity of the classes that may run there): bound to models in many ways, a
    workload has several times more classes and demands than shapes."""

    demands: Demands
    demand: np.ndarray  # int64 [K]: each row's demand
    cpu: np.ndarray  # int64 [K], at least 1
    request: np.ndarray  # int64 [K]: the milli a pod of the row takes
    weight: np.ndarray  # float64 [K, models + 1]: its classes' popularity where they may run

    @classmethod
    def of(cls, classes: Classes, vocab: dict[str, int]) -> Capacities:
        anywhere = tuple(replace(task, models=None) for task in classes.tasks)
        d = Demands.of(replace(classes, tasks=anywhere, derived={}), vocab)
        allowed = classes.allowed(vocab)
        rows: dict[tuple[int, int, int], int] = {}  # (milli per GPU, GPUs, CPU) -> row
        demand: list[int] = []
        weight: list[np.ndarray] = []
        for k, task in enumerate(classes.tasks):
            if not task.gpu:
                continue
            key = (task.gpu.per_device, task.gpu.devices, max(task.cpu, 1))
            if key not in rows:
                rows[key] = len(demand)
                demand.append(int(d.of_class[k]))
                weight.append(np.zeros(len(vocab) + 1))
            weight[rows[key]] += classes.weight[k] * allowed[k]
        return cls(
            d,
            np.array(demand, dtype=np.int64),
            np.array([cpu for _, _, cpu in rows], dtype=np.int64),
            np.array([per * devices for per, devices, _ in rows], dtype=np.int64),
            np.array(weight).reshape(len(demand), len(vocab) + 1),
        )

    def usable(
        self, parts: Parts, cpu_free: np.ndarray, model: np.ndarray, fewer: int = 0
    ) -> np.ndarray:
        """float64 [R]: the idle milli the workload can use (F = idle - this), with `fewer`
        of the untouched GPUs gone. Per class: its demand's reach (`Parts.reach`), but no
        more than the pods of it the free CPU holds can take."""
        pods = np.maximum(cpu_free, 0)[None] // self.cpu[:, None]  # [K, R]
        capped = np.minimum(
            parts.reach(fewer, self.demands)[self.demand], pods * self.request[:, None]
        )
        usable: npt.NDArray[np.float64] = (self.weight[:, model] * capped).sum(axis=0)
        return usable


def capacities(classes: Classes, vocab: dict[str, int]) -> Capacities:
    """`Capacities.of`, kept with the classes for as long as they last."""
    return classes.kept(("capacities", tuple(vocab)), lambda: Capacities.of(classes, vocab))


class CapacityFgd(Policy):
    name = "fgd-capacity"

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        if task.gpu.share:
            return tightest_share_score(nodes.free, task.gpu.share)
        return capped_scores(nodes, task, workload.classes())


def capped_scores(nodes: NodeGpus, task: TaskClass, classes: Classes) -> np.ndarray:
    """int64 0..100 per row, for a pod of whole GPUs or none: FGD's score with each
    class's reach capped by the pods of it the node's free CPU holds."""
    c = capacities(classes, nodes.vocab)
    parts = Parts.of(nodes.free, c.demands)
    before = c.usable(parts, nodes.cpu_free, nodes.model)
    # whole GPUs are taken untouched: which of them does not change F
    after = c.usable(parts, nodes.cpu_free - task.cpu, nodes.model, task.gpu.whole)
    return sigmoid_score(before - after - MILLI_PER_GPU * task.gpu.whole)


def tightest_share_score(free: np.ndarray, share: int) -> np.ndarray:
    """int64 0..100 per row: (1000 - the milli its tightest fitting GPU would have left)
    in steps of 10, 0 where no GPU takes the share. The GPU chosen inside the node is
    that one (`Policy.choose`: the least free that fits)."""
    left = np.where(free >= share, free - share, MILLI_PER_GPU).min(axis=1, initial=MILLI_PER_GPU)
    score: npt.NDArray[np.int64] = (MILLI_PER_GPU - left) // 10
    return score
