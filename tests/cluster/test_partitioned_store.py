"""The node store across three real Redis servers: units within a partition commit in
one script, units across partitions in two steps, and a coordinator or a server lost
between the steps leaves no reservation once the time is up."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import hypothesis
import pytest
import redis
from hypothesis import strategies as st

from cluster.messages import Conflict, Decision, PodPlacement
from cluster.redis_server import EmbeddedRedis, connect
from cluster.store import NodeStore
from cluster.store.node_store import Reservation
from cluster.store.partitioned import PartitionedStore
from shards.testing import node
from tests.cluster.test_node_store import (
    EBS,
    attaching,
    commit_attaching,
    ebs,
    given,
    limited,
    picking,
    spec,
    unit,
)

TTL = 5.0
CPU = ["cpu"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def servers() -> Iterator[list[EmbeddedRedis]]:
    with ExitStack() as stack:
        yield [stack.enter_context(EmbeddedRedis()) for _ in range(3)]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def partitioned(servers, clock) -> Iterator[PartitionedStore]:
    store = PartitionedStore(
        [NodeStore(connect(s.url)) for s in servers], reservation_ttl_s=TTL, clock=clock
    )
    store.put_nodes([node(f"n{i}", cpu="2") for i in range(30)])
    yield store
    store.close()


def owned(store: PartitionedStore) -> list[str]:
    """One node of each partition, in partition order."""
    first: dict[int, str] = {}
    for i in range(30):
        first.setdefault(store.partition_of(f"n{i}"), f"n{i}")
    return [first[i] for i in range(len(store.stores))]


def gang(key: str, nodes: list[str]) -> Decision:
    return Decision(key, [PodPlacement(f"ns/{key}-{i}", 0, [n], [0]) for i, n in enumerate(nodes)])


def free(store: PartitionedStore, names: list[str]) -> list[int]:
    room = store.room(names, CPU)
    return [room[n]["cpu"] for n in names]


def reservations(store: PartitionedStore) -> list[dict[str, Reservation]]:
    return [s.reservations() for s in store.stores]


def test_every_node_lives_in_the_partition_that_owns_it(partitioned):
    for i, s in enumerate(partitioned.stores):
        names = s.node_names()
        assert names and all(partitioned.partition_of(n) == i for n in names)
    assert sum(len(s.node_names()) for s in partitioned.stores) == 30


def test_units_within_a_partition_commit_in_one_script_each_partition(partitioned):
    a, b, c = owned(partitioned)
    partitioned.commit([spec()], [gang(f"warm{i}", [n]) for i, n in enumerate((a, b, c))])
    partitioned.release(units=["warm0", "warm1", "warm2"])  # each script loaded once
    calls = [s.round_trips for s in partitioned.stores]
    units = [gang("u1", [a]), gang("u2", [b]), gang("u3", [c]), gang("u4", [a])]
    # a candidate in another partition is cut: the pod stays in its first one's
    units[1].placements[0].nodes.append(c)
    units[1].placements[0].versions.append(0)
    outcomes = partitioned.commit([spec()], units).outcomes
    assert [o.status for o in outcomes] == ["committed"] * 4
    assert [o.nodes for o in outcomes] == [[a], [b], [c], [a]]
    assert [s.round_trips - n for s, n in zip(partitioned.stores, calls, strict=True)] == [1, 1, 1]
    assert partitioned.spanning_commits == 0 and reservations(partitioned) == [{}, {}, {}]


def test_a_reader_reads_each_partition_s_commit_log_while_only_commits_came(partitioned):
    a, b, c = owned(partitioned)
    since = partitioned.changes_since(0, CPU).version
    partitioned.commit([spec()], [gang("u1", [a]), gang("u2", [b]), gang("u3", [c])])
    logged = partitioned.changes_since(since, CPU)
    assert logged.from_log and sorted(logged.names) == sorted([a, b, c])
    assert logged.usage.tolist() == [[1000]] * 3
    partitioned.release(units=["u2"])  # one partition's change is no commit
    after = partitioned.changes_since(logged.version, CPU)
    assert not after.from_log and after.names == [b] and after.usage.tolist() == [[0]]


def test_attach_limits_hold_for_gangs_across_partitions(partitioned):
    a, b, c = owned(partitioned)
    partitioned.put_nodes([limited(n, (EBS, 1)) for n in (a, b, c)])
    classes = [attaching(ebs("v1")), attaching(ebs("v2")), attaching(ebs("v3"))]
    fits = unit("g1", ("ns/g1-0", 0, [a]), ("ns/g1-1", 1, [b]))
    # c's part is reserved, a's refused: c's volume is given back with its reservation
    over = unit("g2", ("ns/g2-0", 2, [c]), ("ns/g2-1", 1, [a]))
    first, second = commit_attaching(partitioned, classes, [fits, over]).outcomes
    assert first.status == "committed"
    assert second.conflict == Conflict.VOLUME_LIMIT and f"node {a}" in second.detail
    delta = partitioned.changes_since(0, CPU)
    assert delta.attached == {
        a: [(EBS, "ebs.csi.aws.com/v1", 1)],
        b: [(EBS, "ebs.csi.aws.com/v2", 1)],
    }
    assert partitioned.committed_pods() == {"ns/g1-0": a, "ns/g1-1": b}


def test_a_pod_keeps_the_volumes_picked_on_each_candidate_of_its_partition(partitioned):
    a, b, _ = owned(partitioned)
    a2 = next(f"n{i}" for i in range(30) if partitioned.partition_of(f"n{i}") == 0 and f"n{i}" != a)
    partitioned.commit([spec()], [gang("full", [a, a])])  # a is full: the pod goes to a2
    picks = {"ns/p": [[("ns/c", "pv-a")], [("ns/c", "pv-b")], [("ns/c", "pv-a2")]]}
    [outcome] = picking(partitioned, [unit("u", ("ns/p", 0, [a, b, a2]))], picks).outcomes
    assert outcome.nodes == [a2]  # b, of another partition, is no candidate there
    assert given(partitioned.stores[0]) == {"pv-a2": "ns/c"}
    assert partitioned.given_volumes(["pv-a", "pv-a2"]) == {"pv-a2": "ns/c"}


def test_a_gang_across_partitions_commits_whole_in_two_steps(partitioned):
    a, b, c = owned(partitioned)
    [outcome] = partitioned.commit([spec()], [gang("g", [b, a, c, b])]).outcomes
    assert outcome.status == "committed" and outcome.nodes == [b, a, c, b]  # in pod order
    assert partitioned.spanning_commits == 1
    assert free(partitioned, [a, b, c]) == [1000, 0, 1000]
    assert reservations(partitioned) == [{}, {}, {}]  # every part confirmed
    home = partitioned.stores[partitioned.partition_of(b)]
    assert home.client.get(home.keys.decided("g")) == b"committed"
    assert partitioned.release(units=["g"]).pods == 4
    assert free(partitioned, [a, b, c]) == [2000, 2000, 2000]


def test_many_gangs_across_partitions_take_a_call_per_partition_per_step(partitioned):
    names = [
        [f"n{i}" for i in range(30) if partitioned.partition_of(f"n{i}") == k] for k in range(3)
    ]
    gangs = [gang(f"g{i}", [names[0][i], names[1][i], names[2][i]]) for i in range(5)]
    gangs.append(gang("big", [names[0][0], names[1][0], names[2][0]] * 2))  # 2 more CPUs on each
    partitioned.commit([spec()], [gang("warm", [names[0][-1], names[1][-1], names[2][-1]])])
    calls = [s.round_trips for s in partitioned.stores]
    outcomes = partitioned.commit([spec()], gangs).outcomes
    assert [o.status for o in outcomes] == ["committed"] * 5 + ["conflict"]
    # each partition: reserve, confirm (at home, partition 0, then the others), and give
    # back the refused gang: three calls for six gangs
    assert [s.round_trips - n for s, n in zip(partitioned.stores, calls, strict=True)] == [3, 3, 3]
    assert reservations(partitioned) == [{}, {}, {}]
    assert free(partitioned, [names[k][0] for k in range(3)]) == [1000, 1000, 1000]


def test_a_gang_one_partition_refuses_leaves_nothing_anywhere(partitioned):
    a, b, c = owned(partitioned)
    [outcome] = partitioned.commit([spec()], [gang("g", [a, b, c, c, c])]).outcomes  # 3 CPUs on c
    assert outcome.status == "conflict" and c in outcome.detail
    assert free(partitioned, [a, b, c]) == [2000, 2000, 2000]
    assert reservations(partitioned) == [{}, {}, {}]
    assert all(s.committed_pods() == {} for s in partitioned.stores)


def reserve_every_part(store: PartitionedStore, unit: Decision, clock: Clock) -> int:
    """Step one of a coordinator, which then dies; returns the unit's home."""
    parts = store._parts(unit)
    home = next(iter(parts))
    for i, part in parts.items():
        committed = store.stores[i].commit(
            [spec()], [part], reserve_until=clock() + TTL, homes=[home]
        )
        assert committed.outcomes[0].status == "committed"
    return home


