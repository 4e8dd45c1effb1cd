"""Micro-benchmark of the node store and the binder alone: batched commits, delta syncs.

    .venv/bin/python -m benchmarks.micro.store_micro [--nodes 5000] [--batch 256]

Measures on a private Redis: pods committed per second with one Lua call
per batch; the same through the whole binder (cross-pod screen, commit,
bind in the simulated cluster), which is how far one binder goes; commits
through 1, 2, 4 and 8 binder actors at once, two batches in flight each,
with the share of a core Redis used meanwhile: where one Redis saturates
(its one thread near a whole core) and what more binders add before it; and
commits through a store partitioned over 1, 2 and 3 Redis servers, single pods
and gangs across partitions (two steps each); and the cost of
`changes_since` as a function of how many nodes changed, which is what a
shard pays before every batch.
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import ExitStack

import ray
import redis

from benchmarks.cases import template
from binder.binder import Binder
from binder.binder_actor import BinderActor
from cluster.manifests import pod_from_manifest
from cluster.messages import CommitRequest, Decision, PodPlacement
from cluster.objects import Node, SchedulingSpec
from cluster.redis_server import EmbeddedRedis, connect
from cluster.store import Keys, NodeStore
from cluster.store.partitioned import PartitionedStore
from optimist.offline.simulator import SimulatedCluster, load_template
from optimist.runtime import init_ray
from optimist.settings import DEFAULT_PROFILE

COLUMNS = ["pods", "cpu", "memory", "~cpu", "~memory"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--batches", type=int, default=40)
    args = parser.parse_args()
    cluster = SimulatedCluster()
    nodes = cluster.create_nodes(load_template(template("node-default.yaml")), args.nodes)
    spec = pod_from_manifest(
        load_template(template("pod-default.yaml")) | {"metadata": {"name": "x"}}
    ).spec
    with EmbeddedRedis() as server:
        store = NodeStore(connect(server.url))
        started = time.perf_counter()
        store.put_nodes(nodes)
        total = args.batch * args.batches
        print(f"put_nodes: {args.nodes} nodes in {time.perf_counter() - started:.3f} s")
        pods = cluster.create_pods(load_template(template("pod-default.yaml")), 2 * total)
        binder = Binder(store, cluster, [DEFAULT_PROFILE])
        for what, pod_keys, apply in (
            ("commit", pods[:total], lambda d: store.commit([spec], d)),
            ("binder", pods[total:], lambda d: binder.process([spec], d)),
        ):
            timings = []
            for b in range(args.batches):
                first = b * args.batch
                decisions = [
                    Decision(
                        f"{what}-{first + i}",
                        [PodPlacement(key, 0, [nodes[(first + i) % len(nodes)].name], [0])],
                    )
                    for i, key in enumerate(pod_keys[first : first + args.batch])
                ]
                t = time.perf_counter()
                apply(decisions)
                timings.append(time.perf_counter() - t)
            per_batch = statistics.median(timings)
            rate = args.batch / per_batch
            print(
                f"{what}: batch {args.batch}: median {per_batch * 1e3:.2f} ms = {rate:,.0f} pods/s"
            )
        _through_actors(server.url, spec, nodes, args.batch, args.batches)
        _partitioned(spec, nodes, args.batch, args.batches)
        for changed in dict.fromkeys(c for c in (0, 100, 1000, args.nodes) if c <= args.nodes):
            version = store.version()
            decisions = [
                Decision(
                    f"s{changed}-{i}", [PodPlacement(f"ns/s{changed}-{i}", 0, [nodes[i].name], [0])]
                )
                for i in range(changed)
            ]
            if decisions:
                store.commit([spec], decisions)
            runs = []
            for _ in range(5):
                t = time.perf_counter()
                store.changes_since(version, COLUMNS, [])
                runs.append(time.perf_counter() - t)
            median_ms = statistics.median(runs) * 1e3
            print(f"changes_since: {changed:>5} nodes changed: median {median_ms:.2f} ms")
        t = time.perf_counter()
        store.changes_since(0, COLUMNS, [])
        full_ms = (time.perf_counter() - t) * 1e3
        print(f"changes_since(0), full first sync of {args.nodes} nodes: {full_ms:.1f} ms")


def _through_actors(
    url: str, spec: SchedulingSpec, nodes: list[Node], batch: int, batches: int
) -> None:
    """Pods/s committed by several binder actors at once, each kept two batches busy."""
    own_ray = init_ray(None)
    client = connect(url)
    for count in (1, 2, 4, 8):
        actors = [
            BinderActor.remote(url, f"actors{count}:", "fine")  # type: ignore[attr-defined]  # ray.remote made it an ActorClass
            for _ in range(count)
        ]
        store = NodeStore(connect(url), Keys(f"actors{count}:"))
        store.put_nodes(nodes)
        requests = [
            CommitRequest(
                0,
                [spec],
                [
                    Decision(f"u{b}-{i}", [PodPlacement(f"ns/a{b}-{i}", 0, [nodes[i].name], [0])])
                    for i in range(batch)
                ],
                store.working_epoch(),
            ).encode()
            for b in range(batches)
        ]
        ray.get([a.commit.remote(requests[0]) for a in actors])  # warm, and not timed
        redis_cpu = _cpu_s(client)
        started = time.perf_counter()
        pending: list[ray.ObjectRef[bytes]] = []  # BinderActor.commit's replies
        for b, request in enumerate(requests[1:]):
            if len(pending) >= 2 * count:
                done, pending = ray.wait(pending, num_returns=1)
                ray.get(done)
            pending.append(actors[b % count].commit.remote(request))
        ray.get(pending)
        wall = time.perf_counter() - started
        busy = (_cpu_s(client) - redis_cpu) / wall
        rate = (batches - 1) * batch / wall
        print(f"binder actors: {count}: {rate:,.0f} pods/s committed, Redis {busy:.0%} of a core")
        for actor in actors:
            ray.kill(actor)
    if own_ray:
        ray.shutdown()


def _partitioned(spec: SchedulingSpec, nodes: list[Node], batch: int, batches: int) -> None:
    """Pods/s committed through a PartitionedStore over 1, 2 and 3 Redis servers: single
    pods (one script per partition per batch, the partitions side by side), and gangs
    of two pods on nodes of different partitions (two steps each)."""
    for count in (1, 2, 3):
        with ExitStack() as stack:
            servers = [stack.enter_context(EmbeddedRedis()) for _ in range(count)]
            store = PartitionedStore([NodeStore(connect(s.url)) for s in servers])
            stack.callback(store.close)
            store.put_nodes(nodes)
            timings = []
            for b in range(batches):
                on = [nodes[(b * batch + i) % len(nodes)].name for i in range(batch)]
                decisions = [
                    Decision(f"p{b}-{i}", [PodPlacement(f"ns/p{b}-{i}", 0, [name], [0])])
                    for i, name in enumerate(on)
                ]
                t = time.perf_counter()
                store.commit([spec], decisions)
                timings.append(time.perf_counter() - t)
            single = batch / statistics.median(timings)
            line = f"partitioned: {count} Redis: single pods {single:,.0f} pods/s"
            if count > 1:
                by_partition: dict[int, list[str]] = {}
                for n in nodes:
                    by_partition.setdefault(store.partition_of(n.name), []).append(n.name)
                pairs = list(zip(by_partition[0], by_partition[1], strict=False))
                gangs = [
                    Decision(
                        f"g{i}",
                        [PodPlacement(f"ns/g{i}-{k}", 0, [n], [0]) for k, n in enumerate(pair)],
                    )
                    for i, pair in enumerate(pairs[:batch])
                ]
                t = time.perf_counter()
                outcomes = store.commit([spec], gangs).outcomes
                elapsed = time.perf_counter() - t
                assert all(o.status == "committed" for o in outcomes), outcomes[0]
                line += f", gangs across two partitions {2 * len(gangs) / elapsed:,.0f} pods/s"
            print(line)


def _cpu_s(client: redis.Redis) -> float:
    """CPU seconds the Redis server has used, its own thread's and the kernel's for it."""
    info = client.info("cpu")
    return float(info["used_cpu_user_main_thread"]) + float(info["used_cpu_sys_main_thread"])


if __name__ == "__main__":
    main()
