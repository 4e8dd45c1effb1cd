"""Where a result file's figures came from, so that anyone can make them again: the
command and commit that made it, the machine and the versions it ran on."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import time
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from cluster.redis_server import redact


def provenance(command: list[str]) -> dict[str, str]:
    """What made a result file, so that anyone can make it again: the command, the
    commit of the code that ran ("+dirty" where its tree had changes; the package's
    version outside a checkout) and when."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        commit += "+dirty" if git("status", "--porcelain", "--untracked-files=no") else ""
    except (OSError, subprocess.CalledProcessError):
        commit = f"optimist-scheduler {metadata.version('optimist-scheduler')}"
    made = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"command": shlex.join(map(_redacted, command)), "commit": commit, "made": made}


def short_commit(commit: str) -> str:
    """A result file's commit as a page shows it: seven digits, and "+dirty" if the tree
    had changes."""
    sha, plus, rest = commit.partition("+")
    return sha[:7] + plus + rest


def _redacted(arg: str) -> str:
    """An argument with a URL's password masked (--redis-url may carry one)."""
    flag, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    return flag + eq + (redact(value) if "://" in value else value)


def machine() -> dict[str, Any]:
    return {
        "cores": os.cpu_count(),
        "memory_bytes": psutil.virtual_memory().total,
        "platform": platform.platform(),
    }


def versions(redis_info: dict[str, Any]) -> dict[str, str]:
    out = {
        "python": sys.version.split()[0],
        "redis_server": str(redis_info.get("redis_version", "?")),
    }
    for dist in ("optimist-scheduler", "ray", "numpy", "redis", "msgpack"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def reason_counts(unschedulable: dict[str, str]) -> dict[str, int]:
    return dict(Counter(unschedulable.values()).most_common())
