"""Faults injected into a benchmark run (`optimist bench --chaos`): which, how many,
when, and how long each took to recover from.

The run must finish with the invariants holding whatever is killed; the report
counts the faults (`faults_injected`) and how long the platform took to recover
from each, as the injector of the cluster kind measures it (`Injector`): on the
simulated cluster (`benchmarks.simulated.platform_faults`) the platform's own parts,
each until it answers again; through an API server
(`benchmarks.apiserver.plane_faults`) the control plane's parts and optimist's, each
until the next pod is bound.

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

import itertools
import logging
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

log = logging.getLogger(__name__)

KILL_SHARD, KILL_BINDER, RESTART_REDIS = "kill-shard", "kill-binder", "restart-redis"
FAULTS = (KILL_SHARD, KILL_BINDER, RESTART_REDIS)  # the simulated cluster's
# through an API server: the control plane's parts, and optimist's own (its runs only)
KILL_APISERVER, RESTART_ETCD, COMPACT_ETCD = "kill-apiserver", "restart-etcd", "compact-etcd"
STALL_CONNECTIONS, CUT_CONNECTIONS = "stall-connections", "cut-connections"
KILL_REDIS, KILL_LEADER = "kill-redis", "kill-leader"
CONNECTION_FAULTS = (STALL_CONNECTIONS, CUT_CONNECTIONS)  # through the bench's link
PLANE_FAULTS = (
    KILL_APISERVER, RESTART_ETCD, COMPACT_ETCD, *CONNECTION_FAULTS,
    KILL_SHARD, KILL_REDIS, KILL_LEADER,
)  # fmt: skip
STOP_KWOK = "stop-kwok"  # a living cluster's (--cluster kwok): its nodes' heartbeats stop
LIVING_FAULTS = (*PLANE_FAULTS, STOP_KWOK)
ALL = "all"  # --chaos all: every kind the cluster kind has
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
        kinds: tuple[str, ...] = FAULTS,
    ) -> ChaosPlan:
        """From `--chaos` and its options; `kinds`, those of the cluster kind."""
        faults = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
        if faults == (ALL,):
            faults = kinds
        unknown = [f for f in faults if f not in kinds]
        if not faults or unknown:
            raise ChaosError(
                f"--chaos {text!r}: {', '.join(unknown) or 'no fault'} is not one of "
                f"{', '.join(kinds)} (or {ALL})"
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

    def only(self, kinds: tuple[str, ...]) -> ChaosPlan | None:
        """The plan with the kinds of `kinds` alone (a scheduler beside optimist has no
        shard to kill); None if none is left."""
        faults = tuple(f for f in self.faults if f in kinds)
        if not faults:
            return None
        return ChaosPlan(faults, self.interval_s, self.limit, self.duration_s)


# when the platform recovered from a fault, once it has (a time.perf_counter() reading)
Recovery = Callable[[], float | None]


class Injected(NamedTuple):
    """A fault as its injector made it: its target, when it struck (perf_counter), and
    when it was recovered from."""

    target: str
    at: float
    recovered_at: Recovery


# when each binding between two perf_counter readings was seen, in order
BindTimes = Callable[[float, float], list[float]]
STALL_WINDOW_S = 10.0  # a fault's stall: the longest pause in bindings this long after it


class Injector(Protocol):
    """What injects the faults of a cluster kind, and reads what the run did about them."""

    def inject(self, kind: str, rng: random.Random) -> Injected:
        """Inject a fault of `kind` (having first waited, where it must, for the last
        one's target to be back)."""
        ...

    def retries(self) -> int | None:
        """Pods tried again because of the faults, where the run can tell."""
        ...

    def tend(self, finishing: bool) -> bool:
        """Bring back what a fault took down for a while, once its time has come, or
        whatever is still down when the run is `finishing`; whether something stays
        down."""
        ...


@dataclass(slots=True)
class _Fault:
    kind: str
    target: str
    at: float  # time.perf_counter()
    recovered_at: Recovery
    recovered_s: float | None = None


class Chaos:
    """Injects one workload's faults through `injector`, called between the run's turns
    (`tick`); `progress` is the share of the workload's pods settled so far (0 to 1)."""

    def __init__(
        self,
        plan: ChaosPlan,
        injector: Injector,
        progress: Callable[[], float],
        seed: int,
        bindings: BindTimes | None = None,
    ) -> None:
        self.plan = plan
        self.injector = injector
        self.bindings = bindings  # where given, each fault's stall is measured
        self.progress = progress
        self.rng = random.Random(seed)
        self.faults: list[_Fault] = []
        self._turn = self.rng.randrange(len(plan.faults))
        self.started = time.perf_counter()
        self._next = self.started + self._gap() if plan.interval_s else 0.0
        self.stopped: str | None = None  # why no more faults come: "limit" or "duration"
        self.down = False  # a fault keeps part of the cluster down for a while (`tend`)

    def _gap(self) -> float:
        return self.rng.expovariate(1.0 / self.plan.interval_s) if self.plan.interval_s else 0.0

    def tick(self) -> None:
        self.down = self.injector.tend(finishing=False)
        now = time.perf_counter()
        self._note_recoveries()
        if self.stopped is None:
            if len(self.faults) >= self.plan.bound:
                self.stopped = "limit"
            elif now - self.started > self.plan.duration_s:
                self.stopped = "duration"
            elif self._due(now):
                self._inject(self.plan.faults[self._turn % len(self.plan.faults)])
                self._turn += 1
                self._next = time.perf_counter() + self._gap()

    def finish(self) -> None:
        """The run is ending: what a fault took down for a while comes back now."""
        self.down = self.injector.tend(finishing=True)

    def _due(self, now: float) -> bool:
        if self.plan.interval_s:
            return now >= self._next
        # apart: the last recovered first, so that each is seen on its own, or given
        # SPACING_S at least where recovering takes longer (a run may end meanwhile)
        last = self.faults[-1] if self.faults else None
        if last is not None and last.recovered_s is None and now - last.at < SPACING_S:
            return False
        return self.progress() >= (len(self.faults) + 1) / (self.plan.bound + 1)

    def _inject(self, kind: str) -> None:
        target, at, recovered_at = self.injector.inject(kind, self.rng)
        log.warning("chaos: %s (%s)", kind, target)
        self.faults.append(_Fault(kind, target, at, recovered_at))

    def _note_recoveries(self) -> None:
        for fault in self.faults:
            if fault.recovered_s is None and (when := fault.recovered_at()) is not None:
                fault.recovered_s = when - fault.at

    def report(self, started: float) -> dict[str, Any]:
        """What was injected and how long each recovery took (None: not within the run)."""
        self._note_recoveries()
        ends = [f.at for f in self.faults[1:]] + [float("inf")]  # each, the next's start
        stalls = {id(f): self._stalled(f, end) for f, end in zip(self.faults, ends, strict=False)}
        recovery: dict[str, dict[str, Any]] = {}
        for kind in self.plan.faults:
            times = [f.recovered_s for f in self.faults if f.kind == kind]
            done = [t for t in times if t is not None]
            stalled = [
                s for f in self.faults if f.kind == kind and (s := stalls[id(f)]) is not None
            ]
            recovery[kind] = {
                "count": len(times),
                "recovered": len(done),
                "median_s": statistics.median(done) if done else None,
                "max_s": max(done) if done else None,
                "stall_median_s": statistics.median(stalled) if stalled else None,
                "stall_max_s": max(stalled) if stalled else None,
            }
        injected = Counter(f.kind for f in self.faults)
        return {
            "faults_injected": dict(injected),
            # asked for and never injected: the run ended first (a warning in the summary)
            "never_injected": [kind for kind in self.plan.faults if not injected[kind]],
            "limits": {"faults": self.plan.bound, "duration_s": self.plan.duration_s},
            "stopped": self.stopped or "run ended",
            # pods sent to the shards again because a fault voided their attempt, or
            # because a store built again woke them (None: not known to the bench)
            "retries": self.injector.retries(),
            "recovery_s": recovery,
            "faults": [
                {
                    "kind": f.kind,
                    "target": f.target,
                    "at_s": f.at - started,
                    "recovered_s": f.recovered_s,
                    "stalled_s": stalls[id(f)],
                }
                for f in self.faults
            ],
        }

    def _stalled(self, fault: _Fault, next_at: float) -> float | None:
        """The longest pause in bindings from a fault up to the last binding within
        STALL_WINDOW_S after it, and before the next fault (`next_at`): a fault whose
        work in flight lands after it (bindings already sent) still shows the outage
        that follows. Its recovery where nothing was bound before the next fault; None
        where not measured."""
        if self.bindings is None:
            return None
        seen = self.bindings(fault.at, min(fault.at + STALL_WINDOW_S, next_at))
        if not seen:
            return fault.recovered_s
        return max(b - a for a, b in itertools.pairwise([fault.at, *seen]))
