"""`optimist bench --chaos`: faults injected at random while a run runs; the run ends
with the invariants holding, and the report counts every fault and its recovery."""

from __future__ import annotations

import pytest

from benchmarks import template
from optimist.bench import Workload, run_bench
from optimist.chaos import FAULTS, ChaosError, ChaosPlan
from optimist.config import Settings


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


def test_faults_the_platform_has_nothing_to_inject_into_are_refused():
    plan = ChaosPlan.parse("kill-binder,restart-redis", 1.0)
    with pytest.raises(ChaosError, match="--binders 2"):
        plan.check(binders=1, own_redis=True)
    with pytest.raises(ChaosError, match="own Redis"):
        plan.check(binders=2, own_redis=False)


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
    r = run.report
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
