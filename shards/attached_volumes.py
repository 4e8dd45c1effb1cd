"""The volumes attached on each node that NodeVolumeLimits counts: committed (from the
store) and assumed (this shard's own placements), for only the nodes that have any.

A volume counts once on a node however many pods there use it, so what the filter
reads is kept ready: per limit key, the distinct volumes of each row as an array, and
per volume, the rows it is on, so that a pod's check costs a few array reads and not
a pass over every node's volumes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from cluster.volumes.needs import Attachable

KeyedVolume = tuple[str, str]  # (limit key, volume)


class AttachedVolumes:
    def __init__(self) -> None:
        self._committed: dict[int, frozenset[KeyedVolume]] = {}
        self._assumed: dict[int, Counter[KeyedVolume]] = {}
        self._on_row: dict[int, set[KeyedVolume]] = {}  # the two together
        self._counts: dict[str, npt.NDArray[np.int64]] = {}  # key -> distinct volumes per row
        self._rows: dict[str, set[int]] = {}  # volume -> the rows it is on

    def set_committed(self, row: int, entries: Iterable[tuple[str, str, int]]) -> None:
        """The store's (key, volume, pods) of a node, replacing what it said before."""
        held = frozenset((key, volume) for key, volume, pods in entries if pods > 0)
        before = self._committed.get(row, frozenset())
        if held == before:
            return
        if held:
            self._committed[row] = held
        else:
            del self._committed[row]
        assumed = self._assumed.get(row, Counter())
        for gone in before - held:
            if not assumed[gone]:
                self._drop(row, gone)
        for kept in held - before:
            self._add(row, kept)

    def assume(self, row: int, volumes: Iterable[Attachable], sign: int) -> None:
        """Count (1) or stop counting (-1) one placement's volumes on a node."""
        held = self._assumed.setdefault(row, Counter())
        committed = self._committed.get(row, frozenset())
        for volume in volumes:
            kv = (volume.key, volume.volume)
            held[kv] += sign
            if held[kv] <= 0:
                del held[kv]
                if kv not in committed:
                    self._drop(row, kv)
            elif sign > 0 and held[kv] == 1:
                self._add(row, kv)
        if not held:
            del self._assumed[row]

    def counts(self, key: str, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        """Per row, the distinct volumes of `key` attached there."""
        counts = self._counts.get(key)
        if counts is None:
            return np.zeros(len(rows), dtype=np.int64)
        inside = rows < len(counts)
        return np.where(inside, counts[np.minimum(rows, len(counts) - 1)], 0)

    def rows_with(self, volume: str) -> set[int]:
        """The rows this volume is attached on."""
        return self._rows.get(volume, set())

    def _add(self, row: int, kv: KeyedVolume) -> None:
        """A volume now on the node, committed or assumed (once, however many hold it)."""
        on = self._on_row.setdefault(row, set())
        if kv in on:
            return
        on.add(kv)
        key, volume = kv
        self._counted(key, row)[row] += 1
        self._rows.setdefault(volume, set()).add(row)

    def _drop(self, row: int, kv: KeyedVolume) -> None:
        """A volume neither committed nor assumed on the node any more."""
        on = self._on_row.get(row)
        if on is None or kv not in on:
            return
        on.discard(kv)
        if not on:
            del self._on_row[row]
        key, volume = kv
        self._counts[key][row] -= 1
        rows = self._rows[volume]
        rows.discard(row)
        if not rows:
            del self._rows[volume]

    def _counted(self, key: str, row: int) -> npt.NDArray[np.int64]:
        """The counts of `key`, with room for `row`."""
        counts = self._counts.get(key, np.zeros(0, dtype=np.int64))
        if len(counts) <= row:
            grown = np.zeros(max(row + 1, 2 * len(counts), 64), dtype=np.int64)
            grown[: len(counts)] = counts
            counts = self._counts[key] = grown
        return counts
