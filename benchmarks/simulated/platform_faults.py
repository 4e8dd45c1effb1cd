"""The faults `--chaos` injects on the simulated cluster: the platform's own parts (a
shard or a binder actor killed, which Ray starts again; a private Redis killed and
started empty), each recovered from once it answers again (an actor) or once the
store is built again and a pod bound in it (Redis)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import ray

from benchmarks.chaos import (
    KILL_BINDER,
    KILL_SHARD,
    RESTART_REDIS,
    ChaosError,
    ChaosPlan,
    Injected,
)
from optimist.loop import SchedulingLoop
from optimist.runtime import Platform


def check(plan: ChaosPlan, binders: int, own_redis: bool) -> None:
    """Refuse faults this platform has nothing to inject into."""
    if KILL_BINDER in plan.faults and binders < 2:
        raise ChaosError(f"--chaos {KILL_BINDER}: needs --binders 2 or more (binder actors)")
    if RESTART_REDIS in plan.faults and not own_redis:
        raise ChaosError(
            f"--chaos {RESTART_REDIS}: needs the platform's own Redis (no --redis-url)"
        )


@dataclass(frozen=True, slots=True)
class PlatformFaults:
    """`benchmarks.chaos.Injector` of the simulated cluster's runs."""

    platform: Platform
    loop: SchedulingLoop

    def inject(self, kind: str, rng: random.Random) -> Injected:
        at = time.perf_counter()
        if kind == RESTART_REDIS:
            servers = self.platform.embedded_servers  # `check` saw that there are some
            index = rng.randrange(len(servers))
            rebuilds, bound = self._rebuilds(), self._bound()
            servers[index].restart()
            target = f"redis {index}" if len(servers) > 1 else "redis"
            return Injected(
                target, at, lambda: _now_if(self._rebuilds() > rebuilds and self._bound() > bound)
            )
        actors = self.platform.shards if kind == KILL_SHARD else self.platform.binders
        index = rng.randrange(len(actors))
        ray.kill(actors[index], no_restart=False)  # Ray starts it again
        probe: ray.ObjectRef[object] = actors[index].info.remote()  # queued until it is back
        target = f"{'shard' if kind == KILL_SHARD else 'binder'} {index}"
        return Injected(target, at, lambda: _now_if(bool(ray.wait([probe], timeout=0)[0])))

    def retries(self) -> int:
        return self.loop.faults.fault_retries

    def tend(self, finishing: bool) -> bool:
        """Nothing of the platform stays down: Ray and Redis come back by themselves."""
        return False

    def _rebuilds(self) -> int:
        return len(self.loop.faults.store_rebuilds)

    def _bound(self) -> int:
        return self.loop.dispatcher.stats.bound_pods


def _now_if(recovered: bool) -> float | None:
    return time.perf_counter() if recovered else None
