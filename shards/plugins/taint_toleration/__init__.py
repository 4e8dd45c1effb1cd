from shards.plugins.taint_toleration.taint_toleration import TaintToleration

__all__ = ["TaintToleration"]
