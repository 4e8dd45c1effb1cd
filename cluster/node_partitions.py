"""Node partitions: which shard looks first at which node.

A node's partition is a stable hash of its name, so that the dispatcher and
every shard agree on it without talking to each other, and a node keeps its
partition while others come and go. A partition is a preference, never a
wall: a shard that finds no room in its own slice looks at the rest.
"""

from __future__ import annotations

import zlib

from cluster.objects import SchedulingSpec


def node_partition(node: str, partitions: int) -> int:
    return zlib.crc32(node.encode()) % partitions


def pinned_node(spec: SchedulingSpec) -> str:
    """The one node a pod can go to, when its spec names it; "" otherwise.

    `spec.nodeName`, or the DaemonSet controller's way: a required node
    affinity term whose only field is `metadata.name In [node]`.
    """
    if spec.node_name:
        return spec.node_name
    terms = spec.required_terms or ()
    if len(terms) == 1 and len(terms[0].match_fields) == 1:
        field = terms[0].match_fields[0]
        if field.key == "metadata.name" and field.operator == "In" and len(field.values) == 1:
            return field.values[0]
    return ""
