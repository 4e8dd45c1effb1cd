"""VolumeBinding: bound claims' volumes' node affinity, judged on the nodes' labels
alone; the nodes that can serve the claims waiting for their first consumer; and the
PreFilter rejections the dispatcher resolved."""

from dataclasses import replace

import numpy as np

from cluster.selectors import NodeSelectorTerm, Requirement
from cluster.volumes.needs import SharedVolumes, VolumeNeeds
from shards.framework import PodClass
from shards.plugins.volume_binding import VolumeBinding
from shards.plugins.volume_binding.volume_binding import (
    AFFINITY_CONFLICT,
    BIND_CONFLICT,
    MISSING_VOLUME,
)
from shards.testing import compile_pod, every, node, pod_spec, table_of

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def needing(needs: VolumeNeeds | None, table) -> PodClass:
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    return replace(pod, spec=replace(pod.spec, volumes=needs))


def test_each_bound_volume_s_affinity_must_hold_on_the_node():
    table = table_of([node("a", labels={ZONE: "x"}), node("b", labels={ZONE: "y"}), node("c")])
    in_x = (NodeSelectorTerm((Requirement(ZONE, "In", ("x",)),)),)
    anywhere_but_c = (
        NodeSelectorTerm((Requirement(ZONE, "Exists", ()),)),
        NodeSelectorTerm(match_fields=()),  # an empty term selects nothing
    )
    plugin = VolumeBinding()
    assert plugin.filter(needing(None, table), table, every(table)).tolist() == [1, 1, 1]
    pod = needing(VolumeNeeds((anywhere_but_c,)), table)
    assert plugin.filter(pod, table, every(table)).tolist() == [1, 1, 0]
    pod = needing(VolumeNeeds((anywhere_but_c, in_x)), table)
    assert plugin.filter(pod, table, every(table)).tolist() == [1, 0, 0]
    assert plugin.reasons(pod, table, np.array([1, 2])) == {AFFINITY_CONFLICT: 2}
    assert plugin.prefilter(pod.spec) is None


def test_a_volume_s_affinity_ignores_match_fields_as_upstream_does():
    """Upstream judges a volume's affinity on a node made of the labels, with no name:
    a term of matchFields alone matches every node."""
    table = table_of([node("a"), node("b")])
    by_name = NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("a",)),))
    pod = needing(VolumeNeeds(((by_name,),)), table)
    assert VolumeBinding().filter(pod, table, every(table)).tolist() == [1, 1]


def test_a_missing_volume_or_a_prefilter_rejection_fits_no_node():
    table = table_of([node("a"), node("b")])
    plugin = VolumeBinding()
    missing = needing(VolumeNeeds(missing_volume=True), table)
    assert plugin.filter(missing, table, every(table)).tolist() == [0, 0]
    assert plugin.reasons(missing, table, np.array([0, 1])) == {MISSING_VOLUME: 2}
    said = 'persistentvolumeclaim "c" not found'
    rejected = needing(VolumeNeeds(rejected_by="VolumeBinding", rejection=said), table)
    assert plugin.prefilter(rejected.spec) == said
    assert plugin.filter(rejected, table, every(table)).tolist() == [0, 0]
    other = needing(VolumeNeeds(rejected_by="VolumeZone", rejection="x"), table)
    assert plugin.prefilter(other.spec) is None
    assert plugin.filter(other, table, every(table)).tolist() == [1, 1]


def test_each_claim_waiting_for_a_consumer_needs_a_node_that_can_serve_it():
    table = table_of([node("a", labels={ZONE: "x"}), node("b", labels={ZONE: "y"}), node("c")])
    in_x = (NodeSelectorTerm((Requirement(ZONE, "In", ("x",)),)),)
    zoned = (NodeSelectorTerm((Requirement(ZONE, "Exists", ()),)),)
    plugin = VolumeBinding()
    pod = needing(VolumeNeeds(unbound=(zoned,)), table)
    assert plugin.filter(pod, table, every(table)).tolist() == [1, 1, 0]
    assert plugin.reasons(pod, table, np.array([2])) == {BIND_CONFLICT: 1}
    # a node can fail its bound claims and its unbound ones: upstream says both
    pod = needing(VolumeNeeds((in_x,), unbound=(zoned,)), table)
    assert plugin.filter(pod, table, every(table)).tolist() == [1, 0, 0]
    assert plugin.reasons(pod, table, np.array([1, 2])) == {AFFINITY_CONFLICT: 2, BIND_CONFLICT: 1}
    # no volume and no provisioning: no node
    pod = needing(VolumeNeeds(unbound=((),)), table)
    assert plugin.filter(pod, table, every(table)).tolist() == [0, 0, 0]


def test_a_claim_provisioned_for_a_node_takes_that_node_alone():
    table = table_of([node("a"), node("b"), node("c")])
    plugin = VolumeBinding()
    pod = needing(VolumeNeeds(selected_node="b"), table)
    assert plugin.candidates(pod.spec) == {"b"}  # judged there alone
    assert plugin.filter(pod, table, every(table)).tolist() == [0, 1, 0]
    assert plugin.reasons(pod, table, np.array([0, 2])) == {BIND_CONFLICT: 2}
    assert plugin.candidates(needing(VolumeNeeds(), table).spec) is None


def test_a_node_says_each_kind_of_claim_it_fails():
    """v1.30.4's FindPodVolumes: a node that reaches the bound claims' volumes before the
    missing one says the volume is missing, one that does not says the affinity; either
    also says its unbound claims found nothing."""
    table = table_of([node("a", labels={ZONE: "x"}), node("b", labels={ZONE: "y"})])
    in_x = (NodeSelectorTerm((Requirement(ZONE, "In", ("x",)),)),)
    nowhere = (NodeSelectorTerm(match_fields=()),)
    pod = needing(VolumeNeeds((in_x,), True, unbound=(nowhere,)), table)
    plugin = VolumeBinding()
    assert plugin.filter(pod, table, every(table)).tolist() == [0, 0]
    assert plugin.reasons(pod, table, np.array([0, 1])) == {
        MISSING_VOLUME: 1,
        AFFINITY_CONFLICT: 1,
        BIND_CONFLICT: 2,
    }


def test_claims_matched_together_take_distinct_volumes_on_a_node():
    """Two claims and the volumes they may share: a node reaching one volume serves one
    claim, unless the class provisions there; the first claim takes its smallest."""
    table = table_of([node(n, labels={HOST: n}) for n in ("a", "b", "c")])
    on = {n: (NodeSelectorTerm((Requirement(HOST, "In", (n,)),)),) for n in "abc"}
    # volumes: 0 on a, 1 on b, 2 on b, 3 anywhere-but-c; claim 0 fits all, claim 1 fits 0 and 2
    shared = SharedVolumes(
        (on["a"], on["b"], on["b"], (*on["a"], *on["b"])), ((0, 1, 2, 3), (0, 2)), ()
    )
    pod = needing(VolumeNeeds(shared=(shared,)), table)
    plugin = VolumeBinding()
    # a: claim 0 takes volume 0, claim 1 has only volume 0: nothing left; b: 1 then 2
    assert plugin.filter(pod, table, every(table)).tolist() == [0, 1, 0]
    assert plugin.reasons(pod, table, np.array([0, 2])) == {BIND_CONFLICT: 2}
    provisioning = replace(shared, provisions=(on["a"][0],))
    pod = needing(VolumeNeeds(shared=(provisioning,)), table)
    assert plugin.filter(pod, table, every(table)).tolist() == [1, 1, 0]
