"""The simulated cluster's watch: pods created from one template arrive as if each were parsed."""

import copy

from cluster.cluster_adapter import Binding
from cluster.manifests import pod_from_manifest
from optimist.offline.simulator import SimulatedCluster

TEMPLATE = {
    "metadata": {"generateName": "web-", "labels": {"app": "web"}},
    "spec": {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
    },
}


def test_pods_of_one_template_are_the_pods_their_manifests_say():
    cluster = SimulatedCluster()
    template = copy.deepcopy(TEMPLATE)
    keys = cluster.create_pods(template, 5, namespace="team")
    template["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "9"  # too late
    pods, errors = cluster.take_new_pods()
    assert errors == [] and [p.key for p in pods] == keys
    assert pods == [pod_from_manifest(cluster.pod_manifests[k]) for k in keys]
    assert len({p.uid for p in pods}) == 5 and pods[3].manifest is cluster.pod_manifests[keys[3]]


def test_pods_made_one_at_a_time_that_differ_in_their_claims_alone_are_each_their_own():
    """A volume workload makes its pods one at a time, a claim each: each arrives as if
    parsed, whether it is parsed or read off the one before it."""
    cluster = SimulatedCluster()
    keys = []
    for claim in ("c0", "c1", 7, "c3"):  # the third's claim name is no string: invalid
        pod = copy.deepcopy(TEMPLATE)
        pod["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]
        keys += cluster.create_pods(pod, 1)
    other = copy.deepcopy(TEMPLATE)
    other["metadata"]["labels"] = {"app": "db"}  # differs beyond its claims
    other["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "c4"}}]
    keys += cluster.create_pods(other, 1)
    pods, errors = cluster.take_new_pods()
    assert [k for k, _ in errors] == [keys[2]] and "claimName" in str(errors[0][1])
    assert pods == [pod_from_manifest(cluster.pod_manifests[k]) for k in keys if k != keys[2]]
    assert [p.volumes[0].claim for p in pods] == ["c0", "c1", "c3", "c4"]


def test_an_invalid_template_is_reported_pod_by_pod():
    cluster = SimulatedCluster()
    bad = copy.deepcopy(TEMPLATE)
    bad["spec"]["priority"] = "high"
    keys = cluster.create_pods(bad, 3)
    pods, errors = cluster.take_new_pods()
    assert pods == [] and [k for k, _ in errors] == keys
    assert all(f"Pod {k}" in str(e) and "spec.priority" in str(e) for k, e in errors)


def test_a_changed_pod_is_parsed_again_and_other_schedulers_pods_are_left_alone():
    cluster = SimulatedCluster()
    [key] = cluster.create_pods(TEMPLATE, 1)
    other = copy.deepcopy(TEMPLATE)
    other["spec"]["schedulerName"] = "someone-else"
    cluster.create_pods(other, 2)
    assert [p.key for p in cluster.take_new_pods()[0]] == [key]
    changed = copy.deepcopy(cluster.pod_manifests[key])
    changed["metadata"]["labels"] = {"app": "db"}
    cluster.update_pod(key, changed)
    pods, _ = cluster.take_new_pods()
    assert [dict(p.spec.labels) for p in pods] == [{"app": "db"}]


def test_without_history_a_deleted_pod_leaves_nothing_and_bound_once_still_holds():
    cluster = SimulatedCluster(keep_history=False)
    cluster.create_nodes({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4"}}}, 1)
    [key] = cluster.create_pods({**TEMPLATE, "metadata": {"name": "p"}}, 1)
    assert cluster.bind([Binding(key, "n")]) == [None]
    assert cluster.bind([Binding(key, "n")]) == [f"pod {key} is already assigned to node n"]
    assert cluster.bind_log == []
    cluster.delete_pods([key])
    assert cluster.bindings == {} and cluster.bind([Binding(key, "n")]) == [
        f"pods {key!r} not found"
    ]
