"""GPUs per device in a shard: the table follows the store, the fit filter and the
scheduler judge and choose GPUs one by one."""

import itertools

import numpy as np

from cluster.gpus import GPU, GPU_MILLI
from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, PodPlacement, ShardBatch, UnitRequest
from shards.scheduler import ShardCore
from shards.testing import compile_pod, default_profile, node, pod_spec, table_of

_ids = itertools.count(1)


def batch(specs, units):
    return ShardBatch(
        next(_ids),
        specs,
        [
            UnitRequest(f"u{next(_ids)}", [(f"ns/p{next(_ids)}", c) for c in u], len(u))
            for u in units
        ],
    )


def share(milli):
    return pod_from_manifest(pod_spec({"cpu": "100m", GPU_MILLI: str(milli)})).spec


def whole(gpus):
    return pod_from_manifest(pod_spec({"cpu": "100m", GPU: str(gpus)})).spec


def test_free_milli_per_gpu_counts_only_the_nodes_own_gpus():
    table = table_of([node("a", gpus=2), node("b", gpus=4), node("c")])
    free = table.gpu_free(slice(0, 3))
    assert free.tolist() == [[1000, 1000, 0, 0], [1000] * 4, [0] * 4]
    pod = compile_pod(pod_spec({GPU_MILLI: "400"}), table)
    table.assume(1, pod.request, gpus=(2,), per_gpu=pod.gpu.per_device)
    assert table.gpu_free(slice(1, 2)).tolist() == [[1000, 1000, 600, 1000]]


def test_the_fit_filter_checks_each_gpu_and_says_why(store):
    store.put_nodes([node("a", cpu="8", gpus=2)])
    core = ShardCore(0, store, [default_profile()], seed=1)
    # two shares of 600 take a GPU each; a third has 800 milli left in total, on two GPUs
    result = core.handle(batch([share(600)], [[0], [0], [0]]))
    placed = [d.placements[0].gpus for d in result.decisions if d.placed]
    assert sorted(placed) == [[0], [1]]
    refused = result.decisions[2]
    assert not refused.placed
    assert refused.reasons == {f"Insufficient {GPU_MILLI} on any single GPU": 1}


def test_a_share_goes_on_the_tightest_gpu_and_whole_gpus_on_untouched_ones(store):
    store.put_nodes([node("a", cpu="8", gpus=4)])
    core = ShardCore(0, store, [default_profile()], seed=1)
    first = core.handle(batch([share(700), share(200)], [[0], [1]]))
    # the 200 goes beside the 700: one GPU used, three left whole
    assert [d.placements[0].gpus for d in first.decisions] == [[0], [0]]
    second = core.handle(batch([whole(3), whole(1)], [[0], [1]]))
    assert second.decisions[0].placements[0].gpus == [1, 2, 3]
    assert not second.decisions[1].placed
    assert second.decisions[1].reasons == {f"Insufficient {GPU}": 1}


def test_the_shard_follows_the_gpus_the_store_committed(store):
    store.put_nodes([node("a", cpu="8", gpus=2), node("b", cpu="8", gpus=2)])
    core = ShardCore(0, store, [default_profile()], seed=1)
    core.handle(batch([share(100)], []))  # first sync
    store.commit([share(900)], [Decision("x", [PodPlacement("ns/x", 0, ["a"], [0], [1])])])
    core.handle(batch([share(100)], []))
    row = core.table.index["a"]
    assert core.table.gpu_used[row, :2].tolist() == [0, 900]
    assert np.array_equal(core.table.gpu_free(slice(row, row + 1))[0, :2], [1000, 100])
