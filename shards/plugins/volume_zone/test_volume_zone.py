"""VolumeZone: the volumes' zone labels against the nodes' (v1.30.4's volume_zone.go)."""

from dataclasses import replace

import numpy as np

from cluster.volumes.needs import BETA_ZONE, REGION, ZONE, VolumeNeeds
from shards.framework import PodClass
from shards.plugins.volume_zone import VolumeZone
from shards.plugins.volume_zone.volume_zone import REASON
from shards.testing import compile_pod, every, node, pod_spec, table_of


def needing(needs: VolumeNeeds | None, table) -> PodClass:
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    return replace(pod, spec=replace(pod.spec, volumes=needs))


def test_a_zoned_node_must_have_each_volume_label_a_node_without_zones_fits():
    table = table_of(
        [
            node("a", labels={ZONE: "x", REGION: "r"}),
            node("b", labels={ZONE: "y", REGION: "r"}),
            node("c"),  # one zone: no labels
            node("d", labels={REGION: "r"}),  # zoned, but not by zone
        ]
    )
    pod = needing(VolumeNeeds(zones=((ZONE, ("w", "x")), (REGION, ("r",)))), table)
    assert VolumeZone().filter(pod, table, every(table)).tolist() == [1, 0, 1, 0]
    assert VolumeZone().reasons(pod, table, np.array([1, 3])) == {REASON: 2}


def test_a_beta_volume_label_also_matches_the_node_s_ga_one_never_the_reverse():
    table = table_of([node("a", labels={ZONE: "x"}), node("b", labels={BETA_ZONE: "x"})])
    beta = needing(VolumeNeeds(zones=((BETA_ZONE, ("x",)),)), table)
    assert VolumeZone().filter(beta, table, every(table)).tolist() == [1, 1]
    ga = needing(VolumeNeeds(zones=((ZONE, ("x",)),)), table)
    assert VolumeZone().filter(ga, table, every(table)).tolist() == [1, 0]


def test_its_prefilter_rejection_fits_no_node():
    table = table_of([node("a")])
    said = 'persistentvolume "pv" not found'
    pod = needing(VolumeNeeds(rejected_by="VolumeZone", rejection=said), table)
    assert VolumeZone().prefilter(pod.spec) == said
    assert VolumeZone().filter(pod, table, every(table)).tolist() == [0]
