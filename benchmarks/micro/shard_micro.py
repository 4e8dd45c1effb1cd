"""Micro-benchmark of one shard alone: batches as the platform sends them, no Ray, no binder.

    .venv/bin/python -m benchmarks.micro.shard_micro [--nodes 5000] [--batch 256]
        [--heterogeneous] [--profile]

A ShardCore on a private Redis decides batches of single-pod units with
kube-scheduler's default profile; each batch's placements are then
committed, so that the next batch syncs a real delta. By default every pod
is alike (SchedulingBasic); `--heterogeneous` makes every pod its own class,
as SchedulingHeterogeneous does (its own requests, required node affinity
to three of ten racks). Only what the actor does per batch is timed (decode
the frame, sync, decide, encode): the shard's ceiling in pods per second.
`--profile` prints where the time goes (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import pstats
import random
import time
from typing import Any

from benchmarks.cases import template
from benchmarks.cases.case_fields import LabelValues, PerIndex
from benchmarks.cases.workload_objects import indexed_pod
from cluster.manifests import pod_from_manifest
from cluster.messages import ShardBatch, UnitRequest
from cluster.objects import SchedulingSpec
from cluster.redis_server import EmbeddedRedis, connect
from cluster.store import NodeStore
from optimist.offline.simulator import SimulatedCluster, load_template
from optimist.settings import DEFAULT_PROFILE
from shards.plugins import build_profile
from shards.scheduler import ShardCore

RACKS = LabelValues("optimist.io/rack", tuple(f"rack-{i}" for i in range(10)))
# as the SchedulingHeterogeneous case's perIndexStrategy
HETEROGENEOUS = PerIndex((50, 549), (64, 1087), RACKS, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--heterogeneous", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="tottime", help="cProfile order: tottime, cumulative")
    args = parser.parse_args()
    node = load_template(template("node-default.yaml"))
    simulated = SimulatedCluster()
    rng = random.Random(1)  # racks at random, as labelNodePrepareStrategy does
    nodes = [
        n
        for _ in range(args.nodes)
        for n in simulated.create_nodes(_with_label(node, RACKS.key, rng.choice(RACKS.values)), 1)
    ]
    pod = load_template(template("pod-default.yaml")) | {"metadata": {"name": "p"}}
    ids, indices = itertools.count(1), itertools.count()

    def spec_of(i: int) -> SchedulingSpec:
        manifest = indexed_pod(pod, HETEROGENEOUS, i) if args.heterogeneous else pod
        return pod_from_manifest(manifest | {"metadata": {"name": f"p{i}"}}).spec

    plain = spec_of(0)

    def frame() -> bytes:
        b = next(ids)
        if args.heterogeneous:
            classes = [spec_of(next(indices)) for _ in range(args.batch)]
        else:
            classes = [plain]
        units = [
            UnitRequest(f"u{b}-{i}", [(f"ns/p{b}-{i}", i if args.heterogeneous else 0)])
            for i in range(args.batch)
        ]
        return ShardBatch(b, classes, units, [b - 1] if b > 1 else []).encode()

    with EmbeddedRedis() as server:
        store = NodeStore(connect(server.url))
        store.put_nodes(nodes)
        core = ShardCore(0, store, [build_profile(DEFAULT_PROFILE)], seed=1, candidates=3)
        core.handle(ShardBatch.decode(frame()))  # the first full sync, not timed
        profiler = cProfile.Profile()
        timings = []
        for _ in range(args.batches):
            work = frame()
            started = time.perf_counter()
            if args.profile:
                profiler.enable()
            batch = ShardBatch.decode(work)
            result = core.handle(batch)
            result.encode()
            profiler.disable()
            timings.append(time.perf_counter() - started)
            store.commit(batch.classes, [d for d in result.decisions if d.placed])
        timings.sort()
        median = timings[len(timings) // 2]
        per_pod_us = median / args.batch * 1e6
        kind = "heterogeneous" if args.heterogeneous else "alike"
        print(
            f"shard: {args.nodes} nodes, batch {args.batch} ({kind}): median "
            f"{median * 1e3:.1f} ms per batch = {args.batch / median:,.0f} pods/s "
            f"({per_pod_us:.0f} us/pod; best batch {timings[0] / args.batch * 1e6:.0f})"
        )
        if args.profile:
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(30)


def _with_label(node: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    metadata = dict(node.get("metadata", {}))
    metadata["labels"] = {**metadata.get("labels", {}), key: value}
    return node | {"metadata": metadata}


if __name__ == "__main__":
    main()
