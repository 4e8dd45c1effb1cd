"""PodDisruptionBudgets: parsing, the allowance, and which evictions they refuse."""

import pytest

from cluster.disruption import DisruptionBudget, DisruptionBudgets
from cluster.errors import InvalidObject
from cluster.inventory import BoundPods
from cluster.manifests import budget_from_manifest, pod_from_manifest
from cluster.selectors import LabelSelector
from shards.testing import pod_spec


def budget_doc(**spec):
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, **spec},
    }


def test_a_budget_parses_with_a_number_or_a_percentage():
    assert budget_from_manifest(budget_doc(minAvailable=2)).min_available == 2
    assert budget_from_manifest(budget_doc(maxUnavailable="25%")).max_unavailable == "25%"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"minAvailable": 1, "maxUnavailable": 1}, "spec.maxUnavailable"),
        ({"minAvailable": -1}, "spec.minAvailable"),
        ({"maxUnavailable": "lots%"}, "spec.maxUnavailable"),
        ({"selector": {"matchLabels": "db"}}, "spec.selector.matchLabels"),
    ],
)
def test_a_bad_budget_names_its_field(spec, field):
    with pytest.raises(InvalidObject) as err:
        budget_from_manifest(budget_doc(**spec))
    assert field in str(err.value) and "PodDisruptionBudget ns/db" in str(err.value)


@pytest.mark.parametrize(
    ("limits", "healthy", "allowed"),
    [
        ({"min_available": 2}, 3, 1),
        ({"min_available": 5}, 3, 0),
        ({"min_available": "50%"}, 3, 1),  # 1.5 rounds up to 2 wanted
        ({"max_unavailable": 1}, 3, 1),
        ({"max_unavailable": "50%"}, 3, 2),  # 1.5 rounds up to 2 allowed
        ({"max_unavailable": 0}, 3, 0),
        ({}, 3, 3),
    ],
)
def test_allowed_disruptions(limits, healthy, allowed):
    selector = LabelSelector((("app", "db"),))
    assert DisruptionBudget("ns", "db", selector, **limits).allowed(healthy) == allowed


def db_pod(name, app="db"):
    m = pod_spec({"cpu": "1"})
    m["metadata"].update(name=name, namespace="ns", labels={"app": app})
    return pod_from_manifest(m)


def test_evictions_past_the_allowance_are_the_violating_ones():
    inventory = BoundPods()
    pods = [db_pod(f"db{i}") for i in range(3)] + [db_pod("web", app="web")]
    for pod in pods:
        inventory.add(pod, "n")
    budgets = DisruptionBudgets(inventory)
    budgets.put([budget_from_manifest(budget_doc(minAvailable=2))])
    on_node = list(inventory.on("n"))
    # one db pod may go; the second and third counted would break the budget
    assert budgets.violating(on_node) == {"ns/db1", "ns/db2"}
    # an empty selector guards nothing here, as upstream's preemption reads it
    empty = DisruptionBudgets(inventory)
    empty.put([budget_from_manifest(budget_doc(selector={}, minAvailable=3))])
    assert empty.violating(on_node) == set()
