"""The schedulers under test, each in a process of its own, started as the API bench
and `optimist day` run them: `optimist run` (alone, or as replicas sharing a Lease,
`benchmarks.apiserver.replicas`) and the null scheduler; kube-scheduler's is
`benchmarks.controlplane.control_plane.kube_scheduler`."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import yaml

from benchmarks.apiserver import null_scheduler
from benchmarks.controlplane.control_plane import (
    SCHEDULER_PERF_CLIENT,
    answers,
    free_port,
    stop_tree,
)
from optimist.configuration import default_configuration, load_file
from optimist.settings import Settings

READY_TIMEOUT_S = 180.0  # `optimist run`: Ray, Redis, the informers' first lists
STOP_GRACE_S = 30.0
NO_ELECTION = {"leaderElect": False}  # one replica: nothing to wait for


class ApiBenchError(RuntimeError):
    """A scheduler that did not start, or a setting that cannot be run; says which."""


def scheduler_documents(path: Path | None) -> list[dict[str, Any]]:
    """The configuration file's documents (a KubeSchedulerConfiguration first); without
    a file, one document with v1.30's one default-scheduler profile."""
    if path is None:
        return [
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
        ]
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def scheduler_names(path: Path | None) -> frozenset[str]:
    configuration = load_file(path) if path else default_configuration()
    return Settings.from_configuration(configuration).scheduler_names


def start_optimist(
    kubeconfig: Path,
    documents: list[dict[str, Any]],
    shards: int,
    folder: Path,
    port: int,
    election: Mapping[str, Any] = NO_ELECTION,
    name: str = "optimist-run",
    ray_address: str | None = None,
) -> subprocess.Popen[bytes]:
    """`optimist run` in a process of its own, with the configuration's profiles, the
    leader election given (none by default) and scheduler_perf's client limits,
    serving metrics on `port`, joining the Ray cluster at `ray_address` (else one of
    its own); its configuration and log are `name`'s in the folder."""
    first, *rest = documents
    first = {
        **first,
        "leaderElection": dict(election),
        "clientConnection": {**(first.get("clientConnection") or {}), **SCHEDULER_PERF_CLIENT},
    }
    config = folder / f"{name}.yaml"
    config.write_text(yaml.safe_dump_all([first, *rest]))
    command = [
        sys.executable, "-c", "from optimist.cli.main import entry; entry()",
        "run", "--config", str(config), "--kubeconfig", str(kubeconfig),
        "--metrics-address", f"127.0.0.1:{port}", "--shards", str(shards), "--identity", name,
        *(["--ray-address", ray_address] if ray_address else []),
    ]  # fmt: skip
    with (folder / f"{name}.log").open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


@contextmanager
def optimist_process(
    kubeconfig: Path,
    documents: list[dict[str, Any]],
    shards: int,
    folder: Path,
    port: int | None = None,
    ray_address: str | None = None,
) -> Iterator[int]:
    """`optimist run` alone (`start_optimist`), serving metrics on `port` (one free by
    default); yields its PID once it is ready (scheduling). Stopped by SIGTERM, then
    whatever of its tree is left by PID."""
    port = port or free_port()
    process = start_optimist(kubeconfig, documents, shards, folder, port, ray_address=ray_address)
    started: list[psutil.Process] = []  # its Redis and Ray's daemons, once it is ready
    try:
        ready = f"http://127.0.0.1:{port}/readyz"
        wait_ready(process, lambda: answers(ready), folder / "optimist-run.log")
        started = psutil.Process(process.pid).children(recursive=True)
        yield process.pid
    finally:
        stop_tree(process, STOP_GRACE_S, started)


@contextmanager
def null_scheduler_process(kubeconfig: Path, names: frozenset[str], folder: Path) -> Iterator[int]:
    """The null scheduler (`null_scheduler`) in a process of its own for the profiles
    `names`; yields its PID once it has listed the nodes and pods. It ends when its
    input closes; SIGTERM if it lingers."""
    command = [sys.executable, "-m", null_scheduler.__name__, str(kubeconfig), *sorted(names)]
    log_path = folder / "null-scheduler.log"
    with log_path.open("wb") as out:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_ready(process, lambda: log_path.read_bytes().startswith(b"ready"), log_path)
        yield process.pid
    finally:
        if process.stdin is not None:
            process.stdin.close()
        stop_tree(process, STOP_GRACE_S)


def wait_ready(process: subprocess.Popen[bytes], ready: Callable[[], bool], log_path: Path) -> None:
    """Until `ready()` while the process lives; ApiBenchError with its log if it ends, or
    READY_TIMEOUT_S goes by, first."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        # ready, and still ours that is (not another process that took the port while
        # this one started)
        if ready() and process.poll() is None:
            return
        if process.poll() is not None:
            raise ApiBenchError(
                f"{process.args!r} exited ({process.returncode}) before it was ready: "
                f"{log_path.read_text(errors='replace')[-2000:]}"
            )
        time.sleep(0.2)
    raise ApiBenchError(f"{process.args!r} not ready within {READY_TIMEOUT_S:.0f} s ({log_path})")


def metrics_url(name: str, port: int) -> str:
    """Where the scheduler `name` started on `port` serves its Prometheus metrics."""
    scheme = "https" if name == "kube-scheduler" else "http"  # its own certificate
    return f"{scheme}://127.0.0.1:{port}/metrics"
