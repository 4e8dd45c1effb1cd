import pytest

from cluster.lifecycle import IllegalTransition, PodState
from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, PodPlacement, ShardResult, UnitOutcome
from dispatcher.dispatcher import Dispatcher
from dispatcher.queue import Backoff
from shards.testing import pod_spec


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def pod(name, priority=0, cpu="1"):
    m = pod_spec({"cpu": cpu}, priority=priority)
    m["metadata"]["name"] = name
    return pod_from_manifest(m)


def placed(batch, node="n1"):
    return [
        Decision(u.key, [PodPlacement(p, c, [node], [1]) for p, c in u.pods]) for u in batch.units
    ]


def unschedulable(batch):
    return [Decision(u.key, [], {"Insufficient cpu": 3}, 3) for u in batch.units]


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def dispatcher(clock):
    return Dispatcher(Backoff(1.0, 10.0), clock=clock)


def test_priority_then_arrival(dispatcher):
    for name, prio in [("low", 0), ("high", 10), ("low2", 0), ("high2", 10)]:
        dispatcher.add(pod(name, prio))
    batch = dispatcher.next_batch(0, 10)
    assert [u.key for u in batch.units] == [
        "default/high",
        "default/high2",
        "default/low",
        "default/low2",
    ]


def test_equal_specs_share_one_class(dispatcher):
    for i in range(5):
        dispatcher.add(pod(f"p{i}"))
    dispatcher.add(pod("big", cpu="2"))
    batch = dispatcher.next_batch(0, 10)
    assert len(batch.classes) == 2
    assert [c for u in batch.units for _, c in u.pods] == [0, 0, 0, 0, 0, 1]


def test_batch_size_and_nothing_to_send(dispatcher):
    for i in range(5):
        dispatcher.add(pod(f"p{i}"))
    assert len(dispatcher.next_batch(0, 3).units) == 3
    assert len(dispatcher.next_batch(1, 3).units) == 2
    assert dispatcher.next_batch(0, 3) is None


def test_bound_units_leave_and_resolved_batches_reach_their_shard(dispatcher):
    dispatcher.add(pod("a"))
    batch = dispatcher.next_batch(0, 10)
    _classes, _decisions = dispatcher.on_result(ShardResult(0, batch.batch_id, 1, placed(batch)))
    assert dispatcher.units["default/a"].state is PodState.AWAITING_COMMIT
    bound = dispatcher.on_outcomes(batch.batch_id, [UnitOutcome("default/a", "bound", ["n1"])])
    assert bound == ["default/a"] and not dispatcher.units
    dispatcher.add(pod("b"))
    assert dispatcher.next_batch(1, 10).resolved == []  # another shard
    assert dispatcher.next_batch(0, 10).resolved == [batch.batch_id]
    assert dispatcher.stats.bound_pods == 1


