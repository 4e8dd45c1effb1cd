from shards.plugins.inter_pod_affinity.args import InterPodAffinityArgs
from shards.plugins.inter_pod_affinity.inter_pod_affinity import InterPodAffinity

__all__ = ["InterPodAffinity", "InterPodAffinityArgs"]
