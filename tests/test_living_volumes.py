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
from optimist.kube.adapter import NOMINATES_BEFORE_PREBIND, minor_release
from tests.kube.api import Api, wait_for
from tests.kube.service import Running
from tests.optimist.kube.test_adapter import pod_doc
from tests.test_kubernetes_end_to_end import control_processes, kill
from tests.test_living_cluster import (
    SCHEDULER,
    invariants,
    running,
    service,
)

pytestmark = pytest.mark.usefixtures("ray_session")

WFFC = "WaitForFirstConsumer"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def storage_class(name: str, provisioner: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": WFFC}


def local_volume(
    name: str, node: str, zone: str, size: str = "1Gi", storage_class: str = "local"
) -> dict[str, Any]:
    """A local volume on one node, of a static class."""
    term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}
    return {
        "metadata": {"name": name, "labels": {ZONE_LABEL: zone}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "persistentVolumeReclaimPolicy": "Retain",
            "local": {"path": f"/mnt/disks/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def stateful_set(
    name: str, replicas: int, storage_class: str, templates: tuple[str, ...] = ("data",)
) -> dict[str, Any]:
    """Replicas made at once, each with a claim of its own from each template."""
    container = {"name": "db", "image": "db", "resources": {"requests": {"cpu": "100m"}}}
    claims = [
        {
            "metadata": {"name": template},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": storage_class,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        for template in templates
    ]
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
            "volumeClaimTemplates": claims,
        },
    }


def zoned_nodes(api: Api, zones: dict[str, str], cpus: dict[str, str] | None = None) -> None:
    for name, zone in zones.items():
        node = kwok_node(name, cpu=(cpus or {}).get(name, "4"))
        node["metadata"]["labels"][ZONE_LABEL] = zone
        api.put("nodes", node)
    wait_for(lambda: all(api.plane.node_ready(n) for n in zones), what="the nodes Ready")


def claims(api: Api) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in api.items("persistentvolumeclaims", "default")}


BIND_TIMEOUT = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {SCHEDULER}
  pluginConfig:
  - name: VolumeBinding
    args: {{bindTimeoutSeconds: 3}}
