"""Random clusters as the API server holds them, for the oracle and optimist alike.

Everything here is a Kubernetes manifest (plain dicts), so that the same
objects reach upstream's plugins through the oracle and optimist's through
its own parsing: nodes, their namespaces, the pods bound to them, an
incoming pod and a KubeSchedulerConfiguration. Each part is drawn from short
lists of telling values, so that labels, selectors and topology keys meet
often enough to matter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.oracle.storage import storage

Manifest = dict[str, Any]
GiB, MiB = 2**30, 2**20
GPU = "example.com/gpu"
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
NAMESPACE_NAME = "kubernetes.io/metadata.name"  # the API server sets it on every namespace
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NODES = tuple(f"n{i}" for i in range(7))
NAMESPACES = {"default": {}, "prod": {"env": "live"}, "dev": {"env": "test"}}
LABEL_KEYS = ("disk", "cores")
LABEL_VALUES = ("ssd", "hdd", "0", "7", "16", "0032")
# Gt and Lt bounds; "-5" and "+3" are integers but not label values, which upstream's
# selectors refuse (and so do optimist's, saying where)
INT_BOUNDS = ("0", "7", "16", "050", "7", "16", "-5", "+3")
TOPOLOGY_KEYS = (HOST, ZONE, REGION, "disk")
TAINT_KEYS = ("gpu", "spot", "dedicated")
TAINT_VALUES = ("", "true", "x")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# each image has one size wherever it is reported, as a registry's digest would
IMAGES = {
    "nginx:latest": 140 * MiB,
    "nginx:1.25": 150 * MiB,
    "redis:7": 40 * MiB,
    "registry.io:5000/app:latest": 900 * MiB,
    "tool@sha256:ab12": 1200 * MiB,
    "docker.io/library/busybox:latest": 5 * MiB,
}
POD_IMAGES = (
    "nginx",
    "nginx:1.25",
    "redis:7",
    "redis",
    "registry.io:5000/app",
    "tool@sha256:ab12",
    "docker.io/library/busybox",
)


@dataclass
class Case:
    """One question for both: where may `pod` go, and how good is each node?"""

    configuration: Manifest
    nodes: list[Manifest]
    namespaces: list[Manifest]
    pod: Manifest
    # pods bound to the nodes, each with whether the store holds it (committed) or
    # only the shard that placed it does (assumed): upstream sees both as bound
    bound: list[tuple[Manifest, bool]] = field(default_factory=list)
    # Services and controllers, whose selectors default spreading counts by
    workloads: list[Manifest] = field(default_factory=list)
    # storage classes, PersistentVolumes, claims and CSINodes (`tests/oracle/storage.py`)
    storage: list[Manifest] = field(default_factory=list)


# --- nodes ---------------------------------------------------------------------------------

# hypothesis favours small integers, zero above all: usual sizes are listed, odd ones drawn
# hypothesis favours the first of a list and small integers: usual sizes come first,
# odd ones (nothing of a resource, room for one pod) now and then
allocatable = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(("8", "4", "2", "8", "4", "16", "0"))
        | st.integers(500, 8000).map(lambda m: f"{m}m"),
        "memory": st.sampled_from(("32Gi", "16Gi", "8Gi", "32Gi", "64Gi", "0"))
        | st.integers(1024, 32768).map(lambda m: f"{m}Mi"),
        "pods": st.sampled_from(("110",) * 8 + ("3", "1")),
        "ephemeral-storage": st.sampled_from(("100Gi", "50Gi", "100Gi", "200Gi", "0"))
        | st.integers(1, 100).map(lambda g: f"{g}Gi"),
    },
    optional={GPU: st.sampled_from(("4", "2", "8", "0"))},
)
taint = st.fixed_dictionaries(
    {
        "key": st.sampled_from(TAINT_KEYS),
        "value": st.sampled_from(TAINT_VALUES),
        "effect": st.sampled_from(EFFECTS),
    }
)
node_images = st.lists(
    st.lists(st.sampled_from(tuple(IMAGES)), min_size=1, max_size=2, unique=True).map(
        lambda names: {"names": names, "sizeBytes": IMAGES[names[0]]}
    ),
    max_size=3,
    unique_by=lambda image: image["names"][0],
)


def node(name: str) -> st.SearchStrategy[Manifest]:
    """A node named `name`: mostly labelled with its own hostname, sometimes a shared one
    or none; in a zone and a region, or not; with plain labels, taints and images."""
    topology = st.fixed_dictionaries(
        {
            HOST: st.sampled_from((name, name, name, name, "shared", None)),
            ZONE: st.sampled_from(("z0", "z1", "z0", "z1", None)),
            REGION: st.sampled_from(("r0", "r0", "r1", None)),
        }
    )
    plain = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES))
    labels = st.builds(
        lambda t, p: {**p, **{k: v for k, v in t.items() if v is not None}}, topology, plain
    )
    return st.builds(
        lambda labels, unschedulable, taints, allocatable, images: {
            "metadata": {"name": name, "labels": labels},
            "spec": {"unschedulable": unschedulable, "taints": taints},
            "status": {"allocatable": allocatable, "capacity": allocatable, "images": images},
        },
        labels,
        st.sampled_from((False,) * 9 + (True,)),
        st.one_of(
            st.just([]),
            st.just([]),
            st.lists(taint, max_size=2, unique_by=lambda t: (t["key"], t["effect"])),
        ),
        allocatable,
        node_images,
    )


NODE_STRATEGIES = tuple(node(name) for name in NODES)


# --- selectors, affinity, tolerations --------------------------------------------------------

expression = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from((*LABEL_KEYS, ZONE)),
            "operator": st.sampled_from(("In", "NotIn")),
            "values": st.lists(
                st.sampled_from((*LABEL_VALUES, "z0", "z1")), min_size=1, max_size=3, unique=True
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "key": st.sampled_from((*LABEL_KEYS, ZONE, REGION)),
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
        "values": st.sampled_from((*NODES, "ghost")).map(lambda v: [v]),
    }
)
node_term = st.fixed_dictionaries(
    {
        "matchExpressions": st.lists(expression, max_size=2),
        "matchFields": st.one_of(st.just([]), st.just([]), st.lists(field_expression, max_size=1)),
    }
)
node_affinity = st.fixed_dictionaries(
    {},
    optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(
            node_term, min_size=1, max_size=2
        ).map(lambda terms: {"nodeSelectorTerms": terms}),
        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
            st.fixed_dictionaries({"weight": st.integers(1, 100), "preference": node_term}),
            max_size=3,
        ),
    },
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

# pod labels and the selectors over them, from a short list of telling cases
pod_labels = st.fixed_dictionaries(
    {}, optional={"app": st.sampled_from(("web", "db")), "tier": st.sampled_from(("front", "back"))}
)
POD_SELECTORS: tuple[Manifest, ...] = (
    {},  # selects every pod
    {"matchLabels": {"app": "web"}},
    {"matchLabels": {"app": "db"}},
    {"matchLabels": {"tier": "front"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
    {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
    {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["back"]}],
    },
)
SCOPES: tuple[Manifest, ...] = (  # a term's namespaces and namespaceSelector
    {},  # the owner's namespace
    {},
    {"namespaces": ["prod"]},
    {"namespaces": ["default", "prod"]},
    {"namespaceSelector": {}},  # every namespace
    {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME: "prod"}}},
    {"namespaceSelector": {"matchLabels": {"env": "live"}}},
    {"namespaces": ["default"], "namespaceSelector": {"matchLabels": {"env": "test"}}},
    {"namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Exists"}]}},
)
pod_term = st.builds(
    lambda key, selector, scope: {"topologyKey": key, **selector, **scope},
    st.sampled_from(TOPOLOGY_KEYS),
    st.sampled_from((None, *POD_SELECTORS)).map(
        lambda s: {} if s is None else {"labelSelector": s}  # no selector: selects no pod
    ),
    st.sampled_from(SCOPES),
)
weighted_pod_term = st.fixed_dictionaries(
    {"weight": st.integers(1, 100), "podAffinityTerm": pod_term}
)


def pod_affinity(most: int) -> st.SearchStrategy[Manifest]:
    terms = st.lists(pod_term, min_size=1, max_size=most)
    preferred = st.lists(weighted_pod_term, min_size=1, max_size=most)
    return st.fixed_dictionaries(
        {},
        optional={
            "requiredDuringSchedulingIgnoredDuringExecution": terms,
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        },
    )


spread = st.builds(
    lambda skew, key, hard, selector, extra: {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        **({"labelSelector": selector} if selector is not None else {}),
        **{k: v for k, v in extra.items() if hard or k != "minDomains"},
    },
    st.integers(1, 3),
    st.sampled_from((ZONE, HOST, REGION, "disk")),
    st.booleans(),
    st.sampled_from(({"matchLabels": {"app": "web"}}, {"matchLabels": {"app": "db"}}, None)),
    st.fixed_dictionaries(
        {},
        optional={
            "minDomains": st.integers(1, 4),
            "nodeAffinityPolicy": st.sampled_from(("Honor", "Ignore")),
            "nodeTaintsPolicy": st.sampled_from(("Honor", "Ignore")),
            "matchLabelKeys": st.just(["tier"]),
        },
    ),
)

# the pod's Services and controller, for default spreading: selectors over the pod labels
SERVICE_SELECTORS = (
    {"app": "web"},
    {"tier": "front"},
    {"app": "db"},
    {"app": "web", "tier": "front"},
)
service = st.builds(
    lambda i, namespace, selector: {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"svc-{i}", "namespace": namespace},
        "spec": {"selector": selector} if selector else {},
    },
    st.integers(0, 9),
    st.sampled_from(tuple(NAMESPACES)),
    st.sampled_from((*SERVICE_SELECTORS, None)),
)
CONTROLLERS = {  # kind -> apiVersion
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicationController": "v1",
}


@st.composite
def controller(draw: st.DrawFn, namespace: str) -> Manifest:
    """A controller named `owner` in the namespace, with a selector of its kind's form."""
    kind = draw(st.sampled_from(tuple(CONTROLLERS)))
    if kind == "ReplicationController":
        selector: Manifest = draw(st.sampled_from(SERVICE_SELECTORS))
    else:
        selector = draw(st.sampled_from(POD_SELECTORS))
    return {
        "apiVersion": CONTROLLERS[kind],
        "kind": kind,
        "metadata": {"name": "owner", "namespace": namespace},
        "spec": {"selector": selector},
    }


