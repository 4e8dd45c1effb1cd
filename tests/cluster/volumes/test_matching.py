"""Claims waiting for their first consumer matched to volumes, and to provisioning, as
upstream's VolumeBinding matches them (FindMatchingVolume and checkVolumeProvisions in
v1.30.4's pkg/scheduler/framework/plugins/volumebinding/binder.go)."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.selectors import NodeSelectorTerm, Requirement
from cluster.volumes.index import CLAIMS, CLASSES, VOLUMES, VolumeIndex
from cluster.volumes.matching import matches, pick
from cluster.volumes.resolve import Rejection, resolve
from cluster.volumes.storage_objects import PersistentVolumeClaim
from tests.cluster.volumes.test_resolve import ALL, POD, claim, pod_volumes, pvc

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def local(name: str, host: str, size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    """A local volume of the static class, on one node, free to bind."""
    term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": [host]}]}
    return {
        "metadata": {"name": name, "labels": spec.pop("labels", {})},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": spec.pop("cls", "local"),
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            **spec,
        },
        "status": {"phase": spec.pop("phase", "Available")},
    }


def known(*objects: tuple[str, dict[str, Any]]) -> VolumeIndex:
    index = VolumeIndex()
    wffc = "WaitForFirstConsumer"
    index.apply(CLASSES, {"metadata": {"name": "local"}, "volumeBindingMode": wffc,
                          "provisioner": "kubernetes.io/no-provisioner"})  # fmt: skip
    zoned = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}]
    csi = "csi.example.com"
    index.apply(CLASSES, {"metadata": {"name": "zonal"}, "volumeBindingMode": wffc,
                          "provisioner": csi, "allowedTopologies": zoned})  # fmt: skip
    index.apply(CLASSES, {"metadata": {"name": "anywhere"}, "volumeBindingMode": wffc,
                          "provisioner": "csi.example.com"})  # fmt: skip
    for resource, manifest in objects:
        index.apply(resource, manifest)
    return index


def wanted(name: str = "c", cls: str = "local", size: str = "1Gi", **more: Any) -> dict[str, Any]:
    manifest = claim(name, cls=cls, **more)
    manifest["spec"]["resources"] = {"requests": {"storage": size}}
    return manifest


def hosts(*names: str) -> NodeSelectorTerm:
    return NodeSelectorTerm((Requirement(HOST, "In", names),))


def needs_of(*objects: tuple[str, dict[str, Any]], claims: tuple[str, ...] = ("c",)):
    return resolve(POD, pod_volumes(*map(pvc, claims)), known(*objects), ALL)


def test_a_claim_of_static_volumes_can_go_where_a_free_one_that_fits_is():
    needs = needs_of(
        (CLAIMS, wanted()),
        (VOLUMES, local("pv1", "n1")),
        (VOLUMES, local("pv2", "n2", size="10Gi")),
    )
    assert (needs.unbound, needs.selected_node) == (((hosts("n1", "n2"),),), "")


@pytest.mark.parametrize(
    "unfit",
    [
        local("small", "n3", size="500Mi"),
        local("readonly", "n3", accessModes=["ReadOnlyMany"]),
        local("taken", "n3", claimRef={"namespace": "ns", "name": "other"}),
        local("released", "n3", phase="Released"),
        local("other-class", "n3", cls="zonal"),
        local("block", "n3", volumeMode="Block"),
        local("labelled", "n3", labels={"tier": "slow"}),
    ],
    ids=lambda v: v["metadata"]["name"],
)
def test_a_volume_that_does_not_fit_the_claim_takes_no_node(unfit):
    selecting = wanted()
    selecting["spec"]["selector"] = {"matchLabels": {"tier": "fast"}}
    fast = local("fast", "n1", labels={"tier": "fast"})
    needs = needs_of((CLAIMS, selecting), (VOLUMES, fast), (VOLUMES, unfit))
    assert needs.unbound == ((hosts("n1"),),)
    # with no volume left and a class that cannot provision, no node at all
    needs = needs_of((CLAIMS, selecting), (VOLUMES, unfit))
    assert needs.unbound == ((),)


def test_a_volume_promised_to_the_claim_is_the_only_one_it_takes():
    promised = local("mine", "n2", claimRef={"namespace": "ns", "name": "c"})
    needs = needs_of((CLAIMS, wanted()), (VOLUMES, local("free", "n1")), (VOLUMES, promised))
    assert needs.unbound == ((hosts("n2"),),)


def test_a_class_that_provisions_adds_its_allowed_topologies():
    needs = needs_of((CLAIMS, wanted(cls="zonal")), (VOLUMES, local("pv", "n1", cls="zonal")))
    zone_a = NodeSelectorTerm((Requirement(ZONE, "In", ("a",)),))
    assert needs.unbound == ((hosts("n1"), zone_a),)
    # one that provisions anywhere lets every node serve the claim: nothing is asked
    assert needs_of((CLAIMS, wanted(cls="anywhere"))).unbound == ()


def test_a_claim_whose_node_was_chosen_waits_for_that_node_alone():
    chosen = wanted(cls="zonal", meta={"annotations": {"volume.kubernetes.io/selected-node": "n7"}})
    needs = needs_of((CLAIMS, chosen), (VOLUMES, local("pv", "n1", cls="zonal")))
    zone_a = NodeSelectorTerm((Requirement(ZONE, "In", ("a",)),))
    assert (needs.unbound, needs.selected_node) == (((zone_a,),), "n7")


def test_prebind_picks_the_smallest_volume_the_node_reaches_not_taken():
    index = known(
        (VOLUMES, local("big", "n1", size="10Gi")),
        (VOLUMES, local("small", "n1", size="2Gi")),
        (VOLUMES, local("elsewhere", "n2", size="1Gi")),
    )
    c = _claim(index, wanted())
    found = matches(c, index.volumes_of_class("local"))
    assert pick(c, found, {HOST: "n1"}).name == "small"
    assert pick(c, found, {HOST: "n1"}, taken={"small"}).name == "big"
    assert pick(c, found, {HOST: "n3"}) is None  # provisioning, where the class can


def _claim(index: VolumeIndex, manifest: dict[str, Any]) -> PersistentVolumeClaim:
    index.apply(CLAIMS, manifest)
    found = index.claim("ns/c")
    assert isinstance(found, PersistentVolumeClaim)
    return found


def test_the_index_files_each_readable_volume_under_its_class_as_it_changes():
    index = known((VOLUMES, local("pv", "n1")), (VOLUMES, local("other", "n2", cls="zonal")))

    def names(cls: str) -> list[str]:
        return [v.name for v in index.volumes_of_class(cls)]

    assert (names("local"), names("zonal")) == (["pv"], ["other"])
    index.apply(VOLUMES, local("pv", "n1", cls="zonal"))  # its class changed
    assert (names("local"), sorted(names("zonal"))) == ([], ["other", "pv"])
    unreadable = local("pv", "n1", cls="zonal")
    unreadable["spec"]["capacity"]["storage"] = "lots"
    index.apply(VOLUMES, unreadable)  # kept as its error, matched to no claim
    assert names("zonal") == ["other"]
    index.apply(VOLUMES, local("other", "n2", cls="zonal"), deleted=True)
    assert names("zonal") == [] and index.volume("other") is None


def test_claims_that_may_take_the_same_volume_are_matched_together():
    """findMatchingVolumes keeps a volume one claim took from the next: two claims of one
    class go to the shard together, smallest request first, each with its candidates
    smallest first; claims whose volumes cannot overlap are matched alone."""
    index = known(
        (VOLUMES, local("big", "n1", "10Gi")),
        (VOLUMES, local("small", "n1", "1Gi")),
        (VOLUMES, local("other", "n2", "5Gi")),
        (CLAIMS, wanted("data", size="5Gi")),
        (CLAIMS, wanted("wal", size="1Gi")),
    )
    needs = resolve(POD, pod_volumes(pvc("data"), pvc("wal")), index, ALL)
    assert needs is not None and not isinstance(needs, Rejection) and not needs.unbound
    [shared] = needs.shared
    reach = [term for terms in shared.reach for term in terms or ()]
    assert reach == [hosts("n1"), hosts("n2"), hosts("n1")]  # small, other, big
    assert shared.claims == ((0, 1, 2), (1, 2))  # wal first: every volume fits it
    assert shared.provisions == ()  # a class of static volumes alone
    apart = known((VOLUMES, local("big", "n1", "10Gi")), (CLAIMS, wanted("data", size="5Gi")),
                  (CLAIMS, wanted("tiny", size="20Gi")))  # fmt: skip
    needs = resolve(POD, pod_volumes(pvc("data"), pvc("tiny")), apart, ALL)
    assert needs is not None and not isinstance(needs, Rejection) and not needs.shared
