"""Plugin args: each reader checks and defaults one plugin's args, as upstream's v1 does.

A plugin whose args are a typed model (`cluster.plugin_args`, beside the plugin) is
read by pydantic; what it finds wrong is told as every other reader tells it: the
YAML path, the value there, and the problem. The readers still written by hand here
(NodeResourcesFit, NodeResourcesBalancedAllocation, PodTopologySpread, NodeAffinity)
move to models of their own the same way."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError, field_validator

from binder.preemption_args import DefaultPreemptionArgs
from cluster.plugin_args import Int64, PluginArgs
from optimist.configuration.fields import (
    _INT64,
    MISSING,
    ConfigError,
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
from shards.plugins.gpu_placement import GPUPlacementArgs
from shards.plugins.inter_pod_affinity import InterPodAffinityArgs

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


class VolumeBindingArgs(PluginArgs):
    """Upstream's; optimist does not run VolumeBinding, but reads its args as v1 does."""

    bind_timeout_seconds: Int64 = 600
    """How long a binding waits for its volumes (upstream's; not run here)."""
    shape: None = None
    """VolumeCapacityPriority's score shape: refused, the gate is off in v1.30."""

    @field_validator("bind_timeout_seconds")
    @classmethod
    def _not_negative(cls, seconds: int) -> int:
        if seconds < 0:
            raise ValueError("should not be a negative value")
        return seconds

    @field_validator("shape", mode="before")
    @classmethod
    def _gated(cls, value: object) -> None:
        raise ValueError(
            "needs the VolumeCapacityPriority feature gate, which v1.30 has off; remove it"
        )


# pydantic's error kinds, as the hand-written readers word the same problem
_PROBLEMS = {
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "float_type": "must be a number",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "missing": "must be set",
}


def typed(model: type[PluginArgs]) -> Callable[[dict[str, Any], str], dict[str, Any]]:
    """A reader for a plugin whose args are `model`: null fields read as unset, as Go's
    decoder reads them; the result is the model's wire form, every default filled in."""

    def read(raw: Any, path: str) -> dict[str, Any]:
        given = {k: v for k, v in raw.items() if v is not None} if isinstance(raw, dict) else raw
        try:
            return model.model_validate(given if given is not None else {}).to_wire()
        except ValidationError as err:
            raise _config_error(err, model, raw, path) from None

    return read


def _config_error(
    err: ValidationError, model: type[PluginArgs], raw: Any, path: str
) -> ConfigError:
    """The first problem pydantic found, at its YAML path, with the value there."""
    first = err.errors()[0]
    where, value = path, raw
    for part in first["loc"]:
        where = f"{where}[{part}]" if isinstance(part, int) else _child(where, str(part))
        value = _at(value, part)
    kind = first["type"]
    if kind == "extra_forbidden":
        known = ", ".join(sorted(f.alias or n for n, f in model.model_fields.items()))
        return ConfigError(where, value, f"unknown field (known here: {known})")
    if kind == "literal_error":
        expected = first.get("ctx", {}).get("expected", "")
        choices = expected.replace("'", "").replace(" or ", ", ")
        return ConfigError(where, value, f"must be one of {choices}")
    problem = _PROBLEMS.get(kind) or str(first["msg"]).removeprefix("Value error, ")
    return ConfigError(where, value, problem)


def _at(value: Any, part: int | str) -> Any:
    """What `value` holds at `part` (a key, or an index), MISSING if nothing."""
    if isinstance(value, dict):
        return value.get(part, MISSING)
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return value[part]
    return MISSING


# The plugins whose args are typed models, beside each plugin.
ARG_MODELS: dict[str, type[PluginArgs]] = {
    "DefaultPreemption": DefaultPreemptionArgs,
    "GPUPlacement": GPUPlacementArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "VolumeBinding": VolumeBindingArgs,
}

# The plugins that take args in v1.30 (and optimist's own), each with its reader; the
# others take none.
ARGS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    **{name: typed(model) for name, model in ARG_MODELS.items()},
    "NodeAffinity": _node_affinity_args,
    "NodeResourcesBalancedAllocation": _balanced_allocation_args,
    "NodeResourcesFit": _fit_args,
    "PodTopologySpread": _pod_topology_spread_args,
}
