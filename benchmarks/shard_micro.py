"""Micro-benchmark of one shard alone: SchedulingBasic batches, no Ray, no binder.

    .venv/bin/python -m benchmarks.shard_micro [--nodes 5000] [--batch 256] [--profile]

A ShardCore on a private Redis decides batches of identical single-pod
units with kube-scheduler's default profile, as the platform sends them; each
batch's placements are then committed, so that the next batch syncs a real
delta. Only `handle` (sync, decide, encode) is timed: the shard's ceiling in
pods per second. `--profile` prints where the time goes (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import pstats
import time

from benchmarks import template
from cluster.manifests import pod_from_manifest
from cluster.messages import ShardBatch, UnitRequest
from cluster.redis_server import EmbeddedRedis, connect
from cluster.simulator import SimulatedCluster, load_template
from cluster.store import NodeStore
from optimist.config import DEFAULT_PROFILE
from shards.plugins import build_profile
from shards.scheduler import ShardCore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    nodes = SimulatedCluster().create_nodes(
        load_template(template("node-default.yaml")), args.nodes
    )
    manifest = load_template(template("pod-default.yaml")) | {"metadata": {"name": "p"}}
    spec = pod_from_manifest(manifest).spec
    ids = itertools.count(1)

    def batch() -> ShardBatch:
        b = next(ids)
        units = [UnitRequest(f"u{b}-{i}", [(f"ns/p{b}-{i}", 0)]) for i in range(args.batch)]
        return ShardBatch(b, [spec], units, [b - 1] if b > 1 else [])

    with EmbeddedRedis() as server:
        store = NodeStore(connect(server.url))
        store.put_nodes(nodes)
        core = ShardCore(0, store, [build_profile(DEFAULT_PROFILE)], seed=1, candidates=3)
        core.handle(batch())  # the first full sync, not timed
        profiler = cProfile.Profile()
        timings = []
        for _ in range(args.batches):
            work = batch()
            started = time.perf_counter()
            if args.profile:
                profiler.enable()
            result = core.handle(work)
            profiler.disable()
            timings.append(time.perf_counter() - started)
            store.commit([spec], [d for d in result.decisions if d.placed])
        timings.sort()
        median = timings[len(timings) // 2]
        per_pod_us = median / args.batch * 1e6
        print(
            f"shard: {args.nodes} nodes, batch {args.batch}: median {median * 1e3:.1f} ms "
            f"per batch = {args.batch / median:,.0f} pods/s ({per_pod_us:.0f} us/pod)"
        )
        if args.profile:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
