"""Upstream's own scheduler_perf (v1.30: `go test` of its BenchmarkPerfScheduling) on this
machine, the reference beside optimist's figures for the same workloads.

    .venv/bin/python -m benchmarks.upstream_perf SchedulingBasic/500Nodes [...] \\
        [--labels performance] [--out FILE]

The test binary is built by tools/build-scheduler-perf.sh (a few minutes, once;
kept in the cache beside the control plane). It runs where upstream runs it,
in the scheduler_perf folder of the Kubernetes module source (its config/ and
templates as they are), with `make kube`'s etcd on PATH, and kube-scheduler
in its own process as upstream's harness builds it. The figures are read from
the data items it writes (-data-items-dir): SchedulingThroughput per workload,
average and percentiles. On this machine its harness does not always return
after the last workload (its teardown waits), so once the data items are
written, it and what it started are stopped by their PIDs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.controlplane.control_plane import binaries, stop_tree
from benchmarks.controlplane.releases import PINNED
from optimist.offline.provenance import provenance

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "tools" / "build-scheduler-perf.sh"
LIMIT_S = 3600.0


def source_folder() -> Path:
    cache = subprocess.run(
        ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return Path(cache) / f"k8s.io/kubernetes@{PINNED}/test/integration/scheduler_perf"


def run(workloads: list[str], labels: str, limit_s: float = LIMIT_S) -> dict[str, Any]:
    """SchedulingThroughput of each workload (CASE/WORKLOAD), by upstream's harness."""
    binary = subprocess.run(
        ["bash", str(BUILD)], capture_output=True, text=True, check=True
    ).stdout.strip()
    pattern = "|".join(w.split("/")[0] for w in workloads)
    names = "|".join(w.split("/")[1] for w in workloads)
    bench = f"BenchmarkPerfScheduling/^({pattern})$/^({names})$"
    with tempfile.TemporaryDirectory(prefix="optimist-upstream-perf-") as folder:
        items = Path(folder) / "items"
        items.mkdir()
        command = [
            binary, "-test.run=^$", f"-test.bench={bench}", "-test.benchtime=1ns",
            f"-test.timeout={int(limit_s)}s", f"-perf-scheduling-label-filter={labels}",
            f"-data-items-dir={items}",
        ]  # fmt: skip
        env = {**os.environ, "PATH": f"{binaries(PINNED)}{os.pathsep}{os.environ.get('PATH', '')}"}
        log = Path(folder) / "scheduler_perf.log"
        started = time.monotonic()
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=source_folder(), env=env, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            written = _wait_for_items(process, items, started + limit_s)
        finally:
            stop_tree(process, grace_s=0)  # the data items are written: nothing to wait for
        if written is None:
            raise RuntimeError(
                f"scheduler_perf wrote no data items (exit {process.returncode}): "
                f"{log.read_text(errors='replace')[-3000:]}"
            )
        # the pattern is a cross product of cases and workloads: keep the ones asked for
        figures = {
            name: f
            for name, f in throughput(json.loads(written.read_text())).items()
            if name in workloads
        }
    return {
        **provenance(["python", "-m", "benchmarks.upstream_perf", *workloads, "--labels", labels]),
        "kubernetes": PINNED,
        "harness": "k8s.io/kubernetes/test/integration/scheduler_perf BenchmarkPerfScheduling",
        "took_s": time.monotonic() - started,
        "workloads": figures,
    }


def _wait_for_items(process: subprocess.Popen[bytes], folder: Path, deadline: float) -> Path | None:
    """The data items file once written whole (its size holds for a second)."""
    size = -1
    while time.monotonic() < deadline:
        files = sorted(folder.glob("*.json"))
        if files:
            now = files[0].stat().st_size
            if now == size and now > 0:
                return files[0]
            size = now
        elif process.poll() is not None:
            return None
        time.sleep(1.0)
    return None


def throughput(items: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Workload -> SchedulingThroughput's Average, Perc50, Perc90, Perc95, Perc99."""
    out = {}
    for item in items.get("dataItems") or []:
        labels = item.get("labels") or {}
        if labels.get("Metric") == "SchedulingThroughput":
            # CASE/WORKLOAD/NAMESPACE: the namespace its measured pods were made in
            name = "/".join(str(labels.get("Name")).split("/")[:2])
            out[name] = {k: float(v) for k, v in item["data"].items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="+", help="CASE/WORKLOAD of upstream's file")
    parser.add_argument(
        "--labels", default="", help="-perf-scheduling-label-filter [default: none, any workload]"
    )
    parser.add_argument("--out", type=Path, help="write the figures here (JSON)")
    args = parser.parse_args()
    bad = [w for w in args.workloads if w.count("/") != 1]
    if bad:
        sys.exit(f"error: {', '.join(bad)}: give each as CASE/WORKLOAD")
    result = run(args.workloads, args.labels)
    if missing := sorted(set(args.workloads) - set(result["workloads"])):
        sys.exit(
            f"error: {', '.join(missing)}: no SchedulingThroughput (no such workload, or "
            f"one the label filter {args.labels!r} leaves out)"
        )
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
