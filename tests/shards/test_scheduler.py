"""A shard's cycle (ShardCore) against a real store, without Ray."""

import itertools
from typing import ClassVar

import numpy as np
import pytest

from cluster.events import ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE
from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.messages import Decision, PodPlacement, ShardBatch, UnitRequest
from shards.framework import Profile
from shards.scheduler import ShardCore
from shards.testing import default_profile, node, pod_spec

_ids = itertools.count(1)


def batch(specs, units, resolved=()):
    """units: list of lists of class indices, one list per unit."""
    return ShardBatch(
        next(_ids),
        specs,
        [
            UnitRequest(f"u{i}", [(f"ns/u{i}-{j}", c) for j, c in enumerate(u)], len(u))
            for i, u in enumerate(units)
        ],
        list(resolved),
    )


def spec(cpu):
    return pod_from_manifest(pod_spec({"cpu": cpu, "memory": "1Mi"})).spec


def test_places_every_pod_and_spreads_by_least_allocated(store):
    store.put_nodes([node(f"n{i}", cpu="1") for i in range(4)])
    core = ShardCore(0, store, [default_profile()], seed=1)
    result = core.handle(batch([spec("500m")], [[0]] * 8))
    nodes = [d.placements[0].nodes[0] for d in result.decisions]
    assert all(d.placed for d in result.decisions)
    assert sorted(nodes) == sorted([f"n{i}" for i in range(4)] * 2)  # two per node, spread
    assert result.store_version == store.version()
    assert all(d.placements[0].versions == [result.store_version] for d in result.decisions)


def test_unit_is_placed_whole_or_not_at_all(store):
    store.put_nodes([node("a", cpu="1"), node("b", cpu="1")])
    core = ShardCore(0, store, [default_profile()], seed=1)
    result = core.handle(batch([spec("800m")], [[0, 0, 0]]))
    [decision] = result.decisions
    assert not decision.placed
    assert decision.summary() == "0/2 nodes are available: 2 Insufficient cpu."
    # the filter that said no, and the events that can change its mind (QueueingHints)
    assert decision.plugins == ["NodeResourcesFit"]
    assert decision.events == sorted([ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE])
    assert result.rollbacks == 1  # two pods were placed in the table, then taken out
    # nothing of the failed unit stays assumed: a two-pod unit still fits
    again = core.handle(batch([spec("800m")], [[0, 0]]))
    assert again.decisions[0].placed and again.rollbacks == 0  # counted once, per result
    # a unit none of whose pods fit had nothing to undo
    assert core.handle(batch([spec("800m")], [[0, 0]])).rollbacks == 0


def test_assumptions_last_until_resolved_then_committed_truth_takes_over(store):
    store.put_nodes([node("a", cpu="1")])
    core = ShardCore(0, store, [default_profile()], seed=1)
    first = batch([spec("600m")], [[0]])
    placed = core.handle(first).decisions
    assert placed[0].placed
    assert not core.handle(batch([spec("600m")], [[0]])).decisions[0].placed  # assumed
    store.commit(first.classes, placed)
    # resolved: the shard forgets its assumption and sees the commit instead
    assert (
        not core.handle(batch([spec("600m")], [[0]], resolved=[first.batch_id])).decisions[0].placed
    )
    store.release([placed[0].unit])
    assert core.handle(batch([spec("600m")], [[0]])).decisions[0].placed


def test_sees_other_shards_commits_by_delta(store):
    store.put_nodes([node("a", cpu="1"), node("b", cpu="1")])
    core = ShardCore(0, store, [default_profile()], seed=1)
    core.handle(batch([], []))
    other = ShardCore(1, store, [default_profile()], seed=2)
    b = batch([spec("1")], [[0]])
    decisions = other.handle(b).decisions
    store.commit(b.classes, decisions)
    taken = decisions[0].placements[0].nodes[0]
    result = core.handle(batch([spec("1")], [[0]]))
    assert result.decisions[0].placements[0].nodes[0] != taken


