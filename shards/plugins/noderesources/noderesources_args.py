"""NodeResourcesFitArgs and NodeResourcesBalancedAllocationArgs, as v1 declares,
defaults and validates them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from cluster.config_types import (
    Finding,
    Int32,
    Int64,
    PluginArgs,
    QualifiedName,
    in_range,
    qualified_name_problem,
)

MAX_CUSTOM_PRIORITY_SCORE = 10  # upstream's ceiling for a shape point's score


def _resource_name(name: str) -> str:
    if not name:
        raise ValueError("must not be empty")
    if qualified_name_problem(name):
        raise ValueError("must be a resource name such as cpu, memory or example.com/gpu")
    return name


def _group(name: str) -> str:
    if "/" in name:
        raise ValueError("resource group name can't contain '/'")
    problem = qualified_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


class ResourceSpec(PluginArgs):
    name: Annotated[str, AfterValidator(_resource_name)]
    """The resource, as a node's allocatable names it."""
    weight: Int64 = Field(default=0, validate_default=True)
    """Its weight in the score; 0 (or none) means 1."""


class WeighedResource(ResourceSpec):
    @field_validator("weight")
    @classmethod
    def _weight(cls, weight: int, info: ValidationInfo) -> int:
        weight = weight or 1
        if not 0 < weight <= 100:
            name = info.data.get("name", "")
            raise ValueError(f"resource weight of {name} not in valid range (0, 100]")
        return weight


class BalancedResource(ResourceSpec):
    @field_validator("weight")
    @classmethod
    def _weight(cls, weight: int) -> int:
        if (weight or 1) != 1:
            raise ValueError("must be 1")
        return 1


def _default_resources() -> list[WeighedResource]:
    return [WeighedResource(name="cpu", weight=1), WeighedResource(name="memory", weight=1)]


def _balanced_defaults() -> list[BalancedResource]:
    return [BalancedResource(name=n) for n in ("cpu", "memory")]


class UtilizationShapePoint(PluginArgs):
    utilization: Annotated[Int32, in_range(0, 100)] = 0
    """Percent of the node's allocatable requested, 0 to 100."""
    score: Annotated[Int32, in_range(0, MAX_CUSTOM_PRIORITY_SCORE)] = 0
    """The score there, 0 to 10 (scaled to 0 to 100 as upstream does)."""


class RequestedToCapacityRatioParam(PluginArgs):
    shape: list[UtilizationShapePoint] = Field(default_factory=list, validate_default=True)
    """The curve's points, by increasing utilization."""

    @field_validator("shape")
    @classmethod
    def _increasing(cls, shape: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        if not shape:
            raise ValueError("at least one point must be specified")
        for i in range(1, len(shape)):
            if shape[i - 1].utilization >= shape[i].utilization:
                raise Finding(
                    "values must be sorted in increasing order",
                    (i, "utilization"),
                    shape[i].utilization,
                )
        return shape


Strategy = Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]


class ScoringStrategy(PluginArgs):
    type: Strategy
    """How a node's use of the resources scores."""
    resources: list[WeighedResource] = Field(default_factory=_default_resources)
    """The resources scored, with their weights (none given: cpu and memory)."""
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = Field(
        default=None, validate_default=True
    )
    """The curve, for RequestedToCapacityRatio alone."""

    @field_validator("resources")
    @classmethod
    def _or_default(cls, resources: list[WeighedResource]) -> list[WeighedResource]:
        return resources or _default_resources()

    @field_validator("requested_to_capacity_ratio")
    @classmethod
    def _only_for_its_type(
        cls, ratio: RequestedToCapacityRatioParam | None, info: ValidationInfo
    ) -> RequestedToCapacityRatioParam | None:
        kind = info.data.get("type")
        if kind == "RequestedToCapacityRatio" and ratio is None:
            raise ValueError("must be specified when type is RequestedToCapacityRatio")
        if kind != "RequestedToCapacityRatio" and ratio is not None:
            raise ValueError("must not be set unless type is RequestedToCapacityRatio")
        return ratio


class NodeResourcesFitArgs(PluginArgs):
    ignored_resources: list[QualifiedName] | None = None
    """Extended resources the filter does not check."""
    ignored_resource_groups: list[Annotated[str, AfterValidator(_group)]] | None = None
    """Groups of extended resources (the part before '/') the filter does not check."""
    scoring_strategy: ScoringStrategy = Field(
        default_factory=lambda: ScoringStrategy(type="LeastAllocated")
    )
    """How the score weighs the node's requested resources."""


class NodeResourcesBalancedAllocationArgs(PluginArgs):
    resources: list[BalancedResource] = Field(default_factory=_balanced_defaults)
    """The resources whose balance is scored, each once (none given: cpu and memory)."""

    @field_validator("resources")
    @classmethod
    def _once_each(cls, resources: list[BalancedResource]) -> list[BalancedResource]:
        seen: set[str] = set()
        for i, r in enumerate(resources):
            if r.name in seen:
                raise Finding("duplicate resource", (i, "name"), r.name)
            seen.add(r.name)
        return resources or _balanced_defaults()
