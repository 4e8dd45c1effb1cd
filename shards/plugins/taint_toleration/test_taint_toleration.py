import numpy as np
import pytest

from shards.plugins.taint_toleration import TaintToleration
from shards.testing import compile_pod, every, node, pod_spec, table_of

NODES = [
    node("clean"),
    node("gpu", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
    node("draining", taints=[{"key": "drain", "effect": "NoExecute"}]),
    node("soft", taints=[{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], [True, False, False, True]),  # PreferNoSchedule never filters
        (
            [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            [True, True, False, True],
        ),
        ([{"key": "gpu", "operator": "Equal", "value": "false"}], [True, False, False, True]),
        ([{"key": "gpu", "operator": "Exists"}], [True, True, False, True]),
        ([{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}], [True, False, False, True]),
        ([{"operator": "Exists"}], [True, True, True, True]),  # empty key + Exists tolerates all
        (
            [{"key": "drain", "operator": "Exists"}, {"key": "gpu", "operator": "Exists"}],
            [True, True, True, True],
        ),
    ],
)
def test_filter(tolerations, expected):
    table = table_of(NODES)
    pod = compile_pod(pod_spec({"cpu": "1"}, tolerations=tolerations), table)
    assert TaintToleration().filter(pod, table, every(table)).tolist() == expected


def test_reason_names_the_taint():
    table = table_of(NODES)
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    reasons = TaintToleration().reasons(pod, table, [1, 2])
    assert reasons == {
        "node(s) had untolerated taint {gpu: true}": 1,
        "node(s) had untolerated taint {drain: }": 1,
    }


def test_every_hard_taint_must_be_tolerated():
    # As the taints documentation explains: tolerating some of a node's taints is not
    # enough; a NoSchedule or NoExecute taint left untolerated keeps the pod out, while
    # an untolerated PreferNoSchedule one only makes the node less attractive.
    table = table_of(
        [
            node(
                "ml",
                taints=[
                    {"key": "team", "value": "ml", "effect": "NoSchedule"},
                    {"key": "team", "value": "ml", "effect": "NoExecute"},
                    {"key": "disk", "value": "slow", "effect": "NoSchedule"},
                ],
            ),
            node(
                "ml-soft",
                taints=[
                    {"key": "team", "value": "ml", "effect": "NoSchedule"},
                    {"key": "disk", "value": "slow", "effect": "PreferNoSchedule"},
                ],
            ),
        ]
    )
    team = [
        {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
        {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoExecute"},
    ]
    pod = compile_pod(pod_spec({"cpu": "1"}, tolerations=team), table)
    assert TaintToleration().filter(pod, table, every(table)).tolist() == [False, True]
    assert TaintToleration().reasons(pod, table, [0]) == {
        "node(s) had untolerated taint {disk: slow}": 1
    }


SOFT = [
    node("clean"),
    node("one", taints=[{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]),
    node(
        "two",
        taints=[
            {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
            {"key": "old", "effect": "PreferNoSchedule"},
            {"key": "gpu", "value": "true", "effect": "NoSchedule"},  # not counted by Score
        ],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "raw", "normalized"),
    [
        ([], [0, 1, 2], [100, 50, 0]),
        ([{"key": "spot", "operator": "Exists"}], [0, 0, 1], [100, 100, 0]),
        (
            [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}],
            [0, 0, 1],
            [100, 100, 0],
        ),
        # a toleration for another effect does not soften a PreferNoSchedule taint
        ([{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}], [0, 1, 2], [100, 50, 0]),
        ([{"operator": "Exists"}], [0, 0, 0], [100, 100, 100]),
    ],
)
def test_score_counts_untolerated_prefer_no_schedule_taints(tolerations, raw, normalized):
    table = table_of(SOFT)
    pod = compile_pod(pod_spec({"cpu": "1"}, tolerations=tolerations), table)
    plugin = TaintToleration()
    scores = plugin.score(pod, table, every(table))
    assert scores.tolist() == raw
    assert plugin.normalize(pod, table, np.arange(table.size), scores).tolist() == normalized
    assert plugin.score(pod, table, np.array([2])).tolist() == raw[2:]