def test_a_coordinator_dead_after_reserving_leaves_nothing_once_the_time_is_up(partitioned, clock):
    a, b, c = owned(partitioned)
    reserve_every_part(partitioned, gang("g", [a, b, c]), clock)
    assert free(partitioned, [a, b, c]) == [1000, 1000, 1000]  # held meanwhile
    assert partitioned.settle_expired() == 0  # not yet
    clock.now += TTL
    assert partitioned.settle_expired() == 3
    assert free(partitioned, [a, b, c]) == [2000, 2000, 2000]
    assert reservations(partitioned) == [{}, {}, {}]
    home = partitioned.stores[0]
    assert home.client.get(home.keys.decided("g")) == b"aborted"  # no late confirmation
    assert home.settle(["g"], "confirm", [True], 60) == ["gone"]


def test_a_coordinator_dead_after_home_decided_is_completed_by_the_sweeper(partitioned, clock):
    a, b, c = owned(partitioned)
    home = reserve_every_part(partitioned, gang("g", [b, c, a]), clock)
    assert partitioned.stores[home].settle(["g"], "confirm", [True], 60) == ["confirmed"]
    clock.now += TTL
    assert partitioned.settle_expired() == 2  # the two other parts, confirmed
    assert reservations(partitioned) == [{}, {}, {}]
    assert free(partitioned, [a, b, c]) == [1000, 1000, 1000]  # the gang whole
    assert [set(s.committed_pods().values()) for s in partitioned.stores] == [{a}, {b}, {c}]


