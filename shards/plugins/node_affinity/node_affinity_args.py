"""NodeAffinityArgs: an affinity added to every pod of the profile, as v1 declares and
validates it (a NodeSelector's rules: label keys, operators and their values)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from cluster.config_types import Finding, Int32, PluginArgs, QualifiedName, in_range

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


def _label_value_problem(value: str) -> str | None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return "must be a label value: up to 63 letters, digits, '-', '_' or '.'"
    return None


class NodeSelectorRequirement(PluginArgs):
    """A rule on a node label."""

    key: QualifiedName
    """The label key."""
    operator: Operator
    """How the label's value is compared with `values`."""
    values: list[str] = Field(default_factory=list, validate_default=True)
    """In and NotIn: one or more; Exists and DoesNotExist: none; Gt and Lt: one integer."""

    @field_validator("values")
    @classmethod
    def _for_the_operator(cls, values: list[str], info: ValidationInfo) -> list[str]:
        op = info.data.get("operator")
        if op in ("In", "NotIn"):
            if not values:
                raise ValueError(f"must be non-empty for operator {op}")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise ValueError(f"must be empty for operator {op}")
        elif op is not None and (len(values) != 1 or not re.fullmatch(r"[-+]?[0-9]+", values[0])):
            raise ValueError(f"must be exactly one integer for operator {op}")
        for j, value in enumerate(values if op is not None else ()):
            problem = _label_value_problem(value)  # upstream's selectors: "-5" is none
            if problem:
                raise Finding(problem, (j,), value)
        return values


class NodeFieldSelectorRequirement(PluginArgs):
    """A rule on the node's name, the one field a selector may name."""

    key: Literal["metadata.name"]
    """metadata.name."""
    operator: Literal["In", "NotIn"]
    """In or NotIn."""
    values: list[str] = Field(default_factory=list, validate_default=True)
    """Exactly one node name."""

    @field_validator("values")
    @classmethod
    def _one(cls, values: list[str]) -> list[str]:
        if len(values) != 1:
            raise ValueError("must have exactly one value for metadata.name")
        return values


class NodeSelectorTerm(PluginArgs):
    """Rules that must all hold."""

    match_expressions: list[NodeSelectorRequirement] | None = None
    """Rules on node labels."""
    match_fields: list[NodeFieldSelectorRequirement] | None = None
    """Rules on the node's name."""


class NodeSelector(PluginArgs):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)
    """Terms of which one must hold."""


class PreferredSchedulingTerm(PluginArgs):
    weight: Annotated[Int32, in_range(1, 100)]
    """What a node matching the preference adds to its score, 1 to 100."""
    preference: NodeSelectorTerm = Field(default_factory=NodeSelectorTerm)
    """The term a node should match."""


class AddedAffinity(PluginArgs):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    """A selector every node must match, beside the pod's own."""
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )
    """Preferences added to the pod's own."""


class NodeAffinityArgs(PluginArgs):
    added_affinity: AddedAffinity | None = None
    """An affinity added to every pod of the profile (none: the pods' own alone)."""
