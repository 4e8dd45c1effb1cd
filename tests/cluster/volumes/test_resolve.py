"""A pod's volumes resolved as upstream's volume PreFilters resolve them (v1.30.4's words,
from volume_binding.go, volume_restrictions.go and volume_zone.go)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from cluster.manifests import pod_from_manifest
from cluster.selectors import NodeSelectorTerm, Requirement
from cluster.volumes.index import CLAIMS, CLASSES, VOLUMES, VolumeIndex
from cluster.volumes.needs import VolumeNeeds
from cluster.volumes.resolve import (
    NODE_VOLUME_LIMITS,
    UNBOUND_IMMEDIATE,
    VOLUME_BINDING,
    VOLUME_RESTRICTIONS,
    VOLUME_ZONE,
    PodRef,
    Rejection,
    VolumeResolver,
    resolve,
)

ALL = frozenset({VOLUME_BINDING, VOLUME_ZONE})
POD = PodRef("ns", "p", "uid-p")


def claim(name: str, *, cls: str | None = "wffc", volume: str = "", bound: bool = False,
          **more: Any) -> dict[str, Any]:  # fmt: skip
    annotations = {"pv.kubernetes.io/bind-completed": "yes"} if bound else {}
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "volumeName": volume}
    if cls is not None:
        spec["storageClassName"] = cls
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "annotations": annotations}
    meta.update(more.pop("meta", {}))
    return {"metadata": meta, "spec": spec, **more}


def volume(name: str, *, labels: dict[str, str] | None = None, hosts: tuple[str, ...] = ()):
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "storageClassName": "wffc"}
    if hosts:
        term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                      "values": list(hosts)}]}  # fmt: skip
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def index(*objects: tuple[str, dict[str, Any]]) -> VolumeIndex:
    known = VolumeIndex()
    known.apply(CLASSES, {"metadata": {"name": "wffc"}, "provisioner": "p",
                          "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    known.apply(CLASSES, {"metadata": {"name": "now"}, "provisioner": "p",
                          "volumeBindingMode": "Immediate"})  # fmt: skip
    for resource, manifest in objects:
        known.apply(resource, manifest)
    return known


def pod_volumes(*volumes: dict[str, Any]):
    manifest = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
        "spec": {"containers": [{"name": "c"}], "volumes": list(volumes)},
    }
    return pod_from_manifest(manifest).volumes


def pvc(name: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}


def test_a_pod_without_claims_asks_nothing_of_a_node():
    assert resolve(POD, pod_volumes({"name": "e", "emptyDir": {}}), index(), ALL) is None


@pytest.mark.parametrize(
    ("volumes", "objects", "rejection"),
    [
        ([pvc("c")], [], Rejection(VOLUME_BINDING, 'persistentvolumeclaim "c" not found')),
        (
            [{"name": "v", "ephemeral": {"volumeClaimTemplate": {}}}],
            [],
            Rejection(
                VOLUME_BINDING,
                'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-v"',
            ),
        ),
        (
            [{"name": "v", "ephemeral": {"volumeClaimTemplate": {}}}],
            [(CLAIMS, claim("p-v"))],
            Rejection(VOLUME_BINDING, "PVC ns/p-v was not created for pod ns/p (pod is not owner)"),
        ),
        (
            [pvc("c")],
            [(CLAIMS, claim("c", volume="gone", status={"phase": "Lost"}))],
            Rejection(
                VOLUME_BINDING,
                'persistentvolumeclaim "c" bound to non-existent persistentvolume "gone"',
            ),
        ),
        (
            [pvc("c")],
            [(CLAIMS, claim("c", meta={"deletionTimestamp": "2026-12-06T00:00:00Z"}))],
            Rejection(VOLUME_BINDING, 'persistentvolumeclaim "c" is being deleted'),
        ),
        (
            [pvc("c")],
            [(CLAIMS, claim("c", cls="now"))],
            Rejection(VOLUME_BINDING, UNBOUND_IMMEDIATE),
        ),
        (
            [pvc("c")],
            [(CLAIMS, claim("c", cls=None))],
            Rejection(VOLUME_BINDING, UNBOUND_IMMEDIATE),
        ),
        # a class that does not exist binds at once, for VolumeBinding; optimist says
        # which claim names which class
        (
            [pvc("c")],
            [(CLAIMS, claim("c", cls="nope"))],
            Rejection(
                VOLUME_BINDING,
                f"{UNBOUND_IMMEDIATE} (PersistentVolumeClaim ns/c: "
                "spec.storageClassName='nope': no such StorageClass)",
            ),
        ),
        # named a volume, but the PV controller has not completed the binding
        (
            [pvc("c")],
            [(CLAIMS, claim("c", volume="pv")), (VOLUMES, volume("pv"))],
            Rejection(VOLUME_BINDING, UNBOUND_IMMEDIATE),
        ),
        # bound, to a volume that is not there: VolumeZone says so first
        (
            [pvc("c")],
            [(CLAIMS, claim("c", volume="pv", bound=True))],
            Rejection(VOLUME_ZONE, 'persistentvolume "pv" not found'),
        ),
    ],
)
def test_what_no_node_can_fix_rejects_the_pod_in_upstream_s_words(volumes, objects, rejection):
    assert resolve(POD, pod_volumes(*volumes), index(*objects), ALL) == rejection


def test_a_claim_that_waits_for_its_first_consumer_asks_nothing_yet():
    assert resolve(POD, pod_volumes(pvc("c")), index((CLAIMS, claim("c"))), ALL) == VolumeNeeds()


def test_a_bound_claim_asks_for_its_volume_s_node_affinity_and_zones():
    known = index(
        (CLAIMS, claim("c", volume="pv", bound=True)),
        (
            VOLUMES,
            volume("pv", hosts=("n1", "n2"), labels={"topology.kubernetes.io/zone": "b__ a"}),
        ),
    )
    needs = resolve(POD, pod_volumes(pvc("c")), known, ALL)
    term = NodeSelectorTerm((Requirement("kubernetes.io/hostname", "In", ("n1", "n2")),))
    assert needs == VolumeNeeds(((term,),), False, (("topology.kubernetes.io/zone", ("a", "b")),))


def test_without_volume_zone_a_missing_volume_is_volume_binding_s_to_say():
    known = index((CLAIMS, claim("c", volume="pv", bound=True)))
    plugins = frozenset({VOLUME_BINDING})
    assert resolve(POD, pod_volumes(pvc("c")), known, plugins) == VolumeNeeds((), True)


def test_an_object_optimist_cannot_read_fails_the_pod_naming_its_field():
    bad = volume("pv", hosts=("n1",))
    bad["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0][
        "operator"
    ] = "Near"
    known = index((CLAIMS, claim("c", volume="pv", bound=True)), (VOLUMES, bad))
    rejection = resolve(POD, pod_volumes(pvc("c")), known, ALL)
    assert isinstance(rejection, Rejection) and rejection.plugin == VOLUME_BINDING
    assert rejection.message.startswith(
        "PersistentVolume pv: spec.nodeAffinity.required.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator='Near'"
    )
    # a class without a binding mode is upstream's error too
    known = index((CLAIMS, claim("c", cls="unset")), (CLASSES, {"metadata": {"name": "unset"}}))
    assert resolve(POD, pod_volumes(pvc("c")), known, ALL) == Rejection(
        VOLUME_BINDING, 'VolumeBindingMode not set for StorageClass "unset"'
    )


def test_the_index_says_which_event_each_change_is():
    known = VolumeIndex()
    assert known.apply(CLAIMS, claim("c")) == "PersistentVolumeClaimAdd"
    assert known.apply(CLAIMS, claim("c", volume="pv")) == "PersistentVolumeClaimUpdate"
    assert known.apply(CLAIMS, claim("c"), deleted=True) == ""
    assert known.claim("ns/c") is None


def rwop(name: str) -> dict[str, Any]:
    made = claim(name, volume=f"pv-{name}", bound=True)
    made["spec"]["accessModes"] = ["ReadWriteOncePod"]
    return made


def test_a_read_write_once_pod_claim_another_pod_uses_fits_no_node():
    """v1.30.4's volume_restrictions.go: the claim's users are counted over the whole
    cluster, the pod itself aside (a pod resolved again once it is bound)."""
    restrictions = frozenset({VOLUME_RESTRICTIONS})
    known = index((CLAIMS, rwop("solo")), (CLAIMS, claim("shared", volume="pv", bound=True)))
    volumes = pod_volumes(pvc("solo"), pvc("shared"))
    users = {"ns/solo": {"ns/p"}, "ns/shared": {"ns/other"}}
    own = resolve(POD, volumes, known, restrictions, lambda c: users.get(c, ()))
    assert own == VolumeNeeds(claim_in_use=False)  # its own use, and a claim not RWOP
    users["ns/solo"] = {"ns/p", "ns/other"}
    taken = resolve(POD, volumes, known, restrictions, lambda c: users.get(c, ()))
    assert taken == VolumeNeeds(claim_in_use=True)
    # a missing claim: VolumeRestrictions' PreFilter says it, before VolumeBinding's
    missing = resolve(POD, pod_volumes(pvc("gone")), known, restrictions | ALL)
    assert missing == Rejection(VOLUME_RESTRICTIONS, 'persistentvolumeclaim "gone" not found')


def test_bound_claims_are_judged_up_to_the_first_whose_volume_is_gone():
    """v1.30.4's checkBoundClaims stops at the first missing volume: affinity of the
    claims before it still holds, of those after it is never looked at."""
    known = index(
        (CLAIMS, claim("before", volume="pv-a", bound=True)),
        (CLAIMS, claim("gone", volume="pv-gone", bound=True)),
        (CLAIMS, claim("after", volume="pv-b", bound=True)),
        (VOLUMES, volume("pv-a", hosts=("n1",))),
        (VOLUMES, volume("pv-b", hosts=("n2",))),
    )
    plugins = frozenset({VOLUME_BINDING})
    needs = resolve(POD, pod_volumes(pvc("before"), pvc("gone"), pvc("after")), known, plugins)
    term = NodeSelectorTerm((Requirement("kubernetes.io/hostname", "In", ("n1",)),))
    assert needs == VolumeNeeds(((term,),), True)


def test_a_pod_refused_as_a_new_one_still_holds_the_volumes_it_attaches():
    """A pod on a node is counted as upstream counts it (filterAttachableVolumes of an
    existing pod): its readable claims' volumes, whatever refuses it as a new pod (here
    a claim being deleted), and a claim not found skipped."""
    csi = volume("pv")
    csi["spec"]["csi"] = {"driver": "ebs.csi.aws.com", "volumeHandle": "h"}
    deleting = claim(
        "c", volume="pv", bound=True, meta={"deletionTimestamp": "2026-12-07T00:00:00Z"}
    )
    known = index((CLAIMS, deleting), (VOLUMES, csi))
    plugins = frozenset({VOLUME_BINDING, NODE_VOLUME_LIMITS})
    pod = pod_from_manifest(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
            "spec": {"containers": [{"name": "c"}], "volumes": [pvc("c"), pvc("missing")]},
        }
    )
    resolved = VolumeResolver(known, {pod.spec.profile: plugins}).resolved(pod)
    assert resolved.spec.volumes is not None and resolved.spec.volumes.rejected_by == VOLUME_BINDING
    assert [a.volume for a in resolved.attached] == ["ebs.csi.aws.com/h"]


def test_pods_of_one_spec_that_ask_the_same_share_one_resolved_spec():
    """Pods of a template with a volume each of one kind are one class: their resolved
    specs are one object, each pod still holding its own volume; a pod that asks
    something else of a node gets a spec of its own."""

    def csi(name: str) -> dict[str, Any]:
        made = volume(name)
        made["spec"]["csi"] = {"driver": "ebs.csi.aws.com", "volumeHandle": name}
        return made

    hosted = volume("pv-c", hosts=("n1",))
    known = index(
        *[(CLAIMS, claim(n, volume=f"pv-{n}", bound=True)) for n in ("a", "b", "c")],
        (VOLUMES, csi("pv-a")),
        (VOLUMES, csi("pv-b")),
        (VOLUMES, hosted),
    )
    template = pod_from_manifest(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
            "spec": {"containers": [{"name": "c"}], "volumes": [pvc("a")]},
        }
    )
    resolver = VolumeResolver(known, {template.spec.profile: ALL | {NODE_VOLUME_LIMITS}})
    a, b, c = (resolver.resolved(replace(template, volumes=pod_volumes(pvc(n)))) for n in "abc")
    assert a.spec is b.spec
    assert [p.attached[0].volume for p in (a, b)] == [
        "ebs.csi.aws.com/pv-a",
        "ebs.csi.aws.com/pv-b",
    ]
    assert c.spec is not a.spec and c.spec.volumes != a.spec.volumes
    assert resolver.resolved(replace(template, volumes=pod_volumes(pvc("b")))).spec == b.spec
