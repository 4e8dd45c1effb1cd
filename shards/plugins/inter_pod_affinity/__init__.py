from shards.plugins.inter_pod_affinity.inter_pod_affinity import InterPodAffinity
from shards.plugins.inter_pod_affinity.inter_pod_affinity_args import InterPodAffinityArgs

__all__ = ["InterPodAffinity", "InterPodAffinityArgs"]