def test_same_seed_same_choices(store):
    store.put_nodes([node(f"n{i}") for i in range(50)])

    def choices(seed):
        core = ShardCore(0, store, [default_profile()], seed=seed)
        return [
            d.placements[0].nodes[0]
            for d in core.handle(batch([spec("100m")], [[0]] * 20)).decisions
        ]

    assert choices(7) == choices(7)
    assert choices(7) != choices(8)


def test_new_extended_resource_column_appears_with_its_node(store):
    store.put_nodes([node("cpu-only")])
    core = ShardCore(0, store, [default_profile()], seed=1)
    gpu_pod = pod_from_manifest(pod_spec({"cpu": "1", "nvidia.com/gpu": "1"})).spec
    assert not core.handle(batch([gpu_pod], [[0]])).decisions[0].placed
    store.put_nodes([node("gpu", gpus=8)])
    assert core.handle(batch([gpu_pod], [[0]])).decisions[0].placements[0].nodes == ["gpu"]


def test_many_nodes_with_a_new_resource_add_one_column(store):
    store.put_nodes([node(f"g{i}", gpus=2) for i in range(50)])
    core = ShardCore(0, store, [default_profile()], seed=1)
    core.handle(batch([spec("1")], []))
    assert len(core.table.columns) == len(set(core.table.columns))


def test_each_node_with_a_resource_of_its_own_gets_the_pods_that_ask_for_it(store):
    """scheduler_perf's extended-resource case: a column per node, many more columns
    than a plugin picks, so the table gathers the picked cells alone; each pod goes to
    the one node with its resource, and a second pod asking for it fits nowhere."""
    store.put_nodes(
        [
            node_from_manifest(
                {
                    "metadata": {"name": f"n{i}"},
                    "status": {"allocatable": {"cpu": "4", "pods": "110", f"foo.com/bar-{i}": "1"}},
                }
            )
            for i in range(80)
        ]
    )
    core = ShardCore(0, store, [default_profile()], seed=1)
    asks = [
        pod_from_manifest(pod_spec({"cpu": "1", f"foo.com/bar-{i}": "1"})).spec for i in (7, 63)
    ]
    decisions = core.handle(batch(asks, [[0], [1], [0]])).decisions
    assert len(core.table.columns) > 80
    assert [d.placements[0].nodes[:1] if d.placed else [] for d in decisions] == [
        ["n7"],
        ["n63"],
        [],
    ]


def test_a_committed_unit_is_not_counted_twice(store):
    # The shard syncs the commit before the dispatcher says the batch is settled:
    # the unit must count once (in the store's usage), not also as an assumption.
    store.put_nodes([node("a", cpu="1")])
    core = ShardCore(0, store, [default_profile()], seed=1)
    first = batch([spec("400m")], [[0]])
    placed = core.handle(first).decisions
    store.commit(first.classes, placed)
    assert core.handle(batch([spec("600m")], [[0]])).decisions[0].placed


def test_shards_see_other_shards_pods_by_peer(store):
    # topology spreading and inter-pod affinity count pods by kind on every node
    store.put_nodes([node("a", cpu="1"), node("b", cpu="1")])
    web = pod_from_manifest(
        {
            "metadata": {"name": "w", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "400m"}}}]},
        }
    ).spec
    placer, watcher = (ShardCore(i, store, [default_profile()], seed=i) for i in (1, 2))
    b = batch([web], [[0], [0]])
    decisions = placer.handle(b).decisions
    store.commit(b.classes, decisions)
    watcher.handle(batch([], []))
    table = watcher.table
    col = table.peer_col[web.peer.id]
    assert table.peers[col].labels == (("app", "web"),) and table.peers[col].namespace == "shop"
    nodes = [d.placements[0].nodes[0] for d in decisions]
    expected = [nodes.count(name) for name in table.names]
    assert (
        table.pods_of(np.array([c == col for c in range(len(table.peers))]), slice(0, 2)).tolist()
        == expected
    )
    store.release([decisions[0].unit])
    watcher.handle(batch([], []))
    assert int(table.peer_pods[:, col].sum()) == 1


