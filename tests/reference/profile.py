"""A whole profile, as upstream's scheduling cycle judges one pod against every node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cluster.objects import SchedulingSpec
from tests.reference.plugins import REFERENCES, Cluster


def profile_scores(
    cluster: Cluster,
    pod: SchedulingSpec,
    filters: Sequence[str],
    scorers: Sequence[tuple[str, int]],
    args: Mapping[str, Mapping[str, Any]],
) -> dict[str, int]:
    """Each feasible node's final score: over the nodes every filter passes, each scorer's
    raw scores, normalized among those nodes where it normalizes, times its weight, summed."""
    plugins = {n: REFERENCES[n](args.get(n, {})) for n in [*filters, *(n for n, _ in scorers)]}
    feasible = [
        node
        for node in cluster.nodes
        if all(plugins[n].filter(cluster, node, pod) for n in filters)  # type: ignore[misc]
    ]
    totals = dict.fromkeys((node.name for node in feasible), 0)
    for name, weight in scorers:
        plugin = plugins[name]
        raw = [plugin.score(cluster, node, pod) for node in feasible]  # type: ignore[misc]
        scores = plugin.normalize(raw) if plugin.normalize else raw
        for node, score in zip(feasible, scores, strict=True):
            totals[node.name] += score * weight
    return totals
