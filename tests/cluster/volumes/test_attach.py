"""The volumes NodeVolumeLimits counts and the limits it counts them against, as
v1.30.4's nodevolumelimits/csi.go and csi-translation-lib v0.30.4 name them."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.errors import InvalidObject
from cluster.manifests import pod_from_manifest
from cluster.volumes.attach import (
    AWS_EBS,
    GCE_PD,
    MIGRATED_TO,
    UNBOUND,
    csi_volume,
    limit_key,
    node_with_limits,
)
from cluster.volumes.index import CLAIMS, CLASSES, CSI_NODES, VOLUMES
from cluster.volumes.needs import Attachable, VolumeNeeds
from cluster.volumes.resolve import (
    NODE_VOLUME_LIMITS,
    VOLUME_BINDING,
    Rejection,
    VolumeResolver,
    resolve,
)
from cluster.volumes.storage_manifests import csi_node_from_manifest, volume_from_manifest
from shards.testing import node
from tests.cluster.volumes.test_resolve import POD, claim, index, pod_volumes, pvc

EBS = "ebs.csi.aws.com"
ZONE = "topology.kubernetes.io/zone"
LIMITS = frozenset({NODE_VOLUME_LIMITS})


def test_a_limit_key_is_the_driver_s_and_a_long_one_is_shortened_with_a_hash():
    """v1.30.4's attach_limit_test.go, with the hash of its long name (sha1sum's)."""
    assert limit_key("com.amazon.ebs") == "attachable-volumes-csi-com.amazon.ebs"
    long = "com.amazon.kubernetes.eks.ec2.ebs/csi-driver"
    assert limit_key(long) == "attachable-volumes-csi-com.amazon.kubernetes.e87aab31eac74422c"


def spec_of(**source: Any) -> dict[str, Any]:
    return {"metadata": {"name": "pv", "labels": source.pop("labels", {})}, "spec": source}


@pytest.mark.parametrize(
    ("source", "counted"),
    [
        ({"csi": {"driver": EBS, "volumeHandle": "h"}}, csi_volume(EBS, "h")),
        (
            {"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1"}},
            Attachable(limit_key(EBS), f"{EBS}/vol-1", AWS_EBS),
        ),
        (
            {"awsElasticBlockStore": {"volumeID": "vol-2"}},
            Attachable(limit_key(EBS), f"{EBS}/vol-2", AWS_EBS),
        ),
        ({"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/disk"}}, None),
        (
            {
                "gcePersistentDisk": {"pdName": "d"},
                "labels": {"topology.kubernetes.io/zone": "z-a"},
            },
            Attachable(
                limit_key("pd.csi.storage.gke.io"),
                "pd.csi.storage.gke.io/projects/UNSPECIFIED/zones/z-a/disks/d",
                GCE_PD,
            ),
        ),
        (
            {
                "gcePersistentDisk": {"pdName": "d"},
                "labels": {ZONE: "eu-west1-a__eu-west1-b"},
            },
            Attachable(
                limit_key("pd.csi.storage.gke.io"),
                "pd.csi.storage.gke.io/projects/UNSPECIFIED/regions/eu-west1/disks/d",
                GCE_PD,
            ),
        ),
        ({"hostPath": {"path": "/x"}}, None),  # neither CSI nor migrated: not counted
        ({"nfs": {"server": "s", "path": "/"}}, None),
    ],
)
def test_a_volume_counts_under_its_csi_driver_or_the_one_its_plugin_migrates_to(
    source: dict[str, Any], counted: Attachable | None
):
    assert volume_from_manifest(spec_of(**source)).attach == counted


def csi_node(name: str, drivers: dict[str, int | None], migrated: str = "") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": migrated},
        },
        "spec": {
            "drivers": [
                {"name": d, "nodeID": name, "allocatable": {} if n is None else {"count": n}}
                for d, n in drivers.items()
            ]
        },
    }


def test_a_node_s_limits_are_its_allocatable_s_with_its_csi_node_s_counts_over_them():
    plain = node("n", **{})
    plain.allocatable[limit_key(EBS)] = 39
    plain.allocatable["attachable-volumes-aws-ebs"] = 25
    read = csi_node_from_manifest(csi_node("n", {EBS: 20, "x.io": None}, GCE_PD))
    limited = node_with_limits(plain, read)
    assert dict(limited.volume_limits) == {limit_key(EBS): 20, "attachable-volumes-aws-ebs": 25}
    # a node with a CSINode counts the four migrated plugins' disks, whatever its
    # annotation says (v1.30's isCSIMigrationOn); one without counts none
    assert set(limited.migrated_plugins) == set(MIGRATED_TO)
    assert node_with_limits(plain, csi_node_from_manifest(csi_node("n", {}))).migrated_plugins
    assert node_with_limits(plain, None).migrated_plugins == ()
    assert dict(node_with_limits(plain, None).volume_limits)[limit_key(EBS)] == 39
    with pytest.raises(InvalidObject, match=r"spec.drivers\[0\].allocatable.count"):
        csi_node_from_manifest(csi_node("n", {EBS: -1}))


def csi_volume_manifest(name: str, handle: str) -> dict[str, Any]:
    spec = {"csi": {"driver": EBS, "volumeHandle": handle}, "storageClassName": "wffc",
            "capacity": {"storage": "1Gi"}}  # fmt: skip
    return {"metadata": {"name": name}, "spec": spec}


def test_a_pod_s_claims_count_by_their_volumes_or_while_unbound_by_their_class():
    known = index(
        (VOLUMES, csi_volume_manifest("pv-a", "h-a")),
        (CLAIMS, claim("a", volume="pv-a", bound=True)),
        (CLAIMS, claim("b", volume="pv-a", bound=True)),  # the same volume again: once
        (CLAIMS, claim("c")),  # no volume yet: under its class's provisioner
        (CLAIMS, claim("d", volume="gone", bound=True)),  # its volume not found: the class
        (CLAIMS, claim("e", cls=None)),  # no volume, no class: not counted
    )
    volumes = pod_volumes(*map(pvc, "abcde"))
    counted = (csi_volume(EBS, "h-a"), csi_volume("p", f"{UNBOUND}-ns/c"),
               csi_volume("p", f"{UNBOUND}-ns/d"))  # fmt: skip
    spec = {"containers": [{"name": "c"}], "volumes": list(map(pvc, "abcde"))}
    manifest = {"metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"}, "spec": spec}
    pod = VolumeResolver(known, {"default-scheduler": LIMITS}).resolved(pod_from_manifest(manifest))
    assert pod.attached == counted
    # what a class says of them: how many, per limit key
    needs = resolve(POD, volumes, known, LIMITS)
    assert needs == VolumeNeeds(attach=((limit_key(EBS), "", 1), (limit_key("p"), "", 2)))


def test_a_missing_claim_is_upstream_s_error_where_volume_binding_does_not_say_it_first():
    missing = pod_volumes(pvc("x"))
    said = 'looking up PVC ns/x: persistentvolumeclaim "x" not found'
    assert resolve(POD, missing, index(), LIMITS) == Rejection(NODE_VOLUME_LIMITS, said)
    both = LIMITS | {VOLUME_BINDING}
    assert resolve(POD, missing, index(), both) == Rejection(
        VOLUME_BINDING, 'persistentvolumeclaim "x" not found'
    )


def test_a_csi_node_is_indexed_by_its_node_s_name():
    known = index((CSI_NODES, csi_node("n", {EBS: 3})))
    assert known.csi_node("n") is not None and known.csi_node("m") is None
    known.apply(CLASSES, {"metadata": {"name": "x"}})  # untouched by other kinds
    known.apply(CSI_NODES, csi_node("n", {EBS: 3}), deleted=True)
    assert known.csi_node("n") is None
