"""The object model: nodes and pods as the scheduler needs them.

Manifests (Kubernetes-style dicts) are parsed here once, into frozen
dataclasses with exact integer resources. A manifest optimist cannot use is
rejected with `InvalidObject`, naming the object, the field and the value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from cluster import resources as res
from cluster.errors import InvalidObject

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" or "Exists"
    value: str
    effect: str  # "" tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        """Upstream `Toleration.ToleratesTaint`."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Upstream label-selector semantics for node selector requirements."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if not present:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        bound = int(self.values[0])
        return have > bound if self.operator == "Gt" else have < bound


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Expressions ANDed over labels; fields (only `metadata.name`) over the node."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False  # an empty term selects nothing, as upstream
        fields = {"metadata.name": name}
        return all(r.matches(labels) for r in self.match_expressions) and all(
            r.matches(fields) for r in self.match_fields
        )


@dataclass(frozen=True, slots=True)
class SchedulingSpec:
    """Everything about a pod that decides where it may go and how it scores.

    Pods with equal specs form one equivalence class: a shard filters and
    scores the nodes once per class, not once per pod.
    """

    requests: tuple[tuple[str, int], ...]  # sorted, with `pods` and score-only amounts
    profile: str = "default-scheduler"  # the schedulerName: each profile has its own plugins
    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[NodeSelectorTerm, ...] | None = None  # None: no requirement
    tolerations: tuple[Toleration, ...] = ()

    def to_wire(self) -> list[Any]:
        terms = None
        if self.required_terms is not None:
            terms = [
                [
                    [[r.key, r.operator, list(r.values)] for r in t.match_expressions],
                    [[r.key, r.operator, list(r.values)] for r in t.match_fields],
                ]
                for t in self.required_terms
            ]
        return [
            [list(p) for p in self.requests],
            self.profile,
            [list(p) for p in self.node_selector],
            terms,
            [[t.key, t.operator, t.value, t.effect] for t in self.tolerations],
        ]

    @classmethod
    def from_wire(cls, wire: list[Any]) -> SchedulingSpec:
        requests, profile, selector, terms, tolerations = wire

        def reqs(items: list[Any]) -> tuple[Requirement, ...]:
            return tuple(Requirement(k, op, tuple(v)) for k, op, v in items)

        return cls(
            requests=tuple((str(n), int(a)) for n, a in requests),
            profile=str(profile),
            node_selector=tuple((str(k), str(v)) for k, v in selector),
            required_terms=None
            if terms is None
            else tuple(NodeSelectorTerm(reqs(e), reqs(f)) for e, f in terms),
            tolerations=tuple(Toleration(*t) for t in tolerations),
        )

    @property
    def digest(self) -> bytes:
        return hashlib.blake2b(msgpack.packb(self.to_wire()), digest_size=16).digest()


@dataclass(slots=True)
class Pod:
    namespace: str
    name: str
    uid: str
    priority: int
    spec: SchedulingSpec
    node_name: str = ""  # set when the manifest is already bound
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def scheduler_name(self) -> str:
        return self.spec.profile


@dataclass(slots=True)
class Node:
    name: str
    allocatable: dict[str, int]
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False

    def to_wire(self) -> list[Any]:
        return [
            self.name,
            self.allocatable,
            self.labels,
            [[t.key, t.value, t.effect] for t in self.taints],
            self.unschedulable,
        ]

    @classmethod
    def from_wire(cls, wire: list[Any]) -> Node:
        name, allocatable, labels, taints, unschedulable = wire
        return cls(
            name,
            dict(allocatable),
            dict(labels),
            tuple(Taint(*t) for t in taints),
            bool(unschedulable),
        )


# --- manifests ---------------------------------------------------------------


def _map(obj: str, path: str, raw: object) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidObject(obj, path, raw, "must be a map")
    return raw


def _list(obj: str, path: str, raw: object) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidObject(obj, path, raw, "must be a list")
    return raw


def _str_map(obj: str, path: str, raw: object) -> dict[str, str]:
    out = {}
    for key, value in _map(obj, path, raw).items():
        if not isinstance(value, str):
            raise InvalidObject(obj, f"{path}.{key}", value, "must be a string")
        out[str(key)] = value
    return out


