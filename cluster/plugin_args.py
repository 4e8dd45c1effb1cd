"""Plugin arguments as typed models, each beside its plugin, as upstream keeps them in
types_pluginargs.go.

A model is the one definition of a plugin's arguments: the names the file writes
(camelCase), their types, defaults and checks. The configuration reads a file's
args into one, strictly (no coercion, no unknown field; the loader names the YAML
path of whatever is wrong); its wire form (`to_wire`, plain data with every default
filled in) is what travels to the shards, which read it back (`from_wire`). A
field's docstring is what the site's plugin reference says of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def _bits(low: int, high: int, bits: int) -> AfterValidator:
    def check(value: int) -> int:
        if not low <= value <= high:
            raise ValueError(f"does not fit in {bits} bits")
        return value

    return AfterValidator(check)


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


class PluginArgs(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,  # a field's docstring is its description
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Self:
        return cls.model_validate(data)
