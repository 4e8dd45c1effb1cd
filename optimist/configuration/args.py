"""Plugin args: each reader checks and defaults one plugin's args, as upstream's v1 does."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from optimist.configuration.fields import (
    _INT64,
    MISSING,
    ConfigError,
    _bool,
    _child,
    _int,
    _label_value,
    _list,
    _mapping,
    _one_of,
    _qualified_name,
    _qualified_name_problem,
    _str,
)
from shards.plugins.gpu_placement import DEFAULT_POLICY, DEFAULT_WINDOW, POLICIES, TIE_BREAKS

_MAX_CUSTOM_PRIORITY_SCORE = 10  # upstream's ceiling for a shape point's score
_DEFAULT_RESOURCES = ({"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1})


def _resources(value: Any, path: str, *, weight_must_be_one: bool = False) -> list[dict[str, Any]]:
    """ResourceSpec items; a weight of 0 or none means 1."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, raw in enumerate(_list(value, path)):
        rpath = f"{path}[{i}]"
        r = _mapping(raw, rpath, {"name", "weight"})
        name = _str(r.get("name", MISSING), f"{rpath}.name", empty=False)
        if _qualified_name_problem(name):
            raise ConfigError(
                f"{rpath}.name",
                name,
                "must be a resource name such as cpu, memory or example.com/gpu",
            )
        weight = (
            0 if r.get("weight") is None else _int(r["weight"], f"{rpath}.weight", bits=_INT64)
        ) or 1
        if weight_must_be_one:
            if name in seen:
                raise ConfigError(f"{rpath}.name", name, "duplicate resource")
            if weight != 1:
                raise ConfigError(f"{rpath}.weight", weight, "must be 1")
        elif not 0 < weight <= 100:
            raise ConfigError(
                f"{rpath}.weight", weight, f"resource weight of {name} not in valid range (0, 100]"
            )
        seen.add(name)
        out.append({"name": name, "weight": weight})
    return out


def _shape(value: Any, path: str) -> list[dict[str, int]]:
    """A utilization -> score curve: utilization 0..100 strictly increasing, score 0..10."""
    points = _list(value, path)
    if not points:
        raise ConfigError(
            path, value if value is not None else MISSING, "at least one point must be specified"
        )
    out = []
    for i, raw in enumerate(points):
        spath = f"{path}[{i}]"
        p = _mapping(raw, spath, {"utilization", "score"})
        utilization = (
            0 if p.get("utilization") is None else _int(p["utilization"], f"{spath}.utilization")
        )
        score = 0 if p.get("score") is None else _int(p["score"], f"{spath}.score")
        out.append({"utilization": utilization, "score": score})
    for i in range(1, len(out)):
        if out[i - 1]["utilization"] >= out[i]["utilization"]:
            raise ConfigError(
                f"{path}[{i}].utilization",
                out[i]["utilization"],
                "values must be sorted in increasing order",
            )
    for i, p in enumerate(out):
        if not 0 <= p["utilization"] <= 100:
            raise ConfigError(
                f"{path}[{i}].utilization", p["utilization"], "not in valid range [0, 100]"
            )
        if not 0 <= p["score"] <= _MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(
                f"{path}[{i}].score",
                p["score"],
                f"not in valid range [0, {_MAX_CUSTOM_PRIORITY_SCORE}]",
            )
    return out


_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


