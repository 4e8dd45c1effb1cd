"""VolumeRestrictions: a ReadWriteOncePod claim in use fits no node, in upstream's words
(v1.30.4's volume_restrictions.go)."""

from dataclasses import replace

import numpy as np

from cluster.volumes.needs import VolumeNeeds
from shards.framework import PodClass
from shards.plugins.volume_restrictions import VolumeRestrictions
from shards.plugins.volume_restrictions.volume_restrictions import REASON
from shards.testing import compile_pod, every, node, pod_spec, table_of


def needing(needs: VolumeNeeds | None, table) -> PodClass:
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    return replace(pod, spec=replace(pod.spec, volumes=needs))


def test_a_claim_in_use_fits_no_node_and_a_free_one_every_node():
    table = table_of([node("a"), node("b")])
    plugin = VolumeRestrictions()
    assert plugin.filter(needing(None, table), table, every(table)).tolist() == [1, 1]
    free = needing(VolumeNeeds(), table)
    assert plugin.filter(free, table, every(table)).tolist() == [1, 1]
    taken = needing(VolumeNeeds(claim_in_use=True), table)
    assert plugin.filter(taken, table, every(table)).tolist() == [0, 0]
    assert plugin.reasons(taken, table, np.array([0, 1])) == {REASON: 2}
    assert plugin.static_key(free.spec) != plugin.static_key(taken.spec)


def test_its_prefilter_rejection_fits_no_node():
    table = table_of([node("a")])
    said = 'persistentvolumeclaim "c" not found'
    pod = needing(VolumeNeeds(rejected_by="VolumeRestrictions", rejection=said), table)
    assert VolumeRestrictions().prefilter(pod.spec) == said
    assert VolumeRestrictions().filter(pod, table, every(table)).tolist() == [0]
