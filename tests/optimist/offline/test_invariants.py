"""The checker's rule for pods that have ended: they hold no room, and no reservation."""

from cluster.manifests import node_from_manifest
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster


def cluster_with(phases: dict[str, str]) -> SimulatedCluster:
    """A 4-CPU node with a 2-CPU pod bound to it for each entry: name -> its phase."""
    cluster = SimulatedCluster(frozenset({"optimist"}))
    node = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "pods": "9"}}}
    cluster.nodes["n"] = node_from_manifest(node)
    for name, phase in phases.items():
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}
        cluster.pod_manifests[f"default/{name}"] = {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "optimist", "nodeName": "n", "containers": [container]},
            "status": {"phase": phase},
        }
        cluster.bindings[f"default/{name}"] = "n"
    return cluster


def test_a_pod_that_ended_holds_no_room_on_its_node():
    ended = cluster_with({"a": "Succeeded", "b": "Failed", "c": "Running", "d": "Running"})
    assert check_invariants(ended, []) == []


def test_pods_that_run_are_all_counted():
    running = cluster_with({"a": "Running", "b": "Pending", "c": "Running"})
    assert check_invariants(running, []) == [
        "node n is over-committed on cpu: 6000 requested > 4000 allocatable"
    ]
