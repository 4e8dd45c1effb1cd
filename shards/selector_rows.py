"""Node selector terms judged over rows of the node table: node affinity's, and a
volume's.

A requirement is judged once per distinct label value, not once per node: the
label's values are coded per row, and the per-value answers (with one extra slot
for "label absent", which code -1 picks) are gathered by code.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from cluster.selectors import NodeSelectorTerm, Requirement
from shards.node_table import NodeTable

Rows = np.ndarray | slice
Preferences = tuple[tuple[int, NodeSelectorTerm], ...]


def label_requirement(req: Requirement, table: NodeTable, rows: Rows) -> npt.NDArray[np.bool_]:
    codes, vocab = table.label_codes(req.key)
    if req.operator in ("In", "NotIn"):  # a set: a thousand local volumes' hostnames
        inside = frozenset(req.values)
        answers = [(value in inside) == (req.operator == "In") for value in vocab]
    else:
        answers = [req.matches({req.key: value}) for value in vocab]
    answers.append(req.matches({}))  # code -1: the node has no such label
    matches: npt.NDArray[np.bool_] = np.array(answers, dtype=bool)[codes[rows]]
    return matches


def _field_requirement(req: Requirement, table: NodeTable, rows: Rows) -> npt.NDArray[np.bool_]:
    if len(req.values) != 1:
        # upstream cannot make a field selector of it: the term matches no node
        return np.zeros(table.alive[rows].shape, dtype=bool)
    inside = table.named(rows, req.values[0])
    return inside if req.operator == "In" else ~inside


def _term(term: NodeSelectorTerm, table: NodeTable, rows: Rows, *, names: bool) -> np.ndarray:
    mask = np.ones(table.alive[rows].shape, dtype=bool)
    if not term.match_expressions and not term.match_fields:
        return ~mask  # an empty term selects nothing
    for req in term.match_expressions:
        mask &= label_requirement(req, table, rows)
    for req in term.match_fields if names else ():
        mask &= _field_requirement(req, table, rows)
    return mask


def any_term(
    terms: Iterable[NodeSelectorTerm], table: NodeTable, rows: Rows, *, names: bool = True
) -> np.ndarray:
    """Terms are ORed; no term matches no node. names=False: judged on the nodes' labels
    alone, as upstream judges a volume's node affinity (against a node made of the labels,
    without a name): a term's matchFields are left out, so one of only those matches all."""
    mask = np.zeros(table.alive[rows].shape, dtype=bool)
    for term in terms:
        mask |= _term(term, table, rows, names=names)
    return mask


def preference(preferences: Preferences, table: NodeTable, rows: Rows) -> npt.NDArray[np.int64]:
    """The sum of the weights of the preferred terms each row matches."""
    total = np.zeros(table.alive[rows].shape, dtype=np.int64)
    for weight, term in preferences:
        total += weight * _term(term, table, rows, names=True)
    return total
