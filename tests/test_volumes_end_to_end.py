"""Pods with claims, through the whole loop on the simulated cluster: placed where their
bound volumes can be reached, refused in upstream's words where no node can help, and
placed once the claim they waited for is made. The invariant checker ends each test."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from benchmarks.cases import template
from cluster.objects import POD_GROUP_LABEL
from cluster.volumes.index import CLAIMS, CLASSES, CSI_NODES, VOLUMES
from optimist.loop import SchedulingLoop
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.service import Service
from optimist.settings import Settings
from tests.kube.api import wait_for
from tests.kube.service import Running
from tests.optimist.kube.test_adapter import node_doc, pod_doc
from tests.test_cluster_events_end_to_end import settle
from tests.test_kubernetes_end_to_end import settings_for

pytestmark = pytest.mark.usefixtures("ray_session")

ZONE = "topology.kubernetes.io/zone"
EBS = "ebs.csi.aws.com"


def zoned_node(zone: str) -> dict[str, Any]:
    doc = yaml.safe_load(template("node-default.yaml").read_text())
    doc["metadata"]["labels"] = {ZONE: zone}
    return doc


def claimed_pod(*claims: str) -> dict[str, Any]:
    doc = yaml.safe_load(template("pod-default.yaml").read_text())
    doc["spec"]["volumes"] = [
        {"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims
    ]
    return doc


def bound_claim(name: str, volume: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        },
        "spec": {"volumeName": volume, "storageClassName": "local"},
    }


def zonal_volume(name: str, zone: str, claim: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
    return {
        "metadata": {"name": name, "labels": {ZONE: zone}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "storageClassName": "local",
            "claimRef": {"namespace": "default", "name": claim},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def test_pods_go_where_their_volumes_are_and_wait_in_upstream_s_words(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=7)
    cluster = SimulatedCluster(settings.scheduler_names)
    [east] = cluster.create_nodes(zoned_node("east"), 1)
    [west] = cluster.create_nodes(zoned_node("west"), 1)
    cluster.put_volume_object(CLASSES, {"metadata": {"name": "local"}, "provisioner": "x",
                                        "volumeBindingMode": "Immediate"})  # fmt: skip
    for i in range(3):
        cluster.put_volume_object(VOLUMES, zonal_volume(f"pv-{i}", "west", f"data-{i}"))
        cluster.put_volume_object(CLAIMS, bound_claim(f"data-{i}", f"pv-{i}"))
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        west_pods = [cluster.create_pods(claimed_pod(f"data-{i}"), 1)[0] for i in range(3)]
        [waiting] = cluster.create_pods(claimed_pod("later"), 1)
        [immediate] = cluster.create_pods(claimed_pod("unbound"), 1)
        cluster.put_volume_object(CLAIMS, {"metadata": {"name": "unbound"},
                                           "spec": {"storageClassName": "local"}})  # fmt: skip
        unschedulable = settle(loop, cluster, platform.store)
        assert {cluster.bindings[p] for p in west_pods} == {west.name}
        assert unschedulable == {
            waiting: '0/2 nodes are available: persistentvolumeclaim "later" not found.',
            immediate: "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        }
        # the claim it waited for is made, bound to a volume in the east: the event
        # moves it, and it goes there
        cluster.put_volume_object(VOLUMES, zonal_volume("pv-later", "east", "later"))
        cluster.put_volume_object(CLAIMS, bound_claim("later", "pv-later"))
        unschedulable = settle(loop, cluster, platform.store)
        assert cluster.bindings[waiting] == east.name
        assert set(unschedulable) == {immediate}


def test_a_volume_optimist_cannot_read_holds_back_only_its_pods(redis_url, key_prefix):
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=8)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(zoned_node("east"), 2)
    bad = zonal_volume("pv-bad", "east", "bad")
    bad["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0][
        "operator"
    ] = "Near"
    cluster.put_volume_object(VOLUMES, bad)
    cluster.put_volume_object(CLAIMS, bound_claim("bad", "pv-bad"))
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        [held] = cluster.create_pods(claimed_pod("bad"), 1)
        others = cluster.create_pods(claimed_pod(), 4)
        unschedulable = settle(loop, cluster, platform.store)
        assert all(p in cluster.bindings for p in others)
        assert unschedulable[held].startswith(
            "0/2 nodes are available: PersistentVolume pv-bad: spec.nodeAffinity.required"
            ".nodeSelectorTerms[0].matchExpressions[0].operator='Near'"
        )


def csi_claim(name: str, handle: str) -> list[tuple[str, dict[str, Any]]]:
    """A claim bound to a volume of the EBS CSI driver, as upstream's harness makes them."""
    volume = {
        "metadata": {"name": f"pv-{name}"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "csi": {"driver": EBS, "volumeHandle": handle},
            "claimRef": {"namespace": "default", "name": name},
        },
    }
    return [(VOLUMES, volume), (CLAIMS, bound_claim(name, f"pv-{name}"))]


