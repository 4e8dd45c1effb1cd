"""The figures of a measured phase, computed from known times."""

import json
from pathlib import Path

import pytest

from benchmarks.report.bench_report import CaseReport, Rollbacks
from benchmarks.report.instruments import latency, throughput, window_samples
from benchmarks.simulated.pooled_figures import SUMMED, pooled

RESULTS = Path(__file__).parents[1] / "report" / "results"


def test_samples_count_every_second_and_fold_the_last_sliver():
    counts, rates = window_samples([0.1, 0.5, 1.2, 2.01, 2.02, 9.0], 0.0, 2.05)
    assert counts == [2, 1, 2]  # 9.0 is after the phase
    assert rates == [2.0, pytest.approx(3 / 1.05)]  # the last 0.05 s joins the second before
    assert window_samples([0.1, 0.2], 0.0, 0.5) == ([2], [4.0])


def test_throughput_averages_over_the_phase_and_has_percentiles():
    t = throughput(bound=30, duration=3.0, rates=[5.0, 10.0, 15.0])
    assert t["average"] == 10.0 and t["p50"] == 10.0 and t["p99"] > 14.8
    assert throughput(0, 3.0, [0.0, 0.0]) == {"average": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}


def test_latency_has_percentiles_and_a_histogram():
    lat = latency([0.0005, 0.003, 0.003, 50.0])
    assert lat["count"] == 4 and lat["max"] == 50.0
    assert sum(lat["histogram"]["counts"]) == 4
    assert lat["histogram"]["counts"][0] == 1 and lat["histogram"]["counts"][-1] == 1
    assert latency([]) == {"count": 0}


def test_idle_fraction_is_what_the_shard_did_not_spend_busy_clamped():
    from benchmarks.simulated.pooled_figures import idle_fraction

    assert idle_fraction(1.5, 6.0) == 0.75
    assert idle_fraction(7.0, 6.0) == 0.0  # work from before the phase counted
    assert idle_fraction(0.0, 0.0) is None  # no measured phase


def test_window_counters_are_differences_per_shard_too():
    from benchmarks.simulated.sim_runner import Counters

    before = Counters(redis_commands=100, shard_rollbacks=1, busy_s={0: 1.0})
    after = Counters(
        redis_commands=250, shard_rollbacks=3, commit_rollbacks=2, busy_s={0: 1.5, 1: 2.0}
    )
    diff = after - before
    assert (diff.redis_commands, diff.shard_rollbacks, diff.commit_rollbacks) == (150, 2, 2)
    assert diff.busy_s == {0: 0.5, 1: 2.0}


def a_workload() -> CaseReport:
    """A workload's report, from a result file, to change the figures of."""
    doc = json.loads((RESULTS / "two-workloads.json").read_text())
    [case, _] = doc["cases"]
    return CaseReport.model_validate(case)


def test_pooled_sums_redis_commands_rollbacks_and_shard_busy_time():
    base = a_workload()

    def case(pods, calls, shard, commit, busy, duration):
        return base.model_copy(
            update={
                **dict.fromkeys(SUMMED, 0),
                "pods_created": pods,
                "redis_commands": calls,
                "redis_round_trips": calls // 10,
                "binder_batches": [pods, 1],
                "first_decision_s": duration,
                "cpu_s": {"driver": pods / 10, "shards": 1.0, "redis": 0.5, "other": 0.0},
                "duration_s": duration,
                "rollbacks": Rollbacks(total=shard + commit, shard=shard, commit=commit),
                "shards": [
                    base.shards[0].model_copy(
                        update={
                            "id": 0,
                            "units": 1,
                            "pods": 1,
                            "busy_s": busy,
                            "decided_pods": pods,
                        }
                    )
                ],
                "unschedulable_reasons": {},
                "throughput_samples": [],
                "nodes": 1,
                "memory_peak_bytes": {"driver": 1},
                "invariant_violations": [],
                "name": f"case-{pods}",
                "warnings": [f"{pods} pods"],
            }
        )

    top = pooled([case(10, 300, 2, 1, 1.0, 2.0), case(30, 500, 0, 4, 2.0, 4.0)])
    assert top.warnings == ["case-10: 10 pods", "case-30: 30 pods"]
    assert top.redis_commands == 800 and top.redis_commands_per_pod == 20.0
    assert top.redis_round_trips == 80 and top.redis_round_trips_per_pod == 2.0
    assert top.binder_batches == [40, 2]
    assert top.cpu_s == {"driver": 4.0, "shards": 2.0, "redis": 1.0, "other": 0.0}
    assert top.cpu_us_per_pod["driver"] == 100_000
    assert top.rollbacks == Rollbacks(total=7, shard=2, commit=5)
    [shard] = top.shards
    assert shard.busy_s == 3.0 and shard.idle_fraction == 0.5
    assert shard.decided_pods == 40 and shard.decisions_per_busy_s == 40 / 3.0
