"""optimist's shard plugins judged against kube-scheduler v1.30's own, through the oracle.

Hypothesis draws clusters as the API server holds them (tests/oracle/clusters.py):
nodes with hostname, zone and region labels, taints of every effect, extended
resources, images and cordons; namespaces with labels; pods bound there,
committed or only assumed by the shard, with requests, host ports and pod
(anti-)affinity; an incoming pod using nearly every field the plugins read; a
KubeSchedulerConfiguration, default or with args, weights and plugins changed.
Upstream's framework (PreFilter, Filter, PreScore, Score, NormalizeScore) and
optimist's shard code must agree on every Filter plugin's verdict per node and
its reasons, on the feasible set, on every Score plugin's normalized score and
on the weighted total, and optimist must pick a node with upstream's highest
total; then the pod is placed where optimist put it and the same is asked again.

Seeded by default (the same examples every run); `make parity` runs a long,
random search. OPTIMIST_PARITY_EXAMPLES sets how many examples, and
OPTIMIST_PARITY_RANDOM=1 draws new ones.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings

from cluster.errors import InvalidObject
from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.objects import Pod
from cluster.store import Delta
from cluster.workload_selectors import WorkloadSelectors, workload_selector_from_manifest
from optimist.configuration import ConfigError, parse_configuration
from shards.class_state import ClassState
from shards.framework import PodClass, Profile
from shards.node_table import NodeTable
from shards.plugins import build_profile
from shards.testing import every, table_of
from tests.oracle import Oracle, OracleError, Verdict
from tests.oracle.clusters import Case, cases

PARITY = settings(
    max_examples=int(os.environ.get("OPTIMIST_PARITY_EXAMPLES", "150")),
    derandomize=os.environ.get("OPTIMIST_PARITY_RANDOM") != "1",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)


def shard_table(case: Case) -> NodeTable:
    """The nodes and namespaces as a shard syncs them; each bound pod either committed
    (in the store's usage, ports and peers) or assumed by this shard."""
    table = table_of([node_from_manifest(n) for n in case.nodes])
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in case.namespaces}
    empty = np.zeros(0, np.int64)
    table.apply(Delta(2, [], empty, np.zeros((0, 0), np.int64), namespaces=labels))
    for manifest, committed in case.bound:
        pod = pod_from_manifest(manifest)
        cls = PodClass.compile(pod.spec, table)
        row = table.index[pod.node_name]
        if committed:
            table.used[row, : len(cls.request)] += cls.request
            table.ports.setdefault(row, Counter()).update(cls.ports)
            table.peer_pods[row, cls.peer] += 1
        else:
            table.assume(row, cls.request, cls.ports, cls.peer)
    return table


def ask(oracle: Oracle, case: Case) -> Verdict:
    return oracle.judge(
        case.configuration,
        case.nodes,
        [manifest for manifest, _ in case.bound],
        case.namespaces,
        case.pod,
        workloads=case.workloads,
    )


def selected(case: Case, pod: Pod) -> Pod:
    """The pod as optimist takes it: with the selector of what selects it among the case's
    Services and controllers."""
    selectors = WorkloadSelectors()
    for workload in case.workloads:
        selectors.put(workload_selector_from_manifest(workload))
    return selectors.with_spread_selector(pod)


def agree_on_filters(
    verdict: Verdict, profile: Profile, pod: PodClass, table: NodeTable, bare: NodeTable
) -> None:
    """Each of optimist's Filter plugins, alone, as upstream's alone: nodes and reasons.
    One that says it reads node specs only (not `dynamic`) must say the same on `bare`,
    the same nodes without their pods, as the shard's cache of static answers assumes."""
    rows = every(table)
    bare_pod = PodClass.compile(pod.spec, bare)
    for plugin in profile.filters:
        upstream = verdict.alone[plugin.name]
        mask = plugin.filter(pod, table, rows)
        if not plugin.dynamic:
            assert np.array_equal(plugin.filter(bare_pod, bare, every(bare)), mask), plugin.name
        got = {n: bool(ok) for n, ok in zip(table.names, mask.tolist(), strict=True)}
        assert got == {n: s.passed for n, s in upstream.items()}, plugin.name
        # a node the plugin's PreFilter left out (NodeAffinity's matchFields on the name)
        # upstream never filters, so gives no reason; optimist names the plugin's reason
        explained = [table.index[n] for n, s in upstream.items() if s.reasons]
        want = Counter(r for s in upstream.values() for r in s.reasons)
        assert plugin.reasons(pod, table, np.array(explained, np.intp)) == want, plugin.name
        if plugin.preemptible:  # evicting pods can make it pass: upstream's Unschedulable
            assert {s.code for s in upstream.values() if not s.passed} <= {"Unschedulable"}


