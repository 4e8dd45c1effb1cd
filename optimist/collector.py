"""Python's cyclic garbage collector, set for the driver (dispatcher and binder).

The driver holds the cluster in memory (nodes, pods, queued units: millions of
objects that live as long as the process) and allocates a few hundred short-lived
ones per pod. With CPython's default thresholds (700, 10, 10) a young collection
runs every 700 allocations and every hundredth of them is a full collection that
walks every object held: in the bench that was half the driver's CPU per pod.
What the roles drop is freed by reference counting, almost none of it cyclic, so
collecting young objects 70 times less often costs no memory that we measured
(a million pending pods: 1,201 MiB either way). The shards hold their nodes in
numpy arrays, a few objects each: set the same, they ran no faster.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000  # allocations (less deallocations) between young collections
# the older generations keep CPython's ratios: a full collection after 100 young ones
OLDER_THRESHOLDS = (10, 10)

Thresholds = tuple[int, int, int]


def collect_less_often() -> Thresholds:
    """Collect cycles far less often than CPython's default; returns the thresholds
    replaced, for `restore`."""
    before: Thresholds = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
    return before


def restore(thresholds: Thresholds) -> None:
    gc.set_threshold(*thresholds)