def test_offers_ranked_candidates_for_the_binder(store):
    # n0 is busiest, n3 emptiest: LeastAllocated ranks n3, n2, n1
    store.put_nodes([node(f"n{i}", cpu="4") for i in range(4)])
    b = batch([spec("1"), spec("3"), spec("2"), spec("1")], [[1], [2], [3]])
    first = ShardCore(1, store, [default_profile()], seed=1)
    decisions = first.handle(b).decisions
    store.commit(b.classes, decisions)
    core = ShardCore(0, store, [default_profile()], seed=1, candidates=3)
    [decision] = core.handle(batch([spec("100m")], [[0]])).decisions
    [placement] = decision.placements
    assert len(set(placement.nodes)) == 3 and len(placement.versions) == 3
    free = {n: 4000 - store.usage(n).get("cpu", 0) for n in ("n0", "n1", "n2", "n3")}
    ranked = sorted(free, key=lambda n: -free[n])
    assert placement.nodes == ranked[:3]


def test_a_gang_keeps_what_fits_when_at_least_min_member_do(store):
    store.put_nodes([node("a", cpu="3")])  # room for three 1-CPU pods
    core = ShardCore(0, store, [default_profile()], seed=1)
    gang = ShardBatch(
        next(_ids), [spec("1")], [UnitRequest("g", [(f"ns/g{i}", 0) for i in range(4)], 3)]
    )
    [decision] = core.handle(gang).decisions
    assert [p.pod for p in decision.placements] == ["ns/g0", "ns/g1", "ns/g2"]
    strict = ShardBatch(
        next(_ids), [spec("1")], [UnitRequest("h", [(f"ns/h{i}", 0) for i in range(4)], 4)]
    )
    core2 = ShardCore(1, store, [default_profile()], seed=1)
    [refused] = core2.handle(strict).decisions
    assert not refused.placed and refused.reasons == {"Insufficient cpu": 1}
    assert not core2.table.assumed.any()  # nothing of the refused gang stays assumed


def test_a_unit_refused_by_several_filters_waits_for_the_events_of_any(store):
    store.put_nodes([node("a", cpu="1", labels={"zone": "z1"}), node("b", cpu="8")])
    core = ShardCore(0, store, [default_profile()], seed=1)
    zoned = pod_from_manifest(pod_spec({"cpu": "2"}, nodeSelector={"zone": "z1"})).spec
    [decision] = core.handle(
        ShardBatch(next(_ids), [zoned], [UnitRequest("u", [("ns/u", 0)])])
    ).decisions
    assert decision.reasons == {
        "node(s) didn't match Pod's node affinity/selector": 1,
        "Insufficient cpu": 1,
    }
    assert decision.plugins == ["NodeAffinity", "NodeResourcesFit"]
    assert set(decision.events) == {ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE}


def test_a_gang_with_a_pod_of_an_unknown_profile_is_undone_whole(store):
    store.put_nodes([node("a", cpu="2")])
    core = ShardCore(0, store, [default_profile()], seed=1)
    other = pod_from_manifest(pod_spec({"cpu": "1"}, schedulerName="nobody")).spec
    gang = ShardBatch(
        next(_ids), [spec("1"), other], [UnitRequest("g", [("ns/g0", 0), ("ns/g1", 1)], 2)]
    )
    result = core.handle(gang)
    assert not result.decisions[0].placed and result.rollbacks == 1
    assert not core.table.assumed.any()  # the first pod's placement does not linger


def test_a_partitioned_shard_fills_its_own_nodes_first_then_the_rest(store):
    from cluster.node_partitions import node_partition

    names = [f"n{i}" for i in range(8)]
    store.put_nodes([node(n, cpu="1") for n in names])
    home = {n for n in names if node_partition(n, 2) == 1}
    assert 0 < len(home) < len(names)
    core = ShardCore(1, store, [default_profile()], seed=1, candidates=3, node_partitions=2)
    result = core.handle(batch([spec("1")], [[0]] * len(names)))
    chosen = [d.placements[0].nodes for d in result.decisions]
    first = [nodes[0] for nodes in chosen]
    assert set(first[: len(home)]) == home  # its own slice first, whatever the scores
    assert set(first) == set(names)  # then the others: a preference, not a wall
    # fallback candidates offered for a home placement are home nodes too, while any fit
    assert all(set(nodes) <= home for nodes in chosen[: len(home) - 2])


