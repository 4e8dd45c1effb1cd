"""Helpers for tests of plugins and the shard's cycle: tables and pods without Redis."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cluster.objects import Node, node_from_manifest, pod_from_manifest
from cluster.store import Delta
from shards.framework import PodClass
from shards.node_table import NodeTable


def node(name: str, cpu: str = "4", memory: str = "32Gi", pods: str = "110", **spec: Any) -> Node:
    """A node manifest's essentials; `labels` and `taints` go where Kubernetes puts them."""
    labels = spec.pop("labels", {})
    return node_from_manifest(
        {
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
        }
    )


def pod_spec(requests: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A pod manifest with one container asking for `requests`."""
    container = {"name": "c", "resources": {"requests": dict(requests or {})}}
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [container], **spec},
    }


def table_of(
    nodes: Sequence[Node], usage: Mapping[str, Mapping[str, int]] | None = None
) -> NodeTable:
    """A node table as a shard would hold it after syncing these nodes and committed usage."""
    table = NodeTable()
    table.apply(Delta(1, [], np.zeros(0, np.int64), np.zeros((0, 0), np.int64), specs=list(nodes)))
    for name, used in (usage or {}).items():
        table.ensure_columns(used)
        for resource, amount in used.items():
            table.used[table.index[name], table.col[resource]] = amount
    return table


def compile_pod(manifest: Mapping[str, Any], table: NodeTable) -> PodClass:
    return PodClass.compile(pod_from_manifest(manifest).spec, table)


def every(table: NodeTable) -> slice:
    return slice(0, table.size)
