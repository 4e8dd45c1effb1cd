"""NodeAffinity (filter): the pod's nodeSelector AND its required node affinity.

A requirement is judged once per distinct label value, not once per node:
the label's values are coded per row, and the per-value answers (with one
extra slot for "label absent", which code -1 picks) are gathered by code.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from cluster.selectors import NodeSelectorTerm, Requirement
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable

REASON = "node(s) didn't match Pod's node affinity/selector"


def _label_requirement(req: Requirement, table: NodeTable, rows: Rows) -> np.ndarray:
    codes, vocab = table.label_codes(req.key)
    answers = [req.matches({req.key: value}) for value in vocab]
    answers.append(req.matches({}))  # code -1: the node has no such label
    return np.array(answers, dtype=bool)[codes[rows]]


def _field_requirement(req: Requirement, table: NodeTable, rows: Rows) -> np.ndarray:
    wanted = np.array([table.index[n] for n in req.values if n in table.index], dtype=np.intp)
    inside = np.isin(np.arange(table.size)[rows], wanted)
    return inside if req.operator == "In" else ~inside


def _term(term: NodeSelectorTerm, table: NodeTable, rows: Rows) -> np.ndarray:
    mask = np.ones(table.alive[rows].shape, dtype=bool)
    if not term.match_expressions and not term.match_fields:
        return ~mask  # an empty term selects nothing
    for req in term.match_expressions:
        mask &= _label_requirement(req, table, rows)
    for req in term.match_fields:
        mask &= _field_requirement(req, table, rows)
    return mask


class NodeAffinity(FilterPlugin):
    name = "NodeAffinity"

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        mask = np.ones(table.alive[rows].shape, dtype=bool)
        for key, value in pod.spec.node_selector:
            mask &= _label_requirement(Requirement(key, "In", (value,)), table, rows)
        if pod.spec.required_terms is not None:
            any_term = np.zeros_like(mask)
            for term in pod.spec.required_terms:
                any_term |= _term(term, table, rows)
            mask &= any_term
        return mask

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        return Counter({REASON: len(rows)})