def test_pods_placed_with_deferred_catch_up_go_where_a_fresh_look_would_put_them():
    """A class's own placements are judged again only when a search window reaches
    them. Checked pod by pod against a fresh ClassState, which judges every row: the
    window is the same, and the chosen node is one of the best in it."""
    from optimist.settings import DEFAULT_PROFILE
    from shards.class_state import ClassState
    from shards.framework import PodClass
    from shards.plugins import build_profile
    from shards.testing import table_of

    # 600 small nodes: upstream's adaptive rule scores 42% of them per pod, and a few
    # pods fill a node, so rows drop out of the feasible set as the batch goes on
    nodes = [node(f"n{i:03}", cpu=str(1 + i % 3)) for i in range(600)]
    table = table_of(nodes)
    profile = build_profile(DEFAULT_PROFILE)
    pod = PodClass.compile(spec("700m"), table)
    state = ClassState(pod, profile, table)
    rng, start, lazy_catch_ups = np.random.default_rng(0), 0, 0
    for _ in range(900):
        fresh = ClassState(pod, profile, table)
        window, processed = fresh._window_of(start, None)
        caught_up = state.mark
        row, searched = state.best(rng, start)
        lazy_catch_ups += state.mark != caught_up
        assert searched == processed
        if row < 0:
            assert not fresh.feasible.any()
            break
        rows = np.arange(table.size) if window is None else window
        assert fresh.scores[row] == fresh.scores[rows].max() >= 0
        table.assume(row, pod.request, pod.ports, pod.peer)
        state.took(row)
        start = (start + searched) % table.size
    assert 0 < lazy_catch_ups < 900  # caught up now and then, not after every pod


def test_a_run_of_pods_decided_together_goes_where_each_would_go_alone():
    """`best_of_run` decides several pods of a class at once while their windows are
    apart; each choice and its runners-up are checked against a fresh ClassState."""
    from optimist.settings import DEFAULT_PROFILE
    from shards.class_state import ClassState
    from shards.framework import PodClass
    from shards.plugins import build_profile
    from shards.testing import table_of

    nodes = [node(f"n{i:03}", cpu=str(1 + i % 3)) for i in range(600)]
    table = table_of(nodes)
    profile = build_profile(DEFAULT_PROFILE)
    pod = PodClass.compile(spec("700m"), table)
    state = ClassState(pod, profile, table)
    rng, start, placed, together = np.random.default_rng(1), 0, 0, 0
    while placed < 1000:
        run = state.best_of_run(rng, start, 1000 - placed, 2)
        together += len(run) > 1
        for row, searched, runners in run:
            fresh = ClassState(pod, profile, table)
            window, processed = fresh._window_of(start, None)
            assert searched == processed
            if row < 0:
                assert not fresh.feasible.any()
                break
            scored = np.arange(table.size) if window is None else window
            ranked = sorted(fresh.scores[scored].tolist(), reverse=True)
            assert fresh.scores[row] == ranked[0] >= 0
            assert sorted(fresh.scores[runners].tolist(), reverse=True) == ranked[1:3]
            assert set(runners) <= set(scored.tolist()) - {row}
            table.assume(row, pod.request, pod.ports, pod.peer)
            state.took(row)
            start = (start + searched) % table.size
            placed += 1
        else:
            continue
        break
    assert together > 10  # most pods were decided in runs, not one by one


