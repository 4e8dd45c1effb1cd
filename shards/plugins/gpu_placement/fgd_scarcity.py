"""fgd-capacity whose classes count by how scarce their GPUs are, and FGD's own rules
while the CPU, not the GPUs, is what runs out.

Two changes to `fgd-capacity`, each found on workload mixes of the Alibaba trace
(`benchmarks.sweeps.gpu_mixes`, docs/gpus.md):

- A class bound to some GPU models weighs in the fragmentation by how scarce
  those models are: its popularity times the cluster's GPUs over theirs
  (their scarcity), times the share of their GPUs that the classes bound to
  them would take (their load, at most 1). FGD weighs classes by popularity
  alone, so a model that bound tasks need, and unbound ones may also use,
  reads as no more precious than another, with the capped measure even as
  the best place for unbound pods (a 2-GPU node's CPU never caps them), and
  the bound tasks that come later find it full. The load keeps a model that
  its bound tasks leave mostly idle open to the others. Where every class
  may use every model, the weights are FGD's.
- Where the workload, at its ratio of CPU to GPU, would need more CPU than
  the GPU nodes have to fill their GPUs, the CPU is what runs out first, and
  capping by CPU and packing shares tightly both lose to FGD's own rules:
  those are used while the learnt workload says so.

Both are read with the workload's classes, when they are learnt anew, from
the cluster's totals (its GPUs per model, its GPU nodes' CPU), not from what
is free, which the placements themselves move; they are kept with the
classes, so every node is scored by the same weights and rules until the
next refresh.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from cluster import resources as res
from cluster.gpus import MILLI_PER_GPU
from shards.gpu_fit import Locality
from shards.plugins.gpu_placement.fgd import fgd_scores, fgd_share_gpu
from shards.plugins.gpu_placement.fgd_capacity import capped_scores, tightest_share_score
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.policy import Policy
from shards.plugins.gpu_placement.workload import Classes, TaskClass, Workload

# the CPU runs out when the workload, at its ratio of CPU to GPU, would need this many
# times the GPU nodes' CPU to fill their GPUs: on the trace's CPU-heavy mixes FGD's rules
# lose 1.9 points at 1.03 (cpu=25) and win 0.1 at 1.15 (cpu=30), 2.3 at 1.43 (cpu=40)
CPU_BOUND = 1.1


@dataclass(frozen=True, slots=True)
class Outlook:
    """What the policy places against until the classes are learnt anew."""

    classes: Classes  # the workload's, bound ones weighted by their models' scarcity
    cpu_bound: bool  # the workload would need more CPU than the GPU nodes have

    @classmethod
    def of(
        cls,
        classes: Classes,
        vocab: dict[str, int],
        model: np.ndarray,
        gpus: np.ndarray,
        cpu: np.ndarray,
    ) -> Outlook:
        """From every node of the cluster: its GPU model's code (`NodeGpus.model`), its
        GPUs and its allocatable CPU."""
        per_model = np.bincount(model, weights=gpus, minlength=len(vocab) + 1)
        allowed = classes.allowed(vocab)
        supply = allowed.astype(np.float64) @ per_model
        # per class: the milli of GPU its pods ask for, in proportion
        asked = classes.weight * classes.devices * classes.per_device
        gpu_asked = float(asked.sum())
        # per set of models some class may use: the share of the GPU asked for that only
        # they can take, times the cluster's GPUs over theirs, is the share of their GPUs
        # the classes bound to them take once the GPUs asked for come to all there are
        sets = np.unique(allowed, axis=0, return_inverse=True)[1].reshape(-1)
        demand = np.bincount(sets, weights=asked)[sets] / max(gpu_asked, 1.0)
        total = per_model.sum()
        bound = (supply > 0) & (supply < total)  # unbound: every GPU, or none at all
        scarcity = np.divide(total, supply, out=np.ones_like(supply), where=bound)
        load = np.minimum(demand * scarcity, 1.0)
        weight = classes.weight * np.where(bound, scarcity * load, 1.0)
        # the workload's CPU per milli of GPU it asks for, against the GPU nodes' (their
        # totals, not what is free: what is free moves with the placements themselves)
        cpu_per_milli = float(classes.weight @ classes.cpu) / gpu_asked if gpu_asked else 0.0
        gpu_nodes = gpus > 0
        need = cpu_per_milli * MILLI_PER_GPU * float(gpus.sum())
        return cls(
            replace(classes, weight=weight, derived={}),
            need > CPU_BOUND * float(cpu[gpu_nodes].sum()),
        )


def outlook(nodes: NodeGpus, classes: Classes) -> Outlook:
    """`Outlook.of` the cluster `nodes` are part of, kept with the classes."""

    def make() -> Outlook:
        table = nodes.table
        every = np.flatnonzero(table.alive[: table.size])
        cluster = NodeGpus.of(table, every)
        cpu = table.alloc[every, table.col[res.CPU]]
        return Outlook.of(classes, cluster.vocab, cluster.model, cluster.count, cpu)

    return classes.kept(("outlook", tuple(nodes.vocab)), make)


class ScarcityFgd(Policy):
    name = "fgd-scarcity"

    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        view = outlook(nodes, workload.classes())
        if view.cpu_bound:
            return fgd_scores(nodes, task, view.classes)
        if task.gpu.share:
            return tightest_share_score(nodes.free, task.gpu.share)
        return capped_scores(nodes, task, view.classes)

    def choose(
        self, node: NodeGpus, task: TaskClass, workload: Workload, local: Locality
    ) -> tuple[int, ...]:
        view = outlook(node, workload.classes())
        if task.gpu.share and view.cpu_bound:
            return fgd_share_gpu(node, task, view.classes)
        return super().choose(node, task, workload, local)
