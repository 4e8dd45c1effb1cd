"""Memory with a large backlog: N pending pods and M nodes, optimist's processes apart from the
simulated cluster.

    .venv/bin/python -m benchmarks.micro.memory_pending [--nodes 20000] [--pods 1000000]
        [--shards 2]

Starts the platform (Redis, Ray, the shards), puts the nodes in the store,
has every shard sync them, and hands every pod to the dispatcher, where they
wait: none is scheduled. Reports resident memory of the driver (dispatcher
and binder), the shards and Redis, with the simulated cluster's share of the
driver (its nodes and pod manifests, and the parsed pods its watch hands
over) measured apart and taken out, as the throughput issue counts it.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

import psutil
import ray

from benchmarks.cases import template
from cluster.messages import ShardBatch
from optimist.loop import SchedulingLoop
from optimist.offline.simulator import SimulatedCluster, load_template
from optimist.runtime import Platform
from optimist.settings import Settings

MIB = 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--pods", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=2)
    args = parser.parse_args()
    driver = psutil.Process()
    with Platform(Settings(shards=args.shards)) as platform:
        gc.collect()
        base = driver.memory_info().rss
        cluster = SimulatedCluster()
        cluster.create_nodes(load_template(template("node-default.yaml")), args.nodes)
        started = time.perf_counter()
        cluster.create_pods(load_template(template("pod-default.yaml")), args.pods)
        pods, _ = cluster.take_new_pods()
        gc.collect()
        # the growth so far is the simulated cluster's, but for the parsed pods its watch
        # handed over, which the dispatcher now holds: those are optimist's (each its own
        # object, name and uid; the spec is shared by the pods of one template)
        handed = sum(sys.getsizeof(p) + sys.getsizeof(p.name) + sys.getsizeof(p.uid) for p in pods)
        simulated = driver.memory_info().rss - base - handed
        loop = SchedulingLoop(platform, cluster)
        loop.store.put_nodes(cluster.take_node_events()[0])
        ray.get([s.schedule.remote(ShardBatch(0, [], []).encode()) for s in platform.shards])
        for pod in pods:  # what ingest does, without scheduling any of them
            loop.dispatcher.add(pod)
        queued_s = time.perf_counter() - started
        del pods
        gc.collect()
        shards = sum(psutil.Process(int(i["pid"])).memory_info().rss for i in platform.shard_info)
        redis = int(platform.store.client.info("memory")["used_memory_rss"])
        optimist_driver = driver.memory_info().rss - simulated
        total = optimist_driver + shards + redis
        print(
            f"{args.pods:,} pending pods, {args.nodes:,} nodes, {args.shards} shards "
            f"(created and queued in {queued_s:.1f} s):"
        )
        print(f"  driver without the simulated cluster: {optimist_driver / MIB:,.0f} MiB")
        print(f"  shards: {shards / MIB:,.0f} MiB")
        print(f"  redis: {redis / MIB:,.0f} MiB")
        print(f"  optimist's processes together: {total / MIB:,.0f} MiB")
        print(f"  the simulated cluster, apart: {simulated / MIB:,.0f} MiB")
        print(f"  pending in the dispatcher: {loop.dispatcher.queue.active_count:,} units")


if __name__ == "__main__":
    main()
