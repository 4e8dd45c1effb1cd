"""Plugin args: each plugin's are a typed model beside it (`cluster.plugin_args`), read
here, strictly, with v1's defaults and checks; what is wrong is told as the rest of
the loader tells it: the YAML path, the value there, and the problem."""

from __future__ import annotations

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
)
from shards.plugins.gpu_placement import GPUPlacementArgs
from shards.plugins.inter_pod_affinity import InterPodAffinityArgs
from shards.plugins.node_affinity.node_affinity_args import NodeAffinityArgs
from shards.plugins.noderesources import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from shards.plugins.pod_topology_spread.pod_topology_spread_args import PodTopologySpreadArgs


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
        where = _step(where, part)
        value = _at(value, part)
    kind = first["type"]
    found = first.get("ctx", {}).get("error")
    if isinstance(found, Finding):  # deeper than the field its check ran on
        for part in found.at:
            where = _step(where, part)
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


def _step(path: str, part: int | str) -> str:
    """`path` one level down: an index, or a field."""
    return f"{path}[{part}]" if isinstance(part, int) else _child(path, part)


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
    "NodeAffinity": NodeAffinityArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "VolumeBinding": VolumeBindingArgs,
}

# The plugins that take args in v1.30 (and optimist's own), each with its reader; the
# others take none.
ARGS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    name: typed(model) for name, model in sorted(ARG_MODELS.items())
}
