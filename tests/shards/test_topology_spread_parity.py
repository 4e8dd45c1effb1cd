"""The vectorized PodTopologySpread agrees exactly with the per-node rule of cluster.crosspod.

Random clusters (zone, hostname and rack labels, some missing or shared, taints,
a deleted node), pods placed by kind (committed or assumed by the shard), and
incoming pods with one to three constraints using every option. Filter: the
same feasible nodes and the same reasons. Score: the same normalized scores
over a random subset of the nodes, as other filters would leave it feasible.
"""

import itertools
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.crosspod.topology_spread import spread_filter, spread_scores
from cluster.crosspod.view import StaticView
from cluster.manifests import pod_from_manifest
from cluster.objects import Peer
from cluster.store import Delta
from shards.framework import PodClass
from shards.plugins.pod_topology_spread import PodTopologySpread
from shards.testing import every, node, pod_spec, table_of

HOST = "kubernetes.io/hostname"
KEYS = ("zone", HOST, "rack")
# each node draws one of these: zone, hostname ("own": its name), rack, disk; None: absent
NODE_LABELS = list(
    itertools.product(
        ("z0", "z1", "z2", "z0", "z1", "z0", "z1", None),
        ("own",) * 8 + ("shared", None),
        ("r0", "r1", "r0", "r1", "r0", "r1", "r0", None),
        ("ssd", "hdd"),
    )
)
TAINT_SETS = (
    (),
    (),
    ({"key": "gpu", "value": "yes", "effect": "NoSchedule"},),
    ({"key": "drain", "effect": "NoExecute"},),
    ({"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},),
    (
        {"key": "gpu", "value": "yes", "effect": "NoSchedule"},
        {"key": "drain", "effect": "NoExecute"},
    ),
)
TOLERATIONS = [
    [],
    [],
    [{"key": "gpu", "operator": "Exists"}],
    [{"key": "drain", "operator": "Exists", "effect": "NoExecute"}],
    [{"operator": "Exists"}],
]
LABEL_SETS = ({"app": "web"}, {"app": "web", "rev": "1"}, {"app": "web", "rev": "2"}, {"app": "db"})
pod_labels = st.sampled_from([*LABEL_SETS, {"rev": "2"}, {}])
# kinds of placed pods: mostly in the incoming pod's namespace
PEERS = [
    Peer(namespace, tuple(sorted(labels.items())))
    for namespace in ("default", "default", "other")
    for labels in (*LABEL_SETS, {})
]
WEB_PEER = Peer("default", (("app", "web"),))


@st.composite
def nodes(draw):
    out = []
    for i in range(draw(st.integers(3, 8))):
        zone, host, rack, disk = draw(st.sampled_from(NODE_LABELS))
        labels = {"zone": zone, HOST: f"n{i}" if host == "own" else host, "rack": rack}
        labels = {k: v for k, v in labels.items() if v is not None}
        taints = list(draw(st.sampled_from(TAINT_SETS)))
        out.append(node(f"n{i}", labels={**labels, "disk": disk}, taints=taints))
    return out


def placed(names):
    """(node, peer, pods, assumed by the shard rather than committed), in one draw."""
    return st.sampled_from(list(itertools.product(names, PEERS, (1, 1, 2), (False, True))))


WEB = {"matchLabels": {"app": "web"}}
SELECTORS = [
    WEB,
    WEB,
    WEB,
    None,
    {},
    {"matchLabels": {"app": "db"}},
    {"matchLabels": {"rev": "2"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]},
    {"matchExpressions": [{"key": "rev", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "rev", "operator": "DoesNotExist"}]},
    {**WEB, "matchExpressions": [{"key": "rev", "operator": "NotIn", "values": ["1"]}]},
    {**WEB, "matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
]
POLICIES = list(itertools.product((None, None, "Honor", "Ignore"), repeat=2))
MATCH_LABEL_KEYS = [(), (), ("rev",), ("app",), ("track",), ("rev", "app")]


@st.composite
def constraint(draw, key, when):
    out = {
        "maxSkew": draw(st.sampled_from([1, 1, 2, 3])),
        "topologyKey": key,
        "whenUnsatisfiable": when,
    }
    chosen = draw(st.sampled_from(SELECTORS))
    if chosen is not None:
        out["labelSelector"] = chosen
    if when == "DoNotSchedule":
        out["minDomains"] = draw(st.sampled_from([None, None, None, None, 1, 2, 3]))
    out["nodeAffinityPolicy"], out["nodeTaintsPolicy"] = draw(st.sampled_from(POLICIES))
    out["matchLabelKeys"] = list(draw(st.sampled_from(MATCH_LABEL_KEYS)))
    return out


@st.composite
def incoming(draw):
    # upstream's API validation allows one constraint per (topologyKey, whenUnsatisfiable)
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(KEYS), st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    spec = {"topologySpreadConstraints": [draw(constraint(k, w)) for k, w in pairs]}
    if draw(st.booleans()):
        spec["nodeSelector"] = {"disk": "ssd"}
    if draw(st.booleans()):
        term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z0", "z1"]}]}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    spec["tolerations"] = draw(st.sampled_from(TOLERATIONS))
    manifest = pod_spec({"cpu": "100m"}, **spec)
    manifest["metadata"]["labels"] = draw(pod_labels)
    return pod_from_manifest(manifest).spec


@st.composite
def worlds(draw):
    cluster = draw(nodes())
    names = [n.name for n in cluster]
    # a few `app: web` pods on every node, the kind most selectors count; then any kinds
    web = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3]), min_size=len(names), max_size=len(names)))
    pods = [(n, WEB_PEER, k, False) for n, k in zip(names, web, strict=True) if k]
    pods += draw(st.lists(placed(names), max_size=10))
    deleted = draw(st.sampled_from([None, None, None, *names]))
    return cluster, pods, deleted, draw(incoming())


def build(cluster, pods, deleted):
    table, view = table_of(cluster), StaticView({n.name: n for n in cluster})
    for name, peer, count, assumed in pods:
        col = table.peer_column(peer.id, peer)
        counts = table.assumed_peer_pods if assumed else table.peer_pods
        counts[table.index[name], col] += count
        view.add(name, peer, count)
    if deleted is not None:
        empty = np.zeros((0, len(table.columns)), np.int64)
        table.apply(Delta(2, [], np.zeros(0, np.int64), empty, deleted=[deleted]))
        del view.nodes[deleted]
        view.pods.pop(deleted, None)
    return table, view


@settings(max_examples=150, deadline=None)
@given(worlds(), st.data())
def test_plugin_agrees_with_the_per_node_rule(world, data):
    cluster, pods, deleted, spec = world
    table, view = build(cluster, pods, deleted)
    pod, plugin = PodClass.compile(spec, table), PodTopologySpread()
    alive = table.alive[: table.size]

    ok = plugin.filter(pod, table, every(table)) & alive
    expected = {n: spread_filter(spec, n, view) for n in view.node_names()}
    assert [table.names[r] for r in np.flatnonzero(ok)] == [
        n for n, why in expected.items() if why is None
    ]
    assert plugin.reasons(pod, table, np.flatnonzero(~ok & alive)) == Counter(
        why for why in expected.values() if why is not None
    )

    names = list(view.node_names())
    feasible = [n for n in names if data.draw(st.booleans())] or names
    rows = np.array([table.index[n] for n in feasible], dtype=np.intp)
    raw = plugin.score(pod, table, every(table))
    got = dict(zip(feasible, plugin.normalize(pod, table, rows, raw[rows]).tolist(), strict=True))
    assert got == spread_scores(spec, feasible, view)
