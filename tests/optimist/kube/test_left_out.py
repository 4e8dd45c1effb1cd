"""The objects left out: told once per fault, forgotten once read again or deleted."""

from optimist.kube.left_out import Involved, LeftOut

NODE = {"metadata": {"name": "absurd", "uid": "u1"}}
QUOTA = {"metadata": {"name": "q", "namespace": "team", "uid": "u2"}}


def test_an_object_is_told_once_per_fault_and_again_after_it_was_readable():
    told: list[tuple[Involved, str]] = []
    left = LeftOut(lambda about, message: told.append((about, message)))
    node = Involved.of("Node", "/api/v1/nodes", NODE)
    for _ in range(3):  # heartbeats: the same fault, once
        left.refuse(node, "cpu='100P'")
    left.refuse(node, "cpu='200P'")  # another fault: told again
    assert [message for _, message in told] == [
        "Left out of scheduling by optimist: cpu='100P'",
        "Left out of scheduling by optimist: cpu='200P'",
    ]
    left.readable("Node", "", "absurd")
    assert left.by_kind() == {}
    left.refuse(node, "cpu='200P'")  # broken again after it was fine
    assert len(told) == 3


def test_the_involved_object_is_named_as_its_api_names_it():
    quota = Involved.of("ElasticQuota", "/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas", QUOTA)
    assert quota == Involved("ElasticQuota", "scheduling.x-k8s.io/v1alpha1", "team", "q", "u2")
    assert Involved.of("Node", "/api/v1/nodes", NODE).api_version == "v1"
    left = LeftOut(lambda about, message: None)
    left.refuse(quota, "min above max")
    left.refuse(Involved.of("Node", "/api/v1/nodes", NODE), "absurd")
    assert left.by_kind() == {"ElasticQuota": 1, "Node": 1}
