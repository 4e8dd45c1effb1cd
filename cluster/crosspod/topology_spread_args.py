"""PodTopologySpreadArgs: the cluster's default constraints, as v1 declares and
validates them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from cluster.config_types import (
    Finding,
    Int32,
    PluginArgs,
    QualifiedName,
    in_range,
    qualified_name_problem,
)


class DefaultConstraint(PluginArgs):
    """A TopologySpreadConstraint given to pods that have none of their own."""

    max_skew: Int32 = Field(default=0, validate_default=True)
    """How far the pods' count in one domain may exceed the smallest domain's."""
    topology_key: str = Field(default="", validate_default=True)
    """The node label whose values are the domains."""
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    """DoNotSchedule filters; ScheduleAnyway only scores."""
    label_selector: None = None
    """Not for a default: each pod's selector is deduced from its owners."""
    min_domains: Annotated[Int32, in_range(1)] | None = None
    """Fewer domains than this count as a skew (DoNotSchedule only)."""
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    """Whether the pod's node affinity limits the domains counted (default Honor)."""
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    """Whether nodes whose taints the pod does not tolerate count (default Ignore)."""
    match_label_keys: list[QualifiedName] | None = None
    """Pod label keys whose values narrow the selector."""

    @field_validator("max_skew")
    @classmethod
    def _positive(cls, skew: int) -> int:
        if skew <= 0:
            raise ValueError("not in valid range (0, inf)")
        return skew

    @field_validator("topology_key")
    @classmethod
    def _key(cls, key: str) -> str:
        if not key:
            raise ValueError("can not be empty")
        problem = qualified_name_problem(key)
        if problem:
            raise ValueError(problem)
        return key

    @field_validator("label_selector", mode="before")
    @classmethod
    def _deduced(cls, selector: object) -> None:
        raise ValueError("must not be set: a default constraint's selector is deduced for each pod")


class PodTopologySpreadArgs(PluginArgs):
    default_constraints: list[DefaultConstraint] | None = None
    """The constraints for pods without their own (defaultingType List)."""
    defaulting_type: Literal["System", "List"] = Field(default="System", validate_default=True)
    """System: upstream's built-in defaults (zone and hostname, ScheduleAnyway);
    List: defaultConstraints."""

    @field_validator("default_constraints")
    @classmethod
    def _once_each(
        cls, constraints: list[DefaultConstraint] | None
    ) -> list[DefaultConstraint] | None:
        seen: dict[tuple[str, str], int] = {}
        for i, c in enumerate(constraints or ()):
            key = (c.topology_key, c.when_unsatisfiable)
            if key in seen:
                shown = f"{{{c.topology_key}, {c.when_unsatisfiable}}}"
                raise Finding(f"duplicate of defaultConstraints[{seen[key]}]", (i,), shown)
            seen[key] = i
        return constraints or None

    @field_validator("defaulting_type", mode="before")
    @classmethod
    def _empty_is_system(cls, kind: object) -> object:
        return "System" if kind == "" else kind

    @field_validator("defaulting_type")
    @classmethod
    def _list_for_constraints(cls, kind: str, info: ValidationInfo) -> str:
        if kind == "System" and info.data.get("default_constraints"):
            raise ValueError("must be List when defaultConstraints are given")
        return kind