def test_two_shards_never_attach_more_volumes_to_a_node_than_its_limit(redis_url, key_prefix):
    """Three nodes whose CSINodes allow two EBS volumes each, and pods of a volume each,
    placed by two shards: six volumes fit, so five of seven pods join the first and two
    wait, in upstream's words; a pod sharing the first's volume still goes where that
    volume is; once a pod goes, one that waited takes its place."""
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=9)
    cluster = SimulatedCluster(settings.scheduler_names)
    nodes = cluster.create_nodes(zoned_node("east"), 3)
    for n in nodes:
        driver = {"name": EBS, "nodeID": n.name, "allocatable": {"count": 2}}
        cluster.put_volume_object(
            CSI_NODES, {"metadata": {"name": n.name}, "spec": {"drivers": [driver]}}
        )
    for i in range(8):
        for resource, manifest in csi_claim(f"data-{i}", f"vol-{i}"):
            cluster.put_volume_object(resource, manifest)
    for resource, manifest in csi_claim("shared", "vol-0"):  # vol-0 again, by another claim
        cluster.put_volume_object(resource, manifest)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        [first] = cluster.create_pods(claimed_pod("data-0"), 1)
        settle(loop, cluster, platform.store)
        pods = [cluster.create_pods(claimed_pod(f"data-{i}"), 1)[0] for i in range(1, 8)]
        waiting = settle(loop, cluster, platform.store)
        assert len(waiting) == 2
        assert set(waiting.values()) == {
            "0/3 nodes are available: 3 node(s) exceed max volume count."
        }
        [sharer] = cluster.create_pods(claimed_pod("shared"), 1)  # every node is full now
        assert settle(loop, cluster, platform.store) == waiting
        assert cluster.bindings[sharer] == cluster.bindings[first]
        gone = next(p for p in pods if p in cluster.bindings)
        cluster.delete_pods([gone])
        unschedulable = settle(loop, cluster, platform.store)
        assert len(unschedulable) == 1 and set(unschedulable) < set(waiting)


def test_a_read_write_once_pod_claim_is_one_pod_s_until_it_goes(redis_url, key_prefix):
    """Three pods of one ReadWriteOncePod claim, placed by two shards at once: one is
    bound, the others wait in upstream's words; each time the pod holding the claim
    goes, one that waited takes it."""
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=10)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(zoned_node("east"), 3)
    for resource, manifest in csi_claim("solo", "vol-solo"):
        if resource == CLAIMS:
            manifest["spec"]["accessModes"] = ["ReadWriteOncePod"]
        cluster.put_volume_object(resource, manifest)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        pods = cluster.create_pods(claimed_pod("solo"), 3)
        for left in (2, 1, 0):
            waiting = settle(loop, cluster, platform.store)
            [holder] = [p for p in pods if p in cluster.bindings]
            assert sorted(waiting) == sorted(set(pods) - {holder}) and len(waiting) == left
            assert set(waiting.values()) <= {
                "0/3 nodes are available: 3 node has pod using PersistentVolumeClaim with the "
                "same name and ReadWriteOncePod access mode."
            }
            cluster.delete_pods([holder])
            pods.remove(holder)


def local_volume(name: str, node: str, claim: str) -> dict[str, Any]:
    """A local PersistentVolume on `node`, pre-bound to `claim` as upstream's harness
    makes its volumes."""
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                  "values": [node]}]}  # fmt: skip
    return {
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "local": {"path": f"/mnt/{name}"},
            "claimRef": {"namespace": "default", "name": claim},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def claim_bound_to(name: str, volume: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "",
            "volumeName": volume,
        },
    }


