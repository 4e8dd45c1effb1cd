"""Nodes and bound pods as the node store keeps them, whichever way they reach it (the
cluster's changes, or a store built again from the cluster's truth): each node with
the attach limits of its CSINode, each pod with its volumes resolved, so that the
volumes it attaches count on its node."""

from __future__ import annotations

from dataclasses import replace

from cluster.objects import Node, Pod
from cluster.volumes.attach import node_with_limits
from cluster.volumes.index import VolumeIndex
from dispatcher.batch_classes import SpecOf


def limited(nodes: list[Node], volumes: VolumeIndex) -> list[Node]:
    return [node_with_limits(n, volumes.csi_node(n.name)) for n in nodes]


def resolved(pods: list[Pod], spec_of: SpecOf) -> list[Pod]:
    return [replace(p, spec=spec_of(p)) if p.volumes else p for p in pods]