def test_a_partition_down_fails_the_commit_and_the_store_says_what_was_committed(
    partitioned, servers
):
    """As with one Redis: the commit raises, and the caller (the binder's `_recover`)
    asks the store once it is back. Units in the other partitions were committed; the
    gang reserved in part is settled then: its home never decided, so it is gone."""
    a, b, c = owned(partitioned)
    servers[2].kill()
    units = [gang("u", [a]), gang("v", [c]), gang("g", [a, b, c])]
    with pytest.raises(redis.ConnectionError):
        partitioned.commit([spec()], units)
    servers[2].start()  # empty, and built again from the cluster
    partitioned.stores[2].rebuild([node(n, cpu="2") for n in lost_nodes(partitioned, 2)], {}, [])
    placed = partitioned.committed_placements(["u", "v", "g"])
    assert placed == {"u": {"ns/u-0": (a, [])}}
    assert free(partitioned, [a, b, c]) == [1000, 2000, 2000]
    assert reservations(partitioned) == [{}, {}, {}]


def test_a_partition_killed_between_the_steps(partitioned, servers, clock):
    """Its server dies as the other parts are confirmed, after the home decided: the gang
    is committed, and the partition comes back empty, to be built again from the
    cluster (where the gang's pod there is bound by then, and counted)."""
    a, b, c = owned(partitioned)
    lost = partitioned.stores[2]
    settle = lost.settle

    def dies_first(*args: object) -> list[str]:
        servers[2].kill()
        return settle(*args)  # type: ignore[arg-type]

    lost.settle = dies_first  # type: ignore[method-assign]
    [outcome] = partitioned.commit([spec()], [gang("g", [a, b, c])]).outcomes
    assert outcome.status == "committed"  # decided at home (partition 0) before the loss
    servers[2].start()  # empty, as after a crash
    lost.rebuild([node(n, cpu="2") for n in lost_nodes(partitioned, 2)], {}, [])
    clock.now += TTL
    partitioned.settle_expired()
    assert reservations(partitioned) == [{}, {}, {}]
    assert free(partitioned, [a, b]) == [1000, 1000]


def test_expiring_holds_settles_expired_reservations_too(partitioned, clock):
    """The runtime gives back expired holds every second; a split store settles its
    expired reservations then as well, so a coordinator that died leaves nothing."""
    _, b, c = owned(partitioned)
    reserve_every_part(partitioned, gang("g", [b, c]), clock)
    assert partitioned.expire_holds(clock.now) == 0
    assert partitioned.expire_holds(clock.now + TTL) == 2
    assert reservations(partitioned) == [{}, {}, {}] and free(partitioned, [b, c]) == [2000, 2000]


def test_a_unit_left_in_doubt_is_settled_when_the_store_is_asked(partitioned, clock):
    """The coordinator gave up after reserving (its home never decided): asked what was
    committed, the store settles the unit at once, before its time is up."""
    _, b, c = owned(partitioned)
    reserve_every_part(partitioned, gang("g", [b, c]), clock)
    assert partitioned.committed_placements(["g"]) == {}
    assert reservations(partitioned) == [{}, {}, {}]
    assert free(partitioned, [b, c]) == [2000, 2000]