def owner_reference(workload: Manifest, controls: bool) -> Manifest:
    kind = workload["kind"]
    ref = {"apiVersion": CONTROLLERS[kind], "kind": kind, "name": "owner", "uid": "owner"}
    return {**ref, "controller": controls}


# --- pods ------------------------------------------------------------------------------------

core_requests = {
    "cpu": st.integers(0, 1500).map(lambda m: f"{m}m"),
    "memory": st.integers(0, 2048).map(lambda m: f"{m}Mi"),
}
requests = st.one_of(
    st.fixed_dictionaries({}, optional=core_requests),
    st.fixed_dictionaries({}, optional=core_requests),
    st.fixed_dictionaries(
        {},
        optional={
            **core_requests,
            "ephemeral-storage": st.integers(0, 20).map(lambda g: f"{g}Gi"),
            GPU: st.integers(0, 2).map(str),
        },
    ),
)
host_ports = st.lists(
    st.fixed_dictionaries(
        {
            "hostPort": st.sampled_from((80, 8080)),
            "protocol": st.sampled_from(("TCP", "UDP")),
            "hostIP": st.sampled_from(("", "0.0.0.0", "10.0.0.1", "10.0.0.2")),
        }
    ).map(lambda p: {"containerPort": p["hostPort"], **{k: v for k, v in p.items() if v}}),
    max_size=2,
    unique_by=lambda p: (p["hostPort"], p["protocol"], p.get("hostIP", "")),
)


