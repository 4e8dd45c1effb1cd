from collections import Counter

import numpy as np
import pytest

from shards.plugins.node_ports import NodePorts
from shards.testing import compile_pod, every, node, pod_spec, table_of


def with_ports(*ports):
    m = pod_spec({"cpu": "10m"})
    m["spec"]["containers"][0]["ports"] = [
        {"containerPort": p, "hostPort": p, "protocol": proto, "hostIP": ip}
        for proto, ip, p in ports
    ]
    return m


@pytest.mark.parametrize(
    ("used", "wanted", "fits"),
    [
        (("TCP", "0.0.0.0", 80), ("TCP", "", 80), False),
        (("TCP", "0.0.0.0", 80), ("TCP", "10.0.0.1", 80), False),  # 0.0.0.0 takes every address
        (("TCP", "10.0.0.1", 80), ("TCP", "", 80), False),
        (("TCP", "10.0.0.1", 80), ("TCP", "10.0.0.2", 80), True),
        (("TCP", "10.0.0.1", 80), ("TCP", "10.0.0.1", 80), False),
        (("UDP", "0.0.0.0", 80), ("TCP", "", 80), True),
        (("TCP", "0.0.0.0", 81), ("TCP", "", 80), True),
    ],
)
def test_conflict_rules(used, wanted, fits):
    table = table_of([node("busy"), node("free")])
    table.ports[0] = Counter({used: 1})
    pod = compile_pod(with_ports(wanted), table)
    assert NodePorts().filter(pod, table, every(table)).tolist() == [fits, True]


def test_assumed_ports_count_until_forgotten():
    table = table_of([node("a")])
    pod = compile_pod(with_ports(("TCP", "", 8080)), table)
    plugin = NodePorts()
    table.assume(0, pod.request, pod.ports)
    assert plugin.filter(pod, table, np.array([0])).tolist() == [False]
    table.forget(0, pod.request, pod.ports)
    assert plugin.filter(pod, table, np.array([0])).tolist() == [True]
    assert not table.assumed_ports


def test_pod_without_host_ports_is_never_blocked():
    table = table_of([node("a")])
    table.ports[0] = Counter({("TCP", "0.0.0.0", 80): 3})
    pod = compile_pod(pod_spec({"cpu": "10m"}), table)
    assert NodePorts().filter(pod, table, every(table)).tolist() == [True]
    assert NodePorts().reasons(pod, table, np.array([0])) == {
        "node(s) didn't have free ports for the requested pod ports": 1
    }


def test_a_few_rows_are_judged_alone_and_agree_with_a_pass_over_every_node():
    """Asked about fewer rows than nodes with ports (a catch-up, a window), the filter
    looks at those rows alone; its answer is the whole pass's on them."""
    rng = np.random.default_rng(5)
    table = table_of([node(f"n{i}") for i in range(60)])
    for row in rng.choice(60, 40, replace=False).tolist():
        table.ports[row] = Counter({("TCP", str(rng.choice(["0.0.0.0", "10.0.0.1"])), 80): 1})
    for row in rng.choice(60, 5, replace=False).tolist():
        table.assumed_ports[row] = Counter({("TCP", "10.0.0.2", 80): 1})
    plugin = NodePorts()
    for wanted in (("TCP", "", 80), ("TCP", "10.0.0.2", 80), ("UDP", "", 80)):
        pod = compile_pod(with_ports(wanted), table)
        whole = plugin.filter(pod, table, every(table))
        for rows in (np.array([3]), rng.choice(60, 12, replace=False), np.arange(60)):
            assert plugin.filter(pod, table, rows).tolist() == whole[rows].tolist()
