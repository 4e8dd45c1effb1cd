"""The scheduler under test as a Deployment runs it: replicas sharing a Lease, one
leading and the others waiting to take over, or one replica alone, for what kills or
restarts it (`--chaos kill-leader`, the case op `restartScheduler`). The leader
killed (SIGKILL, its whole process tree, as a node's kubelet ends a pod's container)
is replaced by a new replica, as the Deployment's ReplicaSet would start a new pod,
and one that exits by itself (it lost its lease) is started again, as its container
would be: there is always a standby for the next fault.

The bench's lease is short (`LEASE`), so that a run meets several takeovers: a
standby takes over once the killed leader's lease has lapsed. optimist's and
kube-scheduler's replicas are started and asked the same way (`Launcher`), so that
their takeovers are timed alike.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from benchmarks.apiserver.scheduler_processes import (
    NO_ELECTION,
    READY_TIMEOUT_S,
    STOP_GRACE_S,
    ApiBenchError,
    start_optimist,
    wait_ready,
)
from benchmarks.controlplane.control_plane import (
    OWN_CERTIFICATE,
    answers,
    free_port,
    start_kube_scheduler,
    stop_tree,
)

LEASE = {
    "leaderElect": True,
    "leaseDuration": "3s",
    "renewDeadline": "2s",
    "retryPeriod": "500ms",
    "resourceNamespace": "default",
}


class Launcher(Protocol):
    """How one scheduler's replica is started and asked whether it serves and leads."""

    @property
    def name(self) -> str: ...

    def start(
        self, name: str, port: int, election: Mapping[str, Any]
    ) -> subprocess.Popen[bytes]: ...

    def serving(self, port: int) -> bool: ...

    def leading(self, port: int, elected: bool) -> bool: ...


@dataclass(frozen=True)
class OptimistLauncher:
    kubeconfig: Path
    documents: list[dict[str, Any]]
    shards: int
    folder: Path
    name: str = "optimist"

    def start(self, name: str, port: int, election: Mapping[str, Any]) -> subprocess.Popen[bytes]:
        return start_optimist(
            self.kubeconfig, self.documents, self.shards, self.folder, port, election, name
        )

    def serving(self, port: int) -> bool:
        return answers(f"http://127.0.0.1:{port}/healthz")

    def leading(self, port: int, elected: bool) -> bool:
        """Ready: only the replica holding the lease (if any) schedules, and says so."""
        return answers(f"http://127.0.0.1:{port}/readyz")


# client-go's gauge of whether this process holds the lease it elects on
_LEADS = re.compile(rb"^leader_election_master_status\{[^}]*\} 1$", re.MULTILINE)


@dataclass(frozen=True)
class KubeSchedulerLauncher:
    kubeconfig: Path
    folder: Path
    configuration: Mapping[str, Any]
    bin_dir: Path
    name: str = "kube-scheduler"

    def start(self, name: str, port: int, election: Mapping[str, Any]) -> subprocess.Popen[bytes]:
        process, _ = start_kube_scheduler(
            self.kubeconfig, self.folder, self.configuration, self.bin_dir, port, name, election
        )
        return process

    def serving(self, port: int) -> bool:
        return answers(f"https://127.0.0.1:{port}/healthz", OWN_CERTIFICATE)

    def leading(self, port: int, elected: bool) -> bool:
        """Alone: ready (its informers synced). Elected: its gauge of the lease says 1."""
        if not elected:
            return answers(f"https://127.0.0.1:{port}/readyz", OWN_CERTIFICATE)
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/metrics", context=OWN_CERTIFICATE, timeout=5
            ) as reply:
                return _LEADS.search(reply.read()) is not None
        except OSError:
            return False


@dataclass
class _Replica:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    started: list[psutil.Process] = field(default_factory=list)  # its tree, once seen


