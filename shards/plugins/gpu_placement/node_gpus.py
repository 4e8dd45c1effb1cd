"""What a GPU policy reads of the nodes and of the pod: plain arrays, one row per node."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cluster import resources as res
from cluster.gpus import GPU_PRODUCT_LABEL
from shards.framework import PodClass, Rows
from shards.node_table import NodeTable
from shards.plugins.gpu_placement.workload import TaskClass


@dataclass(frozen=True, slots=True)
class NodeGpus:
    free: np.ndarray  # int64 [R, G]: milli free per GPU, 0 beyond the node's own GPUs
    count: np.ndarray  # int64 [R]: its GPUs
    cpu_free: np.ndarray  # int64 [R], millicores
    model: np.ndarray  # int64 [R]: code of its GPU model, len(vocab) when unlabelled
    vocab: dict[str, int]
    table: NodeTable  # for what few policies read: the names (`names`)
    rows: Rows

    @classmethod
    def of(cls, table: NodeTable, rows: Rows) -> NodeGpus:
        cpu = table.col[res.CPU]
        alloc = table.alloc[rows, cpu]
        used = table.used[rows, cpu] + table.assumed[rows, cpu]
        codes, vocab = table.label_codes(GPU_PRODUCT_LABEL)
        model = codes[rows].astype(np.int64)
        model[model < 0] = len(vocab)
        return cls(
            table.gpu_free(rows),
            table.gpu_count(rows),
            alloc - used,
            model,
            vocab,
            table,
            rows,
        )

    def take(self, rows: np.ndarray) -> NodeGpus:
        """These rows (positions in this view) alone."""
        return NodeGpus(
            self.free[rows],
            self.count[rows],
            self.cpu_free[rows],
            self.model[rows],
            self.vocab,
            self.table,
            np.arange(self.table.size)[self.rows][rows],
        )

    @property
    def names(self) -> list[str]:
        names = self.table.names
        if isinstance(self.rows, slice):
            return names[self.rows]
        return [names[r] for r in self.rows.tolist()]

    def state(self) -> np.ndarray:
        """int64 [R, G + 2]: all a policy reads of each row that changes with usage."""
        return np.column_stack((self.free, self.cpu_free, self.model))


def task_of(pod: PodClass) -> TaskClass:
    """The pod's task class: CPU, GPUs, and the GPU models its required node affinity
    allows (when every term names them with `In`; otherwise any)."""
    requests = dict(pod.spec.requests)
    return TaskClass(requests.get(res.CPU, 0), pod.gpu, _models(pod))


def _models(pod: PodClass) -> frozenset[str] | None:
    terms = pod.spec.required_terms
    if not terms:
        return None
    allowed: set[str] = set()
    for term in terms:
        named = [
            set(r.values)
            for r in term.match_expressions
            if r.key == GPU_PRODUCT_LABEL and r.operator == "In"
        ]
        if not named:
            return None  # this term lets the pod on any model
        allowed |= set.intersection(*named)
    return frozenset(allowed)
