"""The configuration's typed models: plugin arguments (each beside its plugin, as
upstream keeps them in types_pluginargs.go), the extenders, the file's sections.

A model is the one definition of what it holds: the names the file writes
(camelCase), their types, defaults and checks. The configuration reads a file
into them strictly (no coercion, no unknown field; the loader names the YAML
path of whatever is wrong); a wire form (`to_wire`, plain data with every default
filled in) is what travels to the shards, which read it back (`from_wire`). A
field's docstring is what the site's reference says of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Self, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def _bits(low: int, high: int, bits: int) -> AfterValidator:
    def check(value: int) -> int:
        if not low <= value <= high:
            raise ValueError(f"does not fit in {bits} bits")
        return value

    return AfterValidator(check)


T = TypeVar("T")


def _list_as_tuple(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


# A YAML list, held as a tuple (the models are frozen); strict about its items.
Items = Annotated[tuple[T, ...], BeforeValidator(_list_as_tuple)]

Int32 = Annotated[int, _bits(*_INT32, 32)]  # Go's int32, as the v1 types declare it
Int64 = Annotated[int, _bits(*_INT64, 64)]


def in_range(low: int, high: int | None = None) -> AfterValidator:
    """[low, high], as upstream's validation words it ("not in valid range [0, 100]")."""
    shown = f"[{low}, {'inf)' if high is None else f'{high}]'}"

    def check(value: int) -> int:
        if value < low or (high is not None and value > high):
            raise ValueError(f"not in valid range {shown}")
        return value

    return AfterValidator(check)


_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def qualified_name_problem(text: str) -> str | None:
    """Why `text` is not a qualified name ("prefix/name" or "name"), or None if it is."""
    prefix, _, name = text.rpartition("/")
    if "/" in text and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "prefix must be a DNS subdomain such as example.com"
    if not name or len(name) > 63 or not _NAME.match(name):
        return (
            "must be a qualified name: up to 63 letters, digits, '-', '_' or '.', "
            "with an optional DNS prefix and '/'"
        )
    return None


def _qualified(name: str) -> str:
    problem = qualified_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


QualifiedName = Annotated[str, AfterValidator(_qualified)]  # a label key, a resource name


class Finding(ValueError):
    """A check's finding below the field it ran on (an item of a list): `at` is the
    path from that field (as parts, or as the text to append), `value` what the file
    has there."""

    def __init__(self, problem: str, at: tuple[int | str, ...] | str, value: object) -> None:
        super().__init__(problem)
        self.at, self.value = at, value


class WireModel(BaseModel):
    """Strict, camelCase on the wire, frozen: what every configuration model is."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        use_attribute_docstrings=True,  # a field's docstring is its description
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Self:
        return cls.model_validate(data)


class PluginArgs(WireModel):
    """A plugin's arguments (`pluginConfig[].args`); the registry of them is the loader's
    ARG_MODELS."""
