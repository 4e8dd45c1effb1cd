"""Preemption's choices, as table tests, and the planner against a real store."""

from dataclasses import replace

import numpy as np
import pytest

from binder.preemption import (
    Candidate,
    PreemptionPlanner,
    Preemptor,
    reclaiming,
    select_victims,
)
from cluster.inventory import BoundPod, BoundPods
from cluster.manifests import pod_from_manifest
from cluster.quota import Quota, QuotaTree
from shards.testing import node, pod_spec
from tests.cluster.test_node_store import unit


def bound(key, priority, cpu, started=0, node_name="n"):
    return BoundPod(key, node_name, priority, (("cpu", cpu),), started, "ns", ())


def preemptor(cpu, priority=100, nodes=()):
    return Preemptor("ns/high", priority, (("cpu", cpu),), list(nodes))


@pytest.mark.parametrize(
    ("free", "on_node", "need", "victims"),
    [
        # fits already: nobody goes
        (1000, [bound("a", 1, 500)], 1000, []),
        # one pod of lower priority is enough
        (0, [bound("a", 1, 1000)], 1000, ["a"]),
        # pods of equal or higher priority are never victims
        (0, [bound("a", 100, 1000), bound("b", 200, 1000)], 1000, None),
        # not enough even with every lower pod gone
        (0, [bound("a", 1, 500), bound("b", 100, 1000)], 1000, None),
        # the most important are given back first: the priority-5 pod stays
        (0, [bound("low", 1, 1000), bound("mid", 5, 1000)], 1000, ["low"]),
        # of equal priority, the one running longer stays
        (0, [bound("old", 1, 1000, started=1), bound("new", 1, 1000, started=2)], 1000, ["new"]),
        # two small ones when one is not enough
        (0, [bound("a", 1, 500), bound("b", 1, 500), bound("c", 9, 2000)], 1000, ["a", "b"]),
    ],
)
def test_victims_on_one_node(free, on_node, need, victims):
    found = select_victims(preemptor(need), {"cpu": free}, on_node)
    assert (None if found is None else [v.key for v in found.victims]) == victims


def test_a_disruption_budget_is_honoured_where_it_can_be():
    pods = [bound("guarded", 1, 1000, started=1), bound("free", 1, 1000, started=2)]

    def guard(pods):
        return {p.key for p in pods if p.key == "guarded"}

    found = select_victims(preemptor(1000), {"cpu": 0}, pods, guard)
    assert [v.key for v in found.victims] == ["free"] and found.violations == 0
    # best effort: when only the guarded pod can make room, it goes, counted
    found = select_victims(preemptor(2000), {"cpu": 0}, pods, guard)
    assert {v.key for v in found.victims} == {"guarded", "free"} and found.violations == 1


def candidate(node_name, *victims, violations=0):
    return Candidate(node_name, list(victims), violations)


def low(key, priority=5, started=0):
    return bound(key, priority, 1, started)


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        # fewest budget violations first
        ([candidate("x", low("a", 1), violations=1), candidate("y", low("b", 9))], "y"),
        # then the lowest highest victim priority
        (
            [candidate("x", bound("a", 5, 1)), candidate("y", bound("b", 1, 1), bound("c", 1, 1))],
            "y",
        ),
        # then the lowest sum of priorities
        (
            [candidate("x", bound("a", 5, 1), bound("b", 5, 1)), candidate("y", bound("c", 5, 1))],
            "y",
        ),
        # then the latest start among the most important victims
        (
            [
                candidate("x", bound("a", 5, 1, started=1)),
                candidate("y", bound("b", 5, 1, started=2)),
            ],
            "y",
        ),
        # all equal: the first found
        ([candidate("x", low("a")), candidate("y", low("b"))], "x"),
    ],
)
def test_the_node_chosen(candidates, chosen):
    assert min(candidates, key=Candidate.rank).node == chosen


def low_pod(name, priority=1, cpu="2"):
    manifest = pod_spec({"cpu": cpu, "memory": "1Gi"}, priority=priority)
    manifest["metadata"]["name"] = name
    return pod_from_manifest(manifest)