def _requirement(obj: str, path: str, raw: object, *, fields: bool) -> Requirement:
    raw = _map(obj, path, raw)
    key = raw.get("key")
    op = raw.get("operator")
    values = _list(obj, f"{path}.values", raw.get("values"))
    if not isinstance(key, str) or not key:
        raise InvalidObject(obj, f"{path}.key", key, "must be a non-empty string")
    allowed = ("In", "NotIn") if fields else SELECTOR_OPERATORS
    if op not in allowed:
        raise InvalidObject(obj, f"{path}.operator", op, f"must be one of {', '.join(allowed)}")
    if fields and key != "metadata.name":
        raise InvalidObject(obj, f"{path}.key", key, "matchFields supports only metadata.name")
    if op in ("In", "NotIn") and not values:
        raise InvalidObject(obj, f"{path}.values", values, f"{op} needs at least one value")
    if op in ("Exists", "DoesNotExist") and values:
        raise InvalidObject(obj, f"{path}.values", values, f"{op} takes no values")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise InvalidObject(obj, f"{path}.values", values, f"{op} needs exactly one value")
        try:
            int(values[0])
        except (TypeError, ValueError):
            raise InvalidObject(obj, f"{path}.values[0]", values[0], "must be an integer") from None
    return Requirement(key, op, tuple(str(v) for v in values))


def _term(obj: str, path: str, raw: object) -> NodeSelectorTerm:
    raw = _map(obj, path, raw)
    exprs = _list(obj, f"{path}.matchExpressions", raw.get("matchExpressions"))
    flds = _list(obj, f"{path}.matchFields", raw.get("matchFields"))
    return NodeSelectorTerm(
        tuple(
            _requirement(obj, f"{path}.matchExpressions[{i}]", e, fields=False)
            for i, e in enumerate(exprs)
        ),
        tuple(
            _requirement(obj, f"{path}.matchFields[{i}]", f, fields=True)
            for i, f in enumerate(flds)
        ),
    )


