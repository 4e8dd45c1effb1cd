"""What the API server holds at a run's end, as the invariant checker reads a cluster:
its nodes, pods and bindings, PodGroups, and volume objects; with the bindings and the
gangs' departed pods only a watch saw along the way."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from benchmarks.apiserver.pod_watch import PodWatch
from cluster.cluster_adapter import Binding
from cluster.errors import InvalidObject
from cluster.manifests import node_from_manifest, podgroup_from_manifest
from cluster.volumes.index import CLAIMS, CSI_NODES, VOLUMES, VolumeIndex
from optimist.kube.adapter import PATHS as WATCHED
from optimist.kube.client import ApiError, KubeClient
from optimist.kube.informer import list_all, object_key
from optimist.offline.simulator import SimulatedCluster


def cluster_of(
    client: KubeClient,
    scheduler_names: frozenset[str],
    watch: PodWatch,
    pods: list[dict[str, Any]] | None = None,
) -> SimulatedCluster:
    """The server's state as the invariant checker reads a cluster: its nodes, its pods
    (`pods` where the caller listed them already) and where they are bound, its PodGroups
    if it serves them; and from `watch`, every binding seen and the gangs' pods deleted
    since they were bound."""
    nodes, _ = list_all(client, "/api/v1/nodes")
    if pods is None:
        pods, _ = list_all(client, "/api/v1/pods")
    try:
        groups, _ = list_all(client, "/apis/scheduling.x-k8s.io/v1alpha1/podgroups")
    except ApiError as err:
        if err.status != 404:
            raise
        groups = []
    bind_log, departed = watch.history()
    return build_cluster(nodes, pods, groups, scheduler_names, bind_log, departed)


def volumes_of(client: KubeClient) -> VolumeIndex:
    """The server's claims, volumes and CSINodes, for the checker's `volumes_hold` and
    `attach_limits_hold`."""
    index = VolumeIndex()
    for resource in (CLAIMS, VOLUMES, CSI_NODES):
        items, _ = list_all(client, WATCHED[resource])
        for item in items:
            index.apply(resource, item)
    return index


def build_cluster(
    nodes: Iterable[dict[str, Any]],
    pods: Iterable[dict[str, Any]],
    groups: Iterable[dict[str, Any]],
    scheduler_names: frozenset[str],
    bind_log: list[Binding],
    departed_members: Counter[str],
) -> SimulatedCluster:
    """The cluster as the server holds it, for the checker. A node or PodGroup no scheduler
    can read is left out, as optimist leaves it: a pod bound to such a node is then
    bound to no node the checker knows, a violation."""
    cluster = SimulatedCluster(scheduler_names, departed_members=departed_members)
    for obj in nodes:
        try:
            node = node_from_manifest(obj)
        except InvalidObject:
            continue
        cluster.nodes[node.name] = node
        cluster.node_manifests[node.name] = obj
    for obj in pods:
        key = object_key(obj)
        cluster.pod_manifests[key] = obj
        if obj["spec"].get("nodeName"):
            cluster.bindings[key] = obj["spec"]["nodeName"]
    cluster.bind_log = list(bind_log)
    for obj in groups:
        try:
            group = podgroup_from_manifest(obj)
        except InvalidObject:
            continue
        cluster.pod_groups[group.key] = group
    return cluster
