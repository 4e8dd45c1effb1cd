"""In-tree plugins, one folder each, with their tests beside them."""

from shards.framework import Profile
from shards.plugins.node_affinity import NodeAffinity
from shards.plugins.node_unschedulable import NodeUnschedulable
from shards.plugins.noderesources import NodeResourcesFit
from shards.plugins.taint_toleration import TaintToleration


def default_profile(name: str = "default-scheduler") -> Profile:
    """The walking skeleton's profile: the node-local filters, LeastAllocated scoring."""
    fit = NodeResourcesFit()
    return Profile(
        name=name,
        filters=[NodeUnschedulable(), NodeAffinity(), TaintToleration(), fit],
        scorers=[(fit, 1)],
    )


__all__ = ["default_profile"]
