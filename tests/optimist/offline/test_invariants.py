"""The checker, one invariant at a time: each check names the violation of a state made
to break it, and a clean state passes them all. Pods that ended hold no room, and no
reservation."""

from cluster.cluster_adapter import Binding
from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.objects import POD_GROUP_LABEL, Pod, PodGroup
from cluster.volumes.index import CLAIMS, CSI_NODES, VOLUMES, VolumeIndex
from optimist.offline.invariants import (
    attach_limits_hold,
    bound_once,
    check_invariants,
    exclusive_claims_hold,
    gangs_whole,
    kubelet_rejections,
    no_over_commit,
    nothing_lost,
    recount,
    store_agrees,
    volumes_hold,
)
from optimist.offline.simulator import SimulatedCluster


def cluster_with(phases: dict[str, str], port: int | None = None) -> SimulatedCluster:
    """A 4-CPU node with a 2-CPU pod bound to it for each entry: name -> its phase (with
    `port`, each pod holds that host port)."""
    cluster = SimulatedCluster(frozenset({"optimist"}))
    node = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "pods": "9"}}}
    cluster.nodes["n"] = node_from_manifest(node)
    for name, phase in phases.items():
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}
        if port is not None:
            container["ports"] = [{"containerPort": port, "hostPort": port}]
        cluster.pod_manifests[f"default/{name}"] = {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "optimist", "nodeName": "n", "containers": [container]},
            "status": {"phase": phase},
        }
        cluster.bindings[f"default/{name}"] = "n"
        cluster.bind_log.append(Binding(f"default/{name}", "n"))
    return cluster


def test_a_clean_state_passes_every_check():
    clean = cluster_with({"a": "Running", "b": "Running"})
    counted = recount(clean)
    assert bound_once(clean) == []
    assert no_over_commit(clean, counted) == []
    assert gangs_whole(clean, counted) == []
    assert nothing_lost(clean, []) == []
    assert check_invariants(clean, []) == []


def test_bound_once_names_a_pod_bound_twice():
    twice = cluster_with({"a": "Running"})
    twice.bind_log.append(Binding("default/a", "n"))
    assert bound_once(twice) == ["pod default/a was bound 2 times"]


def test_no_over_commit_names_the_resource_and_the_port():
    crowded = cluster_with({"a": "Running", "b": "Running", "c": "Running"}, port=80)
    assert no_over_commit(crowded, recount(crowded)) == [
        "node n: pods default/a and default/b both hold host port TCP/80",
        "node n: pods default/a and default/c both hold host port TCP/80",
        "node n: pods default/b and default/c both hold host port TCP/80",
        "node n is over-committed on cpu: 6000 requested > 4000 allocatable",
    ]


def test_no_over_commit_names_a_pod_on_an_unknown_node():
    lost = cluster_with({"a": "Running"})
    lost.bindings["default/a"] = "gone"
    assert no_over_commit(lost, recount(lost)) == ["pod default/a is bound to unknown node gone"]


def test_gangs_whole_names_a_gang_bound_short_of_min_member():
    short = cluster_with({"a": "Running"})
    short.pod_manifests["default/a"]["metadata"]["labels"] = {POD_GROUP_LABEL: "g"}
    short.pod_groups["default/g"] = PodGroup("default", "g", 2)
    assert gangs_whole(short, recount(short)) == [
        "PodGroup default/g has 1 pods bound, fewer than minMember 2"
    ]


def test_a_gang_placed_whole_stays_whole_when_its_finished_pods_are_deleted():
    gang = cluster_with({"a": "Succeeded", "b": "Succeeded"})
    for key in ("default/a", "default/b"):
        gang.pod_manifests[key]["metadata"]["labels"] = {POD_GROUP_LABEL: "g"}
    gang.pod_groups["default/g"] = PodGroup("default", "g", 2)
    gang.delete_pods(["default/a"])
    assert gang.departed_members == {"default/g": 1}
    assert gangs_whole(gang, recount(gang)) == []


def test_nothing_lost_names_a_pod_neither_bound_nor_reported_and_one_both():
    cluster = cluster_with({"a": "Running"})
    cluster.pod_manifests["default/b"] = {
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"schedulerName": "optimist", "containers": []},
    }
    assert nothing_lost(cluster, []) == [
        "pod default/b is neither bound nor reported unschedulable"
    ]
    assert nothing_lost(cluster, ["default/a", "default/b"]) == [
        "pod default/a is bound but also reported unschedulable"
    ]
    # a pod being deleted, that a finalizer keeps, is on its way out: never placed
    cluster.pod_manifests["default/b"]["metadata"]["deletionTimestamp"] = "2026-12-07T00:00:00Z"
    assert nothing_lost(cluster, []) == []


def test_store_agrees_names_a_pod_bound_behind_its_back(store):
    cluster = cluster_with({"a": "Running", "b": "Running"})
    store.rebuild(cluster.nodes.values(), {}, [_pod(cluster, "default/a")])
    missing, usage = store_agrees(cluster, store, recount(cluster))
    assert missing == "pod default/b is bound but holds no reservation in the store"
    assert usage.startswith("node n: store usage {'cpu': 2000, 'pods': 1, ")
    store.rebuild(cluster.nodes.values(), {}, [_pod(cluster, k) for k in cluster.bindings])
    assert store_agrees(cluster, store, recount(cluster)) == []


def _pod(cluster: SimulatedCluster, key: str) -> Pod:
    """The bound pod as the store records it: its manifest, on its node."""
    return pod_from_manifest(cluster.pod_manifests[key])


