"""The free volumes a placed pod's claims are given on a node, as upstream's PreBind
would bind them there, and the index's assume cache that keeps them from other claims
until the pod goes."""

from __future__ import annotations

from cluster.events import PV_UPDATE
from cluster.volumes.index import CLAIMS, VOLUMES
from cluster.volumes.picks import NONE_LEFT, picks_on, waiting_claims
from cluster.volumes.storage_objects import PodVolume
from tests.cluster.volumes.test_matching import HOST, known, local, wanted

ON_N1 = {HOST: "n1"}


def claims(*names: str) -> tuple[PodVolume, ...]:
    return tuple(PodVolume(n, n) for n in names)


def test_each_claim_is_given_the_smallest_free_volume_the_node_reaches():
    index = known(
        (CLAIMS, wanted("small", size="1Gi")),
        (CLAIMS, wanted("big", size="5Gi")),
        (CLAIMS, wanted("grown", cls="anywhere")),  # provisioned: not named
        (VOLUMES, local("pv-10", "n1", size="10Gi")),
        (VOLUMES, local("pv-5", "n1", size="5Gi")),
        (VOLUMES, local("pv-elsewhere", "n2", size="1Gi")),
    )
    waiting = waiting_claims(index, "ns", claims("big", "small", "grown"))
    # the smaller claim first, as the Filter matched them: it takes pv-5, big gets pv-10
    assert [w.claim.name for w in waiting] == ["small", "grown", "big"]
    assert picks_on(waiting, ON_N1) == (("ns/small", "pv-5"), ("ns/big", "pv-10"))
    # on n2, big has no volume left and its class cannot provision
    assert picks_on(waiting, {HOST: "n2"}) == (("ns/small", "pv-elsewhere"), ("ns/big", NONE_LEFT))


def test_a_volume_given_to_another_claim_is_skipped_one_given_to_the_same_claim_kept():
    index = known(
        (CLAIMS, wanted("c")),
        (VOLUMES, local("pv-a", "n1")),
        (VOLUMES, local("pv-b", "n1", size="2Gi")),
    )
    waiting = waiting_claims(index, "ns", claims("c"))
    assert picks_on(waiting, ON_N1, {"pv-a": "ns/other"}) == (("ns/c", "pv-b"),)
    assert picks_on(waiting, ON_N1, {"pv-a": "ns/c"}) == (("ns/c", "pv-a"),)
    taken = {"pv-a": "ns/other", "pv-b": "ns/other"}
    assert picks_on(waiting, ON_N1, taken) == (("ns/c", NONE_LEFT),)


def test_claims_bound_or_being_provisioned_are_given_nothing():
    provisioning = wanted("p", cls="zonal")
    provisioning["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n1"}
    bound = wanted("b")
    bound["spec"]["volumeName"] = "pv-b"
    index = known((CLAIMS, provisioning), (CLAIMS, bound), (VOLUMES, local("pv", "n1")))
    waiting = waiting_claims(index, "ns", claims("p", "b", "missing"))
    assert [w.claim.name for w in waiting] == ["p"] and picks_on(waiting, ON_N1) == ()


def test_a_volume_assumed_given_is_promised_to_its_claim_until_its_pod_goes():
    index = known(
        (CLAIMS, wanted("mine")),
        (CLAIMS, wanted("yours")),
        (VOLUMES, local("pv", "n1")),
    )
    index.assume("ns/p", (("ns/mine", "pv"),))
    [mine] = waiting_claims(index, "ns", claims("mine"))
    [yours] = waiting_claims(index, "ns", claims("yours"))
    assert mine.found is not None and mine.found.promised is not None  # as upstream assumes
    assert picks_on([yours], ON_N1) == (("ns/yours", NONE_LEFT),)
    assert index.forget(["ns/p"]) == PV_UPDATE  # a volume free again, for those waiting
    assert index.forget(["ns/p"]) == ""
    [yours] = waiting_claims(index, "ns", claims("yours"))
    assert picks_on([yours], ON_N1) == (("ns/yours", "pv"),)
