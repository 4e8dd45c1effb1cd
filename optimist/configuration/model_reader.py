"""Reading a section of the file into its typed model; what is wrong is told as the rest
of the loader tells it: the YAML path, the value there, and the problem."""

from __future__ import annotations

from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from cluster.config_types import Finding, WireModel
from optimist.configuration.fields import MISSING, ConfigError, child

M = TypeVar("M", bound=WireModel)

# pydantic's error kinds, as the hand-written readers word the same problem
_PROBLEMS = {
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "float_type": "must be a number",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "missing": "must be set",
}


def read_model(model: type[M], raw: Any, path: str) -> M:
    """`raw` (the file's value at `path`) as a `model`: null fields read as unset, as Go's
    decoder reads them, and null or absent as every default."""
    try:
        return model.model_validate(_without_nulls(raw, model) if raw is not None else {})
    except ValidationError as err:
        raise _config_error(err, model, raw, path) from None


def _config_error(err: ValidationError, model: type[WireModel], raw: Any, path: str) -> ConfigError:
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
        if isinstance(found.at, str):
            where += found.at
        else:
            for part in found.at:
                where = _step(where, part)
        return ConfigError(where, found.value, str(found))
    if kind == "extra_forbidden":
        fields = model_at(model, first["loc"][:-1]).model_fields
        known = ", ".join(sorted(f.alias or n for n, f in fields.items()))
        return ConfigError(where, value, f"unknown field (known here: {known})")
    if kind == "literal_error":
        expected = first.get("ctx", {}).get("expected", "")
        choices = expected.replace("'", "").replace(" or ", ", ")
        return ConfigError(where, value, f"must be one of {choices}")
    problem = _PROBLEMS.get(kind) or str(first["msg"]).removeprefix("Value error, ")
    return ConfigError(where, value, problem)


def model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The model that holds what is at `loc` (list items and optional fields unwrapped)."""
    for part in loc:
        if isinstance(part, str):
            model = field_model(model, part) or model
    return model


def field_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The model a field holds (itself, in a list or optional), None if it holds plain data."""
    field = next((f for n, f in model.model_fields.items() if name in (n, f.alias)), None)
    inner = [field.annotation] if field is not None else []
    while inner:
        kind = inner.pop()
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return kind
        inner.extend(get_args(kind))
    return None


def _without_nulls(value: Any, model: type[BaseModel] | None) -> Any:
    """Fields set to null, taken out at every depth: Go's decoder leaves them unset. A
    null in plain data (a map's value) stays, for its field's check to refuse."""
    if isinstance(value, list):
        return [_without_nulls(v, model) for v in value]
    if not isinstance(value, dict) or model is None:
        return value
    fields = {f.alias or n for n, f in model.model_fields.items()}
    return {
        k: _without_nulls(v, field_model(model, k))
        for k, v in value.items()
        if v is not None or k not in fields
    }


def _step(path: str, part: int | str) -> str:
    """`path` one level down: an index, or a field."""
    return f"{path}[{part}]" if isinstance(part, int) else child(path, part)


def _at(value: Any, part: int | str) -> Any:
    """What `value` holds at `part` (a key, or an index), MISSING if nothing."""
    if isinstance(value, dict):
        return value.get(part, MISSING)
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return value[part]
    return MISSING