def test_a_pod_that_ended_holds_no_room_on_its_node():
    ended = cluster_with({"a": "Succeeded", "b": "Failed", "c": "Running", "d": "Running"})
    assert check_invariants(ended, []) == []


def test_pods_that_run_are_all_counted():
    running = cluster_with({"a": "Running", "b": "Pending", "c": "Running"})
    assert check_invariants(running, []) == [
        "node n is over-committed on cpu: 6000 requested > 4000 allocatable"
    ]


def test_volumes_hold_names_a_pod_bound_before_its_claim_and_a_volume_claimed_twice():
    cluster = cluster_with({"a": "Running", "b": "Running"})
    cluster.nodes["n"].labels["kubernetes.io/hostname"] = "n"
    for pod, claim in (("a", "ca"), ("b", "cb")):
        cluster.pod_manifests[f"default/{pod}"]["spec"]["volumes"] = [
            {"name": "data", "persistentVolumeClaim": {"claimName": claim}}
        ]
    index = VolumeIndex()
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                  "values": ["n"]}]}  # fmt: skip
    affinity = {"required": {"nodeSelectorTerms": [term]}}
    index.apply(VOLUMES, {"metadata": {"name": "pv"}, "spec": {"nodeAffinity": affinity}})
    bound = {"pv.kubernetes.io/bind-completed": "yes"}
    index.apply(CLAIMS, {"metadata": {"name": "ca", "namespace": "default", "annotations": bound},
                         "spec": {"volumeName": "pv"}})  # fmt: skip
    assert volumes_hold(cluster, recount(cluster), index) == [
        "pod default/b is bound, its claim cb is not"
    ]
    index.apply(CLAIMS, {"metadata": {"name": "cb", "namespace": "default", "annotations": bound},
                         "spec": {"volumeName": "pv"}})  # fmt: skip
    assert volumes_hold(cluster, recount(cluster), index) == [
        "volume pv is claimed by default/ca, default/cb"
    ]
    cluster.nodes["n"].labels["kubernetes.io/hostname"] = "elsewhere"
    assert "pod default/a is on n, which its volume pv does not reach" in volumes_hold(
        cluster, recount(cluster), index
    )


def test_attach_limits_hold_names_a_node_with_more_csi_volumes_than_its_limit():
    cluster = cluster_with({"a": "Running", "b": "Running", "c": "Succeeded"})
    for pod in "abc":
        cluster.pod_manifests[f"default/{pod}"]["spec"]["volumes"] = [
            {"name": "data", "persistentVolumeClaim": {"claimName": f"c{pod}"}}
        ]
    index = VolumeIndex()
    bound = {"pv.kubernetes.io/bind-completed": "yes"}
    driver = {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "n", "allocatable": {"count": 1}}]}
    index.apply(CSI_NODES, {"metadata": {"name": "n"}, "spec": driver})
    for pod, handle in (("a", "h1"), ("b", "h1"), ("c", "h2")):  # a and b share one volume
        csi = {"driver": "ebs.csi.aws.com", "volumeHandle": handle}
        index.apply(VOLUMES, {"metadata": {"name": f"pv{pod}"}, "spec": {"csi": csi}})
        index.apply(CLAIMS, {"metadata": {"name": f"c{pod}", "namespace": "default",
                                          "annotations": bound},
                             "spec": {"volumeName": f"pv{pod}"}})  # fmt: skip
    # one volume for the pods that run (c has ended): within the limit
    assert attach_limits_hold(cluster, recount(cluster), index) == []
    cluster.pod_manifests["default/c"]["status"]["phase"] = "Running"
    assert attach_limits_hold(cluster, recount(cluster), index) == [
        "node n has 2 volumes of attachable-volumes-csi-ebs.csi.aws.com attached, over its limit 1"
    ]


def test_exclusive_claims_hold_names_a_read_write_once_pod_claim_two_pods_use():
    cluster = cluster_with({"a": "Running", "b": "Running", "c": "Succeeded"})
    for pod in "abc":
        cluster.pod_manifests[f"default/{pod}"]["spec"]["volumes"] = [
            {"name": "data", "persistentVolumeClaim": {"claimName": "solo"}}
        ]
    index = VolumeIndex()
    claim = {"metadata": {"name": "solo", "namespace": "default"},
             "spec": {"accessModes": ["ReadWriteOnce"]}}  # fmt: skip
    index.apply(CLAIMS, claim)
    assert exclusive_claims_hold(cluster, recount(cluster), index) == []  # may be shared
    claim["spec"]["accessModes"] = ["ReadWriteOncePod"]
    index.apply(CLAIMS, claim)
    assert exclusive_claims_hold(cluster, recount(cluster), index) == [
        "ReadWriteOncePod claim default/solo is used by default/a, default/b"  # c has ended
    ]


def test_a_kubelet_turns_away_the_pods_bound_after_the_room_ran_out_and_no_sooner():
    """Three 2-CPU pods on a 4-CPU node: the one bound last is rejected, whatever its
    name; a pod that ended holds nothing, so one fewer is; the over-commit is measured,
    not a violation, where another scheduler shares the nodes."""
    cluster = cluster_with({"c": "Running", "a": "Running", "b": "Running"})
    assert kubelet_rejections(cluster) == {"n": ["default/b"]}
    cluster.bind_log.reverse()  # bound b, a, c: c last
    assert kubelet_rejections(cluster) == {"n": ["default/c"]}
    assert kubelet_rejections(cluster_with({"a": "Running", "b": "Failed", "c": "Running"})) == {}
    assert check_invariants(cluster, [], neighbours=True) == []
    assert check_invariants(cluster, []) == [
        "node n is over-committed on cpu: 6000 requested > 4000 allocatable"
    ]
