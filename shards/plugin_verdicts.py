"""A pod's verdict plugin by plugin, over every node, from the shard's own plugins.

`ShardCore.explain` searches for the pod as it would place it (`ClassState.best`,
the same tie-break and percentageOfNodesToScore window) and then asks this module
to lay out what the search saw: each filter over every node on its own, the
scores of every feasible node, and the margin the choice won by.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from cluster.explanation import FilterVerdict, NodeColumns, PodExplanation, ScorerColumn
from cluster.messages import Decision
from shards.class_state import ClassState


def explain_pod(key: str, state: ClassState, row: int, top: int) -> PodExplanation:
    """What `state`'s search, which chose `row` (-1: none), saw; `top` nodes described
    (0: every node)."""
    pod, profile, table = state.pod, state.profile, state.table
    alive = np.flatnonzero(table.alive[: table.size])
    # each filter alone, over every live node: which nodes it rejects
    rejects = np.zeros((len(profile.filters), table.size), dtype=bool)
    filters = []
    blamed = np.zeros(table.size, dtype=bool)  # rejected by an earlier filter
    for i, plugin in enumerate(profile.filters):
        ok = plugin.filter(pod, table, alive) if len(alive) else np.ones(0, dtype=bool)
        rejected = alive[~ok]
        rejects[i, rejected] = True
        first = rejected[~blamed[rejected]]
        blamed[first] = True
        reasons = plugin.reasons(pod, table, rejected) if len(rejected) else Counter()
        filters.append(FilterVerdict(plugin.name, len(rejected), len(first), dict(reasons)))
    feasible = state.feasible
    count = int(feasible[alive].sum())
    summary = ""
    if not count:  # what the shard reports when no node fits (`ClassState.why`)
        why = state.why()
        summary = Decision("", [], dict(why.reasons), len(alive), prefilter=why.prefilter).summary()
    scorers = [ScorerColumn(p.name, w, p.normalizes) for p, w in profile.scorers]
    weights = [w for _, w in profile.scorers]
    normalized = [part // w if w else part for part, w in zip(state.parts, weights, strict=True)]
    rows, compared = state.searched()
    in_search = np.zeros(table.size, dtype=bool)
    in_search[rows[compared >= 0]] = True
    chosen = runner = ""
    margin = 0
    after = state.runners_up(row, 1) if row >= 0 else []
    if row >= 0:
        chosen = table.names[row]
        if after:
            runner = table.names[after[0]]
            margin = int(compared[rows == row][0] - compared[rows == after[0]][0])
    order = _ranked(state.scores, alive, [row, *after] if row >= 0 else [])
    if top:
        order = order[:top]
    ranked = NodeColumns(
        [table.names[r] for r in order.tolist()],
        state.scores[order].tolist(),
        in_search[order].tolist(),
        rejects[:, order].tolist(),
        [raw[order].tolist() for raw in state.raws],
        [part[order].tolist() for part in normalized],
    )
    return PodExplanation(
        key,
        pod.spec.profile,
        len(alive),
        count,
        filters,
        summary,
        scorers,
        int(in_search.sum()),
        chosen,
        runner,
        margin,
        ranked,
    )


def _ranked(scores: np.ndarray, alive: np.ndarray, first: list[int]) -> np.ndarray:
    """The live rows best first: the chosen one and its runner-up (`first`), the other
    feasible ones by score, then the rest."""
    order = alive[np.argsort(-scores[alive], kind="stable")]
    if first:
        order = np.concatenate((first, order[~np.isin(order, first)]))
    return order