def _required_terms(obj: str, spec: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...] | None:
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = _map(obj, "spec.affinity", spec.get("affinity"))
    node_affinity = _map(obj, "spec.affinity.nodeAffinity", affinity.get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    required = _map(obj, base, required)
    terms = _list(obj, f"{base}.nodeSelectorTerms", required.get("nodeSelectorTerms"))
    if not terms:
        raise InvalidObject(obj, f"{base}.nodeSelectorTerms", terms, "needs at least one term")
    return tuple(_term(obj, f"{base}.nodeSelectorTerms[{i}]", t) for i, t in enumerate(terms))


def _toleration(obj: str, path: str, raw: object) -> Toleration:
    raw = _map(obj, path, raw)
    key = raw.get("key") or ""
    op = raw.get("operator") or "Equal"
    value = raw.get("value") or ""
    effect = raw.get("effect") or ""
    if op not in ("Equal", "Exists"):
        raise InvalidObject(obj, f"{path}.operator", op, "must be Equal or Exists")
    if op == "Exists" and value:
        raise InvalidObject(obj, f"{path}.value", value, "must be empty when operator is Exists")
    if op == "Equal" and not key:
        raise InvalidObject(obj, f"{path}.key", key, "an empty key needs operator Exists")
    if effect and effect not in TAINT_EFFECTS:
        raise InvalidObject(
            obj, f"{path}.effect", effect, f"must be one of {', '.join(TAINT_EFFECTS)}"
        )
    return Toleration(str(key), op, str(value), effect)


def _container_requests(obj: str, path: str, raw: object) -> res.Resources:
    """Requests, defaulted from limits where only limits are set, as the API server does."""
    resources = _map(obj, f"{path}.resources", _map(obj, path, raw).get("resources"))
    requests = res.parse_resource_list(obj, f"{path}.resources.requests", resources.get("requests"))
    limits = res.parse_resource_list(obj, f"{path}.resources.limits", resources.get("limits"))
    for name, amount in limits.items():
        requests.setdefault(name, amount)
    return requests


def _metadata(raw: Mapping[str, Any], kind: str) -> tuple[str, str, Mapping[str, Any]]:
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        raise InvalidObject(kind, "metadata", meta, "must be a map")
    name = meta.get("name")
    namespace = meta.get("namespace") or "default"
    obj = f"{kind} {namespace}/{name}" if kind == "Pod" else f"{kind} {name}"
    if not isinstance(name, str) or not name:
        raise InvalidObject(obj, "metadata.name", name, "must be a non-empty string")
    return name, str(namespace), meta


def pod_from_manifest(raw: Mapping[str, Any]) -> Pod:
    """Parse a Pod manifest; raises `InvalidObject` naming the bad field."""
    name, namespace, meta = _metadata(raw, "Pod")
    obj = f"Pod {namespace}/{name}"
    spec = _map(obj, "spec", raw.get("spec"))
    containers = _list(obj, "spec.containers", spec.get("containers"))
    if not containers:
        raise InvalidObject(obj, "spec.containers", containers, "needs at least one container")
    regular = [
        _container_requests(obj, f"spec.containers[{i}]", c) for i, c in enumerate(containers)
    ]
    inits = [
        (
            _container_requests(obj, f"spec.initContainers[{i}]", c),
            _map(obj, f"spec.initContainers[{i}]", c).get("restartPolicy") == "Always",
        )
        for i, c in enumerate(_list(obj, "spec.initContainers", spec.get("initContainers")))
    ]
    overhead = res.parse_resource_list(obj, "spec.overhead", spec.get("overhead"))
    requests = res.pod_requests(regular, inits, overhead)
    nonzero = res.pod_requests(
        [res.with_nonzero_defaults(r) for r in regular],
        [(res.with_nonzero_defaults(r), sidecar) for r, sidecar in inits],
        {
            res.NONZERO_CPU: overhead.get(res.CPU, 0),
            res.NONZERO_MEMORY: overhead.get(res.MEMORY, 0),
        },
    )
    requests[res.PODS] = 1
    requests.update(nonzero)
    tolerations = _list(obj, "spec.tolerations", spec.get("tolerations"))
    priority = spec.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise InvalidObject(obj, "spec.priority", priority, "must be an integer")
    node_name = spec.get("nodeName") or ""
    if not isinstance(node_name, str):
        raise InvalidObject(obj, "spec.nodeName", node_name, "must be a string")
    return Pod(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or f"{namespace}/{name}"),
        priority=priority,
        spec=SchedulingSpec(
            requests=tuple(sorted((k, v) for k, v in requests.items() if v or k == res.PODS)),
            profile=str(spec.get("schedulerName") or "default-scheduler"),
            node_selector=tuple(
                sorted(_str_map(obj, "spec.nodeSelector", spec.get("nodeSelector")).items())
            ),
            required_terms=_required_terms(obj, spec),
            tolerations=tuple(
                _toleration(obj, f"spec.tolerations[{i}]", t) for i, t in enumerate(tolerations)
            ),
        ),
        node_name=node_name,
        labels=_str_map(obj, "metadata.labels", meta.get("labels")),
    )


def node_from_manifest(raw: Mapping[str, Any]) -> Node:
    """Parse a Node manifest; allocatable falls back to capacity, as the API server defaults it."""
    name, _, meta = _metadata(raw, "Node")
    obj = f"Node {name}"
    spec = _map(obj, "spec", raw.get("spec"))
    status = _map(obj, "status", raw.get("status"))
    field_name = (
        "status.allocatable" if status.get("allocatable") is not None else "status.capacity"
    )
    allocatable = res.parse_resource_list(obj, field_name, status.get(field_name.split(".")[1]))
    taints = []
    for i, t in enumerate(_list(obj, "spec.taints", spec.get("taints"))):
        t = _map(obj, f"spec.taints[{i}]", t)
        key, effect = t.get("key"), t.get("effect")
        if not isinstance(key, str) or not key:
            raise InvalidObject(obj, f"spec.taints[{i}].key", key, "must be a non-empty string")
        if effect not in TAINT_EFFECTS:
            raise InvalidObject(
                obj,
                f"spec.taints[{i}].effect",
                effect,
                f"must be one of {', '.join(TAINT_EFFECTS)}",
            )
        taints.append(Taint(key, str(t.get("value") or ""), effect))
    return Node(
        name=name,
        allocatable=allocatable,
        labels=_str_map(obj, "metadata.labels", meta.get("labels")),
        taints=tuple(taints),
        unschedulable=bool(spec.get("unschedulable", False)),
    )
