"""Fragmentation as the paper defines it, checked against a plain per-class reckoning."""

import numpy as np
import pytest

from cluster.gpus import GpuDemand
from shards.node_table import NodeTable
from shards.plugins.gpu_placement.fgd import growth
from shards.plugins.gpu_placement.fragmentation import (
    demands,
    fragmentation,
    prefix_sums,
    suffix_sums,
)
from shards.plugins.gpu_placement.node_gpus import NodeGpus
from shards.plugins.gpu_placement.workload import TaskClass, Workload

VOCAB = {"A": 0, "B": 1}
TASKS = [
    TaskClass(4000, GpuDemand(), None),
    TaskClass(8000, GpuDemand(share=500), None),
    TaskClass(2000, GpuDemand(share=250), frozenset({"A"})),
    TaskClass(16000, GpuDemand(whole=1), None),
    TaskClass(32000, GpuDemand(whole=2), frozenset({"B"})),
    TaskClass(6000, GpuDemand(whole=4), None),
]


def workload(weights):
    w = Workload(window=10_000)
    for task, count in zip(TASKS, weights, strict=True):
        w.observe([task] * count)
    return w


def plainly(free, count, cpu, model, classes):
    """F_n(M), one class at a time, as docs/gpus.md words it."""
    names = {v: k for k, v in VOCAB.items()}
    total = 0.0
    for task, weight in zip(classes.tasks, classes.weight, strict=True):
        gpus = [int(f) for f in free[:count]]
        idle = sum(gpus)
        if not task.gpu:
            total += weight * idle
            continue
        model_ok = task.models is None or names.get(model) in task.models
        per = task.gpu.per_device
        room = [g for g in gpus if g >= per]
        if not model_ok or cpu < task.cpu or len(room) < task.gpu.devices:
            total += weight * idle
        else:
            total += weight * sum(g for g in gpus if g < per)
    return total


def random_nodes(rng, rows=200):
    count = rng.choice([1, 2, 4, 8], size=rows)
    free = rng.choice([0, 100, 250, 500, 600, 750, 1000], size=(rows, 8))
    free[np.arange(8) >= count[:, None]] = 0
    cpu = rng.integers(-2_000, 64_000, size=rows)  # below 0: a node a pod overcommitted
    table = NodeTable()
    return NodeGpus(free, count, cpu, rng.integers(0, 3, size=rows), VOCAB, table, [])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fragmentation_by_demand_is_the_sum_over_classes(seed):
    rng = np.random.default_rng(seed)
    nodes = random_nodes(rng)
    classes = workload(rng.integers(1, 50, size=len(TASKS))).classes()
    got = fragmentation(nodes.free, nodes.cpu_free, nodes.model, demands(classes, VOCAB))
    want = [
        plainly(nodes.free[r], nodes.count[r], nodes.cpu_free[r], nodes.model[r], classes)
        for r in range(len(got))
    ]
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: f"{t.gpu}-{t.cpu}")
def test_growth_is_fragmentation_after_less_before(task):
    rng = np.random.default_rng(7)
    nodes = random_nodes(rng, rows=60)
    w = workload([5, 9, 3, 20, 2, 4])
    d = demands(w.classes(), VOCAB)
    grown = growth(nodes, task, d)
    before = fragmentation(nodes.free, nodes.cpu_free, nodes.model, d)
    for r in range(len(nodes.count)):
        options = range(8) if task.gpu.share else [None]
        for column, gpu in enumerate(options):
            free = nodes.free[r].copy()
            if gpu is not None:
                if free[gpu] < task.gpu.share:
                    assert grown[r, column] == np.inf
                    continue
                free[gpu] -= task.gpu.share
            elif task.gpu.whole:
                untouched = np.flatnonzero(free == 1000)
                if len(untouched) < task.gpu.whole:
                    continue  # it does not fit: the filter keeps it off
                free[untouched[: task.gpu.whole]] = 0
            cpu = np.array([nodes.cpu_free[r] - task.cpu])
            after = fragmentation(free[None], cpu, nodes.model[r : r + 1], d)[0]
            assert grown[r, column] == pytest.approx(after - before[r])


@pytest.mark.parametrize("columns", [5, 500])
def test_running_sums_are_numpys(columns):
    x = np.random.default_rng(3).random((7, 4, columns))
    np.testing.assert_allclose(prefix_sums(x)[1:], x.cumsum(axis=0))
    assert not prefix_sums(x)[0].any()
    np.testing.assert_allclose(suffix_sums(x), x[::-1].cumsum(axis=0)[::-1])
