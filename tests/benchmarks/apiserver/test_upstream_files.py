"""Upstream's own scheduler_perf files (from the Go module cache `make kube` fills),
unchanged and where they live: v1.30.4's workloads labelled `fast` on the simulated
cluster, the newest release's short integration workloads through a real API server;
the cases optimist cannot run (DRA) fail alone, saying so, and every other
ends with its pods bound and the invariants holding."""

from __future__ import annotations

from pathlib import Path

import pytest
import ray

from benchmarks.apiserver.api_bench import ApiBench, run_apiserver_bench
from benchmarks.cases import case_file, template
from benchmarks.controlplane.releases import NEWEST, PINNED
from benchmarks.report.api_report import ApiRunReport
from benchmarks.simulated.sim_bench import Plan, run_bench
from optimist.settings import Settings
from tests.upstream_modules import scheduler_perf, scheduler_perf_files

pytestmark = pytest.mark.usefixtures("ray_session")


def upstream_file() -> Path:
    """scheduler_perf's performance-config.yaml in the module cache, or a skip."""
    return scheduler_perf(PINNED, "config/performance-config.yaml")


CANNOT = "optimist does not model dynamic resource"
CANNOT_RUN = {
    "SchedulingWithResourceClaimTemplate",
    "SchedulingWithResourceClaimTemplateStructured",
}


# the newest release's integration workloads run through the API server in `make test`:
# and, one after another on the same server, pods of the same names made again
# (Unschedulable's two workloads) and pods a finalizer keeps (DeletedPodsWithFinalizers)
REPRESENTATIVE = {
    "SchedulingBasic",
    "SchedulingPodAntiAffinity",
    "TopologySpreading",
    "SchedulingInTreePVs",
    "SchedulingCSIPVs",
    "Unschedulable",
    "SchedulingDeletedPodsWithFinalizers",
    "SchedulingWithResourceClaim",
}
# the v1.30 workloads run on the simulated cluster (the newest release's files, which
# have every other case of these, run there in full: test_upstream_v137)
SIMULATED = {
    "SchedulingBasic",
    "SchedulingPodAntiAffinity",
    "TopologySpreading",
    "PreemptionBasic",
    "Unschedulable",
    "SchedulingWithMixedChurn",
    "SchedulingMigratedInTreePVs",
}


def test_every_fast_workload_is_read_and_a_representative_set_runs(redis_url, key_prefix):
    """Every `fast` workload of v1.30's file is read; those of the cases optimist cannot
    run are refused alone, and a representative set of the others (`SIMULATED`) binds
    every pod on the simulated cluster."""
    fast = [
        r
        for r in case_file.load(upstream_file(), template("node-default.yaml"))
        if "fast" in r.labels
    ]
    assert len(fast) >= 20
    refused = {r.case for r in fast if r.unsupported() is not None}
    assert refused == CANNOT_RUN
    runs = [r for r in fast if r.case in SIMULATED | CANNOT_RUN]
    assert {r.case for r in runs} == SIMULATED | CANNOT_RUN
    # their smallest clusters: most of the time at 5,000 nodes goes to making them
    runs = [r for r in runs if r.params.get("initNodes", 0) < 5000]
    assert {r.case for r in runs} == SIMULATED | CANNOT_RUN
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=1)
    bench = run_bench(settings, Plan(tuple(runs), timeout_s=120))
    r = bench.report.model_dump()
    assert r["invariant_violations"] == []
    failed = {c["name"]: c["error"] for c in r["cases"] if c["error"]}
    assert all(CANNOT in error for error in failed.values()), failed
    assert {name.split("/")[0] for name in failed} == CANNOT_RUN
    ran = [c for c in r["cases"] if not c["error"]]
    assert all(c["pods_pending"] == 0 and c["pods_scheduled"] > 0 for c in ran), [
        (c["name"], c["pods_scheduled"], c["pods_pending"]) for c in ran
    ]


def test_the_newest_release_s_integration_workloads_run_through_the_api_server(
    perf_control_plane,
):
    """A representative set of the `short` integration workloads of the newest release's
    files (5 nodes each, as upstream runs them in its own integration tests): plain
    pods, inter-pod anti-affinity, topology spreading, pods with volumes and claims
    (in-tree, and CSI on nodes whose CSINodes set attach limits), unschedulable pods
    made by churn, pods deleted while a finalizer keeps them, and a case optimist cannot
    run (DRA). Unchanged, through a real API server started as upstream's harness
    starts one, scheduled by `optimist run` in a process of its own (one for all of
    them, each workload removing what it made before the next): the case it cannot run
    fails alone, saying why, every other binds every pod, and the invariants hold on
    what the server holds. v1.30's file runs on the simulated cluster above; `optimist
    bench --cluster apiserver` takes the rest of either."""
    runs = tuple(
        r
        for read in scheduler_perf_files(NEWEST).values()
        for r in read
        if {"integration-test", "short"} <= set(r.labels) and r.case in REPRESENTATIVE
    )
    assert {r.case for r in runs} == REPRESENTATIVE
    bench = ApiBench(
        ("optimist",),
        shards=1,
        kubeconfig=perf_control_plane.admin_kubeconfig,
        timeout_s=60,
        ceiling_pods=0,  # not measured: the figures are not what this test reads
        ray_address=ray.get_runtime_context().gcs_address,  # not a Ray of its own
    )
    r = run_apiserver_bench(bench, Plan(runs), lambda label: lambda done, total: None)
    failed = {c.name: c.error for c in r.runs if c.error}
    assert r.invariant_violations == [], (r.invariant_violations, failed)
    assert {name.split("/")[0] for name in failed} == {"SchedulingWithResourceClaim"}, failed
    assert all(CANNOT in error for error in failed.values()), failed
    ran = [c for c in r.runs if isinstance(c, ApiRunReport) and not c.error]
    assert all(c.pods_scheduled == c.pods_created > 0 for c in ran), [
        (c.name, c.pods_scheduled, c.pods_created) for c in ran
    ]