def _fit_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"})
    out: dict[str, Any] = {}
    if m.get("ignoredResources") is not None:
        rpath = _child(path, "ignoredResources")
        out["ignoredResources"] = [
            _qualified_name(r, f"{rpath}[{i}]")
            for i, r in enumerate(_list(m["ignoredResources"], rpath))
        ]
    if m.get("ignoredResourceGroups") is not None:
        gpath = _child(path, "ignoredResourceGroups")
        groups = []
        for i, g in enumerate(_list(m["ignoredResourceGroups"], gpath)):
            group = _str(g, f"{gpath}[{i}]")
            if "/" in group:
                raise ConfigError(f"{gpath}[{i}]", group, "resource group name can't contain '/'")
            groups.append(_qualified_name(group, f"{gpath}[{i}]"))
        out["ignoredResourceGroups"] = groups
    spath = _child(path, "scoringStrategy")
    if m.get("scoringStrategy") is None:
        out["scoringStrategy"] = {
            "type": "LeastAllocated",
            "resources": copy.deepcopy(list(_DEFAULT_RESOURCES)),
        }
        return out
    s = _mapping(m["scoringStrategy"], spath, {"type", "resources", "requestedToCapacityRatio"})
    kind = _one_of(s.get("type", ""), f"{spath}.type", _STRATEGIES)
    resources = _resources(s.get("resources"), f"{spath}.resources") or copy.deepcopy(
        list(_DEFAULT_RESOURCES)
    )
    strategy: dict[str, Any] = {"type": kind, "resources": resources}
    rpath = f"{spath}.requestedToCapacityRatio"
    ratio = s.get("requestedToCapacityRatio")
    if kind == "RequestedToCapacityRatio":
        if ratio is None:
            raise ConfigError(
                rpath, MISSING, "must be specified when type is RequestedToCapacityRatio"
            )
        r = _mapping(ratio, rpath, {"shape"})
        strategy["requestedToCapacityRatio"] = {"shape": _shape(r.get("shape"), f"{rpath}.shape")}
    elif ratio is not None:
        raise ConfigError(rpath, ratio, "must not be set unless type is RequestedToCapacityRatio")
    out["scoringStrategy"] = strategy
    return out


def _balanced_allocation_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"resources"})
    resources = _resources(m.get("resources"), _child(path, "resources"), weight_must_be_one=True)
    return {"resources": resources or copy.deepcopy(list(_DEFAULT_RESOURCES))}


def _inter_pod_affinity_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})
    wpath = _child(path, "hardPodAffinityWeight")
    weight = (
        1 if m.get("hardPodAffinityWeight") is None else _int(m["hardPodAffinityWeight"], wpath)
    )
    if not 0 <= weight <= 100:
        raise ConfigError(wpath, weight, "not in valid range [0, 100]")
    out: dict[str, Any] = {"hardPodAffinityWeight": weight}
    if m.get("ignorePreferredTermsOfExistingPods") is not None:
        out["ignorePreferredTermsOfExistingPods"] = _bool(
            m["ignorePreferredTermsOfExistingPods"],
            _child(path, "ignorePreferredTermsOfExistingPods"),
        )
    return out


def _gpu_placement_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    """optimist's GPUPlacement (shards/plugins/gpu_placement): which policy, how many
    recent pods make the workload it learns, and how ties between nodes are broken."""
    m = _mapping(raw, path, {"policy", "window", "tieBreak", "prioritySeed"})
    policy = _one_of(m.get("policy", DEFAULT_POLICY), _child(path, "policy"), sorted(POLICIES))
    wpath = _child(path, "window")
    window = DEFAULT_WINDOW if m.get("window") is None else _int(m["window"], wpath)
    if window < 1:
        raise ConfigError(wpath, window, "must be at least 1")
    ties = _one_of(m.get("tieBreak", "nodePriority"), _child(path, "tieBreak"), TIE_BREAKS)
    seed = (
        0
        if m.get("prioritySeed") is None
        else _int(m["prioritySeed"], _child(path, "prioritySeed"))
    )
    return {"policy": policy, "window": window, "tieBreak": ties, "prioritySeed": seed}


_CONSTRAINT_FIELDS = {
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
}


