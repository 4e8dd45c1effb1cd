"""Elastic quota arithmetic: min guaranteed, borrowing by weight, max, nested trees, bad input."""

import pytest

from cluster.errors import InvalidObject
from cluster.inventory import BoundPod
from cluster.manifests import pod_from_manifest
from cluster.quota import (
    PARENT_LABEL,
    QUOTA_LABEL,
    Quota,
    QuotaTree,
    quota_from_manifest,
    quotas_from_config,
)
from shards.testing import pod_spec

CPU = "cpu"


def pod(name, cpu, namespace="team-a", labels=None):
    m = pod_spec({"cpu": str(cpu)})
    m["metadata"].update(name=name, namespace=namespace, labels=labels or {})
    return pod_from_manifest(m)


def cpus(n):
    return n * 1000  # millicores


def tree(*quotas, capacity=None):
    return QuotaTree(list(quotas), capacity)


def test_a_quota_admits_up_to_its_max_and_no_further():
    t = tree(Quota("a", max={CPU: cpus(2)}, namespaces=("team-a",)))
    first, second, third = pod("p1", 1), pod("p2", 1), pod("p3", 1)
    t.wait([first, second, third])
    assert t.blocked([first]) is None
    t.admit([first, second])
    assert t.blocked([third]) == "quota a: cpu 2000 in use + 1000 asked exceeds 2000 it may use now"


def test_pods_outside_every_quota_are_not_limited():
    t = tree(Quota("a", max={CPU: 0}, namespaces=("team-a",)))
    free = pod("p", 4, namespace="elsewhere")
    t.wait([free])
    assert t.leaf_of(free) is None and t.blocked([free]) is None


def test_a_pod_label_names_its_quota_before_its_namespace():
    t = tree(Quota("a", namespaces=("team-a",)), Quota("b"))
    assert t.leaf_of(pod("p", 1, labels={QUOTA_LABEL: "b"})) == "b"
    assert t.leaf_of(pod("p", 1, labels={QUOTA_LABEL: "nope"})) == "a"


def test_an_idle_quota_lends_its_min_and_the_borrowers_share_by_weight():
    # 12 CPUs; a guarantees 6 but asks for nothing; b and c (weights 1 and 2) want all
    t = tree(
        Quota("a", min={CPU: cpus(6)}, namespaces=("team-a",)),
        Quota("b", min={CPU: cpus(1)}, weight=1, namespaces=("team-b",)),
        Quota("c", min={CPU: cpus(1)}, weight=2, namespaces=("team-c",)),
        capacity={CPU: cpus(12)},
    )
    t.wait([pod(f"b{i}", 1, "team-b") for i in range(12)])
    t.wait([pod(f"c{i}", 1, "team-c") for i in range(12)])
    runtime = t.runtime()
    assert runtime["a"][CPU] == 0  # asks for nothing: lends all of its min
    # 10 CPUs beyond the mins, split 1:2 (integer shares; the last CPU goes round)
    assert runtime["b"][CPU] + runtime["c"][CPU] == cpus(12)
    assert runtime["b"][CPU] == pytest.approx(cpus(1) + cpus(10) / 3, abs=1)
    # a starts asking: its min is its own again, the borrowers' shares shrink
    t.wait([pod(f"a{i}", 1, "team-a") for i in range(6)])
    runtime = t.runtime()
    assert runtime["a"][CPU] == cpus(6)
    assert runtime["b"][CPU] + runtime["c"][CPU] == cpus(6)


def test_a_borrower_never_passes_its_max():
    t = tree(
        Quota("a", min={CPU: cpus(6)}, namespaces=("team-a",)),
        Quota("b", max={CPU: cpus(3)}, namespaces=("team-b",)),
        capacity={CPU: cpus(12)},
    )
    t.wait([pod(f"b{i}", 1, "team-b") for i in range(10)])
    assert t.runtime()["b"][CPU] == cpus(3)