def container(name: str) -> st.SearchStrategy[Manifest]:
    return st.fixed_dictionaries(
        {
            "name": st.just(name),
            "image": st.sampled_from(POD_IMAGES),
            "resources": requests.map(lambda r: {"requests": r}),
            "ports": st.just([]) | host_ports,
        }
    )


# an init container that keeps running (a sidecar) or one that finishes first
init_container = st.builds(
    lambda c, sidecar: {**c, "restartPolicy": "Always"} if sidecar else c,
    container("init"),
    st.booleans(),
)
containers = st.tuples(container("c0"), st.none() | container("c1")).map(
    lambda cs: [c for c in cs if c is not None]
)
overhead = st.just({}) | st.fixed_dictionaries(
    {"cpu": st.sampled_from(("100m", "250m")), "memory": st.sampled_from(("64Mi", "120Mi"))}
)


@st.composite
def incoming(draw: st.DrawFn) -> Manifest:
    """The pod to place: most of what a pod can ask of a node, any of it absent."""
    spec: Manifest = {
        "containers": draw(containers),
        "initContainers": draw(st.lists(init_container, max_size=1)),
        "nodeSelector": draw(
            st.just({})
            | st.dictionaries(
                st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=1
            )
        ),
        "tolerations": draw(st.lists(toleration, max_size=3)),
        "topologySpreadConstraints": draw(
            st.just([])
            | st.lists(
                spread, max_size=2, unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"])
            )
        ),
    }
    if draw(st.sampled_from((False,) * 9 + (True,))):  # hypothesis favours the first
        spec["nodeName"] = draw(st.sampled_from((*NODES, "ghost")))
    if cost := draw(overhead):
        spec["overhead"] = cost
    affinity = {
        "nodeAffinity": draw(st.one_of(st.just({}), st.just({}), node_affinity)),
        "podAffinity": draw(st.one_of(st.just({}), st.just({}), pod_affinity(2))),
        "podAntiAffinity": draw(st.one_of(st.just({}), st.just({}), pod_affinity(2))),
    }
    spec["affinity"] = {k: v for k, v in affinity.items() if v}
    return {
        "metadata": {
            "name": "incoming",
            "namespace": draw(st.sampled_from(tuple(NAMESPACES))),
            "uid": "incoming",
            "labels": draw(pod_labels),
        },
        "spec": spec,
    }


