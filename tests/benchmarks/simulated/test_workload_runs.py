"""Every shipped case, at its tiny size, and the upstream-format fixture, on real Ray and Redis.

Each run ends with the invariant checker (run_bench fails a workload whose
checker finds anything); the tests check what each case is about as well.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.cases import case_file as pc
from benchmarks.cases import cases_file, template
from benchmarks.report import instruments
from benchmarks.simulated import sim_bench
from benchmarks.simulated.sim_bench import Plan, Workload, run_bench
from benchmarks.simulated.sim_runner import CREATE_CHUNK
from cluster.gpus import GPU_INDICES_ANNOTATION
from cluster.objects import POD_GROUP_LABEL
from optimist.loop import SchedulingLoop
from optimist.settings import Settings
from tests.benchmarks.simulated.test_fidelity import write_case

pytestmark = pytest.mark.usefixtures("ray_session")

FIXTURE = Path(__file__).parents[1] / "cases" / "performance-config.yaml"
TINY = [r for r in pc.load(cases_file(), template("node-default.yaml")) if r.workload == "tiny"]


def settings(redis_url: str, key_prefix: str) -> Settings:
    return Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, batch_pods=32, seed=1)


@pytest.mark.parametrize("run", TINY, ids=[r.case for r in TINY])
def test_every_shipped_case_runs_tiny_and_keeps_the_invariants(redis_url, key_prefix, run):
    bench = run_bench(settings(redis_url, key_prefix), Plan((run,), timeout_s=60))
    r = bench.report.model_dump()
    [case] = r["cases"]
    assert case["error"] is None and r["invariant_violations"] == [], case
    assert bench.ok
    created = case["pods_created"]
    assert created > 0
    assert created == case["pods_scheduled"] + case["pods_unschedulable"] + case["pods_pending"]
    assert sum(case["throughput_samples"]) == case["pods_scheduled"]
    latency = case["latency_s"]
    stages = ["created_to_queued", "queued_to_decided", "decided_to_committed"]
    for stage in ["created_to_bound", *stages, "committed_to_bound", "attempt_sent_to_committed"]:
        assert latency[stage]["count"] == case["pods_scheduled"], stage
    stage_sum = sum(latency[s]["mean"] for s in [*stages, "committed_to_bound"])
    assert stage_sum == pytest.approx(latency["created_to_bound"]["mean"])
    assert set(case["memory_peak_bytes"]) == {"driver", "shards", "redis"}
    assert all(v > 0 for v in case["memory_peak_bytes"].values())
    # every measured pod costs the store some commands: the shards' syncs, the commits
    assert case["redis_commands"] > 0
    assert 0 < case["redis_commands_per_pod"] == case["redis_commands"] / created < 1000
    # the calls made: far fewer than the commands, as scripts run many commands per call
    assert 0 < case["redis_round_trips"] < case["redis_commands"]
    # since this test process started, and before now
    assert 0 < case["first_decision_s"] < instruments.since_process_start(time.perf_counter())
    # every role worked for the measured pods, and the figures say how much per pod
    assert set(case["cpu_s"]) == {"driver", "shards", "redis", "other"}
    assert case["cpu_s"]["driver"] > 0 and case["cpu_s"]["redis"] > 0
    assert case["cpu_us_per_pod"]["driver"] == case["cpu_s"]["driver"] * 1e6 / created
    [shard] = case["shards"]
    assert shard["busy_s"] > 0 and 0 <= shard["idle_fraction"] <= 1
    assert shard["busy_s"] <= case["duration_s"] + 1  # the shard's own clock, results late
    rollbacks = case["rollbacks"]
    assert rollbacks["total"] == rollbacks["shard"] + rollbacks["commit"]
    assert rollbacks["commit"] == 0  # one shard: nobody else takes its room
    everything = case["all_pods"]
    if run.case == "Gang":
        assert case["pods_unschedulable"] > 0  # not every gang fits the 10% left
        assert rollbacks["shard"] > 0  # gangs that fit in part were undone in the shard
        bound = Counter(
            bench.cluster.pod_manifests[k]["metadata"]["labels"][POD_GROUP_LABEL]
            for k in bench.cluster.bindings
            if POD_GROUP_LABEL in bench.cluster.pod_manifests[k]["metadata"].get("labels", {})
        )
        assert set(bound.values()) <= {8, 16, 32}  # whole gangs, never a part
    elif run.case == "SchedulingWhileGated":
        assert everything["gated"] == 50 and case["pods_scheduled"] == created
        assert everything["unschedulable"] == 0  # gated pods are pending, not unschedulable
    elif run.case == "Unschedulable":
        assert everything["unschedulable"] == 20 and case["pods_scheduled"] == created
    elif run.case == "UnschedulableStorm":
        assert everything["unschedulable"] == 40 and case["pods_scheduled"] == created
        # the storm waits for an event that could give it room: one attempt each, and
        # the measured pods' binds (AssignedPodAdd) send none of it back
        queue = case["queue"]
        assert queue["waiting_pods"] == 40 and queue["attempts_per_waiting_pod"] == 1.0
        assert queue["events"].get("AssignedPodAdd", 0) > 0 and queue["moved_by_events"] == 0
    elif run.case == "GpuFragmentation":
        # 103% of the GPUs are asked for: some tasks cannot fit, and say why
        assert case["pods_scheduled"] + everything["unschedulable"] == created
        assert everything["unschedulable"] > 0
    else:
        assert case["pods_scheduled"] == created
    if run.case != "Gang":
        assert rollbacks["shard"] == 0  # single pods are never undone


def test_the_upstream_format_fixture_runs(redis_url, key_prefix):
    [run] = pc.select(pc.load(FIXTURE, template("node-default.yaml")), "Everything", None)
    bench = run_bench(settings(redis_url, key_prefix), Plan((run,), timeout_s=60))
    r, cluster = bench.report.model_dump(), bench.cluster
    assert r["errors"] == [] and r["invariant_violations"] == []
    assert r["pods_created"] == 12 + 2 * 3  # the measured namespace only
    assert r["pods_scheduled"] == 18
    assert r["upstream_threshold"] == {
        "pods_per_s": 5,
        "note": "published upstream threshold, other hardware",
    }
    assert r["all_pods"]["deleted"] == 10  # init-0's pods, paced
    assert not [k for k in cluster.pod_manifests if k.startswith("init-0/")]
    assert r["all_pods"]["created"] > 10 + 3 + 18  # churn's pods too
    important = [m for k, m in cluster.pod_manifests.items() if "/important-pod-" in k]
    assert len(important) == 12 and all(m["spec"]["priority"] == 1000 for m in important)
    groups = {k for k in cluster.pod_groups}
    assert groups == {"team-a/trio", "measured/group-0", "measured/group-1"}
    assert {f"measured/group-{g}-{j}" for g in (0, 1) for j in range(3)} <= set(cluster.bindings)
    assert sum(1 for k in cluster.bindings if k.startswith("team-a/trio-")) == 3
    # every node carries its name as hostname, as upstream's node preparer makes them,
    # but the two whose uniqueNodeLabelStrategy gave the key a value of its own
    named = [n for n in cluster.nodes.values() if n.labels["kubernetes.io/hostname"] == n.name]
    assert len(named) == len(cluster.nodes) - 2


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (
            "Volumes",
            "case Volumes/one: op 1 (createPods): optimist cannot run it: "
            "persistentVolumeClaimTemplatePath",
        ),
        (
            "DynamicResources",
            "case DynamicResources/one: op 1 (createAny): optimist cannot run "
            "it: templatePath: kind ResourceClaim",
        ),
    ],
)
def test_a_case_with_an_op_optimist_cannot_run_stops_naming_it(
    redis_url, key_prefix, case, expected
):
    runs = pc.select(pc.load(FIXTURE, template("node-default.yaml")), case, None)
    bench = run_bench(settings(redis_url, key_prefix), Plan(tuple(runs), timeout_s=30))
    assert not bench.ok
    assert bench.report.errors[0].startswith(expected)
    assert bench.report.figures.pods_created == 0 and len(bench.cluster.nodes) == 0


def test_gpu_fragmentation_places_with_its_own_profile_and_writes_gpus(redis_url, key_prefix):
    [run] = [r for r in TINY if r.case == "GpuFragmentation"]
    assert run.scheduler_config is not None and run.scheduler_config.name == "gpu-scheduler.yaml"
    bench = run_bench(settings(redis_url, key_prefix), Plan((run,), timeout_s=60))
    assert bench.ok and bench.report.invariant_violations == []
    cluster = bench.cluster
    gpu_pods = [
        key
        for key in cluster.bindings
        if any(
            "gpu" in name
            for c in cluster.pod_manifests[key]["spec"]["containers"]
            for name in c["resources"]["requests"]
        )
    ]
    assert gpu_pods and all(
        GPU_INDICES_ANNOTATION in cluster.pod_manifests[k]["metadata"]["annotations"]
        for k in gpu_pods
    )
    [case] = bench.report.model_dump()["cases"]
    assert case["quality"]["resources"]["nvidia.com/gpu"]["allocatable"] == 40


def test_pods_are_scheduled_while_an_op_is_still_creating_them(redis_url, key_prefix, monkeypatch):
    """As beside an API server: the loop turns between chunks of an op's pods, so shards
    are deciding before the last exist (the measured phase does not wait on creation)."""
    seen: list[tuple[int, bool]] = []  # after each feed: pods created so far, a batch out
    feed = SchedulingLoop.feed

    def feed_and_note(loop):
        feed(loop)
        seen.append((len(loop.cluster.pod_manifests), loop.busy()))

    monkeypatch.setattr(SchedulingLoop, "feed", feed_and_note)
    pods = 4 * CREATE_CHUNK
    workload = Workload(50, pods, template("node-default.yaml"), template("pod-default.yaml"))
    bench = run_bench(settings(redis_url, key_prefix), workload)
    assert bench.ok and bench.report.cases[0].pods_scheduled == pods
    assert [created for created, _ in seen[:3]] == [k * CREATE_CHUNK for k in (1, 2, 3)]
    assert all(out for _, out in seen[:3])


def test_workloads_in_a_row_share_the_shards_and_each_begins_knowing_nothing(
    redis_url, key_prefix, monkeypatch
):
    """The second workload runs on the first one's shard processes, started over: had
    a shard kept the first cluster's twenty nodes, it would offer them, and its pods
    would conflict at the store, which holds only the second's two. (A shard also
    starts over by itself on finding the store emptied; the platform tells it to, so
    that no workload begins on that path, which warns in every shard's log.)"""
    started = []

    class Counted(sim_bench.Platform):
        def __enter__(self):
            started.append(self)
            return super().__enter__()

    monkeypatch.setattr(sim_bench, "Platform", Counted)
    node, pod = template("node-default.yaml"), template("pod-default.yaml")
    first, second = Workload(20, 100, node, pod).case(), Workload(2, 10, node, pod).case()
    bench = run_bench(settings(redis_url, key_prefix), Plan((first, second), timeout_s=60))
    r = bench.report
    assert r.errors == [] and r.invariant_violations == []
    assert len(started) == 1
    assert [c.pods_scheduled for c in r.cases] == [100, 10]
    assert r.cases[1].conflicts == 0
    assert set(bench.clusters[second.name].bindings.values()) <= set(
        bench.clusters[second.name].nodes
    )


