"""fgd-sliver: a share goes where the sliver it leaves is least likely wasted."""

import numpy as np
import pytest

from cluster.gpus import GPU, GPU_MILLI, GpuDemand
from shards.plugins.gpu_placement.fgd_sliver import Slivers, expected_waste, reachable
from shards.plugins.gpu_placement.test_fgd_scarcity import random_pods
from shards.plugins.gpu_placement.test_gpu_placement import place, profile, spec, used
from shards.plugins.gpu_placement.workload import TaskClass, Workload
from shards.scheduler import ShardCore
from shards.testing import node


def test_the_expected_waste_of_a_sliver_is_what_no_share_drawn_by_popularity_fills():
    waste = expected_waste(np.array([160, 810]), np.array([0.5, 0.5]))
    assert waste[1000] == 0  # a whole GPU: whole-GPU pods use it all
    assert waste[810] == pytest.approx(0.5 * 0 + 0.5 * waste[650])
    assert waste[150] == 150  # nothing fits
    # a 160 leaves 30, or an 810 does not fit and all 190 are lost
    assert waste[190] == pytest.approx(0.5 * 30 + 0.5 * 190)
    assert reachable(np.array([300, 500]))[[1000, 700, 500, 400, 200, 0]].all()
    assert not reachable(np.array([300, 500]))[[900, 800, 600]].any()


def test_a_score_ranks_the_gpus_a_share_can_find_by_the_waste_it_adds_then_the_tightest():
    w = Workload()
    w.observe([TaskClass(1000, GpuDemand(share=s), None) for s in (320, 470, 810)])
    slivers = Slivers(w.classes())
    table = slivers.table(320)
    free = np.flatnonzero(slivers.reachable & (np.arange(1001) >= 320))
    by_key = free[np.argsort(slivers.keys(free, 320))]
    assert (np.diff(table[by_key]) < 0).all()  # fewer than 100 of them: every one apart
    assert table[by_key[0]] == 100
    assert (table[:320] == 0).all()


def test_a_share_leaves_a_sliver_that_popular_shares_fill_rather_than_the_tightest(store):
    # shares of 320 and 470, as many of each: a 320 on the GPU with 530 free leaves 210,
    # which neither fills; on the one with 650 free it leaves 330, which a 320 fills
    store.put_nodes([node("tight", cpu="16", gpus=1), node("loose", cpu="16", gpus=2)])
    used(store, "tight", [0], share=470)
    used(store, "loose", [0], share=470)
    used(store, "loose", [1], share=350)
    workload = [spec(share=320), spec(share=470)] * 10
    chosen = {}
    for policy in ("fgd-scarcity", "fgd-sliver"):
        core = ShardCore(0, store, [profile(policy)], seed=1)
        core.profiles["gpus"].observe([(core._compile(s), 1) for s in workload])
        chosen[policy] = place(core, spec(share=320))[0]
    assert chosen == {"fgd-scarcity": ("tight", [0]), "fgd-sliver": ("loose", [1])}


def is_share(pod_spec):
    requests = dict(pod_spec.requests)
    return GPU_MILLI in requests and GPU not in requests


@pytest.mark.parametrize("cores", ["96", "6"], ids=["cpu-to-spare", "cpu-runs-out"])
@pytest.mark.parametrize("seed", [1, 2])
def test_pods_that_ask_for_no_share_go_as_with_fgd_scarcity(store, seed, cores):
    rng = np.random.default_rng(seed)
    store.put_nodes([node(f"n{i}", cpu=cores, gpus=int(rng.choice([2, 4, 8]))) for i in range(10)])
    workload = random_pods(rng, 40)
    pods = [p for p in random_pods(rng, 60) if not is_share(p)]
    placed = {}
    for policy in ("fgd-scarcity", "fgd-sliver"):
        core = ShardCore(0, store, [profile(policy, prioritySeed=seed)], seed=1)
        core.profiles["gpus"].observe([(core._compile(s), 1) for s in workload])
        placed[policy] = place(core, *pods)
    assert placed["fgd-scarcity"] == placed["fgd-sliver"]
    assert sum(p is not None for p in placed["fgd-sliver"]) >= 10
