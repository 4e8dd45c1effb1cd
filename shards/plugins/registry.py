"""The in-tree plugins by name, and how a shard builds a profile from its configuration.

A plugin that serves several extension points (NodeResourcesFit filters and
scores) is built once per profile, with its args, and used at each point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster.profile_config import ProfileConfig
from shards.framework import FilterPlugin, Profile, ScorePlugin
from shards.plugins.gpu_placement import GPUPlacement
from shards.plugins.gpu_topology import GPUTopology
from shards.plugins.image_locality import ImageLocality
from shards.plugins.inter_pod_affinity import InterPodAffinity
from shards.plugins.node_affinity import NodeAffinity
from shards.plugins.node_name import NodeName
from shards.plugins.node_ports import NodePorts
from shards.plugins.node_unschedulable import NodeUnschedulable
from shards.plugins.node_volume_limits import NodeVolumeLimits
from shards.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from shards.plugins.pod_topology_spread import PodTopologySpread
from shards.plugins.taint_toleration import TaintToleration
from shards.plugins.volume_binding import VolumeBinding
from shards.plugins.volume_restrictions import VolumeRestrictions
from shards.plugins.volume_zone import VolumeZone

Plugin = FilterPlugin | ScorePlugin
Factory = Callable[[dict[str, Any]], Plugin]

REGISTRY: dict[str, Factory] = {
    "NodeUnschedulable": lambda args: NodeUnschedulable(),
    "NodeName": lambda args: NodeName(),
    "TaintToleration": lambda args: TaintToleration(),
    "NodeAffinity": NodeAffinity.from_args,
    "NodePorts": lambda args: NodePorts(),
    "NodeResourcesFit": NodeResourcesFit.from_args,
    "PodTopologySpread": PodTopologySpread.from_args,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocation.from_args,
    "ImageLocality": lambda args: ImageLocality(),
    "InterPodAffinity": InterPodAffinity.from_args,
    "GPUPlacement": GPUPlacement.from_args,
    "GPUTopology": lambda args: GPUTopology(),
    "VolumeBinding": lambda args: VolumeBinding(),
    "VolumeZone": lambda args: VolumeZone(),
    "NodeVolumeLimits": lambda args: NodeVolumeLimits(),
    "VolumeRestrictions": lambda args: VolumeRestrictions(),
}


def filter_plugins() -> frozenset[str]:
    """Names of the plugins that implement Filter."""
    return frozenset(n for n, f in REGISTRY.items() if isinstance(f({}), FilterPlugin))


def score_plugins() -> frozenset[str]:
    """Names of the plugins that implement Score."""
    return frozenset(n for n, f in REGISTRY.items() if isinstance(f({}), ScorePlugin))


def build_profile(config: ProfileConfig) -> Profile:
    """The profile's plugin objects, one per name, each built with its args."""
    names = list(dict.fromkeys([*config.filters, *(n for n, _ in config.scorers)]))
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"profile {config.scheduler_name}: unknown plugins {unknown}")
    plugins = {n: REGISTRY[n](config.args.get(n, {})) for n in names}
    # the configuration names a plugin only at the points it implements: none is left out
    filters = [p for n in config.filters if isinstance(p := plugins[n], FilterPlugin)]
    scorers = [(p, w) for n, w in config.scorers if isinstance(p := plugins[n], ScorePlugin)]
    if len(filters) < len(config.filters) or len(scorers) < len(config.scorers):
        raise ValueError(
            f"profile {config.scheduler_name}: a plugin at a point it does not implement"
        )
    profile = Profile(
        name=config.scheduler_name,
        filters=filters,
        scorers=scorers,
        percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
    )
    gpus = plugins.get(GPUPlacement.name)
    if isinstance(gpus, GPUPlacement) and any(p is gpus for p, _ in profile.scorers):
        profile.choose_gpus = gpus.choose_gpus  # the policy decides inside the node too
        profile.tie_seed = gpus.tie_seed
    return profile
