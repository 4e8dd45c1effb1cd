"""Faults injected into a benchmark run (`optimist bench --chaos`).

The run must finish with the invariants holding whatever is killed; the report
counts the faults (`faults_injected`) and how long the platform took to recover
from each: a killed shard or binder actor until Ray has started it again and it
answers, a Redis restarted empty until the store is built again and a pod is
bound in it.

Faults are bounded, so that every run settles: at most `limit` of them (by
default two of each kind asked for), and none after `duration_s` (60 s) of the
workload; after the last, the run goes on until every pod is bound or reported
unschedulable. Without an interval they are spread over the run's progress (the
k-th of n once k/(n+1) of its pods are settled and the one before has recovered,
or half a second has gone by since it),
so a short run meets every kind as a long one does; with one, they come at
random, `interval_s` apart on average.
"""

from __future__ import annotations

import logging
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ray

from optimist.loop import SchedulingLoop
from optimist.runtime import Platform

log = logging.getLogger(__name__)

KILL_SHARD, KILL_BINDER, RESTART_REDIS = "kill-shard", "kill-binder", "restart-redis"
FAULTS = (KILL_SHARD, KILL_BINDER, RESTART_REDIS)
FAULTS_PER_KIND = 2  # the default bound: each kind asked for, twice
DURATION_S = 60.0  # the default bound: no fault after this long into a workload
SPACING_S = 0.5  # spread over progress: the longest a fault waits for the last's recovery


class ChaosError(ValueError):
    """A chaos plan the platform cannot carry out."""


@dataclass(frozen=True, slots=True)
class ChaosPlan:
    """Which faults, how many at most, for how long, and how often: spread over the run's
    progress (`interval_s` None) or one every `interval_s` on average (exponential
    gaps); the kinds take turns so that a short run meets each of them."""

    faults: tuple[str, ...]
    interval_s: float | None = None
    limit: int | None = None  # faults in all, per workload; None: FAULTS_PER_KIND each
    duration_s: float = DURATION_S  # no fault after this long into a workload

    @classmethod
    def parse(
        cls,
        text: str,
        interval_s: float | None = None,
        limit: int | None = None,
        duration_s: float = DURATION_S,
    ) -> ChaosPlan:
        faults = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
        unknown = [f for f in faults if f not in FAULTS]
        if not faults or unknown:
            raise ChaosError(
                f"--chaos {text!r}: {', '.join(unknown) or 'no fault'} is not one of "
                f"{', '.join(FAULTS)}"
            )
        if interval_s is not None and not interval_s > 0:
            raise ChaosError(f"--chaos-interval {interval_s}: must be positive")
        if limit is not None and limit < 1:
            raise ChaosError(f"--chaos-faults {limit}: must be at least 1")
        if not duration_s > 0:
            raise ChaosError(f"--chaos-duration {duration_s}: must be positive")
        return cls(faults, interval_s, limit, duration_s)

    @property
    def bound(self) -> int:
        """The most faults one workload gets."""
        return self.limit if self.limit is not None else FAULTS_PER_KIND * len(self.faults)

    def check(self, binders: int, own_redis: bool) -> None:
        """Refuse faults this platform has nothing to inject into."""
        if KILL_BINDER in self.faults and binders < 2:
            raise ChaosError(f"--chaos {KILL_BINDER}: needs --binders 2 or more (binder actors)")
        if RESTART_REDIS in self.faults and not own_redis:
            raise ChaosError(
                f"--chaos {RESTART_REDIS}: needs the platform's own Redis (no --redis-url)"
            )


@dataclass(slots=True)
class _Fault:
    kind: str
    target: str
    at: float  # time.perf_counter()
    probe: ray.ObjectRef[Any] | None  # answers once the killed actor is back
    rebuilds: int  # the loop's store rebuilds before it
    bound: int  # pods bound before it
    recovered_s: float | None = None


