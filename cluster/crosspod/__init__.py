"""Constraints between pods, judged one node at a time against a view of the cluster.

These are the exact, per-node semantics of the plugins whose answer depends
on other pods (topology spreading, inter-pod affinity). The binder uses them
to re-check placements against the committed state before it commits; the
shards' vectorized plugins are tested against them.
"""
