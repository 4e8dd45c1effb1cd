"""CPU profiles on demand, of the control loop or of one shard, while optimist runs.

An operator who sees a slow start wants to know where the time goes under the
load that is there now, not in a rerun. `GET /debug/profile?target=control&seconds=10`
on the metrics server (only with `--profiling-endpoint`, and only for clients
on loopback) answers with a pstats file: `python -m pstats FILE`, or snakeviz.

cProfile sees only the thread that enables it, so the control loop profiles
itself: it polls `Profiler.poll` once per step, which starts and stops the
profile the HTTP thread asked for. A shard is asked through its actor
(`start_profile`, `stop_profile`), between two of its batches.
"""

from __future__ import annotations

import cProfile
import marshal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import ray

MAX_SECONDS = 300.0


class ProfilingError(Exception):
    """A profile that cannot be taken; `status` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class _Ask:
    """A profile of the control loop that the HTTP thread asked for."""

    seconds: float
    started: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    until: float = 0.0
    profile: cProfile.Profile | None = None
    stats: bytes = b""


class Profiler:
    def __init__(self, reach_s: float = 10.0) -> None:
        # how long the loop may take to reach its next poll, or a shard its next call
        self.reach_s = reach_s
        self._busy = threading.Lock()  # one profile at a time
        self._ask: _Ask | None = None
        self.shards: list[Any] = []  # the running platform's shard actors

    def attach(self, shards: list[Any]) -> None:
        self.shards = list(shards)

    def detach(self) -> None:
        """The loop is done (from its thread): a profile it was taking ends here."""
        self.shards = []
        self._finish()

    def poll(self) -> None:
        """From the control loop, once per step: start or stop the profile asked for."""
        ask = self._ask
        if ask is None:
            return
        if ask.profile is None:
            ask.until = time.monotonic() + ask.seconds
            ask.profile = cProfile.Profile()
            ask.profile.enable()
            ask.started.set()
        elif time.monotonic() >= ask.until:
            self._finish()

    def _finish(self) -> None:
        ask, self._ask = self._ask, None
        if ask is None:
            return
        if ask.profile is not None:
            ask.profile.disable()
            ask.profile.create_stats()
            ask.stats = marshal.dumps(ask.profile.stats)
        ask.done.set()

    def profile(self, target: str, seconds: float) -> bytes:
        """A pstats file of `target` ("control", or "shard-N") over the next `seconds`."""
        if not 0 < seconds <= MAX_SECONDS:
            raise ProfilingError(400, f"seconds: {seconds!r} is not in (0, {MAX_SECONDS:g}]")
        if not self._busy.acquire(blocking=False):
            raise ProfilingError(409, "another profile is being taken")
        try:
            if target == "control":
                return self._profile_loop(seconds)
            return self._profile_shard(target, seconds)
        finally:
            self._busy.release()

    def _profile_loop(self, seconds: float) -> bytes:
        ask = self._ask = _Ask(seconds)
        if not ask.started.wait(self.reach_s):
            self._ask = None
            raise ProfilingError(503, "the control loop is not running")
        if not ask.done.wait(seconds + self.reach_s) or not ask.stats:
            raise ProfilingError(503, "the control loop stopped before the profile ended")
        return ask.stats

    def _profile_shard(self, target: str, seconds: float) -> bytes:
        prefix, _, number = target.partition("-")
        shards = self.shards
        if prefix != "shard" or not number.isdigit():
            raise ProfilingError(400, f"target: {target!r} is neither 'control' nor 'shard-N'")
        if int(number) >= len(shards):
            raise ProfilingError(404, f"target: {target!r}: {len(shards)} shards run now")
        shard = shards[int(number)]
        try:
            ray.get(shard.start_profile.remote(), timeout=self.reach_s)
            time.sleep(seconds)
            profile: bytes = ray.get(shard.stop_profile.remote(), timeout=self.reach_s)
            return profile
        except (ray.exceptions.RayError, TimeoutError) as err:
            raise ProfilingError(503, f"{target} did not answer: {err}") from None
