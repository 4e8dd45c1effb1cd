import numpy as np

from shards.plugins.node_name import NodeName
from shards.testing import compile_pod, every, node, pod_spec, table_of


def test_a_pod_naming_its_node_fits_only_there():
    table = table_of([node("a"), node("b")])
    named = compile_pod(pod_spec({"cpu": "1"}, nodeName="b"), table)
    assert NodeName().filter(named, table, every(table)).tolist() == [False, True]
    assert NodeName().filter(named, table, np.array([1])).tolist() == [True]
    assert NodeName().reasons(named, table, np.array([0])) == {
        "node(s) didn't match the requested node name": 1
    }


def test_no_name_or_an_unknown_name():
    table = table_of([node("a"), node("b")])
    free = compile_pod(pod_spec({"cpu": "1"}), table)
    assert NodeName().filter(free, table, every(table)).tolist() == [True, True]
    ghost = compile_pod(pod_spec({"cpu": "1"}, nodeName="ghost"), table)
    assert NodeName().filter(ghost, table, every(table)).tolist() == [False, False]
