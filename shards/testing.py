"""Helpers for tests of plugins and the shard's cycle: tables and pods without Redis."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cluster.gpus import GPU
from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.messages import ShardBatch, UnitRequest
from cluster.objects import Node, Peer, SchedulingSpec
from cluster.profile_config import ProfileConfig
from cluster.store import Delta
from shards.framework import PodClass, Profile
from shards.node_table import NodeTable
from shards.plugins import build_profile


def node(
    name: str, cpu: str = "4", memory: str = "32Gi", pods: str = "110", gpus: int = 0, **spec: Any
) -> Node:
    """A node manifest's essentials; `labels` and `taints` go where Kubernetes puts them."""
    labels = spec.pop("labels", {})
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpus:
        allocatable[GPU] = str(gpus)
    return node_from_manifest(
        {
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": {"allocatable": allocatable},
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


def hold_pods(table: NodeTable, name: str, peer: Peer, pods: int) -> int:
    """`pods` more committed pods of `peer` on node `name`, as a sync from the store
    brings them (so that what the table keeps of its counts follows); the peer's column."""
    col = table.peer_column(peer.id, peer)
    held = int(table.peer_pods[table.index[name], col]) + pods
    empty = np.zeros((0, len(table.columns)), dtype=np.int64)
    delta = Delta(
        table.store_version, [], np.zeros(0, np.int64), empty, peers={name: [(peer.id, held)]}
    )
    table.apply(delta)
    return col


def commit_volumes(table: NodeTable, name: str, volumes: list[tuple[str, str, int]]) -> None:
    """Node `name`'s attached volumes as the store holds them, each (limit key, volume,
    pods using it), brought by a sync of the node; the sync resets what else the table
    counts of the node's pods (ports, peers), so it comes before those."""
    row = table.index[name]
    used = table.used[row : row + 1, : len(table.columns)].copy()
    table.apply(
        Delta(table.store_version, [name], np.array([1], np.int64), used, attached={name: volumes})
    )


def compile_pod(manifest: Mapping[str, Any], table: NodeTable) -> PodClass:
    return PodClass.compile(pod_from_manifest(manifest).spec, table)


def every(table: NodeTable) -> slice:
    return slice(0, table.size)


def default_profile(percentage: int | None = 100) -> Profile:
    """The node-local filters and LeastAllocated, scoring every node unless told otherwise."""
    return build_profile(
        ProfileConfig(
            "default-scheduler",
            filters=("NodeUnschedulable", "NodeAffinity", "TaintToleration", "NodeResourcesFit"),
            scorers=(("NodeResourcesFit", 1),),
            percentage_of_nodes_to_score=percentage,
        )
    )


_batch_ids = itertools.count(1)


def single_pod_batch(specs: Sequence[SchedulingSpec]) -> ShardBatch:
    """A batch of one single-pod unit per spec, each its own class, in order."""
    ids = next(_batch_ids)
    units = [UnitRequest(f"u{ids}-{i}", [(f"ns/p{ids}-{i}", i)]) for i in range(len(specs))]
    return ShardBatch(ids, list(specs), units)