class Replicas:
    """A scheduler's replicas, for as long as the context lasts: `count` of them, sharing
    the bench's lease where there are two or more, else one alone, unelected."""

    def __init__(self, launcher: Launcher, count: int, folder: Path) -> None:
        self.launcher = launcher
        self.count = count
        self.folder = folder
        self.elected = count > 1
        # one lease per scheduler: a run on a server given may follow the other's
        self.election = {**LEASE, "resourceName": launcher.name} if self.elected else NO_ELECTION
        self.replicas: list[_Replica] = []
        self._names = itertools.count()

    def pids(self) -> list[int]:
        """The running replicas' PIDs (their trees hold optimist's Ray and Redis)."""
        return [r.process.pid for r in self.replicas if r.process.poll() is None]

    def _leader(self) -> _Replica | None:
        return next(
            (
                r
                for r in self.replicas
                if r.process.poll() is None and self.launcher.leading(r.port, self.elected)
            ),
            None,
        )

    def await_leader(self) -> int:
        """Until a replica leads (a takeover, done); its PID."""
        return self._await_leader().process.pid

    def _await_leader(self) -> _Replica:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while (leader := self._leader()) is None:
            if time.monotonic() > deadline:
                raise ApiBenchError(
                    f"no {self.launcher.name} replica led within {READY_TIMEOUT_S:.0f} s"
                )
            time.sleep(0.1)
        return leader

    def kill_leader(self) -> str:
        """Kill the leader (once one leads) and all it started, by PID, and start a
        replica in its place; which replica was killed."""
        leader = self._await_leader()
        _kill(leader)
        self.replicas.remove(leader)
        self._start()  # not waited for: the standby leads meanwhile
        return leader.name

    def restart(self) -> None:
        """Every replica killed, as a node lost or a rollout gone wrong ends them, and as
        many started afresh, not waited for: each lists the cluster as it starts."""
        for replica in self.replicas:
            _kill(replica)
        self.replicas = []
        for _ in range(self.count):
            self._start()

    def await_standby(self) -> None:
        """Until every replica serves (the one started last, in its place, included)."""
        self.restart_exited()
        for replica in self.replicas:
            self._await(replica)

    def restart_exited(self) -> None:
        """A replica that exited by itself (a leader that could not renew its lease steps
        down by exiting) started again, as its pod's container would be; what it left
        running stopped."""
        for replica in [r for r in self.replicas if r.process.poll() is not None]:
            stop_tree(replica.process, STOP_GRACE_S, replica.started)
            self.replicas.remove(replica)
            self._start()

    def _start(self) -> _Replica:
        name, port = f"{self.launcher.name}-{next(self._names)}", free_port()
        replica = _Replica(name, port, self.launcher.start(name, port, self.election))
        self.replicas.append(replica)
        return replica

    def _await(self, replica: _Replica) -> None:
        """Until the replica serves (its health: it may lead or wait), its tree seen."""
        wait_ready(
            replica.process,
            lambda: self.launcher.serving(replica.port),
            self.folder / f"{replica.name}.log",
        )
        replica.started = _tree(replica.process.pid)

    def __enter__(self) -> Replicas:
        """The replicas, started together: once one leads and the others serve."""
        try:
            for replica in [self._start() for _ in range(self.count)]:
                self._await(replica)
            self.await_leader()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        """Each replica stopped (all asked at once: optimist takes a few seconds to stop
        its Ray), and what it started, by PID."""
        seen = {r.name: [*r.started, *_tree(r.process.pid)] for r in self.replicas}
        for replica in self.replicas:
            if replica.process.poll() is None:
                replica.process.terminate()
        for replica in self.replicas:
            stop_tree(replica.process, STOP_GRACE_S, seen[replica.name])
        self.replicas = []


def _kill(replica: _Replica) -> None:
    """The replica and all it started, SIGKILL, by PID; once it is gone."""
    for process in [replica.process, *_tree(replica.process.pid), *replica.started]:
        try:
            process.kill()
        except (psutil.Error, ProcessLookupError):
            continue
    replica.process.wait()


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []
