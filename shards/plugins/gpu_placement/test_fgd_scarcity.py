"""fgd-scarcity: classes weighed by demand over supply, FGD's rules while CPU runs out."""

import numpy as np
import pytest

from cluster.gpus import GPU_PRODUCT_LABEL, GpuDemand
from cluster.manifests import pod_from_manifest
from shards.plugins.gpu_placement.fgd_scarcity import Outlook
from shards.plugins.gpu_placement.test_gpu_placement import place, profile, spec
from shards.plugins.gpu_placement.workload import TaskClass, Workload
from shards.scheduler import ShardCore
from shards.testing import node, pod_spec

T4_ONLY = frozenset({"T4"})


def bound_spec(model, cpu="4", gpu=1):
    """A pod of `gpu` whole GPUs that may run on `model` only."""
    term = {"key": GPU_PRODUCT_LABEL, "operator": "In", "values": [model]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [term]}]
            }
        }
    }
    requests = {"cpu": cpu, "nvidia.com/gpu": str(gpu)}
    return pod_from_manifest(pod_spec(requests, schedulerName="gpus", affinity=affinity)).spec


@pytest.mark.parametrize(
    ("bound", "weight"),
    [
        # beside 57 unbound GPU pods, 19 bound to T4 (1 in 4), whose GPUs are 2 of 10: T4
        # is 5 times scarcer than the cluster, and they would take 5/4 of it (load 1)
        (19, 0.25 * 5 * 1.0),
        # 3 (1 in 20): they would take a quarter of T4, which weighs a quarter as much
        (3, 0.05 * 5 * 0.25),
    ],
    ids=["taking-all-of-its-model", "taking-a-quarter"],
)
def test_a_bound_class_weighs_by_its_models_scarcity_and_its_load_on_them(bound, weight):
    w = Workload(window=100_000)
    w.observe([TaskClass(1000, GpuDemand(whole=1), T4_ONLY)] * bound)
    w.observe([TaskClass(1000, GpuDemand(whole=1), None)] * 57)
    w.observe([TaskClass(1000, GpuDemand(), None)] * 19)  # asks no GPU: weighs as FGD's
    classes = w.classes()
    vocab, model = {"T4": 0, "G2": 1}, np.array([0, 1])
    view = Outlook.of(classes, vocab, model, np.array([2, 8]), np.array([64_000, 64_000]))
    weights = dict(zip(classes.tasks, view.classes.weight, strict=True))
    share = dict(zip(classes.tasks, classes.weight, strict=True))
    gpu = sum(share[t] for t in classes.tasks if t.gpu)  # the weights are of every pod
    assert weights[TaskClass(1000, GpuDemand(whole=1), T4_ONLY)] == pytest.approx(weight * gpu)
    for task in classes.tasks:
        if task.models is None:
            assert weights[task] == share[task]
    assert not view.cpu_bound


def test_the_cpu_runs_out_where_the_workload_needs_more_than_the_gpu_nodes_have():
    w = Workload()
    w.observe([TaskClass(4000, GpuDemand(whole=1), None), TaskClass(8000, GpuDemand(), None)])

    def cpu_bound(gpus, cpu):
        model = np.zeros(len(gpus), dtype=np.int64)
        return Outlook.of(w.classes(), {}, model, np.array(gpus), np.array(cpu)).cpu_bound

    # the workload asks 12 cores per GPU: 8 GPUs need 96
    assert cpu_bound([8], [64_000])
    assert not cpu_bound([8], [128_000])
    # a node without GPUs holds no GPU pod: its CPU is not counted
    assert cpu_bound([8, 0], [64_000, 64_000])


def test_an_open_pod_leaves_the_model_that_bound_pods_need(store):
    # t4: 4 of the 12 GPUs, and CPU to spare, so fgd-capacity's cap never holds an open
    # pod off it; g2: 8 GPUs and CPU for two of the open 2-GPU pods, which a 1-GPU pod's
    # CPU takes one of. 2 in 5 pods are bound to T4, a third of the GPUs: they weigh 3 times that.
    store.put_nodes(
        [
            node("t4", cpu="64", gpus=4, labels={GPU_PRODUCT_LABEL: "T4"}),
            node("g2", cpu="16", gpus=8, labels={GPU_PRODUCT_LABEL: "G2"}),
        ]
    )
    workload = [bound_spec("T4")] * 8 + [spec(cpu="8", gpu=2)] * 12
    chosen = {}
    for policy in ("fgd-capacity", "fgd-scarcity"):
        core = ShardCore(0, store, [profile(policy)], seed=1)
        core.profiles["gpus"].observe([(core._compile(s), 1) for s in workload])
        chosen[policy] = place(core, spec(cpu="8", gpu=1))[0][0]
    assert chosen == {"fgd-capacity": "t4", "fgd-scarcity": "g2"}


def random_pods(rng, count, models=()):
    pods = []
    for _ in range(count):
        cpu = str(int(rng.choice([1, 2, 4, 8])))
        kind = rng.integers(4)
        if kind == 0:
            pods.append(spec(cpu=cpu))
        elif kind == 1:
            pods.append(spec(cpu=cpu, share=int(rng.choice([250, 500, 810]))))
        elif kind == 2 and models:
            pods.append(bound_spec(str(rng.choice(models)), cpu=cpu))
        else:
            pods.append(spec(cpu=cpu, gpu=int(rng.choice([1, 2]))))
    return pods


@pytest.mark.parametrize(
    ("cores", "same_as"),
    [("96", "fgd-capacity"), ("6", "fgd")],
    ids=["with-cpu-to-spare-it-is-fgd-capacity", "while-cpu-runs-out-it-is-fgd"],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_where_every_pod_may_use_every_model_it_places_as(store, seed, cores, same_as):
    rng = np.random.default_rng(seed)
    store.put_nodes([node(f"n{i}", cpu=cores, gpus=int(rng.choice([2, 4, 8]))) for i in range(10)])
    pods = random_pods(rng, 40)
    placed = {}
    for policy in (same_as, "fgd-scarcity"):
        core = ShardCore(0, store, [profile(policy, prioritySeed=seed)], seed=1)
        core.profiles["gpus"].observe([(core._compile(s), 1) for s in pods])
        placed[policy] = place(core, *pods)
    assert placed[same_as] == placed["fgd-scarcity"]
    assert sum(p is not None for p in placed[same_as]) >= 10  # the pods did go somewhere
