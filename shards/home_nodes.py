"""The rows of a shard's own node partition, kept in step as its table grows."""

from __future__ import annotations

import numpy as np

from cluster.node_partitions import node_partition
from shards.node_table import NodeTable


class HomeNodes:
    """Which of the table's rows belong to this shard's partition (see cluster.node_partitions)."""

    def __init__(self, partition: int, node_partitions: int) -> None:
        self.partition, self.node_partitions = partition, node_partitions
        self._home: list[bool] = []
        self._rows = np.zeros(0, dtype=np.intp)
        self._mask = np.zeros(0, dtype=bool)

    def _extend(self, table: NodeTable) -> None:
        if len(self._home) == table.size:
            return
        self._home.extend(
            node_partition(name, self.node_partitions) == self.partition
            for name in table.names[len(self._home) :]
        )
        self._mask = np.array(self._home, dtype=bool)
        self._rows = np.flatnonzero(self._mask)

    def rows(self, table: NodeTable) -> np.ndarray:
        self._extend(table)
        return self._rows

    def mask(self, table: NodeTable) -> np.ndarray:
        self._extend(table)
        return self._mask
