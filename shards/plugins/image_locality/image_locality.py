"""ImageLocality: prefer nodes that already hold the pod's container images.

As upstream (v1.30): each of the pod's images (init containers included)
present on the node adds its size scaled by its spread, the share of all
nodes that hold it, so an image everywhere does not pull every pod to the
same nodes. The sum is clamped between 23MB and 1000MB per container and
scaled to 0..100. The spread of each image depends on every node's spec,
so it is computed once per spec epoch of the table, not once per pod.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shards.framework import MAX_NODE_SCORE, PodClass, Rows, ScorePlugin
from shards.node_table import NodeTable

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """The name as the node reports it: ":latest" added when there is no tag or digest."""
    return f"{name}:latest" if name.rfind(":") <= name.rfind("/") else name


def calculate_priority(sums: np.ndarray, containers: int) -> np.ndarray:
    """Upstream's calculatePriority: clamp to [23MB, 1000MB x containers], scale to 0..100."""
    top = MAX_CONTAINER_THRESHOLD * containers
    clamped = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, np.where(sums > top, top, sums))
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (top - MIN_THRESHOLD)


@dataclass(frozen=True, slots=True)
class Spread:
    """One image name: the rows holding it, and its size there scaled by its spread."""

    rows: np.ndarray  # intp
    scores: np.ndarray  # int64


def spread_index(table: NodeTable) -> dict[str, Spread]:
    """Every image name on some node, with its scaled score on each node holding it.

    The score is upstream's int64(float64(size) x (float64(nodes with it) /
    float64(all nodes))), truncated. As in upstream's cache, a name has one size
    wherever it is held: the one the first node to report it gave (here the
    first row, rows being added as nodes arrive), even where a later node
    reports another for the same name.
    """
    held: dict[str, list[int]] = {}
    sizes: dict[str, int] = {}
    nodes = 0
    for row, spec in enumerate(table.specs):
        if spec is None:
            continue
        nodes += 1
        for image in spec.images:
            for name in image.names:
                sizes.setdefault(name, image.size_bytes)
                rows = held.setdefault(name, [])
                if not rows or rows[-1] != row:  # a node listing a name twice counts once
                    rows.append(row)
    return {
        name: Spread(
            np.array(rows, dtype=np.intp),
            np.full(len(rows), int(float(sizes[name]) * (len(rows) / nodes)), dtype=np.int64),
        )
        for name, rows in held.items()
    }


class ImageLocality(ScorePlugin):
    name = "ImageLocality"
    dynamic = False  # images are part of the node specs

    def __init__(self) -> None:
        # the table and spec epoch the index was built for, and the index
        self._index: tuple[NodeTable, int, dict[str, Spread]] | None = None

    def _spreads(self, table: NodeTable) -> dict[str, Spread]:
        cached = self._index
        if cached is None or cached[0] is not table or cached[1] != table.spec_epoch:
            cached = self._index = (table, table.spec_epoch, spread_index(table))
        return cached[2]

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        images = pod.spec.images
        every = table.derived((self.name, images), lambda: self._every_row(images, table))
        return np.array(every[rows])  # the caller's own, as every plugin's answer is

    def _every_row(self, images: tuple[str, ...], table: NodeTable) -> np.ndarray:
        """Every row's score for these images: a spec-only answer, kept by the table for
        every class that runs the same images."""
        spreads = self._spreads(table)
        sums = np.zeros(table.size, dtype=np.int64)
        for image in images:
            spread = spreads.get(normalized_image_name(image))
            if spread is not None:
                sums[spread.rows] += spread.scores
        scores = calculate_priority(sums, len(images))
        scores.flags.writeable = False
        return scores
