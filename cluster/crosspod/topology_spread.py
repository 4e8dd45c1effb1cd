"""PodTopologySpread as kube-scheduler v1.30 judges it, one node at a time over a ClusterView.

The binder re-checks placements against the committed state with
`spread_filter`; the shards' vectorized plugin is tested against both
functions. Upstream's rules, as implemented here:

- A constraint counts, per domain (a value of its topology key), the pods in
  the incoming pod's namespace that its selector matches. `matchLabelKeys`
  adds the pod's own values of those keys to the selector. No selector
  selects nothing; an empty selector counts no existing pod, yet the pod
  still matches it itself.
- Only nodes carrying every topology key of the pod's constraints of that
  kind (DoNotSchedule for the filter, ScheduleAnyway for the score) count,
  and per constraint only those its inclusion policies admit
  (nodeAffinityPolicy Honor: the pod's nodeSelector and required node
  affinity; nodeTaintsPolicy Honor: no untolerated NoSchedule/NoExecute taint).
- Filter: a node lacking a key fails; otherwise the domain's count, plus one
  if the pod matches its own selector, minus the global minimum over the
  eligible domains (0 with fewer than minDomains of them) may not exceed
  maxSkew.
- Score: nodes of the feasible set lacking a key are ignored (scored 0). A
  node's raw score sums, per constraint, its domain's count times
  log(domains among the scored feasible nodes + 2) plus maxSkew - 1; on the
  hostname key the count is the node's own pods and the domains are the
  scored nodes. Normalizing reverses: fewer matching pods score higher.

- Default constraints (the profile's PodTopologySpreadArgs) apply to a pod
  without constraints of its own that a Service or controller selects, with
  that selector (`SchedulingSpec.spread_selector`). The system defaults
  (hostname and zone, ScheduleAnyway) score without ignoring nodes that lack a
  key: such a node still spreads by the keys it has, and a missing zone is one
  more domain, of value "", in the count of domains.

API validation forbids two constraints of one kind on the same key, so
upstream's keying of counts by topology key equals keying by constraint here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cluster.crosspod.topology_spread_args import PodTopologySpreadArgs
from cluster.crosspod.view import ClusterView
from cluster.objects import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    Node,
    Peer,
    SchedulingSpec,
    TopologySpreadConstraint,
)
from cluster.selectors import LabelSelector

REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = f"{REASON} (missing required label)"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
MAX_NODE_SCORE = 100
FILTERED_TAINT_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Spread:
    """One constraint as upstream uses it: defaults applied, matchLabelKeys merged in."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None  # None selects nothing
    min_domains: int
    honor_affinity: bool
    honor_taints: bool

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether the selector matches these labels (the incoming pod's self-match)."""
        return self.selector is not None and self.selector.matches(labels)

    def counts(self, peer: Peer, namespace: str) -> bool:
        """Whether an existing pod of this peer is counted (upstream's countPodsMatchSelector,
        which counts nothing for an empty selector)."""
        selector = self.selector
        return (
            selector is not None
            and bool(selector.match_labels or selector.match_expressions)
            and peer.namespace == namespace
            and selector.matches(dict(peer.labels))
        )


@dataclass(frozen=True, slots=True)
class DefaultSpreading:
    """A profile's default constraints, for pods without their own."""

    constraints: tuple[TopologySpreadConstraint, ...] = ()
    # upstream's systemDefaulted: scoring keeps nodes that lack a key (a node without a
    # zone label still spreads by hostname)
    system: bool = False

    @classmethod
    def from_args(cls, wire: Mapping[str, Any]) -> DefaultSpreading:
        """From the plugin's args (already validated where the configuration was read)."""
        args = PodTopologySpreadArgs.from_wire(wire)
        if args.defaulting_type == "System":
            return SYSTEM_DEFAULTS
        return cls(
            tuple(
                TopologySpreadConstraint(
                    max_skew=c.max_skew,
                    topology_key=c.topology_key,
                    when_unsatisfiable=c.when_unsatisfiable,
                    label_selector=None,  # each pod's own spread_selector
                    min_domains=c.min_domains,
                    node_affinity_policy=c.node_affinity_policy or "Honor",
                    node_taints_policy=c.node_taints_policy or "Ignore",
                    match_label_keys=tuple(c.match_label_keys or ()),
                )
                for c in args.default_constraints or ()
            )
        )


NO_DEFAULTS = DefaultSpreading()
SYSTEM_DEFAULTS = DefaultSpreading(
    (
        TopologySpreadConstraint(3, HOSTNAME_LABEL, SCHEDULE_ANYWAY, None),
        TopologySpreadConstraint(5, ZONE_LABEL, SCHEDULE_ANYWAY, None),
    ),
    system=True,
)


def requires_every_key(spec: SchedulingSpec, defaults: DefaultSpreading) -> bool:
    """Whether scoring ignores feasible nodes lacking a topology key: always, but for
    a pod spread by the system defaults."""
    return bool(spec.topology_spread) or not defaults.system


def spreads(
    spec: SchedulingSpec, when: str, defaults: DefaultSpreading = NO_DEFAULTS
) -> tuple[Spread, ...]:
    """The pod's constraints of one kind (DoNotSchedule or ScheduleAnyway): its own, or
    where it has none and something selects it, the defaults with that selector (upstream
    replaces the defaults' selector whole, so their matchLabelKeys add nothing)."""
    if not spec.topology_spread:
        return tuple(
            Spread(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=spec.spread_selector,
                min_domains=c.min_domains or 1,
                honor_affinity=c.node_affinity_policy == "Honor",
                honor_taints=c.node_taints_policy == "Honor",
            )
            for c in defaults.constraints
            if c.when_unsatisfiable == when and spec.spread_selector is not None
        )
    labels = dict(spec.labels)
    out = []
    for c in spec.topology_spread:
        if c.when_unsatisfiable != when:
            continue
        selector = c.label_selector
        own = tuple((k, labels[k]) for k in c.match_label_keys if k in labels)
        if own and selector is not None:
            selector = LabelSelector(own + selector.match_labels, selector.match_expressions)
        out.append(
            Spread(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains or 1,
                honor_affinity=c.node_affinity_policy == "Honor",
                honor_taints=c.node_taints_policy == "Honor",
            )
        )
    return tuple(out)


def matches_node_affinity(spec: SchedulingSpec, node: Node) -> bool:
    """The pod's nodeSelector and required node affinity (not the scheduler's added affinity)."""
    if any(node.labels.get(k) != v for k, v in spec.node_selector):
        return False
    terms = spec.required_terms
    return terms is None or any(t.matches(node.name, node.labels) for t in terms)


def tolerates_node(spec: SchedulingSpec, node: Node) -> bool:
    """Whether the pod tolerates every NoSchedule and NoExecute taint of the node."""
    return all(
        any(t.tolerates(taint) for t in spec.tolerations)
        for taint in node.taints
        if taint.effect in FILTERED_TAINT_EFFECTS
    )


def includes(spread: Spread, spec: SchedulingSpec, node: Node) -> bool:
    """Upstream's matchNodeInclusionPolicies: whether the node's pods count for the constraint."""
    if spread.honor_affinity and not matches_node_affinity(spec, node):
        return False
    return not spread.honor_taints or tolerates_node(spec, node)


def has_keys(node: Node, constraints: Iterable[Spread]) -> bool:
    return all(c.topology_key in node.labels for c in constraints)


def pods_counted(spread: Spread, namespace: str, peers: Mapping[Peer, int]) -> int:
    return sum(pods for peer, pods in peers.items() if spread.counts(peer, namespace))


def domain_counts(
    spec: SchedulingSpec,
    constraints: Sequence[Spread],
    view: ClusterView,
    every_key: bool = True,
) -> list[dict[str, int]]:
    """Per constraint, the counted pods of each eligible domain (domains with none included).

    Which nodes count, and in which domain, depends on node specs only: it is worked
    out once per view and kept (`eligible_nodes`); the pods are then read off the
    nodes that hold counted peers, not off every node.
    """
    out = []
    placed = view.placed()
    eligible = eligible_nodes(spec, constraints, view, every_key)
    for spread, value_of in zip(constraints, eligible, strict=True):
        domains = dict.fromkeys(value_of.values(), 0)
        for peer, nodes in placed.items():
            if spread.counts(peer, spec.namespace):
                for name, pods in nodes.items():
                    value = value_of.get(name)
                    if value is not None:
                        domains[value] += pods
        out.append(domains)
    return out


def eligible_nodes(
    spec: SchedulingSpec,
    constraints: Sequence[Spread],
    view: ClusterView,
    every_key: bool = True,
) -> list[dict[str, str]]:
    """Per constraint, each node whose pods count for it, with its domain: nodes that the
    constraint's inclusion policies admit, carrying every constraint's key (or, without
    `every_key`, any node, a missing key read as the value "")."""
    key = (
        "topology-spread",
        constraints,
        every_key,
        spec.node_selector,
        spec.required_terms,
        spec.tolerations if any(c.honor_taints for c in constraints) else (),
    )
    return view.derived(key, lambda: _eligible_nodes(spec, constraints, view, every_key))


def _eligible_nodes(
    spec: SchedulingSpec, constraints: Sequence[Spread], view: ClusterView, every_key: bool
) -> list[dict[str, str]]:
    out: list[dict[str, str]] = [{} for _ in constraints]
    for name in view.node_names():
        node = view.node(name)
        if not every_key or has_keys(node, constraints):
            for spread, value_of in zip(constraints, out, strict=True):
                if includes(spread, spec, node):
                    value_of[name] = node.labels.get(spread.topology_key, "")
    return out


def spread_filter(
    spec: SchedulingSpec,
    node_name: str,
    view: ClusterView,
    defaults: DefaultSpreading = NO_DEFAULTS,
) -> str | None:
    """Upstream's PreFilter and Filter for one node: None if it passes, else the reason."""
    constraints = spreads(spec, DO_NOT_SCHEDULE, defaults)
    if not constraints:
        return None
    node = view.node(node_name)
    labels = dict(spec.labels)
    counts = view.counted(
        ("topology-spread", spec, defaults), lambda: domain_counts(spec, constraints, view)
    )
    for spread, domains in zip(constraints, counts, strict=True):
        value = node.labels.get(spread.topology_key)
        if value is None:
            return REASON_MISSING_LABEL
        # with no eligible domain at all the minimum is 0 as well (fewer than minDomains >= 1)
        minimum = 0 if len(domains) < spread.min_domains else min(domains.values())
        skew = domains.get(value, 0) + spread.selects(labels) - minimum
        if skew > spread.max_skew:
            return REASON
    return None


def go_round(x: float) -> int:
    """Go's math.Round for x >= 0: halves go up. Exact, since x - floor(x) is."""
    whole = math.floor(x)
    return whole + (x - whole >= 0.5)


def normalizing_weight(domains: int) -> float:
    """Upstream's topologyNormalizingWeight: smaller topologies weigh less."""
    return math.log(domains + 2)


def spread_scores(
    spec: SchedulingSpec,
    feasible: Sequence[str],
    view: ClusterView,
    defaults: DefaultSpreading = NO_DEFAULTS,
) -> dict[str, int]:
    """Upstream's PreScore, Score and NormalizeScore over the feasible nodes: 0..100 each.

    A pod without ScheduleAnyway constraints is skipped upstream: 0 everywhere.
    """
    constraints = spreads(spec, SCHEDULE_ANYWAY, defaults)
    if not constraints:
        return dict.fromkeys(feasible, 0)
    every_key = requires_every_key(spec, defaults)
    nodes = [view.node(name) for name in feasible]
    scored = [node for node in nodes if not every_key or has_keys(node, constraints)]
    weights = [
        normalizing_weight(
            len(scored)
            if c.topology_key == HOSTNAME_LABEL
            else len({node.labels.get(c.topology_key, "") for node in scored})
        )
        for c in constraints
    ]
    domains = domain_counts(spec, constraints, view, every_key)
    raw: dict[str, int] = {}
    for node in scored:
        total = 0.0
        for c, weight, counts in zip(constraints, weights, domains, strict=True):
            if c.topology_key not in node.labels:
                continue  # only where not every key is required: the others count
            if c.topology_key == HOSTNAME_LABEL:
                count = pods_counted(c, spec.namespace, view.peers_on(node.name))
            else:
                count = counts.get(node.labels[c.topology_key], 0)
            total += count * weight + (c.max_skew - 1)
        raw[node.name] = go_round(total)
    top, bottom = max(raw.values(), default=0), min(raw.values(), default=0)
    return {name: normalized(raw.get(name), top, bottom) for name in feasible}


def normalized(score: int | None, top: int, bottom: int) -> int:
    """Upstream's NormalizeScore for one node, reversed against the maximum over the scored
    nodes; an ignored node (None) gets 0."""
    if score is None:
        return 0
    return MAX_NODE_SCORE if top == 0 else MAX_NODE_SCORE * (top + bottom - score) // top