@st.composite
def bound_pod(draw: st.DrawFn, name: str, node_name: str) -> Manifest:
    """A pod already on `node_name`: requests, ports, and its own pod (anti-)affinity."""
    affinity = {
        "podAffinity": draw(st.just({}) | pod_affinity(1)),
        "podAntiAffinity": draw(st.just({}) | pod_affinity(1)),
    }
    return {
        "metadata": {
            "name": name,
            "namespace": draw(st.sampled_from(tuple(NAMESPACES))),
            "uid": name,
            "labels": draw(pod_labels),
        },
        "spec": {
            "nodeName": node_name,
            "containers": [draw(container("c"))],
            "affinity": {k: v for k, v in affinity.items() if v},
        },
    }


# --- the configuration -----------------------------------------------------------------------


def resource_specs(weights: st.SearchStrategy[int]) -> st.SearchStrategy[list[Manifest]]:
    return st.lists(
        st.fixed_dictionaries(
            {
                "name": st.sampled_from(("cpu", "memory", "ephemeral-storage", GPU)),
                "weight": weights,
            }
        ),
        min_size=1,
        max_size=3,
        unique_by=lambda r: r["name"],
    )


fit_resources = resource_specs(st.integers(1, 5))
# upstream takes weight 1 alone for BalancedAllocation: now and then another, to be refused
balanced_resources = resource_specs(st.sampled_from((1, 1, 1, 1, 1, 1, 1, 2)))
shape = st.lists(
    st.tuples(st.integers(0, 100), st.integers(0, 10)),
    min_size=1,
    max_size=4,
    unique_by=lambda p: p[0],
).map(lambda points: [{"utilization": u, "score": s} for u, s in sorted(points)])
strategy = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(("LeastAllocated", "MostAllocated")), "resources": fit_resources}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("RequestedToCapacityRatio"),
            "resources": fit_resources,
            "requestedToCapacityRatio": st.fixed_dictionaries({"shape": shape}),
        }
    ),
)
PLUGIN_ARGS = {
    "NodeResourcesFit": st.fixed_dictionaries(
        {"scoringStrategy": strategy},
        optional={
            "ignoredResources": st.just([GPU]),
            "ignoredResourceGroups": st.just(["example.com"]),
        },
    ),
    "NodeResourcesBalancedAllocation": st.fixed_dictionaries({"resources": balanced_resources}),
    "NodeAffinity": st.fixed_dictionaries({"addedAffinity": node_affinity}),
    "InterPodAffinity": st.fixed_dictionaries(
        {},
        optional={
            "hardPodAffinityWeight": st.integers(0, 100),
            "ignorePreferredTermsOfExistingPods": st.booleans(),
        },
    ),
    "PodTopologySpread": st.one_of(
        st.just({"defaultingType": "List"}),
        st.just({"defaultingType": "System"}),
        st.fixed_dictionaries(
            {
                "defaultingType": st.just("List"),
                "defaultConstraints": st.lists(
                    st.fixed_dictionaries(
                        {
                            "maxSkew": st.integers(1, 3),
                            "topologyKey": st.sampled_from((ZONE, HOST, "disk")),
                            "whenUnsatisfiable": st.sampled_from(
                                ("DoNotSchedule", "ScheduleAnyway")
                            ),
                        },
                        optional={
                            "nodeAffinityPolicy": st.sampled_from(("Honor", "Ignore")),
                            "nodeTaintsPolicy": st.sampled_from(("Honor", "Ignore")),
                        },
                    ),
                    min_size=1,
                    max_size=2,
                    unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"]),
                ),
            }
        ),
    ),
}
SCORERS = (
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "PodTopologySpread",
    "InterPodAffinity",
)
FILTERS = ("NodePorts", "NodeAffinity", "PodTopologySpread", "InterPodAffinity", "TaintToleration")
weighted_scorer = st.builds(
    lambda n, w: {"name": n, "weight": w}, st.sampled_from(SCORERS), st.integers(1, 10)
)
plugin_sets = st.fixed_dictionaries(
    {},
    optional={
        # weights set for scoring, for every point at once, or a scorer dropped
        "score": st.fixed_dictionaries(
            {},
            optional={
                "enabled": st.lists(
                    weighted_scorer,
                    max_size=2,
                    unique_by=lambda p: p["name"],
                ),
                "disabled": st.lists(
                    st.sampled_from(SCORERS).map(lambda n: {"name": n}), max_size=1
                ),
            },
        ),
        "multiPoint": st.fixed_dictionaries(
            {
                "enabled": st.lists(
                    weighted_scorer,
                    max_size=1,
                )
            }
        ),
        "filter": st.fixed_dictionaries(
            {"disabled": st.lists(st.sampled_from(FILTERS).map(lambda n: {"name": n}), max_size=1)}
        ),
    },
)


