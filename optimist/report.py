"""Benchmark figures: throughput as scheduler_perf samples it, and what a run must record.

Throughput is pods bound per second, sampled over one-second windows of the
measured phase; the average is every bound pod over the whole phase. Pods
that ended unschedulable stay in the counts and are never dropped.
"""

from __future__ import annotations

import os
import platform
import sys
from collections import Counter
from importlib import metadata
from typing import Any

import numpy as np
import psutil


def throughput(bound_at: list[float], start: float, end: float) -> dict[str, float]:
    """Average over the phase, and p50/p90/p99 of the per-second samples."""
    duration = max(end - start, 1e-9)
    average = len(bound_at) / duration
    if not bound_at:
        return {"average": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}
    windows = max(int(np.ceil(duration)), 1)
    counts = np.bincount(
        np.minimum((np.asarray(bound_at) - start).astype(np.int64), windows - 1), minlength=windows
    ).astype(float)
    # The last window is usually partial: scale it to a rate over its real length.
    last = duration - (windows - 1)
    counts[-1] = counts[-1] / last if last > 0 else counts[-1]
    p50, p90, p99 = np.percentile(counts, [50, 90, 99])
    return {"average": average, "p50": float(p50), "p90": float(p90), "p99": float(p99)}


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
