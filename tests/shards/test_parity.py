"""Parity of the vectorized plugins with the plain references of kube-scheduler v1.30.

Hypothesis draws small clusters (labels from a small vocabulary, taints of
every effect, allocatable with an extended resource, images with sizes,
cordons, usage partly committed and partly assumed, host ports in use),
pods (requests or none, nodeSelector, required and preferred node affinity
with every operator and matchFields, tolerations, images, host ports,
nodeName) and plugin args. Every plugin with a reference must give the same
feasible nodes, raw scores and normalized scores as the reference, and a
full profile with upstream's default weights the same final scores, both
when the shard first judges the pod and after it placed one there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster.manifests import pod_from_manifest
from cluster.objects import ContainerImage, Node, SchedulingSpec, Taint
from cluster.profile_config import ProfileConfig
from shards.class_state import ClassState
from shards.framework import FilterPlugin, PodClass, ScorePlugin
from shards.node_table import NodeTable
from shards.plugins import REGISTRY, build_profile
from shards.testing import every, table_of
from tests.reference import REFERENCES, Cluster, profile_scores

MiB, GiB = 2**20, 2**30
GPU = "example.com/gpu"
NAMES = tuple(f"n{i}" for i in range(7))
LABEL_KEYS = ("zone", "disk", "cores")
LABEL_VALUES = ("a", "b", "ssd", "0", "7", "16", "0032")
INT_BOUNDS = ("-5", "0", "7", "16", "+3", "050")
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_KEYS = ("gpu", "spot", "dedicated")
TAINT_VALUES = ("", "true", "x")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NODE_IMAGES = (
    "nginx:latest",
    "nginx:1.25",
    "redis:7",
    "registry.io:5000/app:latest",
    "tool@sha256:ab12",
    "docker.io/library/busybox:latest",
)
POD_IMAGES = (
    "nginx",
    "nginx:1.25",
    "redis:7",
    "redis",
    "registry.io:5000/app",
    "tool@sha256:ab12",
    "docker.io/library/busybox",
)
PORTS = st.tuples(
    st.sampled_from(("TCP", "UDP")),
    st.sampled_from(("0.0.0.0", "10.0.0.1", "10.0.0.2")),
    st.sampled_from((80, 8080)),
)
# upstream's default profile, less the plugins that look at other pods
FILTERS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
)
SCORERS = (
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
)
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Scenario:
    nodes: list[Node]
    committed: dict[str, dict[str, int]]
    assumed: dict[str, dict[str, int]]  # this shard's own placements, not yet committed
    ports: dict[str, list[tuple[str, str, int]]]
    pod: SchedulingSpec
    args: dict[str, dict[str, Any]]

    def table(self) -> NodeTable:
        """The shard's table: committed usage synced, assumed usage on top."""
        table = table_of(self.nodes, self.committed)
        for name, amounts in self.assumed.items():
            table.ensure_columns(amounts)
            request = np.zeros(len(table.columns), dtype=np.int64)
            for resource, amount in amounts.items():
                request[table.col[resource]] = amount
            table.assume(table.index[name], request)
        for name, ports in self.ports.items():
            if ports:
                table.ports[table.index[name]] = Counter(ports)
        return table

    def cluster(self) -> Cluster:
        """What the reference sees: committed and assumed are both requested."""
        usage: dict[str, Counter[str]] = {n.name: Counter() for n in self.nodes}
        for part in (self.committed, self.assumed):
            for name, amounts in part.items():
                usage[name].update(amounts)
        return Cluster(self.nodes, usage, self.ports)

    def place(self, node: str) -> None:
        """The pod is placed on `node`, as the shard assumes it."""
        amounts = self.assumed.setdefault(node, {})
        for resource, amount in self.pod.requests:
            amounts[resource] = amounts.get(resource, 0) + amount
        self.ports.setdefault(node, []).extend(
            (p.protocol, p.bind_ip, p.port) for p in self.pod.host_ports
        )


# --- nodes ---------------------------------------------------------------------------------

# hypothesis favours small integers, zero above all: usual sizes are listed, odd ones drawn
allocatable = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from((8000, 4000, 2000, 0)) | st.integers(500, 8000),
        "memory": st.sampled_from((32 * GiB, 16 * GiB, 8 * GiB, 0)) | st.integers(GiB, 32 * GiB),
        "pods": st.sampled_from((110, 110, 110, 110, 3, 0)),
        "ephemeral-storage": st.sampled_from((100 * GiB, 50 * GiB, 0))
        | st.integers(GiB, 100 * GiB),
    },
    optional={GPU: st.sampled_from((4, 2, 0))},
)
usage = st.fixed_dictionaries(
    {},
    optional={
        "cpu": st.integers(0, 4000),
        "~cpu": st.integers(0, 5000),
        "memory": st.integers(0, 16 * GiB),
        "~memory": st.integers(0, 20 * GiB),
        "pods": st.integers(0, 3),
        "ephemeral-storage": st.integers(0, 60 * GiB),
        GPU: st.integers(0, 3),
    },
)
taints = st.lists(
    st.builds(
        Taint,
        st.sampled_from(TAINT_KEYS),
        st.sampled_from(TAINT_VALUES),
        st.sampled_from(EFFECTS),
    ),
    max_size=2,
).map(tuple)
images = st.lists(
    st.builds(
        ContainerImage,
        st.lists(st.sampled_from(NODE_IMAGES), min_size=1, max_size=2, unique=True).map(tuple),
        st.integers(0, 1500).map(lambda m: m * MiB),
    ),
    max_size=3,
).map(tuple)