class Chaos:
    """Injects one workload's faults, called between the loop's steps (`tick`);
    `progress` is the share of the workload's pods settled so far (0 to 1)."""

    def __init__(
        self,
        plan: ChaosPlan,
        platform: Platform,
        loop: SchedulingLoop,
        progress: Callable[[], float],
        seed: int,
    ) -> None:
        self.plan = plan
        self.platform = platform
        self.loop = loop
        self.progress = progress
        self.rng = random.Random(seed)
        self.faults: list[_Fault] = []
        self._turn = self.rng.randrange(len(plan.faults))
        self.started = time.perf_counter()
        self._next = self.started + self._gap() if plan.interval_s else 0.0
        self.stopped: str | None = None  # why no more faults come: "limit" or "duration"

    def _gap(self) -> float:
        return self.rng.expovariate(1.0 / self.plan.interval_s) if self.plan.interval_s else 0.0

    def tick(self) -> None:
        now = time.perf_counter()
        self._note_recoveries(now)
        if self.stopped is None:
            if len(self.faults) >= self.plan.bound:
                self.stopped = "limit"
            elif now - self.started > self.plan.duration_s:
                self.stopped = "duration"
            elif self._due(now):
                self._inject(self.plan.faults[self._turn % len(self.plan.faults)], now)
                self._turn += 1
                self._next = now + self._gap()

    def _due(self, now: float) -> bool:
        if self.plan.interval_s:
            return now >= self._next
        # apart: the last recovered first, so that each is seen on its own, or given
        # SPACING_S at least where recovering takes longer (a run may end meanwhile)
        last = self.faults[-1] if self.faults else None
        if last is not None and last.recovered_s is None and now - last.at < SPACING_S:
            return False
        return self.progress() >= (len(self.faults) + 1) / (self.plan.bound + 1)

    def _inject(self, kind: str, now: float) -> None:
        platform, target = self.platform, "redis"
        probe: ray.ObjectRef[Any] | None = None
        if kind == RESTART_REDIS:
            servers = platform.embedded_servers  # ChaosPlan.check saw that there are some
            index = self.rng.randrange(len(servers))
            target = f"redis {index}" if len(servers) > 1 else "redis"
            servers[index].restart()
        else:
            actors = platform.shards if kind == KILL_SHARD else platform.binders
            index = self.rng.randrange(len(actors))
            target = f"{'shard' if kind == KILL_SHARD else 'binder'} {index}"
            ray.kill(actors[index], no_restart=False)  # Ray starts it again
            probe = actors[index].info.remote()  # queued until it is back
        log.warning("chaos: %s (%s)", kind, target)
        self.faults.append(_Fault(kind, target, now, probe, self._rebuilds(), self._bound()))

    def _rebuilds(self) -> int:
        return len(self.loop.faults.store_rebuilds)

    def _bound(self) -> int:
        return self.loop.dispatcher.stats.bound_pods

    def _note_recoveries(self, now: float) -> None:
        for fault in self.faults:
            if fault.recovered_s is None and self._recovered(fault):
                fault.recovered_s = now - fault.at

    def _recovered(self, fault: _Fault) -> bool:
        if fault.probe is not None:
            ready, _ = ray.wait([fault.probe], timeout=0)
            return bool(ready)
        return self._rebuilds() > fault.rebuilds and self._bound() > fault.bound

    def report(self, started: float) -> dict[str, Any]:
        """What was injected and how long each recovery took (None: not within the run)."""
        self._note_recoveries(time.perf_counter())
        recovery: dict[str, dict[str, Any]] = {}
        for kind in self.plan.faults:
            times = [f.recovered_s for f in self.faults if f.kind == kind]
            done = [t for t in times if t is not None]
            recovery[kind] = {
                "count": len(times),
                "recovered": len(done),
                "median_s": statistics.median(done) if done else None,
                "max_s": max(done) if done else None,
            }
        injected = Counter(f.kind for f in self.faults)
        return {
            "faults_injected": dict(injected),
            # asked for and never injected: the run ended first (a warning in the summary)
            "never_injected": [kind for kind in self.plan.faults if not injected[kind]],
            "limits": {"faults": self.plan.bound, "duration_s": self.plan.duration_s},
            "stopped": self.stopped or "run ended",
            # pods sent to the shards again because a fault voided their attempt, or
            # because a store built again woke them
            "retries": self.loop.faults.fault_retries,
            "recovery_s": recovery,
            "faults": [
                {
                    "kind": f.kind,
                    "target": f.target,
                    "at_s": f.at - started,
                    "recovered_s": f.recovered_s,
                }
                for f in self.faults
            ],
        }
