"""`optimist bench --sweep VAR=v1,v2,...`: one setting varied, everything else fixed.

Every run uses the same case file, seed and settings but for the variable,
so each run creates the same nodes and pods in the same order; the runs
differ only in what is swept.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from benchmarks.report.bench_report import Sweep, SweepReport, SweepRun
from benchmarks.simulated.sim_bench import BenchRun, Plan, run_bench
from optimist.settings import Settings


class SweepError(ValueError):
    pass


def _bool(text: str) -> bool:
    if text not in ("true", "false"):
        raise ValueError("must be true or false")
    return text == "true"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _percentage(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 100:
        raise ValueError("must be from 0 (adaptive) to 100")
    return value


# name on the command line -> (how a value is read, how it changes the settings)
VARIABLES: dict[str, tuple[Any, Any]] = {
    "shards": (_positive, lambda s, v: replace(s, shards=v)),
    "batch": (_positive, lambda s, v: replace(s, batch_pods=v)),
    "candidates": (_positive, lambda s, v: replace(s, candidates=v)),
    "conflict-mode": (str, lambda s, v: replace(s, conflict_mode=v)),
    "node-partitions": (_bool, lambda s, v: replace(s, node_partitions=v)),
    "binders": (_positive, lambda s, v: replace(s, binders=v)),
    "percentageOfNodesToScore": (
        _percentage,
        lambda s, v: replace(
            s,
            profiles=tuple(replace(p, percentage_of_nodes_to_score=v or None) for p in s.profiles),
        ),
    ),
}


def parse_sweep(text: str) -> tuple[str, list[Any]]:
    """`shards=1,2,4,8` -> ("shards", [1, 2, 4, 8]), or a SweepError naming what is wrong."""
    name, eq, values = text.partition("=")
    if name not in VARIABLES:
        raise SweepError(f"--sweep {text!r}: {name!r} is not one of {', '.join(VARIABLES)}")
    if not eq or not values:
        raise SweepError(f"--sweep {text!r}: give values, e.g. {name}=1,2")
    read = VARIABLES[name][0]
    parsed = []
    for value in values.split(","):
        try:
            parsed.append(read(value.strip()))
        except ValueError as e:
            raise SweepError(f"--sweep {name}: value {value!r}: {e}") from None
    return name, parsed


def run_sweep(
    settings: Settings,
    plan: Plan,
    name: str,
    values: list[Any],
    *,
    show_progress: bool = False,
    cpu_affinity: bool = False,
) -> BenchRun[SweepReport]:
    """One run per value; the report keeps each run's whole report under `sweep.runs`."""
    change = VARIABLES[name][1]
    variants = []
    for value in values:  # every value checked before the first run starts
        try:
            variants.append((value, change(settings, value)))
        except ValueError as e:
            raise SweepError(f"--sweep {name}: value {value!r}: {e}") from None
    runs = []
    for i, (value, changed) in enumerate(variants):
        began = None if i == 0 else time.perf_counter()  # a later run: from its own start
        run = run_bench(
            changed, plan, show_progress=show_progress, cpu_affinity=cpu_affinity, began=began
        )
        runs.append((value, run))
    reports = [(v, r.report) for v, r in runs]
    report = SweepReport(
        sweep=Sweep(variable=name, runs=[SweepRun(value=v, report=r) for v, r in reports]),
        seed=settings.seed,
        config=settings.public(),
        machine=reports[0][1].machine,
        versions=reports[0][1].versions,
        errors=[f"{name}={v}: {e}" for v, r in reports for e in r.errors],
        invariant_violations=[
            f"{name}={v}: {x}" for v, r in reports for x in r.invariant_violations
        ],
    )
    return BenchRun(report, runs[0][1].clusters)