def agree_on_scores(verdict: Verdict, state: ClassState, bare: NodeTable) -> None:
    """The feasible set, every scorer's normalized score on it, and the totals; a scorer
    that reads specs only scores `bare` the same."""
    profile, pod, table = state.profile, state.pod, state.table
    bare_pod = PodClass.compile(pod.spec, bare)
    for plugin, _ in profile.scorers:
        if not plugin.dynamic:
            raw = plugin.score(bare_pod, bare, every(bare))
            assert np.array_equal(raw, plugin.score(pod, table, every(table))), plugin.name
    feasible = np.flatnonzero(state.feasible)
    names = [table.names[r] for r in feasible]
    assert sorted(names) == sorted(verdict.feasible)
    if not len(feasible):
        return
    for plugin, _ in profile.scorers:
        raw = plugin.score(pod, table, every(table))[feasible]
        normalized = plugin.normalize(pod, table, feasible, raw) if plugin.normalizes else raw
        upstream = verdict.normalized.get(plugin.name, {})  # absent: PreScore skipped it
        got = dict(zip(names, normalized.tolist(), strict=True))
        assert got == {n: upstream.get(n, 0) for n in names}, plugin.name
    totals = {table.names[r]: int(state.scores[r]) for r in feasible}
    assert totals == verdict.totals


def agree(oracle: Oracle, case: Case, state: ClassState, bare: NodeTable) -> int:
    """Both judge the case; the row optimist picks, -1 where the pod fits nowhere."""
    verdict = ask(oracle, case)
    agree_on_filters(verdict, state.profile, state.pod, state.table, bare)
    row, _ = state.best(np.random.default_rng(0), 0)
    agree_on_scores(verdict, state, bare)
    if verdict.totals:
        assert verdict.totals[state.table.names[row]] == max(verdict.totals.values())
    else:
        assert row < 0
    return row


@PARITY
@given(case=cases())
def test_plugins_agree_with_kube_scheduler(oracle: Oracle, case: Case) -> None:
    try:
        spec = selected(case, pod_from_manifest(case.pod)).spec
    except InvalidObject as refused:
        # a node selector value that is no label value: upstream takes the pod and then
        # skips the term or fails the attempt; optimist refuses it (docs/plugins.md, departures)
        assert "values" in refused.field, refused
        event("pod refused by optimist: a selector value that is no label value")
        return
    try:
        verdict = ask(oracle, case)
    except OracleError as refused:  # an invalid configuration: optimist refuses it too
        with pytest.raises(ConfigError):
            parse_configuration(json.dumps(case.configuration))
        note(str(refused))
        event("configuration refused by both")
        return
    configuration = parse_configuration(json.dumps(case.configuration))
    [config] = configuration.profiles
    inactive = {p.plugin for p in configuration.inactive if "Filter" in p.extension_points}
    unscored = {p.plugin for p in configuration.inactive if "Score" in p.extension_points}
    # the same plugins, in the same order, with the same weights, less those optimist
    # reports as inactive at that point (volumes), which pass every node for pods
    # without volumes
    assert tuple(n for n in verdict.filters if n not in inactive) == config.filters
    assert tuple(s for s in verdict.scorers if s[0] not in unscored) == config.scorers
    for name in inactive & set(verdict.filters):
        assert all(s.passed for s in verdict.alone[name].values()), name

    if spec.spread_selector is not None:
        event("spread by the profile's default constraints, if it has any")
    table = shard_table(case)
    state = ClassState(PodClass.compile(spec, table), build_profile(config), table)
    bare = shard_table(replace(case, bound=[]))
    row = agree(oracle, case, state, bare)
    event(f"feasible nodes: {len(verdict.feasible)} of {len(case.nodes)}")
    if row < 0:
        return
    # placed where optimist put it (assumed, as the shard does), then asked again: the
    # class's state catches up on the row it took
    placed = {
        "metadata": {**case.pod["metadata"], "name": "placed", "uid": "placed"},
        "spec": {**case.pod["spec"], "nodeName": table.names[row]},
    }
    case.bound.append((placed, False))
    table.assume(row, state.pod.request, state.pod.ports, state.pod.peer)
    state.took(row)
    agree(oracle, case, state, bare)
