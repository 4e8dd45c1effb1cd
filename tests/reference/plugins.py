"""One reference per in-tree plugin, under the registry's name, built from the plugin's args.

Each judges one node for one pod, as upstream's Filter and Score do; a
plugin with NormalizeScore also gives its normalization over the scores of
the feasible nodes. Integer division follows Go (toward zero) and float
arithmetic follows upstream's order of operations.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from cluster.objects import Node, SchedulingSpec, Taint, Toleration
from cluster.selectors import NodeSelectorTerm, Requirement

MAX_NODE_SCORE = 100
CPU, MEMORY, PODS, EPHEMERAL_STORAGE = "cpu", "memory", "pods", "ephemeral-storage"
# where the spec and the usage keep the non-zero amounts (GetNonzeroRequests) of cpu and memory
NONZERO = {CPU: "~cpu", MEMORY: "~memory"}
ANY_IP = "0.0.0.0"
MB = 1024 * 1024

Resources = Sequence[tuple[str, int]]  # (name, weight)
Preferences = Sequence[tuple[int, NodeSelectorTerm]]


@dataclass(frozen=True)
class Cluster:
    """What the references see: every node, what is requested on it, its host ports in use."""

    nodes: Sequence[Node]
    # node -> resource -> sum of its pods' requests (committed and assumed), `pods` the
    # number of pods, "~cpu" and "~memory" the non-zero requests
    usage: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    ports: Mapping[str, Sequence[tuple[str, str, int]]] = field(default_factory=dict)

    def used(self, node: Node, resource: str) -> int:
        return self.usage.get(node.name, {}).get(resource, 0)


Filter = Callable[[Cluster, Node, SchedulingSpec], bool]
Score = Callable[[Cluster, Node, SchedulingSpec], int]
Normalize = Callable[[list[int]], list[int]]


@dataclass(frozen=True)
class ReferencePlugin:
    filter: Filter | None = None
    score: Score | None = None
    normalize: Normalize | None = None  # NormalizeScore, where upstream has one


# --- arithmetic as Go does it -----------------------------------------------------------


def go_div(a: int, b: int) -> int:
    """Go's integer `/`: the quotient truncated toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def go_round(x: float) -> int:
    """Go's math.Round: the nearest integer, halves away from zero."""
    whole = math.floor(abs(x))
    return int(math.copysign(whole + (1 if abs(x) - whole >= 0.5 else 0), x))


def parse_int(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64); None where it fails."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def default_normalize(scores: list[int], *, reverse: bool) -> list[int]:
    """DefaultNormalizeScore: scale by the maximum (at least 0) to 0..100, maybe reversed."""
    top = max([0, *scores])
    if top == 0:
        return [MAX_NODE_SCORE] * len(scores) if reverse else list(scores)
    scaled = [go_div(MAX_NODE_SCORE * s, top) for s in scores]
    return [MAX_NODE_SCORE - s for s in scaled] if reverse else scaled


# --- taints ---------------------------------------------------------------------------


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Toleration.ToleratesTaint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def node_unschedulable(cluster: Cluster, node: Node, pod: SchedulingSpec) -> bool:
    return not node.unschedulable or tolerated(pod.tolerations, UNSCHEDULABLE_TAINT)


def node_name(cluster: Cluster, node: Node, pod: SchedulingSpec) -> bool:
    return not pod.node_name or pod.node_name == node.name


def taint_filter(cluster: Cluster, node: Node, pod: SchedulingSpec) -> bool:
    return all(
        taint.effect not in ("NoSchedule", "NoExecute") or tolerated(pod.tolerations, taint)
        for taint in node.taints
    )


