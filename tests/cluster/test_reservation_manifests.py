"""Reservation objects as Koordinator writes them: what is read, and what is refused."""

import pytest

from cluster.errors import InvalidObject
from cluster.manifests import reservation_from_manifest
from cluster.reservations import RESERVATION_NAMESPACE
from shards.testing import pod_spec

NOW = 1_000_000.0


def doc(owners=None, **spec):
    template = pod_spec({"cpu": "2"})
    template["metadata"] = {"namespace": "team"}
    owners = owners if owners is not None else [{"object": {"name": "vip"}}]
    return {
        "kind": "Reservation",
        "metadata": {"name": "r"},
        "spec": {"template": template, "owners": owners, **spec},
    }


def test_a_reservation_for_a_named_pod():
    r = reservation_from_manifest(doc(ttl="30m"), NOW)
    assert r.key == f"{RESERVATION_NAMESPACE}/r" and r.hold_key == "team/vip"
    assert r.expires_at == NOW + 1800 and dict(r.pod.spec.requests)["cpu"] == 2000


def test_a_reservation_for_the_pods_a_selector_picks():
    owners = [{"labelSelector": {"matchLabels": {"app": "db"}}}]
    r = reservation_from_manifest(doc(owners, expires="1970-01-12T14:00:00+00:00"), NOW)
    assert r.hold_key == r.key and r.owner_namespace == "team"
    assert r.expires_at == 1_000_800.0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"owners": []}, "spec.owners"),
        ({"owners": [{}]}, "spec.owners[0]"),
        ({"ttl": "soon"}, "spec.ttl"),
        ({"ttl": "1h", "expires": "2030-01-01T00:00:00Z"}, "spec.expires"),
        ({"allocateOnce": False}, "spec.allocateOnce"),
        ({"template": {"spec": {"containers": "none"}}}, "spec.template.spec.containers"),
    ],
)
def test_a_bad_reservation_names_its_field(change, field):
    manifest = doc()
    manifest["spec"].update(change)
    with pytest.raises(InvalidObject) as err:
        reservation_from_manifest(manifest, NOW)
    assert field in str(err.value) and "Reservation r" in str(err.value)
