"""Pods the cluster runs already, recorded in the store fit or not (`NodeStore.observe`):
another scheduler's, or those bound before optimist started."""

from cluster.manifests import pod_from_manifest
from cluster.store import node_store
from shards.testing import node, pod_spec


def test_pods_the_cluster_runs_are_recorded_even_where_they_do_not_fit(store):
    store.put_nodes([node("a", cpu="1")])

    def running(name, cpu, where="a"):
        manifest = pod_spec({"cpu": cpu})
        manifest["metadata"]["name"] = name
        manifest["spec"]["nodeName"] = where
        return pod_from_manifest(manifest)

    # another scheduler over-committed node a: both pods are there all the same
    outcomes = store.observe([running("p1", "800m"), running("p2", "800m")])
    assert [o.status for o in outcomes] == ["committed", "committed"]
    assert store.usage("a")["cpu"] == 1600
    again = store.observe([running("p1", "800m"), running("p3", "1", where="gone")])
    assert [o.status for o in again] == ["duplicate", "conflict"]
    assert store.release(pods=["default/p1"]).pods == 1
    assert store.usage("a")["cpu"] == 800


def test_a_cluster_s_running_pods_are_recorded_a_chunk_at_a_time_in_order(store, monkeypatch):
    """A start's running pods go to Redis in several script calls (one of 200,000 held
    Redis past its clients' timeout); the outcomes come back in the pods' order, a pod
    seen in an earlier call a duplicate in a later one."""
    monkeypatch.setattr(node_store, "OBSERVED_PER_CALL", 2)
    store.put_nodes([node("a", cpu="4")])

    def running(name):
        manifest = pod_spec({"cpu": "500m"})
        manifest["metadata"]["name"] = name
        manifest["spec"]["nodeName"] = "a"
        return pod_from_manifest(manifest)

    calls = []
    commit = store.commit
    monkeypatch.setattr(store, "commit", lambda *a: calls.append(len(a[1])) or commit(*a))
    outcomes = store.observe([running(n) for n in ("p1", "p2", "p3", "p1", "p4")])
    assert [o.status for o in outcomes] == ["committed"] * 3 + ["duplicate", "committed"]
    assert [o.unit for o in outcomes] == [f"default/{n}" for n in ("p1", "p2", "p3", "p1", "p4")]
    assert calls == [2, 2, 1] and store.usage("a")["cpu"] == 2000
