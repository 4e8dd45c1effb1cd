"""The day file and the plan drawn from it, and the rule of no pod on a closed node."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.cases import day_file
from benchmarks.day.day_checks import Closures, made_in_time
from benchmarks.day.day_file import load_day
from benchmarks.day.day_plan import POOL_LABEL, plan_day
from optimist.configuration import ConfigError


def test_the_shipped_day_scales_with_the_nodes_and_is_the_same_for_the_same_seed():
    day = load_day(day_file())
    small = plan_day(day, 100, 60, 0, "default-scheduler")
    large = plan_day(day, 1000, 60, 0, "default-scheduler")
    assert small.counts() == plan_day(day, 100, 60, 0, "default-scheduler").counts()
    assert len(small.nodes) == 100 and len(large.nodes) == 1000
    assert large.counts()["create Deployment"] == 10 * small.counts()["create Deployment"]
    pools = {n["metadata"]["labels"][POOL_LABEL] for n in small.nodes}
    assert pools == {"general", "batch", "flaky"}
    assert small.own_kwok == {"flaky"}
    whats = [h.what for h in small.happenings]
    assert whats.index("node-down") < whats.index("node-up") < whats.index("drain")
    assert all(h.at_s < 60 for h in small.happenings)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("pools: [{name: a, share: 0.5}]", "pools"),
        ("pools: [{name: a, share: 1}]\ndrain: {pool: b, at: 0.5}", "drain.pool"),
        ("pools: [{name: a, share: 1}]\njobs: {parallelism: [5, 1]}", "jobs.parallelism"),
        ("pools: [{name: a, share: 1}]\nnodeDown: {pool: a, at: 0.5, back: 0.2}", "nodeDown.back"),
        ("pools: [{name: a, share: 1}]\nneverFit: 3", "neverFit"),
    ],
)
def test_a_bad_day_file_is_refused_naming_the_field(tmp_path: Path, text: str, where: str):
    path = tmp_path / "day.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as refused:
        load_day(path)
    assert str(refused.value).startswith(where), str(refused.value)


def _bound(node: str, at: datetime, owner: str = "ReplicaSet") -> dict:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "metadata": {
            "name": f"p-{stamp}",
            "namespace": "day",
            "ownerReferences": [{"kind": owner}],
        },
        "spec": {"nodeName": node},
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}]
        },
    }


def test_a_pod_bound_to_a_node_while_it_was_closed_is_named():
    t0 = datetime(2026, 12, 6, 10, 0, 0, tzinfo=UTC)
    closures = Closures()
    closures.close("n1", t0.timestamp())
    closures.reopen("n1", t0.timestamp() + 20)
    closures.close("n2", t0.timestamp())
    at = lambda s: datetime.fromtimestamp(t0.timestamp() + s, UTC)  # noqa: E731
    pods = [
        _bound("n1", at(0)),  # the same second: decided before it closed
        _bound("n1", at(5)),  # while closed
        _bound("n1", at(25)),  # after it took pods again
        _bound("n2", at(30), owner="DaemonSet"),  # a DaemonSet's pod goes there all the same
        _bound("n3", at(5)),  # never closed
    ]
    [found] = closures.placed_while_closed(pods)
    assert (
        found.startswith("pod day/p-2026-12-06T10:00:05Z was bound to n1") and "5 s after" in found
    )


def test_a_day_that_never_settled_judges_the_pods_made_before_it_ended():
    def pod(name: str, node: str = "") -> dict[str, object]:
        return {"metadata": {"name": name, "namespace": "day"}, "spec": {"nodeName": node}}

    pods = [pod("early"), pod("early-bound", "n1"), pod("late"), pod("late-bound", "n1")]
    assert made_in_time(pods, None) == pods  # the day settled: every pod is judged
    # made after the cut and still pending: no chance yet; bound, it counts all the same
    assert made_in_time(pods, {"day/early", "day/early-bound"}) == [pods[0], pods[1], pods[3]]