@pytest.mark.parametrize("one_in", [4, 20])  # more feasible nodes than a window, and fewer
def test_the_first_pod_of_a_class_judges_only_the_rows_its_search_goes_through(one_in):
    """A class's first search judges rows a window's worth at a time until enough are
    feasible, as upstream filters; its window and choice are a full judgement's."""
    from optimist.settings import DEFAULT_PROFILE
    from shards.class_state import ClassState
    from shards.framework import PodClass
    from shards.plugins import build_profile
    from shards.testing import table_of

    # few nodes are in rack "a": the search goes through several windows' worth
    nodes = [node(f"n{i:04}", labels={"rack": "ab"[i % one_in > 0]}) for i in range(5000)]
    table = table_of(nodes)
    profile = build_profile(DEFAULT_PROFILE)
    rng, start = np.random.default_rng(2), 0
    for i in range(40):
        manifest = pod_spec({"cpu": f"{100 + i}m"}, nodeSelector={"rack": "a"})
        pod = PodClass.compile(pod_from_manifest(manifest).spec, table)
        state, fresh = ClassState(pod, profile, table), ClassState(pod, profile, table)
        window, processed = fresh._window_of(start, None)
        if window is None:  # every feasible node is scored
            window = np.flatnonzero(fresh.feasible)
        row, searched = state.best(rng, start)
        assert (searched, row in set(window.tolist())) == (processed, True)
        assert fresh.scores[row] == fresh.scores[window].max()
        assert not state._judged  # it judged what it went through, not every row
        table.assume(row, pod.request, pod.ports, pod.peer)
        start = (start + searched) % table.size


def test_a_class_that_spans_nodes_searches_afresh_after_each_placement():
    """A spread pod moves its domain's count, so every row may answer anew after each
    placement: the class searches afresh from where the last search stopped, judging
    only the rows it goes through. Pod by pod against a fresh ClassState's window."""
    from optimist.settings import DEFAULT_PROFILE
    from shards.class_state import ClassState
    from shards.framework import PodClass
    from shards.plugins import build_profile
    from shards.testing import table_of

    zones = ["z1", "z1", "z2", "z3"]  # uneven: the skew bites in z1's direction
    nodes = [node(f"n{i:03}", cpu="2", labels={"zone": zones[i % 4]}) for i in range(600)]
    table = table_of(nodes)
    profile = build_profile(DEFAULT_PROFILE)
    manifest = pod_spec({"cpu": "300m"})
    manifest["metadata"]["labels"] = {"app": "web"}
    manifest["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 2,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    pod = PodClass.compile(pod_from_manifest(manifest).spec, table)
    state = ClassState(pod, profile, table)
    rng, start = np.random.default_rng(3), 0
    for placed in range(400):
        fresh = ClassState(pod, profile, table)
        window, processed = fresh._window_of(start, None)
        row, searched = state.best(rng, start)
        assert searched == processed
        if window is None:
            window = np.flatnonzero(fresh.feasible)
        assert row in set(window.tolist())
        # the best of the window, normalized over the window as upstream normalizes
        fresh._search(np.random.default_rng(0), start, None, None)
        scores = fresh._window_scores  # None: every feasible row was the window
        scores = fresh.scores[window] if scores is None else scores
        assert scores[list(window).index(row)] == scores.max()
        assert placed == 0 or not state._judged  # never judged every row to catch up
        table.assume(row, pod.request, pod.ports, pod.peer)
        state.took(row)
        start = (start + searched) % table.size


def test_a_pod_that_names_its_node_is_judged_on_that_node_alone():
    """A DaemonSet's pod names its node by `metadata.name` in a required term. As
    upstream's NodeAffinity PreFilterResult narrows the cycle, the shard judges that row
    alone, takes it without scoring a single candidate, and counts one node searched."""
    from collections import Counter

    from optimist.settings import DEFAULT_PROFILE
    from shards.class_state import ClassState
    from shards.framework import FilterPlugin, PodClass, ScorePlugin
    from shards.plugins import build_profile
    from shards.testing import table_of

    class Seen(FilterPlugin, ScorePlugin):
        """Passes every node, and says how many rows each call was given."""

        name = "Seen"
        dynamic = False
        sizes: ClassVar[list[int]] = []

        def filter(self, pod, table, rows):
            self.sizes.append(len(table.alive[rows]))
            return np.ones(len(table.alive[rows]), dtype=bool)

        def reasons(self, pod, table, rows):
            return Counter()

        def score(self, pod, table, rows):
            self.sizes.append(len(table.alive[rows]))
            return np.zeros(len(table.alive[rows]), dtype=np.int64)

    nodes = [node(f"n{i:04}") for i in range(2000)]
    table = table_of(nodes)
    upstream = build_profile(DEFAULT_PROFILE)
    seen = Seen()
    profile = Profile(upstream.name, [*upstream.filters, seen], [*upstream.scorers, (seen, 1)])
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1234"]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    manifest = pod_spec({"cpu": "100m"}, affinity=affinity)
    pod = PodClass.compile(pod_from_manifest(manifest).spec, table)
    state = ClassState(pod, profile, table)
    [(row, searched, runners)] = state.best_of_run(np.random.default_rng(0), 7, 1, 2)
    assert (table.names[row], searched, runners) == ("n1234", 1, [])
    assert Seen.sizes == [1]  # judged on the one candidate, and never scored
    for _ in range(3):  # the class's next pods, judged again where the last one went
        table.assume(row, pod.request, pod.ports, pod.peer)
        state.took(row)
        [(row, searched, runners)] = state.best_of_run(np.random.default_rng(0), 8, 3, 2)
        assert (table.names[row], searched, runners) == ("n1234", 1, [])
    assert set(Seen.sizes) == {1}
    # a second term that names another node: either node, judged on both alone
    other = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0005"]}]}
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ].append(other)
    pod = PodClass.compile(pod_from_manifest(manifest).spec, table)
    Seen.sizes.clear()
    row, searched = ClassState(pod, profile, table).best(np.random.default_rng(0), 7)
    assert (table.names[row] in {"n1234", "n0005"}, searched) == (True, 2)
    assert set(Seen.sizes) == {2}