# nodes without their names, which the scenario gives in order
node = st.builds(
    Node,
    name=st.just(""),
    allocatable=allocatable,
    labels=st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES)),
    taints=st.just(()) | taints,
    unschedulable=st.sampled_from((False,) * 5 + (True,)),
    images=images,
)
# a node, its committed usage, its assumed usage if any, its host ports in use
node_and_usage = st.tuples(node, usage, st.none() | usage, st.lists(PORTS, max_size=2))


# --- node selectors and affinity -----------------------------------------------------------

expression = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(LABEL_KEYS),
            "operator": st.sampled_from(("In", "NotIn")),
            "values": st.lists(st.sampled_from(LABEL_VALUES), min_size=1, max_size=3, unique=True),
        }
    ),
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(LABEL_KEYS),
            "operator": st.sampled_from(("Exists", "DoesNotExist")),
        }
    ),
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(LABEL_KEYS),
            "operator": st.sampled_from(("Gt", "Lt")),
            "values": st.sampled_from(INT_BOUNDS).map(lambda v: [v]),
        }
    ),
)
field_expression = st.fixed_dictionaries(
    {
        "key": st.just("metadata.name"),
        "operator": st.sampled_from(("In", "NotIn")),
        "values": st.sampled_from((*NAMES, "ghost")).map(lambda v: [v]),
    }
)
term = st.fixed_dictionaries(
    {
        "matchExpressions": st.lists(expression, max_size=2),
        "matchFields": st.lists(field_expression, max_size=1),
    }
)
required_terms = st.lists(term, min_size=1, max_size=2).map(lambda t: {"nodeSelectorTerms": t})
preferred_terms = st.lists(
    st.fixed_dictionaries({"weight": st.integers(1, 100), "preference": term}), max_size=3
)
node_affinity = st.fixed_dictionaries(
    {},
    optional={
        "requiredDuringSchedulingIgnoredDuringExecution": required_terms,
        "preferredDuringSchedulingIgnoredDuringExecution": preferred_terms,
    },
)

# --- pods ------------------------------------------------------------------------------------

core_requests = {
    "cpu": st.integers(0, 1500).map(lambda m: f"{m}m"),
    "memory": st.integers(0, 2048).map(lambda m: f"{m}Mi"),
}
requests = st.fixed_dictionaries({}, optional=core_requests) | st.fixed_dictionaries(
    {},
    optional={
        **core_requests,
        "ephemeral-storage": st.integers(0, 20).map(lambda g: f"{g}Gi"),
        GPU: st.integers(0, 2).map(str),
    },
)
host_ports = st.lists(
    st.fixed_dictionaries(
        {
            "hostPort": st.sampled_from((80, 8080)),
            "protocol": st.sampled_from(("TCP", "UDP")),
            "hostIP": st.sampled_from(("", "0.0.0.0", "10.0.0.1", "10.0.0.2")),
        }
    ).map(lambda p: {"containerPort": p["hostPort"], **p}),
    max_size=2,
)
container = st.fixed_dictionaries(
    {
        "name": st.just("c"),
        "image": st.sampled_from(POD_IMAGES),
        "resources": requests.map(lambda r: {"requests": r}),
        "ports": st.just([]) | host_ports,
    }
)
toleration = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from((*TAINT_KEYS, UNSCHEDULABLE)),
            "operator": st.just("Equal"),
            "value": st.sampled_from(TAINT_VALUES),
            "effect": st.sampled_from(("", *EFFECTS)),
        }
    ),
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(("", *TAINT_KEYS, UNSCHEDULABLE)),
            "operator": st.just("Exists"),
            "effect": st.sampled_from(("", *EFFECTS)),
        }
    ),
)
pod = st.fixed_dictionaries(
    {
        "containers": st.lists(container, min_size=1, max_size=2),
        "initContainers": st.lists(container, max_size=1),
        "nodeSelector": st.just({})
        | st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=1),
        "affinity": (st.just({}) | node_affinity).map(lambda a: {"nodeAffinity": a}),
        "tolerations": st.lists(toleration, max_size=3),
        "nodeName": st.just("") | st.just("") | st.sampled_from((*NAMES, "ghost")),
    }
).map(lambda spec: pod_from_manifest({"metadata": {"name": "p"}, "spec": spec}).spec)


# --- plugin args ---------------------------------------------------------------------------

