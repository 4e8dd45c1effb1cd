from dataclasses import replace

from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, PodPlacement, ShardResult, UnitOutcome
from cluster.objects import POD_GROUP_LABEL, PodGroup
from dispatcher.dispatcher import Dispatcher
from dispatcher.queue import Backoff


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def member(name, group="train"):
    return pod_from_manifest(
        {
            "metadata": {"name": name, "labels": {POD_GROUP_LABEL: group}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }
    )


def test_gang_waits_for_min_member_then_goes_whole():
    d = Dispatcher()
    d.add_group(PodGroup("default", "train", min_member=3))
    d.add(member("a"))
    d.add(member("b"))
    assert d.next_batch(0, 10) is None  # two of three: nothing is tried, nothing held
    assert d.unschedulable() == dict.fromkeys(
        ["default/a", "default/b"], "waiting for PodGroup default/train: 2 of 3 pods exist"
    )
    d.add(member("c"))
    batch = d.next_batch(0, 10)
    [unit] = batch.units
    assert [p for p, _ in unit.pods] == ["default/a", "default/b", "default/c"]
    assert unit.min_member == 3
    assert d.unschedulable() == {}


def test_the_pods_waiting_for_their_gang_are_named_with_why_for_the_cluster():
    d = Dispatcher()
    d.add_group(PodGroup("default", "train", min_member=3))
    d.add(member("a"))
    d.add(member("x", group="nowhere"))
    assert d.gang_waits({"default/train"}) == {
        "default/a": "waiting for PodGroup default/train: 1 of 3 pods exist"
    }
    assert d.gang_waits({"default/nowhere", "default/other"}) == {
        "default/x": "waiting for PodGroup default/nowhere, which does not exist"
    }
    d.add(member("b"))
    d.add(member("c"))
    assert d.gang_waits({"default/train"}) == {}  # complete: a unit, no longer waiting


def test_group_arriving_after_its_pods_completes_the_gang():
    d = Dispatcher()
    for name in "ab":
        d.add(member(name))
    assert "does not exist" in d.unschedulable()["default/a"]
    d.add_group(PodGroup("default", "train", min_member=2))
    assert len(d.next_batch(0, 10).units) == 1


def test_later_pods_of_a_running_gang_go_one_by_one():
    d = Dispatcher()
    d.add_group(PodGroup("default", "train", min_member=2))
    d.add(member("a"))
    d.add(member("b"))
    batch = d.next_batch(0, 10)
    d.add(member("late"))  # arrives while the gang is tried: it waits
    assert d.next_batch(1, 10) is None
    [unit] = batch.units
    placed = [Decision(unit.key, [PodPlacement(p, c, ["n"], [1]) for p, c in unit.pods])]
    d.on_result(ShardResult(0, batch.batch_id, 1, placed))
    d.on_outcomes(batch.batch_id, [UnitOutcome(unit.key, "bound", ["n", "n"])])
    [alone] = d.next_batch(1, 10).units
    assert alone.pods == [("default/late", 0)] and alone.min_member == 1


def test_gang_past_its_timeout_is_reported_as_timed_out():
    clock = Clock()
    d = Dispatcher(Backoff(1, 10), clock=clock)
    d.add_group(PodGroup("default", "train", min_member=2, schedule_timeout_s=30))
    d.add(member("a"))
    d.add(member("b"))
    clock.now = 31
    batch = d.next_batch(0, 10)
    [unit] = batch.units
    d.on_result(
        ShardResult(0, batch.batch_id, 1, [Decision(unit.key, [], {"Insufficient cpu": 2}, 2)])
    )
    reason = d.unschedulable()["default/a"]
    assert reason.startswith("PodGroup default/train not scheduled within 30s: 0/2 nodes")


def test_gang_pods_left_out_of_the_placement_go_alone_once_it_runs():
    d = Dispatcher()
    for name in "abc":
        d.add(member(name))
    d.add_group(PodGroup("default", "train", min_member=2))  # all three at hand: one unit
    batch = d.next_batch(0, 10)
    [unit] = batch.units
    assert unit.min_member == 2 and len(unit.pods) == 3
    two = [PodPlacement(p, c, ["n"], [1]) for p, c in unit.pods[:2]]
    d.on_result(ShardResult(0, batch.batch_id, 1, [Decision(unit.key, two)]))
    bound = d.on_outcomes(batch.batch_id, [UnitOutcome(unit.key, "bound", ["n", "n"])])
    assert sorted(b.pod.key for b in bound) == ["default/a", "default/b"]
    [alone] = d.next_batch(0, 10).units
    assert alone.pods == [("default/c", 0)]


def _c_fails_to_bind(min_member):
    """A gang a, b, c placed whole, whose binding of c fails: returns the dispatcher
    and the pods it reports bound."""
    d = Dispatcher()
    d.add_group(PodGroup("default", "train", min_member=min_member))
    for name in "abc":
        d.add(member(name))
    batch = d.next_batch(0, 10)
    [unit] = batch.units
    placements = [PodPlacement(p, c, ["n"], [1]) for p, c in unit.pods]
    d.on_result(ShardResult(0, batch.batch_id, 1, [Decision(unit.key, placements)]))
    outcome = UnitOutcome(unit.key, "partly-bound", ["n"] * 3, "boom", unbound=["default/c"])
    return d, [b.pod.key for b in d.on_outcomes(batch.batch_id, [outcome])]


def test_gang_short_of_min_member_after_a_failed_binding_retries_what_it_lacks():
    d, bound = _c_fails_to_bind(min_member=3)
    assert sorted(bound) == ["default/a", "default/b"]
    assert d.stats.bind_failures == 1
    [retry] = d.next_batch(0, 10).units
    assert retry.pods == [("default/c", 0)] and retry.min_member == 1
    assert retry.key.startswith("default/train#")  # still a gang: it does not run yet


def test_gang_with_min_member_bound_runs_despite_a_failed_binding():
    d, _ = _c_fails_to_bind(min_member=2)
    d.add(member("late"))
    units = d.next_batch(0, 10).units
    assert [(u.pods, u.min_member) for u in units] == [
        ([("default/c", 0)], 1),
        ([("default/late", 0)], 1),
    ]


def test_members_found_bound_by_a_leader_before_count_towards_the_gang_in_either_order():
    """A leader killed mid-gang bound three of four members: the next counts them, from
    the cluster, whether they, the PodGroup or the last member come first."""
    bound_first = Dispatcher()
    bound_first.running([replace(member(n), node_name="n") for n in "abc"])
    bound_first.add_group(PodGroup("default", "train", min_member=4))
    bound_first.add(member("d"))
    pending_first = Dispatcher()
    pending_first.add_group(PodGroup("default", "train", min_member=4))
    pending_first.add(member("d"))
    assert pending_first.next_batch(0, 10) is None  # one of four, so far as it knows
    pending_first.running([replace(member(n), node_name="n") for n in "abc"])
    for d in (bound_first, pending_first):
        [unit] = d.next_batch(0, 10).units
        assert unit.pods == [("default/d", 0)] and unit.min_member == 1
    assert bound_first.unschedulable() == pending_first.unschedulable() == {}


def test_deleted_members_no_longer_count_towards_a_gang():
    d = Dispatcher()
    d.add_group(PodGroup("default", "train", min_member=2))
    d.add(member("a"))
    d.forget(["default/a"])
    d.add(member("b"))
    assert d.next_batch(0, 10) is None
    assert set(d.unschedulable()) == {"default/b"}


def test_queued_gang_that_loses_a_member_waits_again():
    d = Dispatcher()
    d.add_group(PodGroup("default", "train", min_member=2))
    d.add(member("a"))
    d.add(member("b"))
    d.forget(["default/b"])
    assert d.next_batch(0, 10) is None
    assert d.unschedulable() == {
        "default/a": "waiting for PodGroup default/train: 1 of 2 pods exist"
    }
    d.add(member("c"))
    [unit] = d.next_batch(0, 10).units
    assert [p for p, _ in unit.pods] == ["default/a", "default/c"]


def test_pods_arriving_while_their_gang_is_tried_say_so():
    d = Dispatcher()
    d.add_group(PodGroup("default", "train", min_member=2))
    for name in ("a", "b", "late"):
        d.add(member(name))
    assert d.unschedulable() == {
        "default/late": "waiting for PodGroup default/train: a gang of its pods is being scheduled"
    }
    batch = d.next_batch(0, 10)
    [unit] = batch.units
    refused = Decision(unit.key, [], {"Insufficient cpu": 3}, 3)
    d.on_result(ShardResult(0, batch.batch_id, 0, [refused]))
    assert d.unschedulable()["default/late"] == (
        "waiting for PodGroup default/train: a gang of its pods failed: "
        "0/3 nodes are available: 3 Insufficient cpu."
    )


def test_shard_rollbacks_busy_time_and_refused_gangs_are_counted():
    d = Dispatcher()
    d.add_group(PodGroup("default", "train", min_member=2))
    d.add(member("a"))
    d.add(member("b"))
    d.add(replace(member("solo"), group=""))  # no gang: a unit of its own
    batch = d.next_batch(3, 10)
    gang, solo = sorted(batch.units, key=lambda u: -len(u.pods))
    assert (len(gang.pods), len(solo.pods)) == (2, 1)
    decisions = [
        Decision(u.key, [PodPlacement(p, c, ["n"], [1]) for p, c in u.pods]) for u in batch.units
    ]
    result = ShardResult(3, batch.batch_id, 1, decisions, sync_s=0.25, decide_s=0.5, rollbacks=2)
    d.on_result(result)
    assert d.stats.shard_rollbacks == 2
    assert d.stats.busy_s_by_shard == {3: 0.75}
    # the store refuses both as conflicts: only the two-pod unit had a placement undone
    d.on_outcomes(
        batch.batch_id,
        [UnitOutcome(gang.key, "conflict", detail="x"), UnitOutcome(solo.key, "conflict")],
    )
    assert d.stats.conflicts == 2 and d.stats.commit_rollbacks == 1