def test_through_the_api_server_claims_are_watched_and_pods_follow_their_volumes(
    kube_api, redis_url, key_prefix
):
    """The watches of claims and volumes feed the same resolution: a pod goes to its
    local volume's node; one whose claim is missing is told so on its PodScheduled
    condition, and goes where its volume is once the claim is made."""
    api = kube_api
    for name in ("n0", "n1", "n2"):
        api.put("nodes", node_doc(name, **{"kubernetes.io/hostname": name}))
    api.put("persistentvolumes", local_volume("pv-db", "n1", "db"))
    api.put("persistentvolumeclaims", claim_bound_to("db", "pv-db"))
    settings = settings_for(redis_url, key_prefix, shards=1)
    service = Service(settings, api.client(), identity="test")

    def volumes(*claims: str) -> list[dict[str, Any]]:
        return [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]

    def condition(pod: str) -> dict[str, Any] | None:
        status = (api.get("pods", "default", pod) or {}).get("status", {})
        return next(iter(status.get("conditions", [])), None)

    with Running(service):
        api.put("pods", pod_doc("db", volumes=volumes("db")))
        api.put("pods", pod_doc("late", volumes=volumes("later")))
        wait_for(lambda: api.pods_bound().get("default/db") == "n1", what="db on n1")
        wait_for(lambda: condition("late"), what="late's condition")
        assert condition("late")["message"] == (
            '0/3 nodes are available: persistentvolumeclaim "later" not found.'
        )
        api.put("persistentvolumes", local_volume("pv-later", "n2", "later"))
        api.put("persistentvolumeclaims", claim_bound_to("later", "pv-later"))
        wait_for(lambda: api.pods_bound().get("default/late") == "n2", what="late on n2")
        cluster = api.as_cluster(settings.scheduler_names)
        assert check_invariants(cluster, [], service.loop.store) == []


def free_local_volume(name: str, node: str) -> dict[str, Any]:
    """A local volume on `node`, free: of a WaitForFirstConsumer class of static volumes."""
    volume = local_volume(name, node, "")
    del volume["spec"]["claimRef"]
    volume["spec"]["storageClassName"] = "local-wffc"
    volume["status"] = {"phase": "Available"}
    return volume


def waiting_claim(name: str) -> dict[str, Any]:
    claim = claim_bound_to(name, "")
    del claim["spec"]["volumeName"], claim["metadata"]["annotations"]
    claim["spec"]["storageClassName"] = "local-wffc"
    return claim


def test_two_shards_give_each_free_volume_to_one_claim_and_a_gang_its_volumes_whole(
    redis_url, key_prefix
):
    """Two free local volumes, on n0 and n1, and three pods of a claim each waiting for
    its first consumer, placed by two shards at once: each volume goes to one claim
    (the commit checks it with the rest of the unit), the third pod waits in upstream's
    words. A gang of two then finds one volume for its two claims and binds neither;
    given a second, it binds whole."""
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=11)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(zoned_node("east"), 3, hostname_label=True)
    names = sorted(cluster.nodes)
    cluster.put_volume_object(CLASSES, {"metadata": {"name": "local-wffc"},
                                        "provisioner": "kubernetes.io/no-provisioner",
                                        "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    for i in range(2):
        cluster.put_volume_object(VOLUMES, free_local_volume(f"pv-{i}", names[i]))
    for claim in ("c0", "c1", "c2", "g0", "g1"):
        cluster.put_volume_object(CLAIMS, waiting_claim(claim))
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        pods = [cluster.create_pods(claimed_pod(f"c{i}"), 1)[0] for i in range(3)]
        waiting = settle(loop, cluster, platform.store)
        placed = sorted(cluster.bindings[p] for p in pods if p in cluster.bindings)
        assert placed == names[:2]
        [left] = waiting
        assert waiting[left] == (
            "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
        )
        given = platform.store.given_volumes(["pv-0", "pv-1"])
        assert len(set(given.values())) == 2  # each to a claim of its own
        # the gang: one volume left (the pod waiting goes), for two claims
        cluster.delete_pods([p for p in pods if p in cluster.bindings][:1])
        cluster.delete_pods([left])
        cluster.create_pod_group({"metadata": {"name": "pair"}, "spec": {"minMember": 2}})
        gang = []
        for claim in ("g0", "g1"):
            doc = claimed_pod(claim)
            doc["metadata"] = {"generateName": "pair-", "labels": {POD_GROUP_LABEL: "pair"}}
            gang += cluster.create_pods(doc, 1)
        waiting = settle(loop, cluster, platform.store)
        assert not set(gang) & set(cluster.bindings)
        [reason] = {waiting[p] for p in gang}  # the gang's, on both pods
        assert reason.startswith("conflict: pod default/pair-")
        assert "no free volume it reaches is left for claim default/g" in reason
        cluster.put_volume_object(VOLUMES, free_local_volume("pv-2", names[2]))
        assert settle(loop, cluster, platform.store) == {}
        assert len({cluster.bindings[p] for p in gang}) == 2
