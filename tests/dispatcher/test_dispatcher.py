import pytest

from cluster.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_UPDATE,
    PV_UPDATE,
    UNSCHEDULABLE_TIMEOUT_S,
    VOLUMES_FREED,
)
from cluster.lifecycle import IllegalTransition, PodState
from cluster.manifests import pod_from_manifest
from cluster.messages import Conflict, Decision, PodPlacement, ShardResult, UnitOutcome
from cluster.objects import POD_GROUP_LABEL
from cluster.quota import Quota
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


FIT_EVENTS = [ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE]  # NodeResourcesFit's


def unschedulable(batch, events=FIT_EVENTS):
    return [
        Decision(u.key, [], {"Insufficient cpu": 3}, 3, ["NodeResourcesFit"], list(events))
        for u in batch.units
    ]


def fail(dispatcher, batch, events=FIT_EVENTS):
    dispatcher.on_result(ShardResult(0, batch.batch_id, 1, unschedulable(batch, events)))


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
    dispatcher.on_result(ShardResult(0, batch.batch_id, 1, placed(batch)))
    assert dispatcher.units["default/a"].state is PodState.AWAITING_COMMIT
    bound = dispatcher.on_outcomes(batch.batch_id, [UnitOutcome("default/a", "bound", ["n1"])])
    assert [(b.pod.key, b.node, b.attempts) for b in bound] == [("default/a", "n1", 1)]
    assert not dispatcher.units
    dispatcher.add(pod("b"))
    assert dispatcher.next_batch(1, 10).resolved == []  # another shard
    assert dispatcher.next_batch(0, 10).resolved == [batch.batch_id]
    assert dispatcher.stats.bound_pods == 1


