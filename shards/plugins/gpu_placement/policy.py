"""The shared shape of GPU placement policies: a node score and a choice of GPUs inside it.

Every policy scores whole numbers 0..100, as a Kubernetes score plugin
does, and picks the GPUs of the chosen node that the pod gets; by default
the tightest that fit (`shards.gpu_fit.least_free`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from shards.gpu_fit import Locality, least_free
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.workload import TaskClass, Workload

# the largest node of the trace the paper's baselines normalize by: 128 cores, 8 GPUs
MAX_CPU = 128_000.0
MAX_GPU = 8_000.0


class Policy(ABC):
    name: ClassVar[str]
    # whether a node's score depends on that node's state, the task and the workload
    # alone, so that the plugin may keep it while the node stays as it was
    memo: ClassVar[bool] = True
    # whether ties between the best nodes may go by the profile's fixed node ranking
    ranks_ties: ClassVar[bool] = True

    @abstractmethod
    def score(self, nodes: NodeGpus, task: TaskClass, workload: Workload) -> np.ndarray:
        """int64 0..100 per row (rows where the pod does not fit score anything), whatever
        GPU models the task may use (`task.models`: the filters keep it off the others)."""

    def choose(
        self, node: NodeGpus, task: TaskClass, workload: Workload, local: Locality
    ) -> tuple[int, ...]:
        """The GPUs of the one-row `node` the pod gets (from one group where `local` says)."""
        return least_free(node.free[0], task.gpu, local)

    def placed(self, node: str, task: TaskClass) -> None:
        """The shard put a pod of `task` on `node` (for policies that remember)."""
        return None


def gpu_after(nodes: NodeGpus, task: TaskClass) -> npt.NDArray[np.int64]:
    """Per row, the milli free on the node's GPUs after the pod took the tightest that fit
    (its total only: which of equal GPUs it takes does not matter here)."""
    total: npt.NDArray[np.int64] = nodes.free.sum(axis=1)
    return total - task.gpu.devices * task.gpu.per_device
