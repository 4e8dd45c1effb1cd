"""Micro-benchmark of the message codec: encode and decode of the frames of one batch.

    .venv/bin/python -m benchmarks.micro.codec_micro [--batch 256] [--repeat 7]

ShardBatch, ShardResult, CommitRequest and CommitReply travel once per batch,
at thousands of pods per second, so what their codec costs is part of every
pod's. The frames are built as a batch of single-pod units of the default pod
template would make them: one class for alike pods, one per pod for
heterogeneous ones (SchedulingHeterogeneous's per-index requests and node
affinity), three candidate nodes per placement, the shard's timings as its
stopwatch leaves them. Prints the best of `--repeat` runs, per frame and per pod.
"""

from __future__ import annotations

import argparse
import functools
import time
import timeit
from collections.abc import Callable

from benchmarks.cases import template
from benchmarks.cases.case_fields import LabelValues, PerIndex
from benchmarks.cases.workload_objects import indexed_pod
from cluster.manifests import pod_from_manifest
from cluster.messages import (
    CommitReply,
    CommitRequest,
    Decision,
    PodPlacement,
    ShardBatch,
    ShardResult,
    Status,
    UnitOutcome,
    UnitRequest,
)
from cluster.objects import SchedulingSpec
from optimist.offline.simulator import load_template
from shards.stopwatch import Stopwatch

RACKS = LabelValues("optimist.io/rack", tuple(f"rack-{i}" for i in range(10)))
HETEROGENEOUS = PerIndex((50, 549), (64, 1087), RACKS, 3)  # as shard_micro's


Frame = ShardBatch | ShardResult | CommitRequest | CommitReply


def frames(batch: int, heterogeneous: bool) -> dict[str, Frame]:
    """One batch's messages, keyed by what they are."""
    pod = load_template(template("pod-default.yaml"))

    def spec_of(i: int) -> SchedulingSpec:
        manifest = indexed_pod(pod, HETEROGENEOUS, i) if heterogeneous else pod
        return pod_from_manifest(manifest | {"metadata": {"name": f"p{i}"}}).spec

    classes = [spec_of(i) for i in range(batch if heterogeneous else 1)]
    units = [
        UnitRequest(f"u-{i}", [(f"ns/p-{i}", i if heterogeneous else 0)]) for i in range(batch)
    ]
    decisions = [
        Decision(
            f"u-{i}",
            [
                PodPlacement(
                    f"ns/p-{i}",
                    i if heterogeneous else 0,
                    [f"node-{i}", f"node-{i + 1}", f"node-{i + 2}"],
                    [9000 + i, 9001 + i, 9002 + i],
                )
            ],
            nodes=5000,
        )
        for i in range(batch)
    ]
    watch = Stopwatch()
    for point in ("Filter", "Score"):
        watch.points.observe((point, "Success", "default-scheduler"), 0.0004, batch)
    for plugin in ("NodeResourcesFit", "NodeAffinity", "TaintToleration", "ImageLocality"):
        watch.plugins.observe((plugin, "Filter", "Success"), 0.00002)
    outcomes = [
        UnitOutcome(f"u-{i}", Status.COMMITTED, [f"node-{i}"], gpus=[[]]) for i in range(batch)
    ]
    return {
        "ShardBatch": ShardBatch(7, classes, units, [5, 6]),
        "ShardResult": ShardResult(
            0, 7, 12345, decisions, 0.004, 0.03, round_trips=2, observed=watch.take(), epoch="e"
        ),
        "CommitRequest": CommitRequest(0, classes, decisions, "e"),
        "CommitReply": CommitReply(outcomes, 0),
    }


def best_us(run: Callable[[], object], repeat: int) -> float:
    """The best of `repeat` timings of `run`, in microseconds, each over ~0.2 s of calls.
    CPU time, not wall time: on a shared machine, time spent waiting for a core is noise."""
    timer = timeit.Timer(run, timer=time.process_time)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat, number)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"{'frame':<28} {'bytes':>7} {'encode us':>10} {'decode us':>10} {'us/pod':>7}")
    for heterogeneous in (False, True):
        kind = "heterogeneous" if heterogeneous else "alike"
        for name, message in frames(args.batch, heterogeneous).items():
            if name == "CommitReply" and heterogeneous:
                continue  # it carries no class
            data = message.encode()
            decode = functools.partial(type(message).decode, data)
            assert decode() == message
            encode_us = best_us(message.encode, args.repeat)
            decode_us = best_us(decode, args.repeat)
            per_pod = (encode_us + decode_us) / args.batch
            print(
                f"{name + ' (' + kind + ')':<28} {len(data):>7} "
                f"{encode_us:>10.0f} {decode_us:>10.0f} {per_pod:>7.2f}"
            )


if __name__ == "__main__":
    main()