def test_backoff_doubles_to_the_cap():
    assert [Backoff(1.0, 10.0).duration(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_an_unschedulable_unit_waits_for_an_event_its_filters_named(dispatcher, clock):
    dispatcher.add(pod("a"))
    fail(dispatcher, dispatcher.next_batch(0, 10))
    unit = dispatcher.units["default/a"]
    assert unit.state is PodState.UNSCHEDULABLE and unit.requeue_on == set(FIT_EVENTS)
    assert dispatcher.unschedulable() == {
        "default/a": "0/3 nodes are available: 3 Insufficient cpu."
    }
    clock.now += 60
    assert dispatcher.next_batch(0, 10) is None and dispatcher.settled()  # costs no attempt
    assert dispatcher.on_event(ASSIGNED_POD_ADD) == 0  # cannot give it room
    assert dispatcher.on_event(NODE_ADD) == 1
    assert dispatcher.next_batch(0, 10).units[0].key == "default/a"
    assert dispatcher.stats.events == {ASSIGNED_POD_ADD: 1, NODE_ADD: 1}
    assert dispatcher.stats.moved_by_events == 1


def test_an_event_moves_a_unit_to_backoff_until_its_backoff_is_over(dispatcher, clock):
    dispatcher.add(pod("a"))
    waits = []
    batch = dispatcher.next_batch(0, 10)
    for _ in range(4):
        fail(dispatcher, batch)
        dispatcher.on_event(ASSIGNED_POD_DELETE)  # at once: its backoff is still running
        assert dispatcher.units["default/a"].state is PodState.BACKOFF
        assert not dispatcher.settled()
        start = clock.now
        while (batch := dispatcher.next_batch(0, 10)) is None:
            clock.now += 0.25
        waits.append(clock.now - start)
    assert waits == [1.0, 2.0, 4.0, 8.0]


def test_an_unschedulable_unit_is_tried_again_after_five_minutes(dispatcher, clock):
    dispatcher.add(pod("a"))
    fail(dispatcher, dispatcher.next_batch(0, 10))
    clock.now += UNSCHEDULABLE_TIMEOUT_S - 1
    assert dispatcher.next_batch(0, 10) is None
    clock.now += 1
    assert dispatcher.next_batch(0, 10).units[0].key == "default/a"
    assert dispatcher.stats.moved_by_timeout == 1


def test_a_unit_no_filter_explains_waits_for_any_event(dispatcher):
    dispatcher.add(pod("a"))
    fail(dispatcher, dispatcher.next_batch(0, 10), events=[])
    assert dispatcher.on_event(ASSIGNED_POD_ADD) == 1


def test_an_event_while_the_unit_was_tried_sends_it_to_backoff(dispatcher):
    dispatcher.add(pod("a"))
    batch = dispatcher.next_batch(0, 10)
    dispatcher.on_event(ASSIGNED_POD_ADD)  # not one it would wait for
    fail(dispatcher, batch)
    assert dispatcher.units["default/a"].state is PodState.UNSCHEDULABLE
    dispatcher.on_event(NODE_ADD)
    dispatcher.skip_backoff()
    batch = dispatcher.next_batch(0, 10)
    dispatcher.on_event(NODE_ADD)  # the shard judged a view from before this node
    fail(dispatcher, batch)
    assert dispatcher.units["default/a"].state is PodState.BACKOFF


def test_an_event_costs_the_units_it_moves_not_those_that_wait(dispatcher):
    for i in range(1000):
        dispatcher.add(pod(f"p{i}"))
    fail(dispatcher, dispatcher.next_batch(0, 1000))
    dispatcher.add(pod("spread"))
    fail(dispatcher, dispatcher.next_batch(0, 10), events=[ASSIGNED_POD_ADD])
    waiting = dispatcher.queue._waiting_on
    assert len(waiting[NODE_ADD]) == 1000 and len(waiting[ASSIGNED_POD_ADD]) == 1
    assert dispatcher.on_event(ASSIGNED_POD_ADD) == 1
    assert len(dispatcher.queue.unschedulable_units) == 1000


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
    # "refused" was judged while "placed" was assumed: its room is back, so it is
    # tried again once its backoff is over, or at once when nothing else is queued
    assert dispatcher.units["default/refused"].state is PodState.BACKOFF
    assert dispatcher.stats.events[ASSIGNED_POD_DELETE] == 1 and not dispatcher.settled()
    dispatcher.next_batch(0, 10)  # "placed" again
    assert dispatcher.skip_backoff() == 1
    assert dispatcher.units["default/refused"].state is PodState.ACTIVE


def test_answers_for_units_not_in_flight_are_ignored(dispatcher):
    dispatcher.add(pod("a"))
    batch = dispatcher.next_batch(0, 10)
    forged = [Decision("default/ghost", [PodPlacement("default/ghost", 0, ["n1"], [1])])]
    reading = dispatcher.on_result(ShardResult(0, batch.batch_id, 1, forged))
    assert reading.placed == [] and reading.failed == []
    # the real unit got no answer: it goes back to the active queue
    assert dispatcher.units["default/a"].state is PodState.ACTIVE


def test_a_unit_no_shard_answers_three_times_in_a_row_backs_off(dispatcher, clock):
    """A unit that kills its shard each time (a whole batch lost) is not sent again at
    once, for ever: the third loss in a row backs it off, with the reason told."""
    dispatcher.add(pod("poison"))
    for _ in range(2):
        batch = dispatcher.next_batch(0, 10)
        reading = dispatcher.on_result(ShardResult(0, batch.batch_id, 0, []))
        assert [u.unit for u in reading.dropped] == ["default/poison"] and not reading.failed
    batch = dispatcher.next_batch(0, 10)
    reading = dispatcher.on_result(ShardResult(0, batch.batch_id, 0, []))
    assert not reading.dropped
    assert [(u.unit, u.reason) for u in reading.failed] == [
        ("default/poison", "no shard answered its last 3 attempts")
    ]
    assert dispatcher.units["default/poison"].state is PodState.BACKOFF
    assert dispatcher.next_batch(0, 10) is None
    clock.now += 1.0  # its first backoff over, it is tried again
    batch = dispatcher.next_batch(0, 10)
    assert [u.key for u in batch.units] == ["default/poison"]
    # an answer ends the run of losses: the next loss alone sends it straight back
    dispatcher.on_result(ShardResult(0, batch.batch_id, 1, unschedulable(batch)))
    assert dispatcher.units["default/poison"].lost == 0


def test_a_pod_back_after_its_binding_failed_past_the_commit_waits_out_its_backoff(
    dispatcher, clock
):
    """A claim PreBind wrote and nobody bound gives the pod back as if made again: it is
    not tried at once (it would take the same node and fail the same way), but after the
    backoff of as many failed attempts as its bindings failed in a row."""
    dispatcher.add(pod("late"), failures=2)
    dispatcher.add(pod("fresh"))
    assert dispatcher.units["default/late"].state is PodState.BACKOFF
    assert [u.key for u in dispatcher.next_batch(0, 10).units] == ["default/fresh"]
    clock.now += 1.9
    assert dispatcher.next_batch(0, 10) is None
    clock.now += 0.1  # two failures: a backoff of 2 s
    assert [u.key for u in dispatcher.next_batch(0, 10).units] == ["default/late"]


def test_on_result_names_the_units_that_failed_and_those_dropped(dispatcher):
    for name in ("fits", "refused", "dropped"):
        dispatcher.add(pod(name))
    batch = dispatcher.next_batch(0, 10)
    fits, refused, _ = batch.units
    decisions = [*placed(_only(batch, fits)), *unschedulable(_only(batch, refused))]
    reading = dispatcher.on_result(ShardResult(0, batch.batch_id, 1, decisions))
    assert [d.unit for d in reading.placed] == ["default/fits"]
    assert [(u.unit, [p.key for p in u.pods], u.reason) for u in reading.failed] == [
        ("default/refused", ["default/refused"], "0/3 nodes are available: 3 Insufficient cpu.")
    ]
    assert [(u.unit, [p.key for p in u.pods]) for u in reading.dropped] == [
        ("default/dropped", ["default/dropped"])
    ]
    assert reading.no_node == {"default/refused": "default-scheduler"}
    assert dispatcher.unschedulable() == {"default/refused": reading.failed[0].reason}


def test_a_repeated_decision_fails_its_unit_once(dispatcher):
    dispatcher.add(pod("a"))
    batch = dispatcher.next_batch(0, 10)
    twice = unschedulable(batch) * 2
    reading = dispatcher.on_result(ShardResult(0, batch.batch_id, 1, twice))
    assert [u.unit for u in reading.failed] == ["default/a"]
    assert reading.no_node == {"default/a": "default-scheduler"}
    assert dispatcher.units["default/a"].attempts == 1


def _only(batch, unit):
    """The batch as if it held this unit alone (for answers that name one unit)."""
    return type(batch)(batch.batch_id, batch.classes, [unit], batch.resolved)


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
    assert d.skip_backoff() == 1


def test_volumes_found_taken_again_and_again_wait_for_volumes_to_change(clock):
    """A gang's claims wanting the last free volume: no retry finds another until one
    is made or given back, so the unit waits for that, not for a backoff."""
    d = Dispatcher(Backoff(1.0, 10.0), clock=clock, max_conflicts=2)
    d.add(pod("pair"))
    why = "node n1: no free volume it reaches is left for claim default/c"
    for _ in range(2):
        batch = d.next_batch(0, 10)
        d.on_result(ShardResult(0, batch.batch_id, 1, placed(batch)))
        outcome = UnitOutcome(
            "default/pair", "conflict", detail=why, conflict=Conflict.VOLUME_TAKEN
        )
        d.on_outcomes(batch.batch_id, [outcome])
    unit = d.units["default/pair"]
    assert unit.state is PodState.UNSCHEDULABLE and unit.requeue_on == VOLUMES_FREED
    assert d.unschedulable() == {"default/pair": f"conflict: {why}"} and d.settled()
    d.on_event(PV_UPDATE)  # a volume given to a pod gone is free again
    assert unit.state is PodState.BACKOFF  # moved: tried once its backoff is out


def test_the_backoff_of_a_unit_tried_for_days_stays_its_cap():
    assert Backoff(1.0, 10.0).duration(100_000) == 10.0


def test_deleted_pods_leave_the_queue_wherever_they_wait(dispatcher, clock):
    for name in ("backoff", "in-flight", "active"):
        dispatcher.add(pod(name))
    dispatcher.reject("default/bad", "no")
    first = dispatcher.next_batch(0, 1)
    dispatcher.on_result(ShardResult(0, first.batch_id, 1, unschedulable(first)))
    second = dispatcher.next_batch(0, 1)
    dispatcher.forget(["default/backoff", "default/in-flight", "default/bad"])
    assert dispatcher.unschedulable() == {}
    assert dispatcher.queue.unschedulable_units == {} and dispatcher.queue.active_count == 1
    assert all(not units for units in dispatcher.queue._waiting_on.values())
    # the late answer for the deleted pod is ignored, and its batch resolved
    reading = dispatcher.on_result(ShardResult(0, second.batch_id, 1, placed(second)))
    assert (reading.classes, reading.placed) == (second.classes, [])
    batch = dispatcher.next_batch(0, 10)
    assert [u.key for u in batch.units] == ["default/active"]
    assert batch.resolved == [second.batch_id]


def test_a_new_node_sends_units_short_of_room_back(dispatcher):
    dispatcher.add(pod("p"))
    fail(dispatcher, dispatcher.next_batch(0, 1))
    assert dispatcher.settled()
    dispatcher.on_event(NODE_ADD)
    assert not dispatcher.settled() and dispatcher.skip_backoff() == 1


def test_pods_pinned_to_a_node_go_to_the_shard_of_its_partition():
    from cluster.node_partitions import node_partition

    d = Dispatcher(node_partitions=2)
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
    home = node_partition("x", 2)
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


def quota_dispatcher(clock, cpus=2):
    from cluster.quota import Quota, QuotaTree

    quotas = QuotaTree([Quota("a", max={"cpu": cpus * 1000}, namespaces=("default",))])
    return Dispatcher(Backoff(1.0, 10.0), clock=clock, quotas=quotas)


def test_a_unit_over_its_quota_waits_and_costs_no_attempt(clock):
    d = quota_dispatcher(clock, cpus=2)
    for name in ("p1", "p2", "p3"):
        d.add(pod(name))  # 1 CPU each
    batch = d.next_batch(0, 10)
    assert [u.key for u in batch.units] == ["default/p1", "default/p2"]
    assert d.units["default/p3"].state is PodState.QUOTA_WAIT
    assert d.stats.pod_attempts == 2 and d.stats.quota_waits == 1
    assert d.unschedulable()["default/p3"].startswith("Quota: quota a: cpu 2000 in use")
    assert d.next_batch(0, 10) is None  # it is not tried again while the quota is full
    assert d.stats.quota_waits == 1


def test_quota_given_back_by_a_failed_attempt_or_a_deleted_pod_lets_a_unit_in(clock):
    d = quota_dispatcher(clock, cpus=1)
    d.add(pod("p1"))
    d.add(pod("p2"))
    first = d.next_batch(0, 10)
    assert [u.key for u in first.units] == ["default/p1"]
    fail(d, first)  # no node: p1 waits for an event, holding no quota
    second = d.next_batch(0, 10)
    assert [u.key for u in second.units] == ["default/p2"]
    d.on_result(ShardResult(0, second.batch_id, 1, placed(second)))
    d.on_outcomes(second.batch_id, [UnitOutcome("default/p2", "bound", ["n1"])])
    d.on_event(NODE_ADD)  # p1 may fit a node now, but the bound p2 holds the quota
    d.skip_backoff()
    assert d.next_batch(0, 10).units == []
    assert d.units["default/p1"].state is PodState.QUOTA_WAIT
    d.forget(["default/p2"])  # the bound pod is deleted: its quota is free again
    assert [u.key for u in d.next_batch(0, 10).units] == ["default/p1"]


def test_a_quota_made_later_counts_the_pods_already_queued(dispatcher):
    for name in ("p1", "p2", "p3"):
        dispatcher.add(pod(name))
    dispatcher.add_quota(Quota("a", max={"cpu": 2000}, namespaces=("default",)), {}, [])
    batch = dispatcher.next_batch(0, 10)
    assert len(batch.units) == 2
    assert dispatcher.unschedulable()["default/p3"].startswith("Quota: quota a")


def test_the_standing_of_a_pod_says_where_it_waits_and_for_what(clock, dispatcher):
    dispatcher.add(pod("p"))
    held = dispatcher.held("default/p")
    standing = held.standing
    assert held.unit == "default/p" and standing.state == "active" and standing.attempts == 0
    fail(dispatcher, dispatcher.next_batch(0, 10))
    clock.now += 0.25
    standing = dispatcher.held("default/p").standing
    assert standing.state == "unschedulable" and standing.attempts == 1
    assert standing.reason == "0/3 nodes are available: 3 Insufficient cpu."
    assert standing.plugins == ["NodeResourcesFit"] and standing.waits_for == sorted(FIT_EVENTS)
    assert standing.backoff_left_s == pytest.approx(0.75) and standing.waiting_s == 0.25
    assert standing.quota == "" and dispatcher.held("default/other") is None


def test_the_standing_shows_the_quota_s_use_against_what_it_may_use(clock):
    d = quota_dispatcher(clock, cpus=2)
    for i in range(3):
        d.add(pod(f"p{i}"))
    d.next_batch(0, 10)
    waiting = d.held("default/p2").standing
    assert waiting.state == "quota-wait"
    assert waiting.quota.startswith("Quota: quota a: cpu 2000 in use + 1000 asked exceeds 2000")
    sent = d.held("default/p0").standing
    assert sent.state == "in-flight" and sent.quota == "quota a: cpu 2000 of 2000 in use"


def test_pods_held_back_before_any_attempt_are_held_too(dispatcher):
    gated = pod_spec({"cpu": "1"}, schedulingGates=[{"name": "wait"}])
    gated["metadata"]["name"] = "gated"
    dispatcher.add(pod_from_manifest(gated))
    held = dispatcher.held("default/gated")
    assert held.standing.state == "gated" and held.standing.reason.endswith("gates wait")
    member = pod_spec({"cpu": "1"})
    member["metadata"] = {"name": "m0", "labels": {POD_GROUP_LABEL: "ring"}}
    dispatcher.add(pod_from_manifest(member))
    held = dispatcher.held("default/m0")
    assert held.unit == "default/ring" and [p.key for p in held.pods] == ["default/m0"]
    assert held.standing.state == "gang-wait" and "PodGroup default/ring" in held.standing.reason
