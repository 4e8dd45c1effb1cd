from shards.plugins.node_unschedulable import NodeUnschedulable
from shards.testing import compile_pod, every, node, pod_spec, table_of


def test_cordoned_node_is_filtered_unless_tolerated():
    table = table_of([node("open"), node("cordoned", unschedulable=True)])
    plugin = NodeUnschedulable()
    plain = compile_pod(pod_spec({"cpu": "1"}), table)
    assert plugin.filter(plain, table, every(table)).tolist() == [True, False]
    tolerant = compile_pod(
        pod_spec(
            {"cpu": "1"},
            tolerations=[
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ],
        ),
        table,
    )
    assert plugin.filter(tolerant, table, every(table)).tolist() == [True, True]
    assert plugin.reasons(plain, table, [1]) == {"node(s) were unschedulable": 1}