resource_specs = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(("cpu", "memory", "ephemeral-storage", GPU, "pods")),
            "weight": st.integers(1, 5),
        }
    ),
    max_size=4,
    unique_by=lambda r: r["name"],
)
shape = st.lists(
    st.tuples(st.integers(0, 100), st.integers(0, 10)),
    min_size=1,
    max_size=4,
    unique_by=lambda p: p[0],
).map(lambda points: [{"utilization": u, "score": s} for u, s in sorted(points)])
strategy = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(("LeastAllocated", "MostAllocated")), "resources": resource_specs}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("RequestedToCapacityRatio"),
            "resources": resource_specs,
            "requestedToCapacityRatio": st.fixed_dictionaries({"shape": shape}),
        }
    ),
)
args = st.fixed_dictionaries(
    {
        "NodeResourcesFit": st.fixed_dictionaries(
            {"scoringStrategy": strategy},
            optional={
                "ignoredResources": st.just([GPU]),
                "ignoredResourceGroups": st.just(["example.com"]),
            },
        ),
        "NodeResourcesBalancedAllocation": st.fixed_dictionaries({"resources": resource_specs}),
        "NodeAffinity": st.just({}) | st.fixed_dictionaries({"addedAffinity": node_affinity}),
    }
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    # hypothesis favours few nodes; most scenarios should offer a choice
    drawn = [draw(node_and_usage) for _ in range(draw(st.sampled_from((7, 5, 3, 2, 1))))]
    scenario = Scenario([], {}, {}, {}, draw(pod), draw(args))
    for name, (spec, committed, assumed, ports) in zip(NAMES, drawn, strict=False):
        scenario.nodes.append(replace(spec, name=name))
        scenario.committed[name] = committed
        if assumed is not None:
            scenario.assumed[name] = assumed
        scenario.ports[name] = ports
    return scenario


# --- the properties ------------------------------------------------------------------------


@PROPERTY
@given(scenarios())
def test_every_plugin_matches_its_reference(scenario: Scenario) -> None:
    table, cluster, spec = scenario.table(), scenario.cluster(), scenario.pod
    pod = PodClass.compile(spec, table)
    bare = table_of(scenario.nodes)  # no usage: what a static plugin sees must not matter
    bare_pod = PodClass.compile(spec, bare)
    feasible = np.ones(table.size, dtype=bool)
    for name in FILTERS:
        plugin = REGISTRY[name](scenario.args.get(name, {}))
        assert isinstance(plugin, FilterPlugin)
        reference = REFERENCES[name](scenario.args.get(name, {})).filter
        assert reference is not None
        got = plugin.filter(pod, table, every(table))
        assert got.tolist() == [reference(cluster, n, spec) for n in scenario.nodes], name
        if not plugin.dynamic:
            assert np.array_equal(plugin.filter(bare_pod, bare, every(bare)), got), name
        if not got.all():
            assert plugin.reasons(pod, table, np.flatnonzero(~got)), name
        feasible &= got
    for name, _ in SCORERS:
        plugin = REGISTRY[name](scenario.args.get(name, {}))
        assert isinstance(plugin, ScorePlugin)
        ref = REFERENCES[name](scenario.args.get(name, {}))
        assert ref.score is not None and plugin.normalizes == (ref.normalize is not None), name
        raw = plugin.score(pod, table, every(table))
        want = [ref.score(cluster, n, spec) for n in scenario.nodes]
        assert raw.tolist() == want, name
        if not plugin.dynamic:
            assert np.array_equal(plugin.score(bare_pod, bare, every(bare)), raw), name
        kept = [w for w, ok in zip(want, feasible, strict=True) if ok]
        normalized = (
            plugin.normalize(pod, table, np.flatnonzero(feasible), raw[feasible])
            if plugin.normalizes
            else raw[feasible]
        )
        assert normalized.tolist() == (ref.normalize(kept) if ref.normalize else kept), name


def _final(state: ClassState, table: NodeTable) -> dict[str, int]:
    return {table.names[i]: int(state.scores[i]) for i in np.flatnonzero(state.feasible)}


@PROPERTY
@given(scenarios())
def test_profile_matches_reference_before_and_after_a_placement(scenario: Scenario) -> None:
    profile = build_profile(ProfileConfig("parity", FILTERS, SCORERS, scenario.args, 100))
    table = scenario.table()
    pod = PodClass.compile(scenario.pod, table)
    state = ClassState(pod, profile, table)
    want = profile_scores(scenario.cluster(), scenario.pod, FILTERS, SCORERS, scenario.args)
    assert _final(state, table) == want
    row, _ = state.best(np.random.default_rng(0), 0)
    if row < 0:
        return
    table.assume(row, pod.request, pod.ports, pod.peer)
    scenario.place(table.names[row])
    state.best(np.random.default_rng(0), 0)  # the shard catches up on the changed row
    want = profile_scores(scenario.cluster(), scenario.pod, FILTERS, SCORERS, scenario.args)
    assert _final(state, table) == want


def test_references_cover_the_profile_and_exist_in_the_registry() -> None:
    names = {*FILTERS, *(n for n, _ in SCORERS)}
    assert names == set(REFERENCES) and set(REFERENCES) <= set(REGISTRY)