def test_a_nested_tree_counts_every_level():
    t = tree(
        Quota("org", max={CPU: cpus(4)}),
        Quota("team-1", parent="org", namespaces=("team-a",)),
        Quota("team-2", parent="org", namespaces=("team-b",)),
    )
    ones = [pod(f"a{i}", 1, "team-a") for i in range(3)]
    twos = [pod(f"b{i}", 1, "team-b") for i in range(3)]
    t.wait(ones + twos)
    t.admit(ones)
    t.admit(twos[:1])  # the org holds 4 CPUs now
    assert t.blocked(twos[1:2]).startswith("quota org: cpu 4000 in use")
    assert t.forget(["team-a/a0"])  # a pod of team-1 ends: the org has room again
    assert t.take_room_grew() and t.blocked(twos[1:2]) is None


def test_an_attempt_given_back_waits_again():
    t = tree(Quota("a", max={CPU: cpus(1)}, namespaces=("team-a",)))
    first, second = pod("p1", 1), pod("p2", 1)
    t.wait([first, second])
    t.admit([first])
    assert t.blocked([second]) is not None
    t.return_to_queue([first])
    assert t.take_room_grew() and t.blocked([second]) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([{"name": "a", "min": {"cpu": "2"}, "max": {"cpu": "1"}}], "quotas[0].min.cpu='2'"),
        ([{"name": "a", "parent": "nope"}], "parent='nope': no such quota"),
        ([{"name": "a"}, {"name": "a"}], "is defined twice"),
        (
            [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}],
            "makes a cycle",
        ),
        (
            [
                {"name": "a", "namespaces": ["x"]},
                {"name": "b", "namespaces": ["x"]},
            ],
            "already owned by quota a",
        ),
        (
            [
                {"name": "org", "min": {"cpu": "1"}},
                {"name": "t", "parent": "org", "min": {"cpu": "2"}},
            ],
            "is less than its children's min together",
        ),
        ([{"name": "a", "sharedWeight": 0}], "quotas[0].sharedWeight=0"),
        ([{"name": "a", "limit": 1}], "quotas[0].limit=1: unknown field"),
        ({"name": "a"}, "must be a list of quotas"),
    ],
)
def test_bad_quotas_are_refused_naming_the_quota_the_field_and_the_value(raw, message):
    with pytest.raises(InvalidObject) as err:
        quotas_from_config(raw)
    assert message in str(err.value)


def test_a_borrower_is_over_its_runtime_quota_once_its_lender_asks_again():
    t = tree(
        Quota("parent", min={CPU: cpus(12)}),
        Quota("a", parent="parent", min={CPU: cpus(6)}, namespaces=("team-a",)),
        Quota("b", parent="parent", min={CPU: cpus(6)}, namespaces=("team-b",)),
        capacity={CPU: cpus(12)},
    )
    borrowed = [pod(f"b{i}", 1, namespace="team-b") for i in range(12)]
    t.wait(borrowed)
    t.admit(borrowed)
    assert t.over_runtime() == set()  # a is idle: b may use it all
    t.wait([pod(f"a{i}", 1) for i in range(3)])
    assert t.over_runtime() == {"b"}  # b's runtime is now 9: it holds 3 too many
    t.forget([p.key for p in borrowed[:3]])
    assert t.over_runtime() == set()


def elastic_quota(name, namespace, **spec):
    meta = {"name": name, "namespace": namespace}
    return {"kind": "ElasticQuota", "metadata": meta, "spec": spec}


def test_an_elastic_quota_object_owns_its_namespace():
    doc = elastic_quota("qa", "team-a", min={"cpu": "2"}, max={"cpu": "4"})
    doc["metadata"]["labels"] = {PARENT_LABEL: "root"}
    quota = quota_from_manifest(doc)
    assert quota == Quota("qa", "root", {CPU: cpus(2)}, {CPU: cpus(4)}, namespaces=("team-a",))


def test_a_bad_elastic_quota_names_the_object_and_field():
    with pytest.raises(InvalidObject) as err:
        quota_from_manifest(elastic_quota("qa", "team-a", min={"cpu": "lots"}))
    assert "ElasticQuota team-a/qa" in str(err.value) and "spec.min" in str(err.value)


def test_pods_bound_before_their_quota_existed_count_as_used():
    t = tree(Quota("a", max={CPU: cpus(2)}, namespaces=("team-a",)))
    running = [BoundPod.of(pod(f"r{i}", 1), "n", i) for i in range(2)]
    t.count_running(running)
    newcomer = pod("p", 1)
    t.wait([newcomer])
    assert t.blocked([newcomer]).startswith("quota a: cpu 2000 in use")
