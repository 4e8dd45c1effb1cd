"""NodePorts: a pod's host ports must be free on the node.

A port is taken per protocol and address; one bound on 0.0.0.0 takes every
address. Only nodes that have host ports in use are looked at, or only the
rows asked about where they are fewer, so a pod with host ports costs in
proportion to the smaller of the two, not to the cluster.

Rule across shards (docs/design.md, invariant 5): re-checked by the binder. The
commit script keeps each node's host ports in the store and refuses a pod
whose ports clash, with the same rule as here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np

from cluster.events import ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE
from cluster.objects import ANY_IP
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import HostPortKey, NodeTable, row_numbers

REASON = "node(s) didn't have free ports for the requested pod ports"


def clashes(in_use: Counter[HostPortKey], wanted: Iterable[HostPortKey]) -> bool:
    """Upstream's HostPortInfo.CheckConflict, over (protocol, ip, port) counts."""
    for protocol, ip, port in wanted:
        for (used_protocol, used_ip, used_port), pods in in_use.items():
            if pods <= 0 or used_protocol != protocol or used_port != port:
                continue
            if ip == ANY_IP or used_ip in (ANY_IP, ip):
                return True
    return False


class NodePorts(FilterPlugin):
    name = "NodePorts"
    events = frozenset({ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE})
    dynamic = True

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        if not pod.ports:
            return np.ones(table.alive[rows].shape, dtype=bool)
        ids = row_numbers(rows, table.size)
        used, assumed = table.ports, table.assumed_ports
        if len(ids) <= len(used) + len(assumed):
            # fewer rows asked about than nodes with ports (a catch-up, a search's
            # window): those rows alone, or a cluster full of one port costs a pass over
            # every node for each pod
            return np.array(
                [
                    not (
                        (row in used or row in assumed)
                        and clashes(table.host_ports(row), pod.ports)
                    )
                    for row in ids.tolist()
                ],
                dtype=bool,
            )
        busy = [
            row for row in used.keys() | assumed.keys() if clashes(table.host_ports(row), pod.ports)
        ]
        return ~np.isin(ids, busy)

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        return Counter({REASON: len(rows)})
