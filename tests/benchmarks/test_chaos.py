"""`optimist bench --chaos`: faults injected at random while a run runs; the run ends
with the invariants holding, and the report counts every fault and its recovery."""

from __future__ import annotations

import pytest

from benchmarks.cases import template
from benchmarks.chaos import (
    DURATION_S,
    FAULTS,
    FAULTS_PER_KIND,
    KILL_SHARD,
    LIVING_FAULTS,
    PLANE_FAULTS,
    ChaosError,
    ChaosPlan,
)
from benchmarks.simulated import platform_faults
from benchmarks.simulated.sim_bench import Workload, run_bench
from optimist.settings import Settings


@pytest.mark.parametrize(
    ("text", "interval", "problem"),
    [
        ("kill-shard,unplug-rack", 1.0, "unplug-rack is not one of"),
        (" , ", 1.0, "no fault is not one of"),
        ("kill-shard", 0.0, "must be positive"),
    ],
)
def test_a_plan_names_known_faults_and_a_positive_interval(text, interval, problem):
    with pytest.raises(ChaosError, match=problem):
        ChaosPlan.parse(text, interval)
    with pytest.raises(ChaosError, match="at least 1"):
        ChaosPlan.parse("kill-shard", 1.0, limit=0)
    with pytest.raises(ChaosError, match="--chaos-duration 0"):
        ChaosPlan.parse("kill-shard", duration_s=0)


def test_a_plan_is_bounded_by_default():
    plan = ChaosPlan.parse("kill-shard,restart-redis")
    assert plan.interval_s is None and plan.bound == 2 * FAULTS_PER_KIND
    assert plan.duration_s == DURATION_S
    assert ChaosPlan.parse("kill-shard", 0.5, limit=9).bound == 9


def test_faults_the_platform_has_nothing_to_inject_into_are_refused():
    plan = ChaosPlan.parse("kill-binder,restart-redis", 1.0)
    with pytest.raises(ChaosError, match="--binders 2"):
        platform_faults.check(plan, binders=1, own_redis=True)
    with pytest.raises(ChaosError, match="own Redis"):
        platform_faults.check(plan, binders=2, own_redis=False)


def test_all_is_every_kind_of_the_cluster_kind_and_no_other():
    assert ChaosPlan.parse("all").faults == FAULTS
    assert ChaosPlan.parse("all", kinds=PLANE_FAULTS).faults == PLANE_FAULTS
    assert ChaosPlan.parse("all", kinds=LIVING_FAULTS).faults == (*PLANE_FAULTS, "stop-kwok")
    with pytest.raises(ChaosError, match="stop-kwok is not one of"):
        ChaosPlan.parse("kill-apiserver,stop-kwok", kinds=PLANE_FAULTS)
    with pytest.raises(ChaosError, match="kill-binder is not one of"):
        ChaosPlan.parse("kill-binder", kinds=PLANE_FAULTS)


def test_a_plan_narrowed_to_a_scheduler_s_kinds_keeps_its_bounds():
    plan = ChaosPlan.parse("kill-apiserver,kill-shard", 2.0, limit=5, kinds=PLANE_FAULTS)
    narrowed = plan.only(("kill-apiserver", "restart-etcd"))
    assert narrowed == ChaosPlan(("kill-apiserver",), 2.0, 5, DURATION_S)
    assert plan.only(("restart-etcd",)) is None
    assert ChaosPlan.parse(KILL_SHARD).only(PLANE_FAULTS) == ChaosPlan((KILL_SHARD,))


@pytest.mark.usefixtures("ray_session")
def test_a_run_under_every_fault_loses_nothing_and_counts_them():
    settings = Settings(shards=2, binders=2, batch_pods=64, seed=5)  # its own Redis, to kill
    # each kind twice, then none: often enough that all six come before a quick run ends
    plan = ChaosPlan(FAULTS, interval_s=0.1, limit=6)
    run = run_bench(
        settings,
        Workload(400, 6000, template("node-default.yaml"), template("pod-default.yaml")),
        chaos=plan,
    )
    r = run.report.model_dump()
    assert r["invariant_violations"] == [] and r["errors"] == []
    assert r["pods_scheduled"] == 6000
    assert len(run.cluster.bindings) == len(run.cluster.bind_log) == 6000  # each bound once
    injected = r["faults_injected"]
    assert injected == {kind: 2 for kind in FAULTS}, injected  # the kinds take turns
    recovery = r["chaos"]["recovery_s"]
    for kind in FAULTS:
        assert recovery[kind]["count"] == injected[kind]
    assert r["store_rebuilds_s"] and r["store_outages"] >= injected["restart-redis"]
    assert all(f["recovered_s"] is None or f["recovered_s"] >= 0 for f in r["chaos"]["faults"])


def _run(plan: ChaosPlan, pods: int, nodes: int = 400) -> dict:
    settings = Settings(shards=2, binders=2, batch_pods=64, seed=5)  # its own Redis, to kill
    run = run_bench(
        settings,
        Workload(nodes, pods, template("node-default.yaml"), template("pod-default.yaml")),
        chaos=plan,
    )
    r = run.report.model_dump()
    assert r["invariant_violations"] == [] and r["errors"] == []
    assert len(run.cluster.bindings) == len(run.cluster.bind_log)  # each bound once
    return r


@pytest.mark.usefixtures("ray_session")
def test_a_run_that_cannot_place_every_pod_settles_once_the_faults_stop():
    """100 nodes hold 4,000 of the 6,000 pods: every Redis restart wakes the 2,000
    unschedulable pods, and faults every 50 ms kept such a run going for ever."""
    r = _run(ChaosPlan.parse(",".join(FAULTS), interval_s=0.05), pods=6000, nodes=100)
    assert r["pods_scheduled"] == 4000 and r["pods_unschedulable"] == 2000
    assert r["pods_pending"] == 0
    chaos = r["chaos"]
    assert chaos["stopped"] == "limit" and sum(chaos["faults_injected"].values()) == 6
    assert chaos["retries"] > 0  # at least the pods a rebuilt store woke


@pytest.mark.usefixtures("ray_session")
def test_the_default_plan_meets_every_kind_in_a_short_run():
    """With no interval the faults follow the run's progress: a run of a few seconds
    gets each kind, twice, where a fault every 2 s had given it one."""
    r = _run(ChaosPlan.parse(",".join(FAULTS)), pods=6000)
    assert r["pods_scheduled"] == 6000
    assert r["chaos"]["faults_injected"] == {kind: FAULTS_PER_KIND for kind in FAULTS}
    assert r["chaos"]["never_injected"] == []
    assert not [w for w in r["warnings"] if w.startswith("chaos")]


@pytest.mark.usefixtures("ray_session")
def test_a_kind_asked_for_and_never_injected_is_said():
    r = _run(ChaosPlan(FAULTS, interval_s=3600.0), pods=500)
    assert r["chaos"]["faults_injected"] == {} and r["chaos"]["never_injected"] == list(FAULTS)
    said = [w for w in r["warnings"] if w.startswith("chaos")]
    assert len(said) == len(FAULTS) and all("never injected" in w for w in said)