def _pod_topology_spread_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"defaultConstraints", "defaultingType"})
    cpath = _child(path, "defaultConstraints")
    raw_constraints = _list(m.get("defaultConstraints"), cpath)
    tpath = _child(path, "defaultingType")
    given = m.get("defaultingType")
    defaulting = _one_of("System" if given in (None, "") else given, tpath, ("System", "List"))
    if defaulting == "System" and raw_constraints:
        raise ConfigError(tpath, defaulting, "must be List when defaultConstraints are given")
    constraints = []
    seen: dict[tuple[str, str], int] = {}
    for i, item in enumerate(raw_constraints):
        ipath = f"{cpath}[{i}]"
        c = _mapping(item, ipath, _CONSTRAINT_FIELDS)
        skew = _int(c.get("maxSkew", 0), f"{ipath}.maxSkew")
        if skew <= 0:
            raise ConfigError(f"{ipath}.maxSkew", skew, "not in valid range (0, inf)")
        key = c.get("topologyKey", "")
        if key == "":
            raise ConfigError(f"{ipath}.topologyKey", key, "can not be empty")
        key = _qualified_name(key, f"{ipath}.topologyKey")
        when = _one_of(
            c.get("whenUnsatisfiable", ""),
            f"{ipath}.whenUnsatisfiable",
            ("DoNotSchedule", "ScheduleAnyway"),
        )
        if c.get("labelSelector") is not None:
            raise ConfigError(
                f"{ipath}.labelSelector",
                c["labelSelector"],
                "must not be set: a default constraint's selector is deduced for each pod",
            )
        if (key, when) in seen:
            raise ConfigError(
                ipath, f"{{{key}, {when}}}", f"duplicate of {cpath}[{seen[key, when]}]"
            )
        seen[key, when] = i
        constraint: dict[str, Any] = {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
        }
        if c.get("minDomains") is not None:
            constraint["minDomains"] = _int(c["minDomains"], f"{ipath}.minDomains", lo=1)
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(policy) is not None:
                constraint[policy] = _one_of(c[policy], f"{ipath}.{policy}", ("Honor", "Ignore"))
        if c.get("matchLabelKeys") is not None:
            kpath = f"{ipath}.matchLabelKeys"
            constraint["matchLabelKeys"] = [
                _qualified_name(k, f"{kpath}[{j}]")
                for j, k in enumerate(_list(c["matchLabelKeys"], kpath))
            ]
        constraints.append(constraint)
    out: dict[str, Any] = {"defaultingType": defaulting}
    if constraints:
        out["defaultConstraints"] = constraints
    return out


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _selector_term(value: Any, path: str) -> dict[str, Any]:
    """A NodeSelectorTerm: label expressions and metadata.name field expressions."""
    t = _mapping(value, path, {"matchExpressions", "matchFields"})
    out: dict[str, Any] = {}
    for kind in ("matchExpressions", "matchFields"):
        if t.get(kind) is None:
            continue
        requirements = []
        for i, raw in enumerate(_list(t[kind], f"{path}.{kind}")):
            rpath = f"{path}.{kind}[{i}]"
            r = _mapping(raw, rpath, {"key", "operator", "values"})
            values = [
                _str(v, f"{rpath}.values[{j}]")
                for j, v in enumerate(_list(r.get("values"), f"{rpath}.values"))
            ]
            if kind == "matchFields":
                key = _one_of(r.get("key", MISSING), f"{rpath}.key", ("metadata.name",))
                op = _one_of(r.get("operator", MISSING), f"{rpath}.operator", ("In", "NotIn"))
                if len(values) != 1:
                    raise ConfigError(
                        f"{rpath}.values", values, "must have exactly one value for metadata.name"
                    )
            else:
                key = _qualified_name(r.get("key", MISSING), f"{rpath}.key")
                op = _one_of(r.get("operator", MISSING), f"{rpath}.operator", _OPERATORS)
                _check_values(op, values, f"{rpath}.values")
            requirements.append({"key": key, "operator": op, "values": values})
        out[kind] = requirements
    return out


def _check_values(op: str, values: list[str], path: str) -> None:
    if op in ("In", "NotIn"):
        if not values:
            raise ConfigError(path, values, f"must be non-empty for operator {op}")
        for j, v in enumerate(values):
            _label_value(v, f"{path}[{j}]")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            raise ConfigError(path, values, f"must be empty for operator {op}")
    elif len(values) != 1 or not re.fullmatch(r"[-+]?[0-9]+", values[0]):
        raise ConfigError(path, values, f"must be exactly one integer for operator {op}")
    else:  # a label value too, as upstream's selectors require: "-5" and "+3" are not
        _label_value(values[0], f"{path}[0]")


