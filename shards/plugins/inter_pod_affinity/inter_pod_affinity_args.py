"""InterPodAffinityArgs, as v1 declares and defaults them."""

from __future__ import annotations

from typing import Annotated

from cluster.config_types import Int32, PluginArgs, in_range
from cluster.crosspod.affinity import DEFAULT_HARD_POD_AFFINITY_WEIGHT


class InterPodAffinityArgs(PluginArgs):
    hard_pod_affinity_weight: Annotated[Int32, in_range(0, 100)] = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    """The weight an existing pod's required affinity term gets in the score, as if it
    were a preferred one."""
    ignore_preferred_terms_of_existing_pods: bool = False
    """Score by the incoming pod's preferred terms only."""
