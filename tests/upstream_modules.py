"""Upstream's scheduler_perf folders in the Go module cache, which `make kube` fills."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from benchmarks.cases import case_file, template


def scheduler_perf(version: str, inside: str = "") -> Path:
    """`inside` (a file, or the folder itself) of k8s.io/kubernetes@`version`'s
    test/integration/scheduler_perf, or a skip (a failure under CI) saying how to get it."""
    try:
        cache = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as err:
        cache, why = "", f"no Go toolchain ({err})"
    path = Path(cache) / f"k8s.io/kubernetes@{version}/test/integration/scheduler_perf" / inside
    if cache and path.exists():
        return path
    why = why if not cache else f"{path} is not there"
    message = f"{why}: `make kube` downloads k8s.io/kubernetes {version} into the cache"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def scheduler_perf_files(version: str) -> dict[str, list[case_file.CaseWorkload]]:
    """Each scheduler_perf file of `version` read, by its folder under scheduler_perf
    (the newer releases split the cases by area, one file a folder)."""
    root = scheduler_perf(version)
    return {
        str(path.parent.relative_to(root)): case_file.load(path, template("node-default.yaml"))
        for path in sorted(root.rglob("performance-config.yaml"))
    }