def taint_score(cluster: Cluster, node: Node, pod: SchedulingSpec) -> int:
    soft = [t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule")]
    return sum(
        1
        for taint in node.taints
        if taint.effect == "PreferNoSchedule" and not tolerated(soft, taint)
    )


# --- node selectors -------------------------------------------------------------------

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def requirement_parses(req: Requirement) -> bool:
    """labels.NewRequirement's checks of the operator and values (keys are taken as valid)."""
    if req.operator in ("In", "NotIn"):
        return bool(req.values) and all(
            len(v) <= 63 and _LABEL_VALUE.fullmatch(v) for v in req.values
        )
    if req.operator in ("Exists", "DoesNotExist"):
        return not req.values
    if req.operator in ("Gt", "Lt"):
        return len(req.values) == 1 and parse_int(req.values[0]) is not None
    return False


def label_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    """labels.Requirement.Matches."""
    present = req.key in labels
    if req.operator == "In":
        return present and labels[req.key] in req.values
    if req.operator == "NotIn":
        return not present or labels[req.key] not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    have = parse_int(labels[req.key]) if present else None
    bound = parse_int(req.values[0])
    if have is None or bound is None:
        return False
    return have > bound if req.operator == "Gt" else have < bound


def term_empty(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def term_parses(term: NodeSelectorTerm) -> bool:
    """Whether upstream can build the term's label and field selectors."""
    return all(requirement_parses(r) for r in term.match_expressions) and all(
        r.operator in ("In", "NotIn") and len(r.values) == 1 for r in term.match_fields
    )


def term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    """nodeSelectorTerm.match of a non-empty term; one that does not parse matches nothing."""
    if not term_parses(term):
        return False
    if not all(label_matches(r, node.labels) for r in term.match_expressions):
        return False
    return all((node.name == r.values[0]) == (r.operator == "In") for r in term.match_fields)


def selector_matches(terms: Iterable[NodeSelectorTerm], node: Node) -> bool:
    """NodeSelector.Match: empty terms are dropped, the others ORed."""
    return any(term_matches(t, node) for t in terms if not term_empty(t))


def preferred_score(preferences: Preferences, node: Node) -> int:
    """PreferredSchedulingTerms.Score: the weights of the non-empty terms the node matches."""
    total = 0
    for weight, term in preferences:
        if weight == 0 or term_empty(term):
            continue
        if not term_parses(term):
            raise ValueError(f"upstream fails the pod: preferred term {term} does not parse")
        if term_matches(term, node):
            total += weight
    return total


def node_affinity_filter(
    added: Sequence[NodeSelectorTerm] | None, cluster: Cluster, node: Node, pod: SchedulingSpec
) -> bool:
    """The added (scheduler-enforced) affinity, the nodeSelector, the required affinity."""
    if added is not None and not selector_matches(added, node):
        return False
    if any(node.labels.get(key) != value for key, value in pod.node_selector):
        return False
    return pod.required_terms is None or selector_matches(pod.required_terms, node)


def node_affinity_score(
    added: Preferences, cluster: Cluster, node: Node, pod: SchedulingSpec
) -> int:
    return preferred_score(added, node) + preferred_score(pod.preferred_terms, node)


def _selector_term(raw: Mapping[str, Any]) -> NodeSelectorTerm:
    def requirements(items: Iterable[Mapping[str, Any]] | None) -> tuple[Requirement, ...]:
        return tuple(
            Requirement(r["key"], r["operator"], tuple(r.get("values") or ())) for r in items or ()
        )

    return NodeSelectorTerm(
        requirements(raw.get("matchExpressions")), requirements(raw.get("matchFields"))
    )


def _node_affinity(args: Mapping[str, Any]) -> ReferencePlugin:
    added = args.get("addedAffinity") or {}
    required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
    preferred = [
        (p["weight"], _selector_term(p.get("preference") or {}))
        for p in added.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    ]
    return ReferencePlugin(
        partial(
            node_affinity_filter,
            None
            if required is None
            else [_selector_term(t) for t in required.get("nodeSelectorTerms") or ()],
        ),
        partial(node_affinity_score, preferred),
        partial(default_normalize, reverse=False),
    )


# --- host ports ---------------------------------------------------------------------------


def node_ports(cluster: Cluster, node: Node, pod: SchedulingSpec) -> bool:
    """No wanted host port clashes (HostPortInfo.CheckConflict) with one in use on the node."""
    in_use = cluster.ports.get(node.name, ())
    for wanted in pod.host_ports:
        if wanted.port <= 0:
            continue
        ip, protocol = wanted.host_ip or ANY_IP, wanted.protocol or "TCP"
        for used_protocol, used_ip, used_port in in_use:
            same = used_protocol == protocol and used_port == wanted.port
            if same and (ip == ANY_IP or used_ip in (ANY_IP, ip)):
                return False
    return True


# --- resources ----------------------------------------------------------------------------


def is_extended(name: str) -> bool:
    """IsExtendedResourceName, leaving out the qualified-name check."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def is_scalar(name: str) -> bool:
    """IsScalarResourceName."""
    return (
        is_extended(name)
        or name.startswith(("hugepages-", "attachable-volumes-"))
        or "kubernetes.io/" in name
    )


def fits(
    ignored: frozenset[str],
    ignored_groups: frozenset[str],
    cluster: Cluster,
    node: Node,
    pod: SchedulingSpec,
) -> bool:
    """NodeResourcesFit's fitsRequest: room for one more pod and for every request."""
    requests = dict(pod.requests)

    def free(resource: str) -> int:
        return node.allocatable.get(resource, 0) - cluster.used(node, resource)

    if cluster.used(node, PODS) + 1 > node.allocatable.get(PODS, 0):
        return False
    for resource in (CPU, MEMORY, EPHEMERAL_STORAGE):
        if requests.get(resource, 0) > 0 and requests[resource] > free(resource):
            return False
    for resource, amount in requests.items():
        if not is_scalar(resource) or amount == 0:
            continue
        group = resource.split("/")[0]
        if is_extended(resource) and (resource in ignored or group in ignored_groups):
            continue
        if amount > free(resource):
            return False
    return True


def allocatable_and_requested(
    cluster: Cluster, node: Node, pod: SchedulingSpec, resource: str, *, use_requested: bool
) -> tuple[int, int]:
    """calculateResourceAllocatableRequest: (0, 0) for a resource that is left out."""
    source = resource if use_requested else NONZERO.get(resource, resource)
    asked = dict(pod.requests).get(source, 0)
    if asked == 0 and is_scalar(resource):
        return 0, 0
    if resource in (CPU, MEMORY, EPHEMERAL_STORAGE) or (
        is_scalar(resource) and resource in node.allocatable
    ):
        return node.allocatable.get(resource, 0), cluster.used(node, source) + asked
    return 0, 0


def allocations(
    resources: Resources,
    cluster: Cluster,
    node: Node,
    pod: SchedulingSpec,
    *,
    use_requested: bool,
) -> list[tuple[int, int, int]]:
    """(allocatable, requested, weight) of the resources a scorer looks at (allocatable > 0)."""
    out = []
    for name, weight in resources:
        alloc, requested = allocatable_and_requested(
            cluster, node, pod, name, use_requested=use_requested
        )
        if alloc != 0:
            out.append((alloc, requested, weight))
    return out


def least_allocated(resources: Resources, cluster: Cluster, node: Node, pod: SchedulingSpec) -> int:
    total = weights = 0
    for alloc, requested, weight in allocations(resources, cluster, node, pod, use_requested=False):
        score = 0 if requested > alloc else go_div((alloc - requested) * MAX_NODE_SCORE, alloc)
        total += score * weight
        weights += weight
    return go_div(total, weights) if weights else 0


def most_allocated(resources: Resources, cluster: Cluster, node: Node, pod: SchedulingSpec) -> int:
    total = weights = 0
    for alloc, requested, weight in allocations(resources, cluster, node, pod, use_requested=False):
        total += go_div(min(requested, alloc) * MAX_NODE_SCORE, alloc) * weight
        weights += weight
    return go_div(total, weights) if weights else 0


def broken_linear(shape: Sequence[tuple[int, int]], p: int) -> int:
    """BuildBrokenLinearFunction over (utilization, score) points."""
    for i, (utilization, score) in enumerate(shape):
        if p <= utilization:
            if i == 0:
                return score
            prev_utilization, prev_score = shape[i - 1]
            rise = (score - prev_score) * (p - prev_utilization)
            return prev_score + go_div(rise, utilization - prev_utilization)
    return shape[-1][1]


def requested_to_capacity_ratio(
    resources: Resources,
    shape: Sequence[tuple[int, int]],
    cluster: Cluster,
    node: Node,
    pod: SchedulingSpec,
) -> int:
    """Scores on the shape (0..10, scaled by 10); resources scoring 0 are left out."""
    scaled = [(u, s * (MAX_NODE_SCORE // 10)) for u, s in shape]
    total = weights = 0
    for alloc, requested, weight in allocations(resources, cluster, node, pod, use_requested=False):
        utilization = 100 if requested > alloc else go_div(requested * 100, alloc)
        score = broken_linear(scaled, utilization)
        if score > 0:
            total += score * weight
            weights += weight
    return go_round(float(total) / float(weights)) if weights else 0


def balanced_allocation(
    resources: Resources, cluster: Cluster, node: Node, pod: SchedulingSpec
) -> int:
    """100 x (1 - std) of requested/allocatable (each at most 1), on actual requests."""
    fractions: list[float] = []
    total = 0.0
    for alloc, requested, _ in allocations(resources, cluster, node, pod, use_requested=True):
        fraction = float(requested) / float(alloc)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


def _resources(raw: Iterable[Mapping[str, Any]] | None) -> list[tuple[str, int]]:
    """ResourceSpec items, defaulted: none means cpu and memory, weight 0 means 1."""
    return [(r["name"], r.get("weight") or 1) for r in raw or ()] or [(CPU, 1), (MEMORY, 1)]


def _fit(args: Mapping[str, Any]) -> ReferencePlugin:
    strategy = args.get("scoringStrategy") or {}
    resources = _resources(strategy.get("resources"))
    kind = strategy.get("type") or "LeastAllocated"
    score: Score
    if kind == "LeastAllocated":
        score = partial(least_allocated, resources)
    elif kind == "MostAllocated":
        score = partial(most_allocated, resources)
    else:
        shape = [
            (p["utilization"], p["score"]) for p in strategy["requestedToCapacityRatio"]["shape"]
        ]
        score = partial(requested_to_capacity_ratio, resources, shape)
    ignored = frozenset(args.get("ignoredResources") or ())
    return ReferencePlugin(
        partial(fits, ignored, frozenset(args.get("ignoredResourceGroups") or ())), score
    )


# --- images ------------------------------------------------------------------------------


def normalized_image(name: str) -> str:
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


def image_locality(cluster: Cluster, node: Node, pod: SchedulingSpec) -> int:
    """Sizes of the pod's images on the node times their spread, clamped and scaled."""
    sizes: dict[str, int] = {}
    for image in node.images:
        for name in image.names:
            sizes.setdefault(name, image.size_bytes)
    total = 0
    for image in pod.images:
        name = normalized_image(image)
        if name in sizes:
            holders = sum(1 for n in cluster.nodes if any(name in i.names for i in n.images))
            spread = float(holders) / float(len(cluster.nodes))
            total += int(float(sizes[name]) * spread)
    low, high = 23 * MB, 1000 * MB * len(pod.images)
    if total < low:
        total = low
    elif total > high:
        total = high
    return go_div(MAX_NODE_SCORE * (total - low), high - low)


# the registry's names -> a reference built from the same args
REFERENCES: dict[str, Callable[[Mapping[str, Any]], ReferencePlugin]] = {
    "NodeUnschedulable": lambda args: ReferencePlugin(filter=node_unschedulable),
    "NodeName": lambda args: ReferencePlugin(filter=node_name),
    "TaintToleration": lambda args: ReferencePlugin(
        taint_filter, taint_score, partial(default_normalize, reverse=True)
    ),
    "NodeAffinity": _node_affinity,
    "NodePorts": lambda args: ReferencePlugin(filter=node_ports),
    "NodeResourcesFit": _fit,
    "NodeResourcesBalancedAllocation": lambda args: ReferencePlugin(
        score=partial(balanced_allocation, _resources(args.get("resources")))
    ),
    "ImageLocality": lambda args: ReferencePlugin(score=image_locality),
}