def test_a_home_killed_between_the_steps_is_settled_once_it_is_back(partitioned, servers, clock):
    a, b, c = owned(partitioned)
    reserve_every_part(partitioned, gang("g", [c, a, b]), clock)  # home: partition 2
    servers[2].kill()
    clock.now += TTL
    assert partitioned.settle_expired() == 0  # the home does not answer: the parts wait
    assert [list(s.reservations()) for s in partitioned.stores[:2]] == [["g"], ["g"]]
    servers[2].start()
    partitioned.stores[2].rebuild([node(n, cpu="2") for n in lost_nodes(partitioned, 2)], {}, [])
    assert partitioned.settle_expired() == 2  # the home lost its decision: given back
    assert reservations(partitioned) == [{}, {}, {}]
    assert free(partitioned, [a, b, c]) == [2000, 2000, 2000]


def lost_nodes(store: PartitionedStore, i: int) -> list[str]:
    return [f"n{k}" for k in range(30) if store.partition_of(f"n{k}") == i]


CRASHES = ("none", "after reserving", "after the home decided", "after one more part", "late")


@hypothesis.settings(
    max_examples=25, deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
@hypothesis.given(
    gangs=st.lists(
        st.tuples(
            st.lists(st.integers(0, 11), min_size=2, max_size=4),  # its pods' nodes
            st.sampled_from(CRASHES),  # where its coordinator dies
            st.booleans(),  # a sweep right after it, the clock past every reservation
        ),
        min_size=1,
        max_size=8,
    )
)
def test_whatever_dies_where_every_gang_ends_whole_or_gone(gangs):
    """Coordinators dying at any step, sweeps at any time: once the sweeps are done, no
    reservation is left, every gang is committed in every partition it spans or in none,
    and each node's usage is the sum of the pods committed on it."""
    with ExitStack() as stack:
        servers = [stack.enter_context(EmbeddedRedis()) for _ in range(3)]
        clock = Clock()
        store = PartitionedStore(
            [NodeStore(connect(s.url)) for s in servers], reservation_ttl_s=TTL, clock=clock
        )
        stack.callback(store.close)
        store.put_nodes([node(f"n{i}", cpu="2") for i in range(12)])
        expect: dict[str, str] = {}  # gang -> 'whole' or 'gone', where the protocol says so
        for g, (on, crash, sweep) in enumerate(gangs):
            key, nodes = f"g{g}", [f"n{i}" for i in on]
            if crash == "none" or len(store._parts(gang(key, nodes))) == 1:
                [outcome] = store.commit([spec()], [gang(key, nodes)]).outcomes
                expect[key] = "whole" if outcome.status == "committed" else "gone"
            else:
                expect[key] = die_at(store, gang(key, nodes), crash, clock)
            if sweep:
                clock.now += TTL
                store.settle_expired()
        clock.now += TTL
        store.settle_expired()
        assert reservations(store) == [{}, {}, {}]
        committed = [s.committed_pods() for s in store.stores]
        for g, (on, _, _) in enumerate(gangs):
            pods = {f"ns/g{g}-{k}": f"n{i}" for k, i in enumerate(on)}
            held = {p: n for part in committed for p, n in part.items() if p in pods}
            assert held in ({}, pods), (g, held)  # whole or gone, never in part
            assert held == (pods if expect[f"g{g}"] == "whole" else {}), g
        for i, part in enumerate(committed):
            for name in store.stores[i].node_names():
                used = sum(1000 for n in part.values() if n == name)
                assert store.stores[i].usage(name).get("cpu", 0) == used, name


def die_at(store: PartitionedStore, unit: Decision, crash: str, clock: Clock) -> str:
    """A coordinator's steps for a spanning unit, up to where it dies (or, 'late', until
    a sweeper overtakes it); what must become of the unit: 'whole' once its home
    decided, 'gone' before, and 'gone' if a part did not fit (the coordinator then
    gives everything back itself, as `commit` does)."""
    parts = store._parts(unit)
    home = next(iter(parts))
    for i, part in parts.items():
        [outcome] = (
            store.stores[i]
            .commit([spec()], [part], reserve_until=clock() + TTL, homes=[home])
            .outcomes
        )
        if outcome.status != "committed":  # refused: the coordinator gives back and lives
            for k in parts:
                store.stores[k].settle([unit.unit], "abort", [k == home], 60)
            return "gone"
    if crash == "after reserving":
        return "gone"
    if crash == "late":  # too slow: the reservations ran out, and a sweep aborted them
        clock.now += TTL
        store.settle_expired()
        assert store.stores[home].settle([unit.unit], "confirm", [True], 60) == ["gone"]
        return "gone"
    assert store.stores[home].settle([unit.unit], "confirm", [True], 60) == ["confirmed"]
    if crash == "after one more part":
        other = next(i for i in parts if i != home)
        store.stores[other].settle([unit.unit], "confirm", [False], 1)
    return "whole"
