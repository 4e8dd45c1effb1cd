"""The platform's metrics: kube-scheduler's names, labels and buckets; what a real run
reports through them; the HTTP endpoints."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.cases import cases_file
from benchmarks.simulated.sim_bench import load_plan, run_bench
from cluster.histogram import exponential
from cluster.manifests import pod_from_manifest
from cluster.messages import Conflict, UnitOutcome
from cluster.node_partitions import node_partition
from cluster.quota import Quota, QuotaTree
from dispatcher.dispatcher import Dispatcher
from optimist.metrics.definitions import (
    AGE_BUCKETS,
    ATTEMPT_BUCKETS,
    ATTEMPTS_BUCKETS,
    SLI_BUCKETS,
    VICTIMS_BUCKETS,
    SchedulerMetrics,
)
from optimist.metrics.recorder import LoopMetrics, Ticker, queue_sample
from optimist.metrics.server import MetricsServer
from optimist.settings import Settings
from tests.dispatcher.test_dispatcher import Clock, fail, pod

# kube-scheduler v1.30's metrics optimist serves: type and labels
UPSTREAM = {
    "scheduler_schedule_attempts": ("counter", {"result", "profile"}),
    "scheduler_scheduling_attempt_duration_seconds": ("histogram", {"result", "profile"}),
    "scheduler_pod_scheduling_sli_duration_seconds": ("histogram", {"attempts"}),
    "scheduler_pod_scheduling_attempts": ("histogram", set()),
    "scheduler_queue_incoming_pods": ("counter", {"queue", "event"}),
    "scheduler_preemption_attempts": ("counter", set()),
    "scheduler_preemption_victims": ("histogram", set()),
    "scheduler_pending_pods": ("gauge", {"queue"}),
    "scheduler_unschedulable_pods": ("gauge", {"plugin", "profile"}),
    "scheduler_framework_extension_point_duration_seconds": (
        "histogram",
        {"extension_point", "status", "profile"},
    ),
    "scheduler_plugin_execution_duration_seconds": (
        "histogram",
        {"plugin", "extension_point", "status"},
    ),
}


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_buckets_are_kube_schedulers():
    assert ATTEMPT_BUCKETS[0] == 0.001 and len(ATTEMPT_BUCKETS) == 15
    assert ATTEMPT_BUCKETS[-1] == pytest.approx(16.384)
    assert exponential(0.01, 2, 20) == SLI_BUCKETS
    assert ATTEMPTS_BUCKETS == [1, 2, 4, 8, 16]
    assert VICTIMS_BUCKETS == [1, 2, 4, 8, 16, 32, 64]
    assert AGE_BUCKETS[0] == 0.01


@pytest.fixture(scope="module")
def served(ray_session, redis_url):
    """A real run of PreemptionBasic/tiny with its metrics served, and the scrape after."""
    metrics = SchedulerMetrics()
    plan = load_plan(cases_file(), case="PreemptionBasic", workload="tiny")
    settings = Settings(shards=2, redis_url=redis_url, key_prefix="metrics:", seed=3)
    with MetricsServer(metrics, "127.0.0.1:0") as server:
        run = run_bench(settings, plan, metrics=LoopMetrics(metrics))
        url = f"http://{server.address}/metrics"
        text = urllib.request.urlopen(url).read().decode()
        asked = "name[]=scheduler_pending_pods&name[]=scheduler_schedule_attempts_total"
        some = urllib.request.urlopen(f"{url}?{asked}").read().decode()
    return run.report.model_dump(), families(text), families(some)


def test_every_upstream_metric_is_served_with_its_labels(served):
    _, found, _ = served
    for name, (kind, labels) in UPSTREAM.items():
        assert found[name].type == kind, name
        for sample in found[name].samples:
            assert labels <= set(sample.labels) <= labels | {"le"}, (name, sample)
    assert not any(name.endswith("_created") for name in found)


def test_a_scrape_that_asks_for_metrics_by_name_gets_those_alone(served):
    _, found, some = served
    assert set(some) == {"scheduler_pending_pods", "scheduler_schedule_attempts"}
    for name in some:
        assert some[name].samples == found[name].samples


def value(found, name, suffix="", **labels):
    return sum(
        s.value
        for s in found[name].samples
        if s.name == name + suffix and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_the_counts_agree_with_the_run(served):
    report, found, _ = served
    scheduled = report["pods_scheduled"] + 80  # the run's 80 fill pods were scheduled too
    assert value(found, "scheduler_schedule_attempts", "_total", result="scheduled") == scheduled
    # each measured pod failed once, then preempted
    assert value(found, "scheduler_schedule_attempts", "_total", result="unschedulable") == 20
    assert value(found, "scheduler_preemption_attempts", "_total") == 20
    assert value(found, "scheduler_preemption_victims", "_sum") == 20
    assert value(found, "scheduler_pod_scheduling_attempts", "_sum") == scheduled + 20
    sli = value(found, "scheduler_pod_scheduling_sli_duration_seconds", "_count")
    assert sli == scheduled
    assert value(found, "optimist_pod_stage_duration_seconds", "_count") == 4 * scheduled
    assert value(found, "scheduler_queue_incoming_pods", "_total", event="PodAdd") == 100
    assert {s.labels["where"] for s in found["optimist_unit_rollbacks"].samples} == {
        "shard",
        "commit",
    }
    # every pod a shard decided went through Filter once; the 20 that fit nowhere failed it
    point = "scheduler_framework_extension_point_duration_seconds"
    decided = value(found, "optimist_shard_pods", "_total")
    # every batch began with a sync; a shard's first read every node
    syncs = value(found, "optimist_shard_batch_duration_seconds", "_count", phase="sync")
    assert value(found, "optimist_shard_syncs", "_total") == syncs
    assert value(found, "optimist_shard_syncs", "_total", source="nodes") >= 1
    assert value(found, point, "_count", extension_point="Filter") == decided
    assert value(found, point, "_count", extension_point="Filter", status="Unschedulable") == 20
    assert value(found, point, "_count", extension_point="Bind") == scheduled
    # each of them found victims in its dry run
    assert value(found, point, "_count", extension_point="PostFilter", status="Success") == 20
    sampled = value(
        found,
        "scheduler_plugin_execution_duration_seconds",
        "_count",
        plugin="NodeResourcesFit",
        extension_point="Filter",
    )
    assert sampled > 0
    # the run is over: nothing waits
    assert value(found, "scheduler_pending_pods") == 0
    assert value(found, "optimist_pending_pod_age_seconds", "_gcount") == 0


def test_health_and_readiness():
    ready = [True]
    with MetricsServer(SchedulerMetrics(), "127.0.0.1:0", ready=lambda: ready[0]) as server:
        base = f"http://{server.address}"
        assert urllib.request.urlopen(base + "/healthz").read() == b"ok"
        assert urllib.request.urlopen(base + "/readyz").status == 200
        ready[0] = False
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "/readyz")
        assert err.value.code == 503
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "/nothing")
        assert err.value.code == 404


def test_pending_pods_and_their_ages_come_from_the_dispatchers_books():
    clock = Clock()
    quotas = QuotaTree([Quota("a", max={"cpu": 1000}, namespaces=("default",))])
    d = Dispatcher(clock=clock, quotas=quotas)
    for name in ("p1", "p2", "p3"):
        d.add(pod(name))
    batch = d.next_batch(0, 10)  # p1 goes, p2 and p3 wait for quota
    clock.now += 3.0
    sample = queue_sample(d)  # in flight, p1 is in no queue
    assert sample.pending == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 2}
    assert sample.age_sums == {"gated": 6.0}
    assert sample.quotas["a"]["cpu"] == (1000, 1000)
    fail(d, batch)  # p1 found no node: its quota is free again, and the others try
    sample = queue_sample(d)
    assert sample.pending == {"active": 2, "backoff": 0, "unschedulable": 1, "gated": 0}
    assert sample.unschedulable == {("NodeResourcesFit", "default-scheduler"): 1}
    assert sample.ages["unschedulable"][-1] == 0 and sum(sample.ages["active"]) == 2


def test_a_gang_is_timed_once_from_complete_to_bound(ray_session, redis_url):
    metrics = SchedulerMetrics()
    plan = load_plan(cases_file(), case="Gang", workload="tiny")
    settings = Settings(shards=2, redis_url=redis_url, key_prefix="metrics-gang:", seed=3)
    run = run_bench(settings, plan, metrics=LoopMetrics(metrics))
    found = families(generate_latest(metrics.registry).decode())
    cluster = run.cluster
    bound = [pod_from_manifest(cluster.pod_manifests[k]) for k in cluster.bindings]
    gangs_bound = len({p.group for p in bound if p.group})
    assert value(found, "optimist_gang_bound_duration_seconds", "_count") == gangs_bound > 0


def test_a_costly_sample_is_taken_less_often():
    ticker = Ticker(every_s=1.0, share=0.05)
    assert ticker.due()
    ticker.took(time.monotonic() - 0.1)  # a sample that took 0.1 s: the next in 2 s
    assert not ticker.due()
    assert ticker._next - time.monotonic() == pytest.approx(2.0, abs=0.05)


def test_conflicts_are_counted_by_kind_and_by_the_partition_of_their_node():
    metrics = SchedulerMetrics()
    detail = "pod ns/p: node n-1: insufficient cpu (free 1, requested 2)"
    outcomes = [
        UnitOutcome.refused("ns/u1", Conflict.RESOURCES, detail),
        UnitOutcome.refused("ns/u2", Conflict.BINDER_FAILED, "its binder actor failed"),
    ]
    LoopMetrics(metrics, node_partitions=4).batch_finished(1, outcomes, [], 0.0, 0.0, 0.0)
    LoopMetrics(metrics).batch_finished(2, outcomes[:1], [], 0.0, 0.0, 0.0)
    found = families(generate_latest(metrics.registry).decode())
    by = {
        (s.labels["reason"], s.labels["partition"]): s.value
        for s in found["optimist_conflicts"].samples
        if s.name.endswith("_total")
    }
    assert by == {
        ("resources", str(node_partition("n-1", 4))): 1,
        ("binder-failed", ""): 1,
        ("resources", "all"): 1,
    }


def test_label_sets_known_in_advance_are_served_before_their_first_event(served):
    """rate() and alerts over a counter with no sample read nothing, not 0: every kind
    of conflict is there, at 0 where none came."""
    _, found, _ = served
    conflicts = {
        (s.labels["reason"], s.labels["partition"]): s.value
        for s in found["optimist_conflicts"].samples
        if s.name == "optimist_conflicts_total"
    }
    assert {kind for kind, _ in conflicts} == set(Conflict)
    assert {partition for _, partition in conflicts} >= {"all"}
    results = {
        (s.labels["result"], s.labels["profile"])
        for s in found["scheduler_schedule_attempts"].samples
    }
    assert {("scheduled", "default-scheduler"), ("unschedulable", "default-scheduler")} <= results
    sources = {
        (s.labels["shard"], s.labels["source"]) for s in found["optimist_shard_syncs"].samples
    }
    assert sources >= {(shard, source) for shard in "01" for source in ("commit_log", "nodes")}