@st.composite
def configuration(draw: st.DrawFn) -> Manifest:
    """v1.30's default profile, or one with args, weights and plugins changed."""
    profile: Manifest = {"schedulerName": "default-scheduler"}
    if draw(st.sampled_from((False, True, True))):
        args = draw(st.dictionaries(st.sampled_from(tuple(PLUGIN_ARGS)), st.just(None)))
        profile["pluginConfig"] = [
            {"name": name, "args": draw(PLUGIN_ARGS[name])} for name in sorted(args)
        ]
        if plugins := draw(plugin_sets):
            profile["plugins"] = plugins
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


# --- a whole case ----------------------------------------------------------------------------

# (node, committed), the node index taken modulo the nodes drawn
PLACEMENTS = st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=10)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    count = draw(st.sampled_from((7, 6, 5, 4, 3, 2, 1)))
    nodes = [draw(s) for s in NODE_STRATEGIES[:count]]
    bound = [
        (draw(bound_pod(f"bound-{i}", NODES[at % count])), committed)
        for i, (at, committed) in enumerate(draw(PLACEMENTS))
    ]
    namespaces = [
        {"metadata": {"name": name, "labels": {NAMESPACE_NAME: name, **labels}}}
        for name, labels in NAMESPACES.items()
    ]
    pod = draw(incoming())
    workloads = draw(st.lists(service, max_size=3, unique_by=lambda s: s["metadata"]["name"]))
    if draw(st.booleans()):  # a controller; the pod its own, or another's (not its controller)
        owner = draw(controller(pod["metadata"]["namespace"]))
        workloads.append(owner)
        pod["metadata"]["ownerReferences"] = [owner_reference(owner, draw(st.booleans()))]
    objects: list[Manifest] = []
    if draw(st.sampled_from((True, True, False))):  # volumes for the pod and some bound ones
        names = [n["metadata"]["name"] for n in nodes]
        objects = draw(storage(names, [manifest for manifest, _ in bound], pod))
    return Case(draw(configuration()), nodes, namespaces, pod, bound, workloads, objects)