@pytest.fixture
def full_cluster(store):
    """Nodes a, b, c with 4 cpus, each full with two 2-cpu pods: priority 1 on a, 5 on b,
    one of each on c."""
    store.put_nodes([node(n, cpu="4") for n in "abc"])
    inventory = BoundPods()
    priorities = {"a": (1, 1), "b": (5, 5), "c": (1, 5)}
    for name, pair in priorities.items():
        for i, priority in enumerate(pair):
            pod = low_pod(f"{name}{i}", priority)
            _, [o], _ = store.commit([pod.spec], [unit(pod.key, (pod.key, 0, [name]))])
            assert o.committed
            inventory.add(pod, name)
    return PreemptionPlanner(store, inventory, np.random.default_rng(0))


def test_planner_picks_the_cheapest_node(full_cluster):
    plan = full_cluster.plan([preemptor(2000, nodes="abc")])
    # one victim of priority 1 on a or on c; c's highest victim is also 1, but a and c
    # tie on everything up to start time, and c's victim started later
    assert plan.nominated == {"ns/high": "c"}
    assert [v.key for v in plan.victims] == ["default/c0"]


def test_a_gang_preempts_for_every_member_or_not_at_all(full_cluster):
    members = [Preemptor(f"ns/g{i}", 3, (("cpu", 4000),), list("abc")) for i in range(2)]
    assert full_cluster.plan(members) is None  # only node a can be emptied below priority 3
    plan = full_cluster.plan(members[:1])
    assert plan.nominated == {"ns/g0": "a"} and len(plan.victims) == 2


def test_the_members_of_a_gang_do_not_count_the_same_room_twice(full_cluster):
    members = [Preemptor(f"ns/g{i}", 3, (("cpu", 2000),), list("a")) for i in range(3)]
    assert full_cluster.plan(members) is None  # node a frees 4 cpus, three members need 6
    plan = full_cluster.plan(members[:2])
    assert plan.nominated == {"ns/g0": "a", "ns/g1": "a"}
    assert sorted(v.key for v in plan.victims) == ["default/a0", "default/a1"]


def test_reclaim_evicts_a_borrowers_pods_whatever_their_priority():
    quotas = QuotaTree(
        [
            Quota("a", min={"cpu": 2000}, namespaces=("a",)),
            Quota("b", min={"cpu": 2000}, namespaces=("b",)),
        ],
        capacity={"cpu": 4000},
    )
    borrower = [low_pod(f"b{i}", priority=50, cpu="1") for i in range(4)]
    borrower = [replace(p, namespace="b") for p in borrower]
    quotas.wait(borrower)
    quotas.admit(borrower)
    may_evict = reclaiming(lambda: quotas)
    victim = BoundPod.of(borrower[0], "n", 1)
    lender = Preemptor("a/x", 0, (("cpu", 1000),), ["n"], quota="a")
    assert not may_evict(lender, victim)  # a asks for nothing yet: b borrows rightly
    quotas.wait([replace(low_pod("x", priority=0, cpu="1"), namespace="a")])
    assert may_evict(lender, victim)  # now b must give back
    assert not may_evict(replace(lender, quota="b"), victim)  # never for its own quota


def test_pods_alike_share_one_dry_run_and_never_the_same_victims(full_cluster):
    alike = [Preemptor(f"ns/h{i}", 100, (("cpu", 2000),), list("abc")) for i in range(7)]
    plans = full_cluster.plan_alike(alike)
    # six 2-cpu pods can be made room for (every pod on the three nodes), the seventh not
    assert plans[-1] is None
    victims = [v.key for plan in plans[:-1] for v in plan.victims]
    assert len(victims) == len(set(victims)) == 6
    # the first takes what `plan` would have chosen: c's priority-1 pod
    assert plans[0].nominated == {"ns/h0": "c"} and [v.key for v in plans[0].victims] == [
        "default/c0"
    ]
    # each node ends up holding two of them, as the room allows
    nodes = [node_name for plan in plans[:-1] for node_name in plan.nominated.values()]
    assert sorted(nodes) == sorted("aabbcc")
