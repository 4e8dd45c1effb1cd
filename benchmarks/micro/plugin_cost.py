"""Per-pod cost of Filter+Score inside a shard, with no I/O.

    .venv/bin/python -m benchmarks.micro.plugin_cost [--nodes 1000 5000 20000] [--pods 200]

For each kind of pod, two figures: the first pod of an equivalence class
(every plugin over every node) and each further pod of the class (the shard
places it and judges again only what changed). The profile is every
plugin optimist runs of kube-scheduler's default profile, scoring all nodes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from typing import Any

import numpy as np

from cluster.manifests import pod_from_manifest
from optimist.settings import DEFAULT_PROFILE
from shards.class_state import ClassState
from shards.framework import PodClass, Profile
from shards.plugins import build_profile
from shards.testing import node, table_of

ZONES = 10
EXISTING_KINDS = 20


def profile() -> Profile:
    """kube-scheduler's default profile as optimist runs it, scoring every node."""
    return build_profile(replace(DEFAULT_PROFILE, percentage_of_nodes_to_score=100))


def pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "app:1",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    return {
        "metadata": {"name": name, "namespace": "bench", "labels": {"app": name}},
        "spec": {"containers": [container], **spec},
    }


def cases() -> dict[str, dict[str, Any]]:
    zone_term = {
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2", "z3"]}]
    }
    hostname_anti = {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app": "anti"}},
    }
    return {
        "plain": pod("plain"),
        "node affinity": pod(
            "affinity",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [zone_term]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "preference": zone_term}
                    ],
                }
            },
        ),
        "topology spread": pod(
            "spread",
            topologySpreadConstraints=[
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "spread"}},
                }
            ],
        ),
        "pod anti-affinity": pod(
            "anti",
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [hostname_anti]
                }
            },
        ),
    }


def measure(nodes: int, pods: int, prof: Profile) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(0)
    table = table_of(
        [
            node(f"n{i}", labels={"zone": f"z{i % ZONES}", "kubernetes.io/hostname": f"n{i}"})
            for i in range(nodes)
        ]
    )
    for kind in range(EXISTING_KINDS):  # pods already running, of a few kinds
        existing = pod_from_manifest(pod(f"existing{kind}")).spec.peer
        col = table.peer_column(existing.id, existing)
        table.peer_pods[: table.size, col] = rng.integers(0, 3, table.size)
    out = {}
    for name, manifest in cases().items():
        cls = PodClass.compile(pod_from_manifest(manifest).spec, table)
        table.changed_rows.clear()
        started = time.perf_counter()
        state = ClassState(cls, prof, table)
        first = time.perf_counter() - started
        steps = []
        for _ in range(pods):
            t = time.perf_counter()
            row, _ = state.best(rng, 0)
            if row < 0:
                break
            table.assume(row, cls.request, cls.ports, cls.peer)
            steps.append(time.perf_counter() - t)
        out[name] = (first, statistics.median(steps) if steps else float("nan"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--pods", type=int, default=200)
    args = parser.parse_args()
    prof = profile()
    print("filters:", ", ".join(p.name for p in prof.filters))
    print("scores: ", ", ".join(f"{p.name} x{w}" for p, w in prof.scorers))
    print(f"{'nodes':>6} {'pod':<18} {'first pod of class':>20} {'each further pod':>18}")
    for n in args.nodes:
        for name, (first, each) in measure(n, args.pods, prof).items():
            print(f"{n:>6} {name:<18} {first * 1e3:>17.2f} ms {each * 1e6:>15.0f} µs")


if __name__ == "__main__":
    main()
