"""Plugin args: each reader checks and defaults one plugin's args, as upstream's v1 does.

A plugin whose args are a typed model (`cluster.plugin_args`, beside the plugin) is
read by pydantic; what it finds wrong is told as every other reader tells it: the
YAML path, the value there, and the problem. The readers still written by hand here
(PodTopologySpread, NodeAffinity) move to models of their own the same way."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, get_args

from pydantic import BaseModel, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from binder.preemption_args import DefaultPreemptionArgs
from cluster.plugin_args import Finding, Int64, PluginArgs
from optimist.configuration.fields import (
    MISSING,
    ConfigError,
    _child,
    _int,
    _label_value,
    _list,
    _mapping,
    _one_of,
    _qualified_name,
    _str,
)
from shards.plugins.gpu_placement import GPUPlacementArgs
from shards.plugins.inter_pod_affinity import InterPodAffinityArgs
from shards.plugins.noderesources import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)

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
        try:
            return model.model_validate(_without_nulls(raw) if raw is not None else {}).to_wire()
        except ValidationError as err:
            raise _config_error(err, model, raw, path) from None

    return read


def _config_error(
    err: ValidationError, model: type[PluginArgs], raw: Any, path: str
) -> ConfigError:
    """The first problem pydantic found, at its YAML path, with the value there."""
    # an unknown field first: a misspelt name is also why its field seems missing
    first = min(err.errors(), key=lambda e: e["type"] != "extra_forbidden")
    where, value = path, raw
    for part in first["loc"]:
        if isinstance(part, str) and _at(value, part) is MISSING:
            part = to_camel(part)  # a field left to its default: pydantic says its name
        where = f"{where}[{part}]" if isinstance(part, int) else _child(where, str(part))
        value = _at(value, part)
    kind = first["type"]
    found = first.get("ctx", {}).get("error")
    if isinstance(found, Finding):  # deeper than the field its check ran on
        for part in found.at:
            where = f"{where}[{part}]" if isinstance(part, int) else _child(where, str(part))
        return ConfigError(where, found.value, str(found))
    if kind == "extra_forbidden":
        fields = _model_at(model, first["loc"][:-1]).model_fields
        known = ", ".join(sorted(f.alias or n for n, f in fields.items()))
        return ConfigError(where, value, f"unknown field (known here: {known})")
    if kind == "literal_error":
        expected = first.get("ctx", {}).get("expected", "")
        choices = expected.replace("'", "").replace(" or ", ", ")
        return ConfigError(where, value, f"must be one of {choices}")
    problem = _PROBLEMS.get(kind) or str(first["msg"]).removeprefix("Value error, ")
    return ConfigError(where, value, problem)


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The model that holds what is at `loc` (list items and optional fields unwrapped)."""
    for part in loc:
        if isinstance(part, int):
            continue
        field = next((f for n, f in model.model_fields.items() if part in (n, f.alias)), None)
        inner = [field.annotation] if field is not None else []
        while inner:
            kind = inner.pop()
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                model = kind
                break
            inner.extend(get_args(kind))
    return model


def _without_nulls(value: Any) -> Any:
    """Fields set to null, taken out at every depth: Go's decoder leaves them unset."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


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
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "NodeResourcesFit": NodeResourcesFitArgs,
    "VolumeBinding": VolumeBindingArgs,
}

# The plugins that take args in v1.30 (and optimist's own), each with its reader; the
# others take none.
ARGS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    **{name: typed(model) for name, model in ARG_MODELS.items()},
    "NodeAffinity": _node_affinity_args,
    "PodTopologySpread": _pod_topology_spread_args,
}