def test_a_result_says_how_far_behind_the_store_the_shard_was(store):
    store.put_nodes([node(f"n{i}", cpu="1") for i in range(2)])
    core = ShardCore(0, store, [default_profile()], seed=1)
    first = core.handle(batch([spec("100m")], [[0]]))
    assert first.versions_behind == store.version() - 0 > 0  # a fresh shard starts at 0
    assert core.handle(batch([spec("100m")], [[0]])).versions_behind == 0  # nothing new
    store.put_nodes([node("n2", cpu="1")])
    store.put_nodes([node("n3", cpu="1")])
    assert core.handle(batch([spec("100m")], [[0]])).versions_behind == 2


def test_a_result_says_whether_its_sync_read_the_commit_log(store):
    store.put_nodes([node(f"n{i}", cpu="1") for i in range(2)])
    core = ShardCore(0, store, [default_profile()], seed=1)
    assert not core.handle(batch([spec("100m")], [[0]])).synced_from_log  # nodes added
    other = pod_from_manifest(pod_spec({"cpu": "100m"})).spec  # another shard's commit
    store.commit([other], [Decision("elsewhere", [PodPlacement("ns/x", 0, ["n1"], [0])])])
    assert core.handle(batch([spec("100m")], [[0]])).synced_from_log


def test_a_result_carries_each_pods_share_of_the_time_at_each_extension_point(store):
    store.put_nodes([node(f"n{i}", cpu="1") for i in range(4)])
    core = ShardCore(0, store, [default_profile()], seed=1)
    # a run of five alike pods, a unit of one that fits nowhere, a two-pod gang
    result = core.handle(batch([spec("100m"), spec("2")], [[0]] * 5 + [[1]] + [[0, 0]]))
    points, plugins = result.observed
    counts = {tuple(labels): sum(c) for labels, c, _ in points}
    assert counts == {
        ("Filter", "Success", "default-scheduler"): 7,
        ("Score", "Success", "default-scheduler"): 7,
        ("Filter", "Unschedulable", "default-scheduler"): 1,
        # judging its class scored every node: time spent, so observed
        ("Score", "Unschedulable", "default-scheduler"): 1,
    }
    assert all(total > 0 for labels, _, total in points if labels[0] == "Filter")
    # the first batch is sampled: every filter that ran was timed call by call
    timed = {(name, point) for (name, point, _), _, _ in plugins}
    assert ("NodeResourcesFit", "Filter") in timed and ("NodeResourcesFit", "Score") in timed
    # the next nine are not; what was sent is not sent again
    again = core.handle(batch([spec("100m")], [[0]]))
    assert again.observed[1] == []
    assert sum(sum(c) for _, c, _ in again.observed[0]) == 2  # Filter and Score, one pod


