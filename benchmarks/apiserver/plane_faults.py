"""The faults `--chaos` injects through an API server: the control plane's parts, as
they fail in production, and optimist's own, inside `optimist run`.

- kill-apiserver: kube-apiserver killed (SIGKILL) and started again on its port; every
  watch and connection of every client breaks, and nothing answers until it serves.
  The bench goes on watching meanwhile, and before the next fault waits until the
  server answers again (not until it is ready: it binds pods before its readiness
  checks pass).
- restart-etcd: etcd killed and started again on its data; the server's watch cache
  relists from it.
- compact-etcd: etcd's history compacted up to now, under the watches: a client that
  resumes a watch or a list from a version before it gets 410 Gone, and must relist.
- stall-connections: the scheduler's connections to the API server (through the
  bench's `Link`) pass no byte, either way, old or new, for `LINK_STALL_S`: requests
  and watches hang, then go on where they were.
- cut-connections: every connection of the scheduler to the API server reset at once
  (a load balancer in between restarting); it must connect, list and watch again.
- kill-shard: a shard's worker process of `optimist run` killed; Ray starts the actor
  again.
- kill-redis: `optimist run`'s private Redis killed; optimist starts it again, empty,
  and builds its store from the API server.
- kill-leader: optimist runs as two replicas sharing a Lease (`replicas`); the leader
  is killed with all it started, and the standby takes over once the lease lapses; a
  new replica takes the killed one's place, as a Deployment's would.
- stop-kwok (a living cluster's): the KWOK that keeps the nodes stopped for
  `KWOK_DOWN_S`, past the node lifecycle controller's grace: every node stops
  heartbeating, turns NotReady and is tainted unreachable, as when the kubelets die
  (their pods stay: they tolerate that for 300 s). It is then started again; the
  nodes turn Ready and lose the taint.

kill-shard, kill-redis and kill-leader are optimist's own parts: another scheduler's
runs get the others (its connections too go through the link).
Each fault is recovered from at the next pod bound after it, as the bench's own watch
of pods sees the binding (a watch that was itself cut by the fault sees the bindings
made meanwhile once it has listed again).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import psutil

from benchmarks.apiserver.link import Link
from benchmarks.apiserver.pod_watch import PodWatch
from benchmarks.apiserver.replicas import Replicas
from benchmarks.chaos import (
    COMPACT_ETCD,
    CUT_CONNECTIONS,
    KILL_APISERVER,
    KILL_LEADER,
    KILL_REDIS,
    KILL_SHARD,
    PLANE_FAULTS,
    RESTART_ETCD,
    STALL_CONNECTIONS,
    STOP_KWOK,
    ChaosError,
    Injected,
)
from benchmarks.controlplane.control_plane import ControlPlane
from benchmarks.controlplane.living_plane import KWOK_POOL, NODE_GRACE_S, LivingPlane

OPTIMIST_ONLY = (KILL_SHARD, KILL_REDIS, KILL_LEADER)
PLANE_ONLY = (*(kind for kind in PLANE_FAULTS if kind not in OPTIMIST_ONLY), STOP_KWOK)
KWOK_DOWN_S = NODE_GRACE_S + 5.0  # past the grace: the nodes turn NotReady and are tainted
# a stall a client rides out (under its requests' timeouts), longer than a lease's renew
# deadline: a leader must step down, and lead again
LINK_STALL_S = 5.0
# how a process of `optimist run`'s tree is known: a shard's Ray worker names itself
# after its actor class; the private Redis is redis-server
_PARTS: dict[str, Callable[[psutil.Process], bool]] = {
    KILL_SHARD: lambda p: " ".join(p.cmdline()).startswith("ray::ShardActor"),
    KILL_REDIS: lambda p: p.name() == "redis-server",
}


@dataclass(frozen=True, slots=True)
class PlaneTargets:
    """What a run's faults go into: its control plane, the scheduler's process that
    schedules now (`optimist run`, whose tree holds its shards and its private Redis),
    optimist's replicas where there are two, and the link the scheduler reaches the
    server through where its connections are to fail."""

    plane: ControlPlane
    scheduler_pid: Callable[[], int]
    replicas: Replicas | None = None
    link: Link | None = None


class _Down(NamedTuple):
    """What a fault keeps down for a while: when it comes back, and how."""

    back_at: float  # time.perf_counter()
    bring_back: Callable[[], None]


@dataclass(slots=True)
class PlaneFaults:
    """`benchmarks.chaos.Injector` of the runs through an API server."""

    targets: PlaneTargets
    watch: PodWatch
    _restarted: bool = False  # kube-apiserver started again, not waited for
    _down: dict[str, _Down] = field(default_factory=dict)  # by the fault's kind

    def inject(self, kind: str, rng: random.Random) -> Injected:
        plane = self.targets.plane
        self._answering()
        if kind in self._down:  # one at a time of a kind
            self._down.pop(kind).bring_back()
        if kind == KILL_LEADER and self.targets.replicas is not None:
            self.targets.replicas.await_standby()
        at = time.perf_counter()
        if kind == KILL_APISERVER:
            plane.restart("kube-apiserver", wait=False)
            self._restarted, target = True, "kube-apiserver"
        elif kind == RESTART_ETCD:
            plane.restart("etcd")
            target = "etcd"
        elif kind == COMPACT_ETCD:
            target = f"etcd, up to revision {plane.compact()}"
        elif kind == STOP_KWOK:
            if not isinstance(plane, LivingPlane):
                raise ChaosError(f"--chaos {kind}: no KWOK here (--cluster kwok has one)")
            plane.stop(plane.kwok_name(KWOK_POOL))
            self._down[kind] = _Down(at + KWOK_DOWN_S, self._start_kwok)
            target = f"KWOK, its nodes' heartbeats, for {KWOK_DOWN_S:g} s"
        elif kind in (STALL_CONNECTIONS, CUT_CONNECTIONS):
            target = self._fail_link(kind, at)
        elif kind == KILL_LEADER:
            if self.targets.replicas is None:
                raise ChaosError(f"--chaos {kind}: optimist runs as one replica here")
            target = self.targets.replicas.kill_leader()
        else:
            target = self._kill(kind, rng)
        return Injected(target, at, lambda: self.watch.bound_after(at))

    def retries(self) -> None:
        """Not known here: optimist counts its retries in its own process."""
        return None

    def tend(self, finishing: bool) -> bool:
        """What a fault keeps down (KWOK, the link) brought back once its time is up, or
        now if the run is finishing, and optimist's replicas that exited started again.
        Whether something stays down."""
        if self.targets.replicas is not None:
            self.targets.replicas.restart_exited()
        now = time.perf_counter()
        for kind, down in list(self._down.items()):
            if finishing or now >= down.back_at:
                del self._down[kind]
                down.bring_back()
        return bool(self._down)

    def _start_kwok(self) -> None:
        """KWOK started again; its return is a change of the cluster to the watch
        (verdicts given while the nodes were down hold no more)."""
        plane = self.targets.plane
        assert isinstance(plane, LivingPlane)  # only a living plane's KWOK is stopped
        self._answering()  # KWOK's start makes a node through the server
        plane.start_kwok(KWOK_POOL)
        self.watch.made()

    def _fail_link(self, kind: str, at: float) -> str:
        link = self.targets.link
        if link is None:
            raise ChaosError(f"--chaos {kind}: the scheduler does not reach the server by a link")
        if kind == CUT_CONNECTIONS:
            return f"the scheduler's {link.cut()} connections to the API server, reset"
        link.stall()
        self._down[kind] = _Down(at + LINK_STALL_S, link.resume)
        return f"the scheduler's connections to the API server, for {LINK_STALL_S:g} s"

    def _answering(self) -> None:
        """A server killed by the last fault answering again (not waited for then)."""
        if self._restarted:
            self.targets.plane.wait_answering()
            self._restarted = False

    def _kill(self, kind: str, rng: random.Random) -> str:
        """SIGKILL one process of the scheduler's tree that is the fault's target, by its
        PID; what it was."""
        try:
            tree = psutil.Process(self.targets.scheduler_pid()).children(recursive=True)
        except psutil.Error:
            tree = []
        found = []
        for process in tree:
            try:
                if _PARTS[kind](process):
                    found.append(process)
            except psutil.Error:
                continue  # gone meanwhile
        if not found:
            raise ChaosError(f"--chaos {kind}: the scheduler's processes hold none to kill")
        victim = rng.choice(sorted(found, key=lambda p: p.pid))
        victim.kill()
        return f"{kind.removeprefix('kill-')} (pid {victim.pid})"
