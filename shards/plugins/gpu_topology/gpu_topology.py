"""GPUTopology: prefer nodes where a pod's GPUs can share an NVLink island, else a NUMA node.

Inside the chosen node the pod's GPUs come from one island where one can hold
them (`shards.gpu_fit.choose`), but that alone lets the scheduler pick a node
where they must straddle islands while another node has a whole island free.
This score looks for such a node first, in tiers: 100 where an island can
hold the pod, 50 where one NUMA node can, 0 where neither can (or the node's
topology annotation does not say). A pod of one GPU, a share or none is
alike everywhere, and scores 0 on every node. A pod that *requires* one
group is filtered by NodeResourcesFit; this only ranks the nodes left.
"""

from __future__ import annotations

import numpy as np

from cluster.gpus import NUMA, NVLINK
from shards.framework import MAX_NODE_SCORE, PodClass, Rows, ScorePlugin
from shards.gpu_fit import fits_within
from shards.node_table import NodeTable, take_rows

ISLAND, NUMA_NODE = MAX_NODE_SCORE, MAX_NODE_SCORE // 2


class GPUTopology(ScorePlugin):
    name = "GPUTopology"
    dynamic = True  # whether a group can hold the pod depends on its GPUs' use

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        out = np.zeros(table.alive[rows].shape, dtype=np.int64)
        if pod.gpu.devices < 2:
            return out
        free = table.gpu_free(rows)
        numa = fits_within(free, pod.gpu, take_rows(table.gpu_groups(NUMA), rows))
        island = fits_within(free, pod.gpu, take_rows(table.gpu_groups(NVLINK), rows))
        out[numa] = NUMA_NODE
        out[island] = ISLAND
        return out