"""


def test_claims_are_bound_where_their_pods_go_and_a_claim_never_bound_holds_nothing(
    living_api, redis_url, key_prefix
):
    """Three StatefulSets at once, one optimist:
    - `local`: four local volumes on four of six nodes over two zones; each replica runs
      on the node of the volume its claim was bound to, each volume bound to one claim;
    - `made`: kube-controller-manager's host-path provisioner makes each volume once
      optimist has written the node it chose on the claim; the pod is bound there after;
    - `stuck`: no provisioner serves its class; after bindTimeoutSeconds its pod goes
      back to the queue, saying why, its room given back, and nothing else waits;
    - `pair`: two claims of one static class, a free volume of it on n4 and two on n5:
      the replica goes to n5, each claim to a volume of its own there."""
    api = living_api
    # n4 the roomiest: the node every score prefers, where the pair does not fit
    zoned_nodes(api, {f"n{i}": "ab"[i % 2] for i in range(6)}, cpus={"n4": "64"})
    api.put("storageclasses", storage_class("local", "kubernetes.io/no-provisioner"))
    api.put("storageclasses", storage_class("made", HOSTPATH_PROVISIONER))
    api.put("storageclasses", storage_class("nobody", "example.com/nobody"))
    for i in range(4):
        api.put("persistentvolumes", local_volume(f"pv{i}", f"n{i}", "ab"[i % 2]))
    api.put("storageclasses", storage_class("pairs", "kubernetes.io/no-provisioner"))
    for name, node in (("lone", "n4"), ("twin-a", "n5"), ("twin-b", "n5")):
        api.put("persistentvolumes", local_volume(name, node, "a", storage_class="pairs"))

    def timed_out() -> bool:
        pod = api.get("pods", "default", "stuck-0") or {}
        conditions = pod.get("status", {}).get("conditions") or []
        return any(
            c["type"] == "PodScheduled"
            and c["reason"] == "SchedulerError"
            and "timed out waiting for the condition" in c.get("message", "")
            for c in conditions
        )

    with Running(service(api, redis_url, key_prefix, BIND_TIMEOUT)):
        api.put("statefulsets", stateful_set("stuck", 1, "nobody"))
        api.put("statefulsets", stateful_set("local", 4, "local"))
        api.put("statefulsets", stateful_set("made", 2, "made"))
        api.put("statefulsets", stateful_set("pair", 1, "pairs", ("data", "wal")))
        wait_for(lambda: len(running(api, "local")) == 4, 120, "4 replicas Running")
        wait_for(lambda: len(running(api, "pair")) == 1, 120, "the pair's replica Running")
        wait_for(lambda: len(running(api, "made")) == 2, 120, "2 replicas Running")
        wait_for(timed_out, 60, "stuck-0's binding timed out")
    volumes = {v["metadata"]["name"]: v for v in api.items("persistentvolumes")}
    held = {
        v["spec"]["claimRef"]["name"]: name
        for name, v in volumes.items()
        if v["spec"].get("claimRef") and v["spec"]["storageClassName"] == "local"
    }
    assert sorted(held) == [f"data-local-{i}" for i in range(4)]  # one claim each
    for pod in running(api, "local"):
        volume = held[f"data-{pod['metadata']['name']}"]
        assert pod["spec"]["nodeName"] == f"n{volume[2:]}"  # pv3 is on n3
    for pod in running(api, "made"):
        claim = claims(api)[f"data-{pod['metadata']['name']}"]
        assert claim["metadata"]["annotations"][SELECTED_NODE] == pod["spec"]["nodeName"]
    [pair] = running(api, "pair")
    assert pair["spec"]["nodeName"] == "n5"
    failed = [e for e in api.events_for("default/pair-0") if e["reason"] == "FailedScheduling"]
    assert not failed  # n4, with one volume of the class, was never tried
    twins = {v["spec"]["claimRef"]["name"] for n, v in volumes.items() if n.startswith("twin")}
    assert twins == {"data-pair-0", "wal-pair-0"}
    chosen = claims(api)["data-stuck-0"]["metadata"]["annotations"][SELECTED_NODE]
    assert chosen in {f"n{i}" for i in range(6)}
    stuck = api.get("pods", "default", "stuck-0") or {}
    assert not stuck["spec"].get("nodeName")
    # from 1.35 on, where the pod is going is written first, for autoscalers to see
    newer = minor_release(api.admin.request("GET", "/version")) >= NOMINATES_BEFORE_PREBIND
    assert stuck["status"].get("nominatedNodeName") == (chosen if newer else None)
    assert invariants(api, redis_url, key_prefix, ["default/stuck-0"]) == []


@pytest.mark.faults
def test_a_leader_killed_between_a_claim_s_binding_and_its_pod_s_binds_the_pod_by_its_volume(
    tmp_path, living_api, redis_url, key_prefix
):
    """optimist killed (SIGKILL) once PreBind has given the pod's claim a local volume and
    the PV controller has bound it, the pod's own binding held in flight and lost with
    it. The next leader binds the pod on the volume's node (a bound claim allows no
    other) and gives the claim nothing more: the other node's volume stays free."""
    api = living_api
    zoned_nodes(api, {"n0": "a", "n1": "a"})
    api.put("storageclasses", storage_class("local", "kubernetes.io/no-provisioner"))
    for i in range(2):
        api.put("persistentvolumes", local_volume(f"pv{i}", f"n{i}", "a"))
    claim = {
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    api.put("persistentvolumeclaims", claim)
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    with control_processes(tmp_path, api, redis_url, key_prefix) as start:
        first = start("first")
        wait_for(lambda: api.get("leases", "default", "optimist"), 60, "a leader")
        api.proxy.hold("/pods/p/binding")
        api.put("pods", pod_doc("p", cpu="100m", volumes=[volume]))
        wait_for(lambda: api.proxy.held, 60, "the pod's binding, held")
        wait_for(lambda: claims(api)["data"]["spec"].get("volumeName"), 60, "the claim bound")
        kill(first, api)  # the held binding dies with it
        start("second")
        wait_for(lambda: "default/p" in api.pods_bound(), 60, "the pod bound")
    given = claims(api)["data"]["spec"]["volumeName"]
    assert api.pods_bound()["default/p"] == f"n{given.removeprefix('pv')}"
    taken = [
        v["metadata"]["name"] for v in api.items("persistentvolumes") if v["spec"].get("claimRef")
    ]
    assert taken == [given]
    profiles = frozenset({"optimist-a", "optimist-b"})
    assert invariants(api, redis_url, key_prefix, names=profiles) == []
