"""Placement quality on a small placement worked out by hand."""

from cluster.cluster_adapter import Binding
from cluster.manifests import node_from_manifest, pod_from_manifest
from optimist.offline.quality import cluster_quality, placement_quality
from optimist.offline.simulator import SimulatedCluster

GI = 2**30


def node(name: str, cpu: str, memory: str, gpus: int = 0, zone: str | None = None) -> dict:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": allocatable},
    }


def pod(name: str, cpu: str, memory: str, gpus: int = 0, scheduler: str = "default-scheduler"):
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "resources": {"requests": requests}}],
        },
    }


def placement() -> tuple[dict, dict, dict, set]:
    nodes = {
        n["metadata"]["name"]: node_from_manifest(n)
        for n in (
            node("g1", "32", "128Gi", gpus=8, zone="a"),
            node("g2", "32", "128Gi", gpus=8, zone="b"),
            node("c1", "16", "64Gi", zone="a"),
            node("c2", "16", "64Gi"),
        )
    }
    bindings = {}
    manifests = []
    for i in range(15):  # g1: 2 CPUs left, too few for a GPU pod: its 8 GPUs are stranded
        manifests.append(pod(f"small-g1-{i}", "2", "4Gi"))
        bindings[f"default/small-g1-{i}"] = "g1"
    for i in range(8):  # c1: CPU used up, 32Gi of memory stranded
        manifests.append(pod(f"small-c1-{i}", "2", "4Gi"))
        bindings[f"default/small-c1-{i}"] = "c1"
    manifests.append(pod("gpu-0", "4", "16Gi", gpus=1))
    bindings["default/gpu-0"] = "g2"
    manifests.append(pod("huge", "64", "1Gi"))  # pending: a shape that fits nowhere
    manifests.append(pod("daemon", "1", "1Gi", scheduler="other"))  # background on c2
    bindings["default/daemon"] = "c2"
    pods = {f"default/{m['metadata']['name']}": pod_from_manifest(m) for m in manifests}
    workload = {k for k in pods if k != "default/daemon"}
    return nodes, pods, bindings, workload


def test_stranded_free_nodes_and_zones():
    q = placement_quality(*placement())
    assert q["resources"] == {
        "cpu": {"allocatable": 96000, "requested": 51000, "free": 45000, "stranded": 0},
        "memory": {
            "allocatable": 384 * GI,
            "requested": 109 * GI,
            "free": 275 * GI,
            "stranded": 32 * GI,
        },
        "nvidia.com/gpu": {"allocatable": 16, "requested": 1, "free": 15, "stranded": 8},
        # the same GPUs in milli: whole ones take 1000 each
        "optimist.io/gpu-milli": {
            "allocatable": 16000,
            "requested": 1000,
            "free": 15000,
            "stranded": 8000,
        },
    }
    assert q["nodes"] == 4 and q["shapes"] == 3
    assert q["workload_pods"] == 25 and q["workload_pods_bound"] == 24
    assert q["whole_free_nodes"] == 1  # c2: the background pod does not count
    assert q["whole_free_gpu8_nodes"] == 1  # g1: no GPU requested, even if none usable
    assert q["zones"] == {
        "label": "topology.kubernetes.io/zone",
        "pods": {"a": 23, "b": 1},
        "pods_without_zone": 0,
        "max": 23,
        "min": 1,
        "skew": 22,
    }


def test_nothing_is_stranded_for_a_resource_no_pod_asks_for():
    nodes, pods, bindings, _ = placement()
    q = placement_quality(nodes, pods, bindings, {"default/small-g1-0"})
    assert q["resources"]["nvidia.com/gpu"]["stranded"] == 0
    assert q["resources"]["memory"]["stranded"] == 32 * GI  # c1 still has no CPU for it


def test_over_committed_node_counts_no_negative_free():
    nodes, pods, bindings, workload = placement()
    bindings = {**bindings, "default/huge": "c2"}  # as a snapshot may show it
    q = placement_quality(nodes, pods, bindings, workload)
    assert q["resources"]["cpu"]["free"] == 2000 + 28000
    assert q["resources"]["cpu"]["requested"] == 51000 + 64000


def test_cluster_quality_reads_the_simulated_cluster():
    nodes, _, _, _ = placement()
    cluster = SimulatedCluster()
    for n in nodes.values():
        cluster.create_nodes(node(n.name, "32", "128Gi", gpus=8), 1)
    cluster.create_pods(pod("gpu", "1", "1Gi", gpus=8), 1)
    cluster.create_pods(pod("bad", "lots", "1Gi"), 1)  # never bound: left out
    assert cluster.bind([Binding("default/gpu", "g1")]) == [None]
    q = cluster_quality(cluster)
    assert q["workload_pods"] == 1 and q["workload_pods_bound"] == 1
    assert q["whole_free_nodes"] == q["whole_free_gpu8_nodes"] == 3
    assert q["resources"]["nvidia.com/gpu"]["stranded"] == 0
    assert q["zones"]["pods_without_zone"] == 1 and q["zones"]["pods"] == {}


def test_a_share_of_a_gpu_counts_in_milli_and_the_node_is_no_longer_untouched():
    nodes = {"g": node_from_manifest(node("g", "32", "64Gi", gpus=8))}
    manifest = pod("s", "1", "1Gi")
    manifest["spec"]["containers"][0]["resources"]["requests"]["optimist.io/gpu-milli"] = "300"
    pods = {"default/s": pod_from_manifest(manifest)}
    q = placement_quality(nodes, pods, {"default/s": "g"}, set(pods))
    assert q["resources"]["nvidia.com/gpu"]["requested"] == 0  # no whole GPU asked for
    assert q["resources"]["optimist.io/gpu-milli"]["requested"] == 300
    assert q["whole_free_gpu8_nodes"] == 0
