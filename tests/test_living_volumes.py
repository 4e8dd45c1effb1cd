"""Claims that wait for their first consumer, on the living plane: optimist picks the node,
gives each claim its volume there (or the node, for provisioning), and binds the pod once
kube-controller-manager's PV controller has bound the claim, as kube-scheduler's
VolumeBinding PreBind does; a claim that is never bound sends its pod back to the queue
after bindTimeoutSeconds, and nothing else waits for it."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.controlplane.living_plane import HOSTPATH_PROVISIONER, kwok_node
from cluster.objects import HOSTNAME_LABEL, ZONE_LABEL
from tests.kube.api import Api, wait_for
from tests.kube.service import Running
from tests.test_living_cluster import (
    SCHEDULER,
    deployment,
    invariants,
    nodes,
    running,
    service,
)

pytestmark = pytest.mark.usefixtures("ray_session")

WFFC = "WaitForFirstConsumer"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def storage_class(name: str, provisioner: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": WFFC}


def local_volume(name: str, node: str, zone: str, size: str = "1Gi") -> dict[str, Any]:
    """A local volume on one node, of the static class `local`."""
    term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}
    return {
        "metadata": {"name": name, "labels": {ZONE_LABEL: zone}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "persistentVolumeReclaimPolicy": "Retain",
            "local": {"path": f"/mnt/disks/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def stateful_set(name: str, replicas: int, storage_class: str) -> dict[str, Any]:
    """Replicas made at once, each with a claim of its own from the template."""
    container = {"name": "db", "image": "db", "resources": {"requests": {"cpu": "100m"}}}
    claim = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"schedulerName": SCHEDULER, "containers": [container]},
            },
            "volumeClaimTemplates": [claim],
        },
    }


def zoned_nodes(api: Api, zones: dict[str, str]) -> None:
    for name, zone in zones.items():
        node = kwok_node(name)
        node["metadata"]["labels"][ZONE_LABEL] = zone
        api.put("nodes", node)
    wait_for(lambda: all(api.plane.node_ready(n) for n in zones), what="the nodes Ready")


def claims(api: Api) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in api.items("persistentvolumeclaims", "default")}


def test_a_stateful_set_s_replicas_run_where_their_local_volumes_are(
    living_api, redis_url, key_prefix
):
    """Four local volumes on four of six nodes over two zones: each replica runs on the
    node of the volume its claim was bound to, each volume bound to one claim."""
    api = living_api
    zoned_nodes(api, {f"n{i}": "ab"[i % 2] for i in range(6)})
    api.put("storageclasses", storage_class("local", "kubernetes.io/no-provisioner"))
    for i in range(4):
        api.put("persistentvolumes", local_volume(f"pv{i}", f"n{i}", "ab"[i % 2]))
    with Running(service(api, redis_url, key_prefix)):
        api.put("statefulsets", stateful_set("db", 4, "local"))
        wait_for(lambda: len(running(api, "db")) == 4, 120, "4 replicas Running")
    volumes = {v["metadata"]["name"]: v for v in api.items("persistentvolumes")}
    by_claim = {
        v["spec"]["claimRef"]["name"]: name
        for name, v in volumes.items()
        if v["spec"].get("claimRef")
    }
    assert sorted(by_claim) == [f"data-db-{i}" for i in range(4)]  # one claim each
    for pod in running(api, "db"):
        volume = by_claim[f"data-{pod['metadata']['name']}"]
        assert pod["spec"]["nodeName"] == f"n{volume[2:]}"  # pv3 is on n3
        assert claims(api)[f"data-{pod['metadata']['name']}"]["status"]["phase"] == "Bound"
    assert invariants(api, redis_url, key_prefix) == []
    assert len(api.bindings()) == 4  # each bound once


def test_a_claim_is_provisioned_on_the_node_chosen_for_its_pod(living_api, redis_url, key_prefix):
    """kube-controller-manager's host-path provisioner makes the volume once optimist has
    written the node it chose on the claim; the pod is bound there after."""
    api = living_api
    nodes(api, 3)
    api.put("storageclasses", storage_class("made", HOSTPATH_PROVISIONER))
    with Running(service(api, redis_url, key_prefix)):
        api.put("statefulsets", stateful_set("db", 3, "made"))
        wait_for(lambda: len(running(api, "db")) == 3, 120, "3 replicas Running")
    for pod in running(api, "db"):
        claim = claims(api)[f"data-{pod['metadata']['name']}"]
        assert claim["metadata"]["annotations"][SELECTED_NODE] == pod["spec"]["nodeName"]
        assert claim["status"]["phase"] == "Bound"
    assert invariants(api, redis_url, key_prefix) == []


def test_a_claim_never_bound_sends_its_pod_back_and_holds_nothing_else(
    living_api, redis_url, key_prefix
):
    """No provisioner serves the class: after bindTimeoutSeconds the pod goes back to the
    queue, saying why, its room given back; a Deployment beside it runs meanwhile."""
    api = living_api
    nodes(api, 2)
    api.put("storageclasses", storage_class("nobody", "example.com/nobody"))
    configuration = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {SCHEDULER}
  pluginConfig:
  - name: VolumeBinding
    args: {{bindTimeoutSeconds: 2}}
"""

    def timed_out() -> bool:
        pod = api.get("pods", "default", "db-0") or {}
        conditions = pod.get("status", {}).get("conditions") or []
        return any(
            c["type"] == "PodScheduled"
            and c["reason"] == "SchedulerError"
            and "timed out waiting for the condition" in c.get("message", "")
            for c in conditions
        )

    with Running(service(api, redis_url, key_prefix, configuration)):
        api.put("statefulsets", stateful_set("db", 1, "nobody"))
        api.put("deployments", deployment("web", 6))
        wait_for(lambda: len(running(api, "web")) == 6, 60, "the Deployment Running")
        wait_for(timed_out, 60, "db-0's binding timed out")
        node = claims(api)["data-db-0"]["metadata"]["annotations"][SELECTED_NODE]
        assert node in {"fake-0", "fake-1"}  # it was told a node, which nobody served
        assert not (api.get("pods", "default", "db-0") or {})["spec"].get("nodeName")
    assert invariants(api, redis_url, key_prefix, ["default/db-0"]) == []
