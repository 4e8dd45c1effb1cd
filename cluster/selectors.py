"""Label and node selectors, with upstream's matching rules.

A node-selector requirement also knows Gt and Lt; a label selector (of pods,
namespaces) knows In, NotIn, Exists and DoesNotExist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NAME_FIELD = "metadata.name"  # the one field a node selector term can match


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        have = parse_int64(labels[self.key]) if present else None
        if have is None:
            return False
        bound = int(self.values[0])
        return have > bound if self.operator == "Gt" else have < bound


_INT64 = re.compile(r"[+-]?[0-9]+")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def is_label_value(text: str) -> bool:
    """Upstream's label value: empty, or up to 63 letters, digits, '-', '_' and '.',
    starting and ending with a letter or digit. A selector's values must be such too
    (upstream's labels.NewRequirement), Gt's and Lt's integers included: "-5" is not."""
    return len(text) <= 63 and _LABEL_VALUE.fullmatch(text) is not None


def parse_int64(text: str) -> int | None:
    """A label value as Go's strconv.ParseInt reads it: plain digits within int64, else None."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Expressions ANDed over labels; fields (only `metadata.name`) over the node."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False  # an empty term selects nothing, as upstream
        fields = {NAME_FIELD: name}
        return all(r.matches(labels) for r in self.match_expressions) and all(
            r.matches(fields) for r in self.match_fields
        )


def named_nodes(terms: Sequence[NodeSelectorTerm] | None) -> frozenset[str] | None:
    """The nodes that required terms name by `metadata.name In`, when every term names
    some, as upstream's NodeAffinity PreFilter finds them: a DaemonSet's pod names one.
    None when some term can match a node of any name; empty when the terms conflict."""
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        named = [
            set(r.values) for r in term.match_fields if r.key == NAME_FIELD and r.operator == "In"
        ]
        if not named:
            return None  # the terms are ORed: this one can match any node
        names |= set.intersection(*named)
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """matchLabels and matchExpressions, ANDed. An empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.match_expressions
        )
