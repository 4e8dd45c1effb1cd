"""Micro-benchmark of Ray's round trips alone: the driver calling an actor that does nothing.

    .venv/bin/python -m benchmarks.micro.ray_micro [--calls 2000] [--frame-bytes 16384]
        [--batch 256]

What the loop pays per batch before any scheduling: a call to a shard actor and
its answer, the frames as large as a batch's and its result's (SchedulingBasic's
256 pods: about 10 and 15 KB). Timed one call at a time (the round trip), then with
1, 2 and 4 calls in flight to one actor, and one call in flight to each of 4 actors:
the batches per second Ray alone allows, and the pods per second that makes at
`--batch` pods a batch.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ray

from optimist.runtime import init_ray


@ray.remote(num_cpus=0)
class Echo:
    """A shard with nothing to decide: it answers a frame with one of the same size."""

    def call(self, frame: bytes) -> bytes:
        return frame


def _round_trips(actor: ray.actor.ActorHandle[Echo], frame: bytes, calls: int) -> list[float]:
    timings: list[float] = []
    for _ in range(calls):
        started = time.perf_counter()
        ray.get(actor.call.remote(frame))
        timings.append(time.perf_counter() - started)
    return timings


def _in_flight(
    actors: list[ray.actor.ActorHandle[Echo]], frame: bytes, each: int, calls: int
) -> float:
    """Calls per second with `each` calls kept in flight to every actor."""
    pending: dict[ray.ObjectRef[bytes], ray.actor.ActorHandle[Echo]] = {
        actor.call.remote(frame): actor for actor in actors for _ in range(each)
    }
    done = 0
    started = time.perf_counter()
    while done < calls:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            ray.get(ref)
            actor = pending.pop(ref)
            pending[actor.call.remote(frame)] = actor
            done += 1
    elapsed = time.perf_counter() - started
    ray.get(list(pending))
    return done / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--frame-bytes", type=int, default=16_384)
    parser.add_argument("--batch", type=int, default=256, help="pods a batch, for pods/s")
    args = parser.parse_args()
    started_ray = init_ray(None)
    try:
        actors = [Echo.remote() for _ in range(4)]  # type: ignore[attr-defined]  # ray.remote made it an ActorClass
        ray.get([a.call.remote(b"") for a in actors])  # started, and warm
        frame = bytes(args.frame_bytes)
        for label, sent in (("empty call", b""), (f"{args.frame_bytes:,}-byte frames", frame)):
            median = statistics.median(_round_trips(actors[0], sent, args.calls))
            per_s = f"{1 / median:,.0f} calls/s"
            print(f"ray: {label}: round trip median {median * 1e6:,.0f} us = {per_s}")
        for each, using in ((1, 1), (2, 1), (4, 1), (1, 4)):
            rate = _in_flight(actors[:using], frame, each, args.calls)
            print(
                f"ray: {each} in flight to each of {using} actor(s): {rate:,.0f} calls/s "
                f"= {rate * args.batch:,.0f} pods/s at {args.batch} pods a batch"
            )
    finally:
        if started_ray:
            ray.shutdown()


if __name__ == "__main__":
    main()
