"""optimist's shard plugins judged against kube-scheduler v1.30's own, through the oracle.

Hypothesis draws clusters as the API server holds them (tests/oracle/clusters.py):
nodes with hostname, zone and region labels, taints of every effect, extended
resources, images and cordons; namespaces with labels; pods bound there,
committed or only assumed by the shard, with requests, host ports, pod
(anti-)affinity and claims; storage classes, PersistentVolumes, claims and CSINodes
(tests/oracle/storage.py); an incoming pod using nearly every field the plugins
read; a KubeSchedulerConfiguration, default or with args, weights and plugins changed.
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
from collections.abc import Collection
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings

from cluster.errors import InvalidObject
from cluster.inventory import BoundPods
from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.objects import Pod
from cluster.profile_config import ProfileConfig
from cluster.store import Delta
from cluster.volumes.index import CLAIMS, CLASSES, CSI_NODES, VOLUMES, VolumeIndex
from cluster.volumes.resolve import (
    NODE_VOLUME_LIMITS,
    VOLUME_BINDING,
    VOLUME_RESTRICTIONS,
    VOLUME_ZONE,
    VolumeResolver,
)
from cluster.workload_selectors import WorkloadSelectors, workload_selector_from_manifest
from optimist.configuration import ConfigError, parse_configuration
from shards.class_state import ClassState
from shards.framework import PodClass, Profile
from shards.node_table import NodeTable
from shards.plugins import build_profile
from shards.testing import commit_volumes, every, table_of
from tests.oracle import Oracle, OracleError, Verdict
from tests.oracle.clusters import Case, cases

PARITY = settings(
    max_examples=int(os.environ.get("OPTIMIST_PARITY_EXAMPLES", "240")),
    derandomize=os.environ.get("OPTIMIST_PARITY_RANDOM") != "1",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)


VOLUME_PLUGINS = {VOLUME_RESTRICTIONS, VOLUME_BINDING, VOLUME_ZONE, NODE_VOLUME_LIMITS}
RESOURCES = {
    "PersistentVolumeClaim": CLAIMS,
    "PersistentVolume": VOLUMES,
    "StorageClass": CLASSES,
    "CSINode": CSI_NODES,
}


def resolver(case: Case, config: ProfileConfig) -> VolumeResolver:
    """The pods' volumes as the control process resolves them: the case's claims, volumes,
    classes and CSINodes, and which bound pods use which claim."""
    index = VolumeIndex()
    for manifest in case.storage:
        index.apply(RESOURCES[manifest["kind"]], manifest)
    bound = BoundPods()
    for manifest, _ in case.bound:
        pod = pod_from_manifest(manifest)
        bound.add(pod, pod.node_name)
    return VolumeResolver(index, {config.scheduler_name: frozenset(config.filters)}, bound.using)


def shard_table(case: Case, volumes: VolumeResolver) -> NodeTable:
    """The nodes (with their attach limits) and namespaces as a shard syncs them; each bound
    pod either committed (in the store's usage, ports, peers and volumes) or assumed by
    this shard."""
    table = table_of([volumes.index.limited(node_from_manifest(n)) for n in case.nodes])
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in case.namespaces}
    empty = np.zeros(0, np.int64)
    table.apply(Delta(2, [], empty, np.zeros((0, 0), np.int64), namespaces=labels))
    pods = [(volumes.resolved(pod_from_manifest(m)), committed) for m, committed in case.bound]
    attached: dict[str, Counter[tuple[str, str]]] = {}
    for pod, committed in pods:  # a node's volumes come with its sync, before the rest
        if committed and pod.attached:
            on = table.counted_on(table.index[pod.node_name], pod.attached)
            attached.setdefault(pod.node_name, Counter()).update((v.key, v.volume) for v in on)
    for name, counts in attached.items():
        commit_volumes(table, name, [(key, v, n) for (key, v), n in counts.items()])
    for pod, committed in pods:
        cls = PodClass.compile(pod.spec, table)
        row = table.index[pod.node_name]
        if committed:
            table.used[row, : len(cls.request)] += cls.request
            table.ports.setdefault(row, Counter()).update(cls.ports)
            table.peer_pods[row, cls.peer] += 1
        else:
            table.assume(row, cls.request, cls.ports, cls.peer, volumes=pod.attached)
    return table


def judged(pod: Pod, table: NodeTable) -> PodClass:
    """The pod's class as a shard judges it: with its own volumes where it shares one a
    node has already (`ShardCore._state_for`)."""
    cls = PodClass.compile(pod.spec, table)
    if any(table.volumes.rows_with(v.volume) for v in pod.attached):
        return replace(cls, attach=pod.attached)
    return cls


def ask(oracle: Oracle, case: Case) -> Verdict:
    return oracle.judge(
        case.configuration,
        case.nodes,
        [manifest for manifest, _ in case.bound],
        case.namespaces,
        case.pod,
        workloads=case.workloads,
        storage=case.storage,
    )


def selected(case: Case, pod: Pod) -> Pod:
    """The pod as optimist takes it: with the selector of what selects it among the case's
    Services and controllers."""
    selectors = WorkloadSelectors()
    for workload in case.workloads:
        selectors.put(workload_selector_from_manifest(workload))
    return selectors.with_spread_selector(pod)


def in_upstream_words(reason: str, upstream: Collection[str]) -> str:
    """A reason as upstream words it: where optimist adds which object is at fault (a
    claim's class that is not there), it does so after upstream's words, in brackets."""
    return next((words for words in upstream if reason.startswith(f"{words} (")), reason)


def agree_on_filters(
    verdict: Verdict, profile: Profile, pod: PodClass, table: NodeTable, bare: NodeTable
) -> None:
    """Each of optimist's Filter plugins, alone, as upstream's alone: nodes and reasons.
    One that says it reads node specs only (not `dynamic`) must say the same on `bare`,
    the same nodes without their pods, as the shard's cache of static answers assumes."""
    rows = every(table)
    bare_pod = PodClass.compile(pod.spec, bare)
    refused = pod.spec.volumes.rejected_by if pod.spec.volumes is not None else ""
    for plugin in profile.filters:
        if refused and plugin.name in VOLUME_PLUGINS and plugin.name != refused:
            continue  # never run: the cycle ends at the volume PreFilter that refused the pod
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
        said = plugin.reasons(pod, table, np.array(explained, np.intp))
        assert Counter({in_upstream_words(r, want): n for r, n in said.items()}) == want, (
            plugin.name
        )
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
    if state.single:  # one node named by a filter: taken unscored, as upstream takes it
        return
    totals = {table.names[r]: int(state.scores[r]) for r in feasible}
    assert totals == verdict.totals


def agree(oracle: Oracle, case: Case, state: ClassState, bare: NodeTable) -> int:
    """Both judge the case; the row optimist picks, -1 where the pod fits nowhere."""
    verdict = ask(oracle, case)
    agree_on_filters(verdict, state.profile, state.pod, state.table, bare)
    needs = state.pod.spec.volumes
    if verdict.prefilter.plugin in VOLUME_PLUGINS:  # the same plugin first, in its words
        assert needs is not None and needs.rejected_by == verdict.prefilter.plugin
        reasons = verdict.prefilter.reasons
        assert (in_upstream_words(needs.rejection, reasons),) == reasons
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
        pod = selected(case, pod_from_manifest(case.pod))
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
    # reports as inactive at that point (the in-tree volume limits, which v1.30 counts up
    # to 39 disks a node: more than a case has), which pass every node unless a PreFilter
    # refused the pod already
    assert tuple(n for n in verdict.filters if n not in inactive) == config.filters
    assert tuple(s for s in verdict.scorers if s[0] not in unscored) == config.scorers
    for name in inactive & set(verdict.filters):
        assert all(s.passed for s in verdict.alone[name].values()) or not verdict.prefilter.passed

    if pod.spec.spread_selector is not None:
        event("spread by the profile's default constraints, if it has any")
    if case.storage:
        event("with volumes")
    volumes = resolver(case, config)
    pod = volumes.resolved(pod)
    if pod.spec.volumes is not None and pod.spec.volumes.rejected_by:
        event(f"refused by {pod.spec.volumes.rejected_by}'s PreFilter")
    if pod.spec.volumes is not None and pod.spec.volumes.shared:
        event("claims that may take the same volume, matched together")
    table = shard_table(case, volumes)
    state = ClassState(judged(pod, table), build_profile(config), table)
    bare = shard_table(replace(case, bound=[]), volumes)
    row = agree(oracle, case, state, bare)
    event(f"feasible nodes: {len(verdict.feasible)} of {len(case.nodes)}")
    if row < 0:
        return
    if case.storage:
        event("with volumes, placed")
    # placed where optimist put it (assumed, as the shard does), with the claims it names,
    # then asked again: the class's state catches up on the row it took, unless what its
    # volumes ask changed with it (a ReadWriteOncePod claim now in use: another class) or
    # a node now has a volume it attaches (judged alone, as the shard judges it)
    claims = [v for v in case.pod["spec"].get("volumes", ()) if "persistentVolumeClaim" in v]
    placed = {
        "metadata": {**case.pod["metadata"], "name": "placed", "uid": "placed"},
        "spec": {**case.pod["spec"], "nodeName": table.names[row], "volumes": claims},
    }
    case.bound.append((placed, False))
    held = volumes.resolved(pod_from_manifest(placed)).attached
    table.assume(row, state.pod.request, state.pod.ports, state.pod.peer, volumes=held)
    again = resolver(case, config).resolved(selected(case, pod_from_manifest(case.pod)))
    judged_again = judged(again, table)
    if again.spec == pod.spec and judged_again.attach == state.pod.attach:
        state.took(row)
    else:
        event("judged apart once placed")
        state = ClassState(judged_again, build_profile(config), table)
    agree(oracle, case, state, bare)
