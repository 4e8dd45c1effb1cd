"""What a shard tells preemption, and how it places a pod on its nominated node."""

from cluster.messages import ShardBatch, UnitRequest
from cluster.store import Hold
from shards.scheduler import ShardCore
from shards.testing import default_profile, node
from tests.cluster.test_node_store import spec, unit
from tests.shards.test_scheduler import batch

FAR = 2.0**40


def one(key, cls=0, *, preempt=False, nominated=""):
    return UnitRequest(key, [(f"ns/{key}", cls)], 1, [], preempt, [nominated] if nominated else [])


def fill(store, names, cpu="2"):
    """Every node full with one pod of `cpu`."""
    _, outcomes, _ = store.commit(
        [spec(cpu=cpu)], [unit(f"f-{n}", (f"ns/f-{n}", 0, [n])) for n in names]
    )
    assert all(o.committed for o in outcomes)


def test_only_nodes_where_evicting_can_help_are_named_and_only_when_asked(store):
    store.put_nodes(
        [
            node("a", cpu="2"),
            node("b", cpu="2"),
            node("tainted", cpu="2", taints=[{"key": "k", "effect": "NoSchedule"}]),
            node("off", cpu="2", unschedulable=True),
        ]
    )
    fill(store, ["a", "b", "tainted", "off"])
    core = ShardCore(0, store, [default_profile()], seed=1)
    result = core.handle(ShardBatch(1, [spec(cpu="1")], [one("x", preempt=True), one("y")]))
    asked, silent = result.decisions
    assert not asked.placed and sorted(asked.preemptible[0]) == ["a", "b"]
    assert not silent.placed and silent.preemptible == {}
    # a gang names them for each of its classes
    gang = UnitRequest("g", [("ns/g0", 0), ("ns/g1", 1)], 2, [], True)
    [decision] = core.handle(ShardBatch(2, [spec(cpu="1"), spec(cpu="3")], [gang])).decisions
    assert sorted(decision.preemptible) == [0, 1]
    assert sorted(decision.preemptible[1]) == ["a", "b"]


def test_a_nominated_pod_counts_its_reservation_as_its_own(store):
    store.put_nodes([node("a", cpu="2"), node("b", cpu="2")])
    fill(store, ["b"])
    assert store.preempt([], [Hold("ns/x", "a", spec(cpu="2").requests, FAR)]).reserved
    core = ShardCore(0, store, [default_profile()], seed=1)
    # anybody else sees node a as full
    [other] = core.handle(batch([spec(cpu="2")], [[0]])).decisions
    assert not other.placed
    [mine] = core.handle(ShardBatch(3, [spec(cpu="2")], [one("x", nominated="a")])).decisions
    assert mine.placed and mine.placements[0].nodes == ["a"]
    _, [outcome], _ = store.commit([spec(cpu="2")], [mine])
    assert outcome.committed and store.holds() == {}


def test_a_nominated_node_that_no_longer_suits_falls_back_to_a_search(store):
    store.put_nodes([node("a", cpu="2"), node("b", cpu="2")])
    assert store.preempt([], [Hold("ns/x", "a", spec(cpu="1").requests, FAR)]).reserved
    store.put_nodes([node("a", cpu="2", taints=[{"key": "k", "effect": "NoSchedule"}])])
    core = ShardCore(0, store, [default_profile()], seed=1)
    [mine] = core.handle(ShardBatch(4, [spec(cpu="1")], [one("x", nominated="a")])).decisions
    assert mine.placed and mine.placements[0].nodes[0] == "b"


def test_two_pods_nominated_to_one_node_both_fit_in_one_batch(store):
    store.put_nodes([node("a", cpu="2")])
    holds = [Hold(f"ns/{k}", "a", spec(cpu="1").requests, FAR) for k in ("x", "y")]
    assert store.preempt([], holds).reserved
    core = ShardCore(0, store, [default_profile()], seed=1)
    units = [one("x", nominated="a"), one("y", nominated="a")]
    decisions = core.handle(ShardBatch(5, [spec(cpu="1")], units)).decisions
    assert all(d.placed for d in decisions)
    _, outcomes, _ = store.commit([spec(cpu="1")], decisions)
    assert all(o.committed for o in outcomes) and store.usage("a")["cpu"] == 2000
