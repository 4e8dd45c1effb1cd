"""Plugin args: each plugin's are a typed model beside it (`cluster.config_types`),
named here and read strictly, with v1's defaults and checks."""

from __future__ import annotations

from typing import Any

from binder.preemption_args import DefaultPreemptionArgs
from cluster.config_types import PluginArgs
from cluster.crosspod.topology_spread_args import PodTopologySpreadArgs
from optimist.configuration.model_reader import read_model
from shards.plugins.gpu_placement import GPUPlacementArgs
from shards.plugins.inter_pod_affinity import InterPodAffinityArgs
from shards.plugins.node_affinity.node_affinity_args import NodeAffinityArgs
from shards.plugins.noderesources import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from shards.plugins.volume_binding import VolumeBindingArgs

# The plugins whose args are typed models, beside each plugin.
ARG_MODELS: dict[str, type[PluginArgs]] = {
    "DefaultPreemption": DefaultPreemptionArgs,
    "GPUPlacement": GPUPlacementArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "NodeResourcesFit": NodeResourcesFitArgs,
    "NodeAffinity": NodeAffinityArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "VolumeBinding": VolumeBindingArgs,
}


def read_args(plugin: str, raw: Any, path: str) -> dict[str, Any]:
    """A plugin's args read by its model, as their wire form (every default filled in)."""
    return read_model(ARG_MODELS[plugin], raw, path).to_wire()
