"""The rows of a shard's own node partition, kept in step as its table grows."""

from __future__ import annotations

import numpy as np

from cluster.partitions import partition_of
from shards.node_table import NodeTable


class HomeNodes:
    """Which of the table's rows belong to this shard's partition (see cluster.partitions)."""

    def __init__(self, partition: int, partitions: int) -> None:
        self.partition, self.partitions = partition, partitions
        self._home: list[bool] = []
        self._rows = np.zeros(0, dtype=np.intp)
        self._mask = np.zeros(0, dtype=bool)

    def _extend(self, table: NodeTable) -> None:
        if len(self._home) == table.size:
            return
        self._home.extend(
            partition_of(name, self.partitions) == self.partition
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