def test_backoff_doubles_to_the_cap():
    assert [Backoff(1.0, 10.0).duration(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_unschedulable_unit_comes_back_after_its_backoff(dispatcher, clock):
    dispatcher.add(pod("a"))
    batch = dispatcher.next_batch(0, 10)
    waits = []
    for _ in range(4):
        dispatcher.on_result(ShardResult(0, batch.batch_id, 1, unschedulable(batch)))
        assert dispatcher.unschedulable() == {
            "default/a": "0/3 nodes are available: 3 Insufficient cpu."
        }
        assert dispatcher.settled()  # its verdict still holds
        start = clock.now
        while (batch := dispatcher.next_batch(0, 10)) is None:
            clock.now += 0.25
        waits.append(clock.now - start)
    assert waits == [1.0, 2.0, 4.0, 8.0]


def test_conflict_requeues_at_once_and_makes_old_verdicts_stale(dispatcher):
    dispatcher.add(pod("placed"))
    dispatcher.add(pod("refused"))
    batch = dispatcher.next_batch(0, 1)
    dispatcher.on_result(ShardResult(0, batch.batch_id, 1, placed(batch)))
    second = dispatcher.next_batch(0, 1)
    dispatcher.on_result(ShardResult(0, second.batch_id, 1, unschedulable(second)))
    assert dispatcher.idle() is False  # the first batch is still with the binder
    dispatcher.on_outcomes(
        batch.batch_id, [UnitOutcome("default/placed", "conflict", detail="node n1: cpu")]
    )
    assert dispatcher.units["default/placed"].state is PodState.ACTIVE
    assert dispatcher.stats.conflicts == 1
    # "refused" was judged while "placed" was assumed: that verdict may be stale now
    assert dispatcher.has_stale() and not dispatcher.settled()
    assert dispatcher.requeue_stale() == 1
    assert dispatcher.units["default/refused"].state is PodState.ACTIVE


def test_answers_for_units_not_in_flight_are_ignored(dispatcher):
    dispatcher.add(pod("a"))
    batch = dispatcher.next_batch(0, 10)
    forged = [Decision("default/ghost", [PodPlacement("default/ghost", 0, ["n1"], [1])])]
    _, decisions = dispatcher.on_result(ShardResult(0, batch.batch_id, 1, forged))
    assert decisions == []
    # the real unit got no answer: it goes back to the active queue
    assert dispatcher.units["default/a"].state is PodState.ACTIVE


def test_rejected_pods_are_reported_and_settled(dispatcher):
    dispatcher.reject(
        "default/bad", "Pod default/bad: spec.containers[0].resources.requests.cpu='x': ..."
    )
    assert "default/bad" in dispatcher.unschedulable()
    assert dispatcher.settled()


def test_illegal_transition_raises(dispatcher):
    dispatcher.add(pod("a"))
    with pytest.raises(IllegalTransition):
        dispatcher.units["default/a"].move(PodState.BOUND)


def test_a_hot_spot_backs_off_after_max_conflicts(clock):
    d = Dispatcher(Backoff(1.0, 10.0), clock=clock, max_conflicts=3)
    d.add(pod("hot"))
    for attempt in range(3):
        batch = d.next_batch(0, 10)
        assert batch is not None, attempt
        d.on_result(ShardResult(0, batch.batch_id, 1, placed(batch)))
        d.on_outcomes(
            batch.batch_id, [UnitOutcome("default/hot", "conflict", detail="node n1: cpu")]
        )
    assert d.units["default/hot"].state is PodState.BACKOFF
    assert d.unschedulable() == {"default/hot": "conflict: node n1: cpu"}
    assert d.stats.conflicts == 3 and d.stats.conflict_backoffs == 1
    # nothing else going on: its backoff need not be waited out
    assert d.requeue_stale() == 1


def test_deleted_pods_leave_the_queue_wherever_they_wait(dispatcher, clock):
    for name in ("backoff", "in-flight", "active"):
        dispatcher.add(pod(name))
    dispatcher.reject("default/bad", "no")
    first = dispatcher.next_batch(0, 1)
    dispatcher.on_result(ShardResult(0, first.batch_id, 1, unschedulable(first)))
    second = dispatcher.next_batch(0, 1)
    dispatcher.forget(["default/backoff", "default/in-flight", "default/bad"])
    assert dispatcher.unschedulable() == {}
    assert dispatcher.queue.backoff_units == {} and dispatcher.queue.active_count == 1
    # the late answer for the deleted pod is ignored, and its batch resolved
    assert dispatcher.on_result(ShardResult(0, second.batch_id, 1, placed(second))) == (
        second.classes,
        [],
    )
    batch = dispatcher.next_batch(0, 10)
    assert [u.key for u in batch.units] == ["default/active"]
    assert batch.resolved == [second.batch_id]


def test_freed_room_makes_earlier_verdicts_stale(dispatcher):
    dispatcher.add(pod("p"))
    batch = dispatcher.next_batch(0, 1)
    dispatcher.on_result(ShardResult(0, batch.batch_id, 1, unschedulable(batch)))
    assert dispatcher.settled()
    dispatcher.room_freed()
    assert not dispatcher.settled() and dispatcher.requeue_stale() == 1


def test_pods_pinned_to_a_node_go_to_the_shard_of_its_partition():
    from cluster.partitions import partition_of

    d = Dispatcher(partitions=2)
    pinned = pod_spec({"cpu": "1"})
    pinned["metadata"]["name"] = "daemon"
    pinned["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]}
                ]
            }
        }
    }
    d.add(pod_from_manifest(pinned))
    d.add(pod("free"))
    home = partition_of("x", 2)
    assert [u.key for u in d.next_batch(1 - home, 10).units] == ["default/free"]
    assert [u.key for u in d.next_batch(home, 10).units] == ["default/daemon"]


def test_gated_pods_wait_apart_until_their_last_gate_is_removed(dispatcher):
    manifest = pod_spec({"cpu": "1"})
    manifest["metadata"]["name"] = "gated"
    manifest["spec"]["schedulingGates"] = [{"name": "a"}, {"name": "b"}]
    dispatcher.add(pod_from_manifest(manifest))
    assert dispatcher.next_batch(0, 10) is None and dispatcher.settled()
    assert dispatcher.unschedulable() == {
        "default/gated": "SchedulingGated: blocked by scheduling gates a, b"
    }
    manifest["spec"]["schedulingGates"] = [{"name": "b"}]
    dispatcher.add(pod_from_manifest(manifest))
    assert dispatcher.next_batch(0, 10) is None
    del manifest["spec"]["schedulingGates"]
    dispatcher.add(pod_from_manifest(manifest))
    dispatcher.add(pod_from_manifest(manifest))  # seen again unchanged: still one unit
    [unit] = dispatcher.next_batch(0, 10).units
    assert unit.key == "default/gated" and dispatcher.unschedulable() == {}
