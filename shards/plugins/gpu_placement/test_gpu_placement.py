"""GPUPlacement in a shard: each policy's preference, its choice of GPUs, and ties."""

import itertools

from cluster.gpus import GPU, GPU_MILLI
from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, PodPlacement
from cluster.profile_config import ProfileConfig
from shards.plugins import build_profile
from shards.scheduler import ShardCore
from shards.testing import node, pod_spec, single_pod_batch

_ids = itertools.count(1)


def profile(policy, **args):
    return build_profile(
        ProfileConfig(
            "gpus",
            filters=("NodeResourcesFit",),
            scorers=(("GPUPlacement", 1),),
            args={"GPUPlacement": {"policy": policy, **args}},
            percentage_of_nodes_to_score=100,
        )
    )


def spec(cpu="1", **gpu):
    requests = {"cpu": cpu, **{GPU_MILLI if k == "share" else GPU: str(v) for k, v in gpu.items()}}
    manifest = pod_spec(requests, schedulerName="gpus")
    return pod_from_manifest(manifest).spec


def place(core, *specs):
    batch = single_pod_batch(specs)
    return [
        (d.placements[0].nodes[0], d.placements[0].gpus) if d.placed else None
        for d in core.handle(batch).decisions
    ]


def used(store, name, gpus, **gpu):
    """Commit a pod of `gpu` on these GPUs of node `name`."""
    key = f"ns/x{next(_ids)}"
    store.commit([spec(**gpu)], [Decision(key, [PodPlacement(key, 0, [name], [0], gpus)])])


def test_best_fit_and_gpu_packing_put_a_share_beside_one_in_use(store):
    store.put_nodes([node("empty", cpu="16", gpus=2), node("busy", cpu="16", gpus=2)])
    used(store, "busy", [1], share=300)
    for policy in ("best-fit", "gpu-packing"):
        core = ShardCore(0, store, [profile(policy)], seed=1)
        assert place(core, spec(share=500)) == [("busy", [1])], policy


def test_fgd_keeps_whole_gpus_for_the_workload_that_needs_them(store):
    # a 2-GPU node with one GPU half used, and an untouched 2-GPU node; the workload is
    # mostly 2-GPU pods: a 1-GPU pod should not break up the node they need
    store.put_nodes([node("half", cpu="32", gpus=2), node("whole", cpu="32", gpus=2)])
    used(store, "half", [0], share=500)
    core = ShardCore(0, store, [profile("fgd")], seed=1)
    workload = [spec(gpu=2)] * 20 + [spec(gpu=1)]
    core.profiles["gpus"].observe([(core._compile(s), 1) for s in workload])
    assert place(core, spec(gpu=1)) == [("half", [1])]


def test_fgd_puts_a_share_on_the_gpu_where_fragmentation_grows_least(store):
    store.put_nodes([node("a", cpu="32", gpus=4)])
    used(store, "a", [0], share=600)  # 400 left on GPU 0
    core = ShardCore(0, store, [profile("fgd")], seed=1)
    # shares of 400 are the workload: a 400 share fills GPU 0 exactly
    assert place(core, *[spec(share=400)] * 2) == [("a", [0]), ("a", [1])]


def test_gpu_clustering_gathers_pods_of_a_kind(store):
    store.put_nodes([node(f"n{i}", cpu="32", gpus=8) for i in range(3)])
    core = ShardCore(0, store, [profile("gpu-clustering")], seed=1)
    placed = place(core, *[spec(gpu=1)] * 3, *[spec(share=200)] * 3)
    whole = {n for n, _ in placed[:3]}
    shares = {n for n, _ in placed[3:]}
    assert len(whole) == 1 and len(shares) == 1 and whole != shares


def test_ties_go_by_a_fixed_priority_of_the_nodes_drawn_from_the_seed(store):
    store.put_nodes([node(f"n{i}", cpu="64", gpus=8) for i in range(8)])

    def first_choices(shard_seed, priority_seed):
        core = ShardCore(0, store, [profile("fgd", prioritySeed=priority_seed)], seed=shard_seed)
        return [n for n, _ in place(core, *[spec(cpu="1")] * 4)]

    # CPU pods tie everywhere on FGD: the seed of the ranking decides, not the shard's coin
    assert first_choices(1, 5) == first_choices(2, 5)
    assert len(set(first_choices(1, 5))) == 1  # packed on one node, as a ranking does
    assert {first_choices(1, s)[0] for s in range(6)} != {first_choices(1, 5)[0]}


def test_each_shard_starts_the_ranking_a_share_of_the_way_round(store):
    store.put_nodes([node(f"n{i}", cpu="64", gpus=8) for i in range(8)])

    def first(shard, shards):
        core = ShardCore(shard, store, [profile("fgd", prioritySeed=5)], seed=1, shards=shards)
        return place(core, spec(cpu="1"))[0][0]

    assert first(0, 1) == first(0, 4)  # the first shard keeps the ranking as drawn
    assert len({first(i, 4) for i in range(4)}) == 4  # so shards do not all race for one


def test_random_draws_afresh(store):
    store.put_nodes([node(f"n{i}", cpu="64", gpus=8) for i in range(8)])
    core = ShardCore(0, store, [profile("random")], seed=1)  # never the fixed ranking
    assert len({n for n, _ in place(core, *[spec(cpu="1")] * 16)}) > 1
