"""Histograms that travel from a shard to the one registry: counts, sums, merging."""

import pytest

from cluster.histogram import EXTENSION_POINT_BUCKETS, PLUGIN_BUCKETS, Histograms, exponential


def test_buckets_are_kube_schedulers():
    assert exponential(0.0001, 2, 12) == EXTENSION_POINT_BUCKETS
    assert EXTENSION_POINT_BUCKETS[-1] == pytest.approx(0.2048)
    assert PLUGIN_BUCKETS[0] == 0.00001 and len(PLUGIN_BUCKETS) == 20


def test_observations_land_in_their_bucket_and_a_bound_is_inclusive():
    h = Histograms([1.0, 2.0])
    h.observe(("a",), 1.0)  # le="1" counts a value of exactly 1, as Prometheus does
    h.observe(("a",), 1.5, count=3)
    h.observe(("a",), 9.0)
    assert list(h) == [(("a",), [1, 3, 1], 1.0 + 4.5 + 9.0)]


def test_merged_counts_add_up_and_take_starts_afresh():
    shard = Histograms([1.0, 2.0])
    shard.observe(("Filter", "Success", "p"), 0.5, count=4)
    wire = shard.take()
    assert list(shard) == []
    here = Histograms([1.0, 2.0])
    here.observe(("Filter", "Success", "p"), 3.0)
    for labels, counts, total in wire:
        here.merge(tuple(labels), counts, total)
    assert list(here) == [(("Filter", "Success", "p"), [4, 0, 1], 5.0)]


def test_counts_over_other_buckets_are_refused():
    with pytest.raises(ValueError, match="3 bucket counts for 1 buckets"):
        Histograms([1.0]).merge(("a",), [1, 2, 3], 1.0)