def _node_affinity_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"addedAffinity"})
    if m.get("addedAffinity") is None:
        return {}
    apath = _child(path, "addedAffinity")
    required_key = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred_key = "preferredDuringSchedulingIgnoredDuringExecution"
    a = _mapping(m["addedAffinity"], apath, {required_key, preferred_key})
    affinity: dict[str, Any] = {}
    if a.get(required_key) is not None:
        rpath = f"{apath}.{required_key}"
        selector = _mapping(a[required_key], rpath, {"nodeSelectorTerms"})
        tpath = f"{rpath}.nodeSelectorTerms"
        affinity[required_key] = {
            "nodeSelectorTerms": [
                _selector_term(t, f"{tpath}[{i}]")
                for i, t in enumerate(_list(selector.get("nodeSelectorTerms"), tpath))
            ]
        }
    if a.get(preferred_key) is not None:
        ppath = f"{apath}.{preferred_key}"
        preferred = []
        for i, raw_term in enumerate(_list(a[preferred_key], ppath)):
            tpath = f"{ppath}[{i}]"
            t = _mapping(raw_term, tpath, {"weight", "preference"})
            weight = _int(t.get("weight", MISSING), f"{tpath}.weight", lo=1, hi=100)
            preference = _selector_term(t.get("preference"), f"{tpath}.preference")
            preferred.append({"weight": weight, "preference": preference})
        affinity[preferred_key] = preferred
    return {"addedAffinity": affinity}


def _default_preemption_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"minCandidateNodesPercentage", "minCandidateNodesAbsolute"})
    ppath, apath = (
        _child(path, "minCandidateNodesPercentage"),
        _child(path, "minCandidateNodesAbsolute"),
    )
    percentage = (
        10
        if m.get("minCandidateNodesPercentage") is None
        else _int(m["minCandidateNodesPercentage"], ppath)
    )
    absolute = (
        100
        if m.get("minCandidateNodesAbsolute") is None
        else _int(m["minCandidateNodesAbsolute"], apath)
    )
    if not 0 <= percentage <= 100:
        raise ConfigError(ppath, percentage, "not in valid range [0, 100]")
    if absolute < 0:
        raise ConfigError(apath, absolute, "not in valid range [0, inf)")
    if percentage == 0 and absolute == 0:
        raise ConfigError(
            ppath, percentage, "cannot be zero at the same time as minCandidateNodesAbsolute"
        )
    return {"minCandidateNodesPercentage": percentage, "minCandidateNodesAbsolute": absolute}


def _volume_binding_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"bindTimeoutSeconds", "shape"})
    tpath = _child(path, "bindTimeoutSeconds")
    timeout = (
        600
        if m.get("bindTimeoutSeconds") is None
        else _int(m["bindTimeoutSeconds"], tpath, bits=_INT64)
    )
    if timeout < 0:
        raise ConfigError(tpath, timeout, "should not be a negative value")
    if m.get("shape") is not None:
        raise ConfigError(
            _child(path, "shape"),
            m["shape"],
            "needs the VolumeCapacityPriority feature gate, which v1.30 has off; remove it",
        )
    return {"bindTimeoutSeconds": timeout}


# The plugins that take args in v1.30, each with its reader; the others take none.
ARGS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "DefaultPreemption": _default_preemption_args,
    "GPUPlacement": _gpu_placement_args,
    "InterPodAffinity": _inter_pod_affinity_args,
    "NodeAffinity": _node_affinity_args,
    "NodeResourcesBalancedAllocation": _balanced_allocation_args,
    "NodeResourcesFit": _fit_args,
    "PodTopologySpread": _pod_topology_spread_args,
    "VolumeBinding": _volume_binding_args,
}
