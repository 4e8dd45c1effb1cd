"""Node partitions: which shard looks first at which node.

A node's partition is a stable hash of its name, so that the dispatcher and
every shard agree on it without talking to each other, and a node keeps its
partition while others come and go. A partition is a preference, never a
wall: a shard that finds no room in its own slice looks at the rest.
"""

from __future__ import annotations

import zlib

from cluster.objects import SchedulingSpec
from cluster.selectors import named_nodes


def node_partition(node: str, partitions: int) -> int:
    return zlib.crc32(node.encode()) % partitions


def pinned_node(spec: SchedulingSpec) -> str:
    """The one node a pod can go to, when its spec names it; "" otherwise.

    `spec.nodeName`, or the DaemonSet controller's way: required node affinity
    that names one node by `metadata.name`.
    """
    if spec.node_name:
        return spec.node_name
    named = named_nodes(spec.required_terms)
    return next(iter(named)) if named is not None and len(named) == 1 else ""