def test_create_any_makes_volume_objects_that_pods_then_follow(redis_url, key_prefix, tmp_path):
    """createAny of a StorageClass, a local volume pinned to one of two nodes and a claim
    of the class: the pod naming the claim goes to the volume's node (its claim waits
    for its first consumer; the simulated cluster has no PV controller to bind it)."""
    capacity = {"pods": "10", "cpu": "4", "memory": "8Gi"}
    named = {"name": "n-{{.Index}}", "labels": {"kubernetes.io/hostname": "n-{{.Index}}"}}
    node = {"kind": "Node", "metadata": named, "status": {"capacity": capacity}}
    local = {
        "kind": "StorageClass",
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    on_n1 = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n-1"]}
    affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [on_n1]}]}}
    claimed = {"accessModes": ["ReadWriteOnce"], "storageClassName": "local"}
    volume = {
        "kind": "PersistentVolume",
        "metadata": {"name": "disk"},
        "spec": {
            **claimed,
            "capacity": {"storage": "1Gi"},
            "local": {"path": "/mnt/disk"},
            "nodeAffinity": affinity,
        },
        "status": {"phase": "Available"},  # a PV controller's, where one runs
    }
    claim = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {**claimed, "resources": {"requests": {"storage": "1Gi"}}},
    }
    uses = {"name": "v", "persistentVolumeClaim": {"claimName": "data"}}
    pod = {
        "kind": "Pod",
        "metadata": {"generateName": "p-"},
        "spec": {"containers": [{"name": "c", "image": "x"}], "volumes": [uses]},
    }
    measured = {"podTemplatePath": "config/pod.yaml", "collectMetrics": True}
    path = write_case(
        tmp_path,
        [
            {"opcode": "createAny", "count": 2, "templatePath": "config/node.yaml"},
            {"opcode": "createAny", "templatePath": "config/local.yaml"},
            {"opcode": "createAny", "templatePath": "config/volume.yaml"},
            {"opcode": "createAny", "templatePath": "config/claim.yaml", "namespace": "ns"},
            {"opcode": "createPods", "count": 1, "namespace": "ns", **measured},
        ],
        {"node.yaml": node, "local.yaml": local, "volume.yaml": volume, "claim.yaml": claim}
        | {"pod.yaml": pod},
    )
    runs = pc.load(path, template("node-default.yaml"))
    bench = run_bench(settings(redis_url, key_prefix), Plan(tuple(runs), timeout_s=30))
    assert bench.ok, bench.report.errors
    assert list(bench.cluster.bindings.values()) == ["n-1"]


