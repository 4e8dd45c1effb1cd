"""Preemption and reservations in the node store, against a real Redis server."""

import time

from cluster.messages import Conflict
from cluster.store import Hold
from shards.testing import node
from tests.cluster.test_node_store import spec, unit

FAR = time.time() + 3600


def hold(pod, node_name, cpu="2", expires_at=FAR):
    return Hold(pod, node_name, spec(cpu=cpu).requests, expires_at)


def fill(store, cpu="1", count=4, node_name="a"):
    """`count` committed pods of `cpu` each on one node, units u0..; returns their keys."""
    pods = [f"ns/low{i}" for i in range(count)]
    _, outcomes, _ = store.commit(
        [spec(cpu=cpu)], [unit(f"u{i}", (p, 0, [node_name])) for i, p in enumerate(pods)]
    )
    assert all(o.committed for o in outcomes)
    return pods


def test_preemption_evicts_and_holds_the_room_for_its_owner_only(store):
    store.put_nodes([node("a", cpu="4")])
    low = fill(store)
    v0 = store.version()
    verdict = store.preempt(low[:2], [hold("ns/high", "a")])
    assert verdict.reserved and verdict.version > v0
    assert store.committed_pods() == {low[2]: "a", low[3]: "a"}
    assert store.usage("a")["cpu"] == 4000  # two pods left, and the reservation
    assert store.changes_since(v0, ["cpu"]).names == ["a"]  # shards see it as used
    # somebody else finds no room ...
    _, [other], _ = store.commit([spec(cpu="1")], [unit("x", ("ns/other", 0, ["a"]))])
    assert other.status == "conflict"
    # ... the owner does, and consumes its reservation
    _, [mine], _ = store.commit([spec(cpu="2")], [unit("h", ("ns/high", 0, ["a"]))])
    assert mine.committed
    assert store.holds() == {}
    assert store.usage("a")["cpu"] == 4000


def test_an_owner_committing_elsewhere_gives_its_reservation_back(store):
    store.put_nodes([node("a", cpu="4"), node("b", cpu="4")])
    low = fill(store)
    assert store.preempt(low[:2], [hold("ns/high", "a")]).reserved
    _, [mine], _ = store.commit([spec(cpu="2")], [unit("h", ("ns/high", 0, ["b"]))])
    assert mine.committed and mine.nodes == ["b"]
    assert store.usage("a")["cpu"] == 2000 and store.holds() == {}


def test_a_refused_owner_keeps_its_reservation(store):
    store.put_nodes([node("a", cpu="4")])
    low = fill(store)
    assert store.preempt(low[:2], [hold("ns/high", "a")]).reserved
    # asks for more than it reserved: nothing applied, the reservation stays
    _, [mine], _ = store.commit([spec(cpu="3")], [unit("h", ("ns/high", 0, ["a"]))])
    assert mine.status == "conflict"
    assert set(store.holds()) == {"ns/high"}
    assert store.usage("a")["cpu"] == 4000


def test_a_gang_shares_the_room_reserved_for_its_members(store):
    store.put_nodes([node("a", cpu="4")])
    low = fill(store)
    assert store.preempt(low, [hold("ns/g1", "a"), hold("ns/g2", "a")]).reserved
    _, [gang], _ = store.commit(
        [spec(cpu="2")], [unit("g", ("ns/g1", 0, ["a"]), ("ns/g2", 0, ["a"]))]
    )
    assert gang.committed and store.usage("a")["cpu"] == 4000
    assert store.holds() == {}


def test_a_pod_made_again_under_the_name_of_a_victim_is_no_duplicate(store):
    store.put_nodes([node("a", cpu="4")])
    low = fill(store)
    assert store.preempt(low[:1], [hold("ns/high", "a", cpu="1")]).reserved
    _, [again], _ = store.commit([spec(cpu="1")], [unit("u0", (low[0], 0, ["a"]))])
    assert again.status == "conflict" and "insufficient cpu" in again.detail


def test_a_stale_plan_changes_nothing(store):
    store.put_nodes([node("a", cpu="4")])
    low = fill(store)
    store.release(pods=[low[0]])
    before = store.version()
    verdict = store.preempt(low[:2], [hold("ns/high", "a")])
    assert verdict.status == "conflict" and low[0] in verdict.detail
    assert verdict.conflict == Conflict.VICTIM_GONE
    assert store.version() == before and store.holds() == {}
    # victims that do not free enough room: refused, nothing released
    verdict = store.preempt(low[1:2], [hold("ns/high", "a", cpu="3")])
    assert verdict.status == "conflict" and "insufficient cpu" in verdict.detail
    assert verdict.conflict == Conflict.RESOURCES
    assert set(store.committed_pods()) == set(low[1:])


def test_reservations_expire_and_go_with_their_deleted_owner(store):
    store.put_nodes([node("a", cpu="4")])
    low = fill(store)
    assert store.preempt(low[:1], [hold("ns/soon", "a", cpu="1", expires_at=100.0)]).reserved
    assert store.preempt(low[1:2], [hold("ns/late", "a", cpu="1")]).reserved
    assert store.expire_holds(now=99.0) == 0
    assert store.expire_holds(now=101.0) == 1
    assert set(store.holds()) == {"ns/late"}
    released = store.release(pods=["ns/late"])  # the preemptor was deleted
    assert (released.pods, released.holds) == (0, 1)
    assert store.usage("a")["cpu"] == 2000 and store.holds() == {}


def test_preempting_again_replaces_the_pods_reservation(store):
    store.put_nodes([node("a", cpu="4"), node("b", cpu="4")])
    low_a = fill(store, count=2, cpu="2")
    assert store.preempt(low_a[:1], [hold("ns/high", "a")]).reserved
    low_b = [f"ns/b{i}" for i in range(2)]
    store.commit([spec(cpu="2")], [unit(f"b{i}", (p, 0, ["b"])) for i, p in enumerate(low_b)])
    assert store.preempt(low_b[:1], [hold("ns/high", "b")]).reserved
    assert store.holds()["ns/high"].node == "b"
    assert store.usage("a")["cpu"] == 2000 and store.usage("b")["cpu"] == 4000


def test_malformed_reservations_are_refused(store):
    store.put_nodes([node("a", cpu="4")])
    verdict = store.preempt([], [Hold("", "a", (("cpu", 1),), FAR)])
    assert verdict.status == "invalid"
    assert store.preempt([], [hold("ns/p", "gone")]).status == "conflict"


def test_a_hold_changes_hands_once(store):
    store.put_nodes([node("a", cpu="4")])
    assert store.preempt([], [hold("~reservation/r", "a")]).reserved  # fits: no victims
    v0 = store.version()
    assert store.claim_hold("~reservation/r", "ns/owner") == "claimed"
    assert set(store.holds()) == {"ns/owner"} and store.version() == v0
    assert store.claim_hold("~reservation/r", "ns/other") == "gone"
    assert store.preempt([], [hold("~reservation/s", "a")]).reserved
    assert store.claim_hold("~reservation/s", "ns/owner") == "taken"
    assert store.usage("a")["cpu"] == 4000
