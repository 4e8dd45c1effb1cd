"""The PREEMPTING state: who asks, what a unit waits for, where it is tried next."""

from cluster.lifecycle import PodState
from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, ShardResult
from dispatcher.dispatcher import Dispatcher
from dispatcher.queue import Backoff
from shards.testing import pod_spec
from tests.dispatcher.test_dispatcher import FIT_EVENTS, Clock


def pod(name, priority, **spec):
    m = pod_spec({"cpu": "1"}, priority=priority, **spec)
    m["metadata"]["name"] = name
    return pod_from_manifest(m)


def dispatcher(clock=None, floor=0):
    """Bound pods exist at priority `floor`: only pods above it may preempt."""
    return Dispatcher(
        Backoff(1.0, 10.0), clock=clock or Clock(), lowest_bound_priority=lambda: floor
    )


def no_fit(batch, nodes=("n1", "n2")):
    """Every unit fits nowhere; those that asked are told where evicting may help."""
    return ShardResult(
        0,
        batch.batch_id,
        1,
        [
            Decision(
                u.key,
                [],
                {"Insufficient cpu": 2},
                2,
                ["NodeResourcesFit"],
                FIT_EVENTS,
                {c: list(nodes) for _, c in u.pods} if u.preempt else {},
            )
            for u in batch.units
        ],
    )


def test_only_pods_above_the_lowest_bound_priority_that_may_preempt_ask():
    d = dispatcher(floor=5)
    for p in (pod("high", 9), pod("equal", 5), pod("never", 9, preemptionPolicy="Never")):
        d.add(p)
    batch = d.next_batch(0, 10)
    assert {u.key: u.preempt for u in batch.units} == {
        "default/high": True,
        "default/equal": False,
        "default/never": False,
    }
    d.on_result(no_fit(batch))
    [ask] = d.take_preemption_asks()
    assert ask.unit == "default/high" and ask.pods[0][1] == ["n1", "n2"]
    assert d.units["default/high"].state is PodState.PREEMPTING
    assert d.units["default/equal"].state is PodState.UNSCHEDULABLE
    assert d.stats.preemption_attempts == 1


def test_a_preemptor_waits_for_its_victims_then_is_tried_on_its_nominated_node():
    d = dispatcher()
    d.add(pod("high", 9))
    d.on_result(no_fit(d.next_batch(0, 10)))
    d.nominate("default/high", {"default/high": "n2"}, ["default/v1", "default/v2"])
    assert d.take_preemption_asks() == []
    waiting = d.next_batch(0, 10)
    assert waiting is None or not waiting.units
    assert not d.settled()  # waiting on the cluster, not done
    assert "Insufficient cpu" in d.unschedulable()["default/high"]
    d.forget(["default/v1"])
    assert d.units["default/high"].state is PodState.PREEMPTING
    d.forget(["default/v2"])  # the last victim gone: tried at once, backoff or not
    [unit] = d.next_batch(0, 10).units
    assert unit.nominated == ["n2"]
    assert (d.stats.preemptions, d.stats.victims) == (1, 2)


def test_no_victims_leaves_the_unit_unschedulable_counted_once():
    d = dispatcher()
    d.add(pod("high", 9))
    d.on_result(no_fit(d.next_batch(0, 10)))
    d.no_victims("default/high")
    unit = d.units["default/high"]
    assert unit.state is PodState.UNSCHEDULABLE and unit.attempts == 1
    assert d.take_preemption_asks() == []


def test_victims_that_never_go_do_not_hold_the_preemptor_forever():
    clock = Clock()
    d = dispatcher(clock)
    d.add(pod("high", 9))
    d.on_result(no_fit(d.next_batch(0, 10)))
    d.nominate("default/high", {"default/high": "n1"}, ["default/stuck"])
    clock.now += d.unschedulable_timeout_s
    [unit] = d.next_batch(0, 10).units
    assert unit.key == "default/high" and unit.nominated == ["n1"]


def test_a_preemptor_deleted_while_it_waits_leaves_the_queue():
    d = dispatcher()
    d.add(pod("high", 9))
    d.on_result(no_fit(d.next_batch(0, 10)))
    d.nominate("default/high", {"default/high": "n1"}, ["default/v"])
    d.forget(["default/high"])
    assert d.units == {} and d.settled()
    d.forget(["default/v"])  # its victim's deletion, later, touches nothing


def test_a_profile_without_default_preemption_never_asks():
    d = Dispatcher(
        Backoff(1.0, 10.0),
        clock=Clock(),
        lowest_bound_priority=lambda: 0,
        preemptive_profiles=frozenset({"preempting-scheduler"}),
    )
    d.add(pod("high", 9))  # default-scheduler: DefaultPreemption is off there
    d.add(pod("other", 9, schedulerName="preempting-scheduler"))
    batch = d.next_batch(0, 10)
    assert {u.key: u.preempt for u in batch.units} == {
        "default/high": False,
        "default/other": True,
    }


def test_the_standing_says_what_came_of_preemption():
    d = dispatcher(floor=5)
    for p in (pod("high", 9), pod("equal", 5), pod("never", 9, preemptionPolicy="Never")):
        d.add(p)
    assert d.held("default/high").standing.preemption == "not tried: no attempt has failed yet"
    d.on_result(no_fit(d.next_batch(0, 10)))
    high = d.held("default/high").standing
    assert high.state == "preempting"
    assert high.preemption == "looking for victims on the 2 nodes where evicting pods may help"
    d.no_victims("default/high")
    assert d.held("default/high").standing.preemption.startswith(
        "tried on the 2 nodes where evicting pods might make room: no victims"
    )
    equal = d.held("default/equal").standing
    assert equal.preemption == "not tried: no bound pod has a priority below 5"
    never = d.held("default/never").standing
    assert never.preemption.startswith("not allowed: preemptionPolicy Never")
    d.add(pod("later", 9))
    d.on_result(no_fit(d.next_batch(0, 10)))
    d.nominate("default/later", {"default/later": "n2"}, ["default/v1"])
    assert d.held("default/later").standing.preemption == "1 victims evicted; room held on n2"
