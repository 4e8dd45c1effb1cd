"""fgd-capacity: FGD's fragmentation capped by the pods a node's CPU holds, shares by best fit."""

import numpy as np
import pytest

from cluster.gpus import GpuDemand
from shards.plugins.gpu_placement.fgd_capacity import capacities, tightest_share_score
from shards.plugins.gpu_placement.fragmentation import Parts, demands, fragmentation
from shards.plugins.gpu_placement.test_fragmentation import VOCAB, random_nodes, workload
from shards.plugins.gpu_placement.test_gpu_placement import place, profile, spec, used
from shards.plugins.gpu_placement.workload import TaskClass, Workload
from shards.scheduler import ShardCore
from shards.testing import node


@pytest.mark.parametrize("seed", [1, 2])
def test_with_cpu_to_spare_it_is_fgds_fragmentation(seed):
    rng = np.random.default_rng(seed)
    nodes = random_nodes(rng)
    classes = workload(rng.integers(1, 50, size=6)).classes()
    plenty = np.full(len(nodes.count), 10**9)
    f = fragmentation(nodes.free, plenty, nodes.model, demands(classes, VOCAB))
    c = capacities(classes, VOCAB)
    usable = c.usable(Parts.of(nodes.free, c.demands), plenty, nodes.model)
    np.testing.assert_allclose(usable, nodes.free.sum(axis=1) - f)


def test_a_class_reaches_only_the_gpus_its_cpu_holds_pods_for():
    w = Workload()
    w.observe([TaskClass(8000, GpuDemand(whole=1), None)])
    c = capacities(w.classes(), {})
    free = np.full((3, 8), 1000)
    cpu, model = np.array([4000, 8000, 20_000]), np.zeros(3, dtype=np.int64)
    usable = c.usable(Parts.of(free, c.demands), cpu, model)
    np.testing.assert_allclose(usable, [0, 1000, 2000])  # FGD: 0, 8000, 8000


def test_a_share_scores_by_the_milli_its_tightest_gpu_would_have_left():
    free = np.array([[1000, 600, 0], [1000, 1000, 1000], [300, 0, 0]])
    assert tightest_share_score(free, 500).tolist() == [90, 50, 0]


def test_in_a_shard_shares_go_tightest_and_cpu_pods_spare_gpus_cpu(store):
    # "lean" has 8 idle GPUs and CPU for two of the workload's 1-GPU pods; "rich" has 2
    # GPUs and CPU for eight: a CPU pod on lean strands a GPU there, on rich none
    store.put_nodes([node("lean", cpu="20", gpus=8), node("rich", cpu="64", gpus=2)])
    used(store, "rich", [1], share=300)
    for seed in range(4):  # whatever the ranking of the nodes
        core = ShardCore(0, store, [profile("fgd-capacity", prioritySeed=seed)], seed=1)
        workload = [spec(cpu="8", gpu=1)] * 20
        core.profiles["gpus"].observe([(core._compile(s), 1) for s in workload])
        assert place(core, spec(cpu="8"), spec(share=600)) == [("rich", []), ("rich", [1])]


def test_classes_that_differ_in_their_models_alone_are_one_row_and_count_as_each():
    rng = np.random.default_rng(4)
    nodes = random_nodes(rng)
    w = Workload()
    for models in (None, frozenset({"A"}), frozenset({"B"}), frozenset({"A", "B"})):
        w.observe([TaskClass(8000, GpuDemand(whole=1), models)] * int(rng.integers(1, 9)))
        w.observe([TaskClass(2000, GpuDemand(share=500), models)] * int(rng.integers(1, 9)))
    classes = w.classes()
    c = capacities(classes, VOCAB)
    assert len(c.cpu) == 2
    parts = Parts.of(nodes.free, c.demands)
    usable = c.usable(parts, nodes.cpu_free, nodes.model)
    # class by class: its popularity where it may run, its reach capped by its pods
    d, allowed = demands(classes, VOCAB), classes.allowed(VOCAB)
    reach = Parts.of(nodes.free, d).reach(0, d)
    pods = np.maximum(nodes.cpu_free, 0)
    want = sum(
        classes.weight[k]
        * allowed[k][nodes.model]
        * np.minimum(
            reach[d.of_class[k]], pods // task.cpu * task.gpu.devices * task.gpu.per_device
        )
        for k, task in enumerate(classes.tasks)
    )
    np.testing.assert_allclose(usable, want)
