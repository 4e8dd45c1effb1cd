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
