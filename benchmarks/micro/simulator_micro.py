"""Micro-benchmark of the simulated cluster alone: what the bench's API server costs a pod.

    .venv/bin/python -m benchmarks.micro.simulator_micro [--pods 100000] [--nodes 5000]
        [--chunk 256]

The throughput issue asks that the simulated cluster not be what limits the figure:
here its three steps are timed apart, in chunks as the bench's runner makes them
(pods created, handed over by its watch, bound), with nothing else running.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.cases import template
from cluster.cluster_adapter import Binding
from optimist.offline.simulator import SimulatedCluster, load_template


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--chunk", type=int, default=256, help="pods created per call")
    args = parser.parse_args()
    cluster = SimulatedCluster()
    nodes = [
        n.name
        for n in cluster.create_nodes(load_template(template("node-default.yaml")), args.nodes)
    ]
    manifest = load_template(template("pod-default.yaml"))
    spent = {"create": 0.0, "watch": 0.0, "bind": 0.0}
    bound = 0
    for first in range(0, args.pods, args.chunk):
        count = min(args.chunk, args.pods - first)
        started = time.perf_counter()
        cluster.create_pods(manifest, count)
        created = time.perf_counter()
        pods, _ = cluster.take_new_pods()
        watched = time.perf_counter()
        errors = cluster.bind([Binding(p.key, nodes[i % len(nodes)]) for i, p in enumerate(pods)])
        spent["create"] += created - started
        spent["watch"] += watched - created
        spent["bind"] += time.perf_counter() - watched
        bound += errors.count(None)
    total = sum(spent.values())
    print(
        f"simulated cluster: {args.pods:,} pods in chunks of {args.chunk}: "
        f"{args.pods / total:,.0f} pods/s ({total / args.pods * 1e6:.1f} us/pod); {bound:,} bound"
    )
    for step, seconds in spent.items():
        print(f"  {step}: {seconds / args.pods * 1e6:.1f} us/pod")


if __name__ == "__main__":
    main()
