"""Workload mixes of a GPU trace: its tasks reweighted by kind, as the FGD paper's
variants of the Alibaba trace are (fewer CPU-only tasks, more GPU sharing, more
multi-GPU tasks, more tasks bound to a GPU model), seeded, so that a policy can be
tried on mixes no one tuned it on and anyone can make the same mix again.

A mix names a target per kind, `share=60,spec=30`:

- `cpu`: CPU-only tasks, as a percent of all tasks;
- `share`: GPU-sharing tasks' part of the GPU request, in percent;
- `multi`: multi-GPU tasks' part of the GPU request, in percent;
- `spec`: GPU tasks bound to GPU models, as a percent of GPU tasks.

The tasks of a kind with a target are drawn from the trace's tasks of that kind
(with replacement where more are needed, without where fewer); the others stay as
they are. `spec` gives unbound GPU tasks a model list drawn from the trace's own
bound tasks, or where it has none, one model drawn by the cluster's GPUs of each
model (or takes the models off where fewer should be bound). The shipped variants
were made the same way in the paper's repository: cpu050 has fewer CPU-only tasks
and the same GPU tasks, multigpu20 more multi-GPU tasks, gpushare40 and gpuspec10
the same number of tasks with more sharing or more bound to a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from benchmarks.gpu.trace_files import TraceError, TraceNode, TraceTask

KINDS = ("cpu", "share", "multi", "spec")


def parse_mix(text: str) -> dict[str, float]:
    """`share=60,spec=30` as fractions; TraceError naming the part that is wrong."""
    targets: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        kind, eq, value = part.partition("=")
        if kind not in KINDS or not eq:
            raise TraceError(f"--resample {part!r}: expected KIND=PERCENT, KIND one of {KINDS}")
        try:
            percent = float(value)
        except ValueError:
            raise TraceError(f"--resample {part!r}: {value!r} is not a percent") from None
        if not 0 <= percent < 100 or kind in targets:
            raise TraceError(f"--resample {part!r}: a percent in [0, 100), once per kind")
        targets[kind] = percent / 100
    if targets.get("share", 0) + targets.get("multi", 0) >= 1:
        raise TraceError(f"--resample {text!r}: share and multi leave no room for other tasks")
    return targets


def gpu_models(nodes: Sequence[TraceNode]) -> list[str]:
    """The cluster's GPUs, one entry per GPU, its model: what `spec` draws models by
    where the trace binds no task."""
    return [n.model for n in nodes for _ in range(n.gpus)]


def kind_of(task: TraceTask) -> str:
    """cpu, share, whole (one whole GPU) or multi."""
    gpu = task.gpu
    if not gpu:
        return "cpu"
    if gpu.share:
        return "share"
    return "multi" if gpu.whole > 1 else "whole"


def composition(tasks: Sequence[TraceTask]) -> dict[str, float]:
    """A mix's measures, as fractions: what `parse_mix` targets."""
    gpu_tasks = [t for t in tasks if t.gpu_request]
    request = sum(t.gpu_request for t in gpu_tasks) or 1
    return {
        "cpu": sum(1 for t in tasks if not t.gpu_request) / (len(tasks) or 1),
        "share": sum(t.gpu_request for t in gpu_tasks if kind_of(t) == "share") / request,
        "multi": sum(t.gpu_request for t in gpu_tasks if kind_of(t) == "multi") / request,
        "spec": sum(1 for t in gpu_tasks if t.models) / (len(gpu_tasks) or 1),
    }


def resample(
    tasks: Sequence[TraceTask],
    targets: dict[str, float],
    seed: int,
    cluster_models: Sequence[str],
) -> list[TraceTask]:
    """The tasks reweighted to `targets` (from `parse_mix`); `cluster_models` holds one
    entry per GPU of the cluster, its model, for `spec` where the trace binds none."""
    rng = np.random.default_rng(seed)
    by_kind: dict[str, list[TraceTask]] = {k: [] for k in ("cpu", "share", "whole", "multi")}
    for task in tasks:
        by_kind[kind_of(task)].append(task)
    gpu_targets = {k: targets[k] for k in ("share", "multi") if k in targets}
    if gpu_targets:
        fixed = sum(
            t.gpu_request
            for k in ("share", "whole", "multi")
            if k not in gpu_targets
            for t in by_kind[k]
        )
        total = fixed / (1 - sum(gpu_targets.values()))
        for kind, part in gpu_targets.items():
            by_kind[kind] = _to_total(by_kind[kind], part * total, rng, kind)
    if "cpu" in targets:
        gpu_count = sum(len(by_kind[k]) for k in ("share", "whole", "multi"))
        count = round(targets["cpu"] / (1 - targets["cpu"]) * gpu_count)
        by_kind["cpu"] = _to_count(by_kind["cpu"], count, rng, "cpu")
    out = [t for kind in ("cpu", "share", "whole", "multi") for t in by_kind[kind]]
    if "spec" in targets:
        out = _bind_models(out, targets["spec"], rng, cluster_models)
    return [out[i] for i in rng.permutation(len(out))]


def _to_total(
    pool: list[TraceTask], total: float, rng: np.random.Generator, kind: str
) -> list[TraceTask]:
    """Tasks of one kind whose GPU request comes to `total`, as near as one task allows:
    a random part of the pool, or the pool and tasks drawn from it."""
    if total > 0 and not pool:
        raise TraceError(f"--resample {kind}: the trace has no {kind} task to draw from")
    have = sum(t.gpu_request for t in pool)
    if total <= have:
        picked, got = [], 0
        for i in rng.permutation(len(pool)):
            if got + pool[i].gpu_request / 2 <= total:  # taking it comes nearer
                picked.append(int(i))
                got += pool[i].gpu_request
        return [pool[i] for i in sorted(picked)]
    out, got = list(pool), have
    while True:
        drawn = pool[int(rng.integers(len(pool)))]
        if got + drawn.gpu_request / 2 > total:
            return out
        out.append(replace(drawn, name=f"{drawn.name}-r{len(out) - len(pool)}"))
        got += drawn.gpu_request


def _to_count(
    pool: list[TraceTask], count: int, rng: np.random.Generator, kind: str
) -> list[TraceTask]:
    """`count` tasks of one kind: a sample of the pool, or the pool and draws from it."""
    if count <= len(pool):
        return [pool[i] for i in sorted(rng.choice(len(pool), size=count, replace=False))]
    if not pool:
        raise TraceError(f"--resample {kind}: the trace has no {kind} task to draw from")
    drawn = rng.integers(len(pool), size=count - len(pool))
    return [*pool, *(replace(pool[i], name=f"{pool[i].name}-r{n}") for n, i in enumerate(drawn))]


def _bind_models(
    tasks: list[TraceTask], part: float, rng: np.random.Generator, cluster_models: Sequence[str]
) -> list[TraceTask]:
    gpu = [i for i, t in enumerate(tasks) if t.gpu_request]
    bound = [i for i in gpu if tasks[i].models]
    free = [i for i in gpu if not tasks[i].models]
    lists = [tasks[i].models for i in bound] or [(m,) for m in cluster_models]
    want = round(part * len(gpu))
    out = list(tasks)
    if want > len(bound):
        for i in rng.choice(free, size=want - len(bound), replace=False):
            out[i] = replace(out[i], models=lists[int(rng.integers(len(lists)))])
    else:
        for i in rng.choice(bound, size=len(bound) - want, replace=False):
            out[i] = replace(out[i], models=())
    return out
