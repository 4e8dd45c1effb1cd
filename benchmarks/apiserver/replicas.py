"""optimist as a Deployment of two replicas runs it, for `--chaos kill-leader`: two
`optimist run` processes sharing a Lease, one leading and one waiting to take over.
The leader killed (SIGKILL, its whole process tree, as a node's kubelet ends a pod's
container) is replaced by a new replica, as the Deployment's ReplicaSet would start a
new pod, and one that exits by itself (it lost its lease) is started again, as its
container would be: there is always a standby for the next fault.

The bench's lease is short (`LEASE`), so that a run meets several takeovers: a
standby takes over once the killed leader's lease has lapsed, then starts its Redis
and shards and lists the cluster.
"""

from __future__ import annotations

import itertools
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from benchmarks.apiserver.scheduler_processes import (
    READY_TIMEOUT_S,
    STOP_GRACE_S,
    ApiBenchError,
    start_optimist,
    wait_ready,
)
from benchmarks.controlplane.control_plane import answers, free_port, stop_tree

LEASE = {
    "leaderElect": True,
    "leaseDuration": "3s",
    "renewDeadline": "2s",
    "retryPeriod": "500ms",
    "resourceNamespace": "default",
    "resourceName": "optimist",
}


@dataclass
class _Replica:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    started: list[psutil.Process] = field(default_factory=list)  # its tree, once seen

    def leading(self) -> bool:
        """Ready: only the replica holding the lease schedules, and says so."""
        return self.process.poll() is None and answers(f"http://127.0.0.1:{self.port}/readyz")


class OptimistReplicas:
    """The replicas, for as long as the context lasts."""

    def __init__(
        self, kubeconfig: Path, documents: list[dict[str, Any]], shards: int, folder: Path
    ) -> None:
        self.kubeconfig = kubeconfig
        self.documents = documents
        self.shards = shards
        self.folder = folder
        self.replicas: list[_Replica] = []
        self._names = itertools.count()

    def pids(self) -> list[int]:
        """The running replicas' PIDs (their trees hold their Ray and Redis)."""
        return [r.process.pid for r in self.replicas if r.process.poll() is None]

    def _leader(self) -> _Replica | None:
        return next((r for r in self.replicas if r.leading()), None)

    def await_leader(self) -> int:
        """Until a replica leads (a takeover, done); its PID."""
        return self._await_leader().process.pid

    def _await_leader(self) -> _Replica:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while (leader := self._leader()) is None:
            if time.monotonic() > deadline:
                raise ApiBenchError(f"no optimist replica led within {READY_TIMEOUT_S:.0f} s")
            time.sleep(0.1)
        return leader

    def kill_leader(self) -> str:
        """Kill the leader (once one leads) and all it started, by PID, and start a
        replica in its place; which replica was killed."""
        leader = self._await_leader()
        tree = [leader.process, *_tree(leader.process.pid)]
        for process in tree:
            try:
                process.kill()
            except (psutil.Error, ProcessLookupError):
                continue
        leader.process.wait()
        self.replicas.remove(leader)
        self._start()  # not waited for: the standby leads meanwhile
        return leader.name

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
        name, port = f"optimist-{next(self._names)}", free_port()
        process = start_optimist(
            self.kubeconfig, self.documents, self.shards, self.folder, port, LEASE, name
        )
        replica = _Replica(name, port, process)
        self.replicas.append(replica)
        return replica

    def _await(self, replica: _Replica) -> None:
        """Until the replica serves (its health: it may lead or wait), its tree seen."""
        wait_ready(
            replica.process,
            lambda: answers(f"http://127.0.0.1:{replica.port}/healthz"),
            self.folder / f"{replica.name}.log",
        )
        replica.started = _tree(replica.process.pid)

    def __enter__(self) -> OptimistReplicas:
        """Two replicas, started together: once one leads and the other serves."""
        try:
            first, second = self._start(), self._start()
            self._await(first)
            self._await(second)
            self.await_leader()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        """Each replica stopped (all asked at once: each takes a few seconds to stop its
        Ray), and what it started, by PID."""
        seen = {r.name: [*r.started, *_tree(r.process.pid)] for r in self.replicas}
        for replica in self.replicas:
            if replica.process.poll() is None:
                replica.process.terminate()
        for replica in self.replicas:
            stop_tree(replica.process, STOP_GRACE_S, seen[replica.name])
        self.replicas = []


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []
