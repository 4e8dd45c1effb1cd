"""NodeVolumeLimits: the volumes a pod attaches against the nodes' attach limits
(v1.30.4's nodevolumelimits/csi.go)."""

from dataclasses import replace

import numpy as np

from cluster.volumes.attach import AWS_EBS, csi_volume, in_tree_volume, limit_key, node_with_limits
from cluster.volumes.needs import Attachable, VolumeNeeds, attach_counts
from cluster.volumes.storage_objects import CSINode
from shards.framework import PodClass
from shards.node_table import NodeTable
from shards.plugins.node_volume_limits import NodeVolumeLimits
from shards.plugins.node_volume_limits.node_volume_limits import REASON
from shards.testing import commit_volumes, compile_pod, every, node, pod_spec, table_of

EBS = "ebs.csi.aws.com"


def attaching(table: NodeTable, *volumes: Attachable) -> PodClass:
    """A pod attaching these volumes: its class says how many, the pod which."""
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    spec = replace(pod.spec, volumes=VolumeNeeds(attach=attach_counts(volumes)))
    return replace(PodClass.compile(spec, table), attach=volumes)


def attached(table: NodeTable, name: str, *volumes: Attachable) -> None:
    """Volumes committed on a node, as a sync from the store brings them."""
    commit_volumes(table, name, [(v.key, v.volume, 1) for v in volumes])


def limited(name: str, ebs: int | None, csi_node: bool = True) -> object:
    """A node whose CSINode gives the EBS driver's limit; without one, its allocatable
    does (and no in-tree plugin is migrated there)."""
    if not csi_node:
        bare = node(name)
        bare.allocatable[limit_key(EBS)] = ebs or 0
        return node_with_limits(bare, None)
    limits = ((EBS, ebs),) if ebs is not None else ()
    return node_with_limits(node(name), CSINode(name, limits))


def test_a_node_takes_volumes_up_to_its_limit():
    table = table_of([limited("a", 2), limited("b", 2), limited("c", None)])
    one, two, three = (csi_volume(EBS, f"vol-{i}") for i in range(3))
    attached(table, "a", one, two)
    attached(table, "b", one)
    attached(table, "c", one, two)
    pod = attaching(table, three)
    # a is full; b has room for one; c has no limit for the driver
    assert NodeVolumeLimits().filter(pod, table, every(table)).tolist() == [0, 1, 1]
    assert NodeVolumeLimits().reasons(pod, table, np.array([0])) == {REASON: 1}
    both = attaching(table, one, three)  # one new on a (full), one new on b (room)
    assert NodeVolumeLimits().filter(both, table, every(table)).tolist() == [0, 1, 1]


def test_a_volume_a_node_has_already_adds_nothing_there_where_the_pod_names_it():
    """A class says how many volumes, not which: judged as its class, a pod sharing a
    volume counts it as new; judged with its own volumes, the node with it has room."""
    table = table_of([limited("a", 2), limited("b", 2)])
    one, two, three = (csi_volume(EBS, f"vol-{i}") for i in range(3))
    attached(table, "a", one, two)
    attached(table, "b", one, three)
    sharing = attaching(table, two)
    assert NodeVolumeLimits().filter(sharing, table, every(table)).tolist() == [1, 0]
    as_its_class = replace(sharing, attach=())
    assert NodeVolumeLimits().filter(as_its_class, table, every(table)).tolist() == [0, 0]
    both = attaching(table, one, two)  # both on a; one of them new on b
    assert NodeVolumeLimits().filter(both, table, every(table)).tolist() == [1, 0]


def test_a_pod_adding_nothing_of_a_driver_passes_a_node_over_that_driver_s_limit():
    table = table_of([limited("a", 1)])
    attached(table, "a", csi_volume(EBS, "x"), csi_volume(EBS, "y"))  # over, as it may be
    other = csi_volume("pd.csi.storage.gke.io", "z")
    assert NodeVolumeLimits().filter(attaching(table, other), table, every(table)).tolist() == [1]


def test_this_shard_s_own_placements_count_until_the_store_holds_them():
    table = table_of([limited("a", 1)])
    pod = attaching(table, csi_volume(EBS, "x"))
    assert NodeVolumeLimits().filter(pod, table, every(table)).tolist() == [1]
    table.assume(0, pod.request, volumes=pod.attach)
    other = attaching(table, csi_volume(EBS, "y"))
    assert NodeVolumeLimits().filter(other, table, every(table)).tolist() == [0]
    table.forget(0, pod.request, volumes=pod.attach)
    assert NodeVolumeLimits().filter(other, table, every(table)).tolist() == [1]


def test_a_migrated_in_tree_volume_counts_only_where_its_plugin_is_migrated():
    table = table_of([limited("a", 1), limited("b", 1, csi_node=False)])
    attached(table, "a", csi_volume(EBS, "x"))
    attached(table, "b", csi_volume(EBS, "x"))
    disk = in_tree_volume(AWS_EBS, "aws://us-east-1a/vol-1")
    assert disk == Attachable(limit_key(EBS), f"{EBS}/vol-1", AWS_EBS)
    pod = attaching(table, disk)
    assert NodeVolumeLimits().filter(pod, table, every(table)).tolist() == [0, 1]
    table.assume(1, pod.request, volumes=pod.attach)  # not counted on b: no CSINode there
    assert table.volumes.counts(limit_key(EBS), np.array([0, 1])).tolist() == [1, 1]


def test_its_prefilter_rejection_fits_no_node():
    table = table_of([limited("a", 5)])
    said = 'looking up PVC default/c: persistentvolumeclaim "c" not found'
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    spec = replace(pod.spec, volumes=VolumeNeeds(rejected_by="NodeVolumeLimits", rejection=said))
    pod = PodClass.compile(spec, table)
    assert NodeVolumeLimits().prefilter(pod.spec) == said
    assert NodeVolumeLimits().filter(pod, table, every(table)).tolist() == [0]


def test_a_pod_another_plugin_refused_is_not_judged_here():
    """Its class carries another plugin's rejection and no counts; the pod still names
    the volumes it would attach."""
    table = table_of([limited("a", 1)])
    attached(table, "a", csi_volume(EBS, "x"))
    pod = attaching(table, csi_volume(EBS, "x"))
    refused = VolumeNeeds(rejected_by="VolumeBinding", rejection="no")
    pod = replace(pod, spec=replace(pod.spec, volumes=refused))
    assert NodeVolumeLimits().filter(pod, table, every(table)).tolist() == [1]