def test_pods_bound_at_creation_take_their_room_and_are_never_scheduled(
    redis_url, key_prefix, tmp_path
):
    """boundAtCreation: 12 one-CPU pods made bound, three to each 4-CPU node in turn; the
    four measured pods after them find one CPU left per node, one each."""
    node = {"kind": "Node", "metadata": {"generateName": "n-"}}
    node["status"] = {"capacity": {"pods": "10", "cpu": "4", "memory": "8Gi"}}
    one_cpu = {"resources": {"requests": {"cpu": "1"}}}
    pod = {
        "kind": "Pod",
        "metadata": {"generateName": "p-"},
        "spec": {"containers": [{"name": "c", "image": "x", **one_cpu}]},
    }
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 4, "nodeTemplatePath": "config/node.yaml"},
            {"opcode": "createPods", "count": 12, "podTemplatePath": "config/pod.yaml"}
            | {"boundAtCreation": True, "namespace": "running"},
            {"opcode": "createPods", "count": 4, "podTemplatePath": "config/pod.yaml"}
            | {"collectMetrics": True, "namespace": "new"},
        ],
        {"node.yaml": node, "pod.yaml": pod},
    )
    runs = pc.load(path, template("node-default.yaml"))
    bench = run_bench(settings(redis_url, key_prefix), Plan(tuple(runs), timeout_s=30))
    assert bench.ok, bench.report.errors
    bindings = bench.cluster.bindings
    running = Counter(n for key, n in bindings.items() if key.startswith("running/"))
    assert sorted(running.values()) == [3, 3, 3, 3]
    new = [n for key, n in bindings.items() if key.startswith("new/")]
    assert sorted(new) == sorted(running)  # one on each node: the room left
    assert not [b for b in bench.cluster.bind_log if b.pod.startswith("running/")]
    [case] = bench.report.cases
    assert case.pods_scheduled == 4
