from shards.plugins.inter_pod_affinity.inter_pod_affinity import InterPodAffinity

__all__ = ["InterPodAffinity"]