@pytest.mark.parametrize(
    ("manifest", "cpu", "reason"),
    [
        ({"nodeSelector": {"rack": "c"}}, "500m", "didn't match Pod's node affinity/selector"),
        ({}, "2", "Insufficient cpu"),
    ],
    ids=["no node it may go to", "no node with room"],
)
def test_a_pod_no_node_takes_is_unschedulable_where_only_some_nodes_are_searched(
    store, manifest, cpu, reason
):
    """Past a hundred nodes the first pod of a class is searched a window at a time
    (percentageOfNodesToScore); a search that finds no feasible node at all ends
    unschedulable, with the filters' reasons, never as the batch's failure (a
    DaemonSet's pod whose node was cordoned or went NotReady, in a day on 1,000
    nodes, failed every batch it was in)."""
    from optimist.settings import DEFAULT_PROFILE
    from shards.plugins import build_profile

    store.put_nodes([node(f"n{i:04}", cpu="1", labels={"rack": "ab"[i % 2]}) for i in range(1000)])
    profile = build_profile(DEFAULT_PROFILE)
    assert profile.percentage_of_nodes_to_score is None  # adaptive: 42% of 1,000 nodes
    core = ShardCore(0, store, [profile], seed=1)
    pod = pod_from_manifest(pod_spec({"cpu": cpu, "memory": "1Mi"}, **manifest)).spec
    [decision] = core.handle(batch([pod], [[0]])).decisions
    assert not decision.placed
    assert decision.reasons == {reason: 1000} or reason in decision.summary(), decision.reasons


def test_a_fault_met_on_one_unit_fails_it_alone_and_leaves_nothing_assumed(store):
    """A plugin that raises (a bug) on the pods labelled `faulty`: their unit fails with
    the fault as its reason, as upstream fails a pod whose plugin returned an error;
    the other units of the batch are placed, and a gang whose second pod met the fault
    leaves nothing of its first assumed."""
    from collections import Counter

    from shards.framework import FilterPlugin, Profile

    class Faulty(FilterPlugin):
        name = "Faulty"
        dynamic = True

        def filter(self, pod, table, rows):
            if ("faulty", "yes") in pod.spec.labels:
                raise RuntimeError("a bug")
            return np.ones(len(np.arange(table.size)[rows]), dtype=bool)

        def reasons(self, pod, table, rows):
            return Counter()

    base = default_profile()
    profile = Profile(base.name, [*base.filters, Faulty()], base.scorers)
    store.put_nodes([node(f"n{i}", cpu="1") for i in range(2)])
    core = ShardCore(0, store, [profile], seed=1)
    good = spec("400m")
    bad = pod_from_manifest(
        {**pod_spec({"cpu": "400m"}), "metadata": {"name": "p", "labels": {"faulty": "yes"}}}
    ).spec
    # a gang of a good pod and a faulty one, then two good pods (a run), then a faulty pod
    result = core.handle(batch([good, bad], [[0, 1], [0], [0], [1]]))
    gang, first, second, alone = result.decisions
    assert not gang.placed and not alone.placed
    assert gang.summary().endswith("RuntimeError: a bug (see the shard's log).")
    assert first.placed and second.placed
    # the gang's first pod is not assumed: each node holds one good pod and room for one
    again = core.handle(batch([good], [[0], [0]]))
    assert all(d.placed for d in again.decisions)
    assert sorted(d.placements[0].nodes[0] for d in again.decisions) == ["n0", "n1"]
