"""Every scheduler_perf file of Kubernetes v1.37.2, unchanged, where it lives in the Go
module cache (`make kube` fetches it): each is read; the cases optimist cannot run
are refused alone, each for its reason; the `integration-test` workloads of the
others run on the simulated cluster, every pod bound."""

from __future__ import annotations

import random
from typing import Any

from benchmarks.cases import case_fields, case_file, case_ops, workload_objects
from benchmarks.cases.case_fields import MIGRATED_PLUGINS
from benchmarks.simulated.sim_bench import Plan, load_plan, run_bench
from cluster.volumes.storage_manifests import csi_node_from_manifest
from cluster.volumes.storage_objects import CSINode
from optimist.settings import Settings
from tests.upstream_modules import scheduler_perf, scheduler_perf_files

VERSION = "v1.37.2"
UNUSED = "not used by any op"

# (file, case) -> (opcode, why) of every case optimist cannot run; every workload of
# each is refused, every workload of every other case is not
REFUSED = {
    **{
        ("default_preemption", "PreemptionPodGroupDisruptionMode"): (
            "createPodGroups",
            case_fields.NO_WORKLOAD_API,
        ),
        ("event_handling", "EventHandlingPodUpdate"): ("updateAny", case_fields.NO_UPDATES),
        ("event_handling", "EventHandlingNodeUpdate"): ("updateAny", case_fields.NO_UPDATES),
        ("nodedeclaredfeatures", "NodeDeclaredFeaturesEnabled"): ("params", UNUSED),
        ("starvation", "StarvationPodGroup"): ("createPodGroups", case_fields.NO_WORKLOAD_API),
    },
    **{
        (f"podgroup/{folder}", case): ("createPodGroups", case_fields.NO_WORKLOAD_API)
        for folder, case in (
            ("basicscheduling", "BasicScheduling"),
            ("gangscheduling", "GangScheduling"),
            ("tas", "TopologyAwareScheduling"),
        )
    },
    **{
        ("workload_preemption", case): ("createPodGroups", case_fields.NO_WORKLOAD_API)
        for case in ("GangPreemptionBasic", "GangPreemptionPodGroups", "GangPreemptionAffinity")
    },
    **{
        (folder, case): ("createAny", case_fields.NO_DRA)
        for folder, cases in {
            "dra": (
                "PublishResourceSlices",
                "SchedulingWithResourceClaimTemplate",
                "SchedulingWithResourceClaim",
            ),
            "dra/compatibilitygroups": ("CompatibilityGroups",),
            "dra/consumablecapacity": ("ConsumableCapacity",),
            "dra/devicetaints": ("DeviceTaintToleration",),
            "dra/extendedresource": ("ExtendedResource",),
            "dra/extendedresource/scoring": ("ExtendedResourceScoring",),
            "dra/listattributes": ("SchedulingWithResourceClaimTemplateListAttributes",),
            "dra/partitionabledevices": ("Partitionable", "PartitionableBacktracking"),
            "dra/prioritizedlist": ("FirstAvailable",),
            "dra/workloadresourceclaims": (
                "SharedPodGroupResourceClaim",
                "SharedPodGroupResourceClaimTemplate",
            ),
        }.items()
        for case in cases
    },
}


def files() -> dict[str, list[case_file.CaseWorkload]]:
    return scheduler_perf_files(VERSION)


def test_every_file_is_read_and_only_the_cases_optimist_cannot_run_are_refused():
    read = files()
    assert len(read) == 23
    refused = {}
    for folder, runs in read.items():
        for run in runs:
            if (why := run.unsupported()) is not None:
                refused.setdefault((folder, run.case), set()).add(why.opcode)
                expected = REFUSED[(folder, run.case)]
                assert (why.opcode, expected[1] in why.reason) == (expected[0], True), why
            else:
                assert (folder, run.case) not in REFUSED, run.name
    assert {k: v.pop() for k, v in refused.items()} == {k: v[0] for k, v in REFUSED.items()}
    runnable = [r for runs in read.values() for r in runs if r.unsupported() is None]
    assert len(runnable) == 140


def test_the_integration_workloads_of_the_files_without_dra_run_on_the_simulated_cluster(
    redis_url, key_prefix, ray_session
):
    runs = tuple(
        r
        for folder, runs in files().items()
        if not folder.startswith("dra")
        for r in runs
        if "integration-test" in r.labels and r.unsupported() is None and "short" in r.labels
    )
    assert len(runs) >= 30
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=1)
    bench = run_bench(settings, Plan(runs, timeout_s=60))
    r = bench.report.model_dump()
    assert r["invariant_violations"] == []
    assert {c["name"]: c["error"] for c in r["cases"] if c["error"]} == {}
    assert all(c["pods_scheduled"] > 0 for c in r["cases"]), [
        (c["name"], c["pods_scheduled"], c["pods_pending"]) for c in r["cases"]
    ]


def test_a_folder_is_every_file_under_it_and_the_label_filter_picks_as_upstream():
    """`optimist bench <scheduler_perf> --label-filter performance`: every file of the
    release at once, as upstream's harness runs its benchmarks."""
    plan = load_plan(scheduler_perf(VERSION), label_filter="performance")
    picked = [r for runs in files().values() for r in runs if "performance" in r.labels]
    assert [r.name for r in plan.runs] == [r.name for r in picked]
    assert len([r for r in plan.runs if r.unsupported() is None]) == 69


def test_a_node_allocatable_strategy_s_csi_parts_make_each_node_s_csi_node():
    """SchedulingMigratedInTreePVs' nodes: 39 EBS volumes each, in the node's allocatable
    and its CSINode, which says the in-tree EBS plugin is migrated there."""
    (run,) = [r for r in files()["volumes"] if r.name == "SchedulingMigratedInTreePVs/5Nodes"]
    nodes = run.ops[0]
    assert isinstance(nodes, case_ops.CreateNodes) and nodes.allocatable is not None
    strategy = nodes.allocatable
    assert strategy.allocatable == {"attachable-volumes-csi-ebs.csi.aws.com": "39"}
    node = workload_objects.node_batches(nodes, random.Random(0), iter(range(9)))[0][0]
    assert node["status"]["allocatable"] == {
        **node["status"]["capacity"],
        "attachable-volumes-csi-ebs.csi.aws.com": "39",
    }
    made: dict[str, Any] | None = strategy.csi_node("node-1")
    assert made is not None
    # the annotation upstream's harness writes (which neither scheduler reads)
    assert made["metadata"]["annotations"] == {MIGRATED_PLUGINS: "kubernetes.io/aws-ebs"}
    csi = csi_node_from_manifest(made)
    assert csi == CSINode("node-1", (("ebs.csi.aws.com", 39),))
