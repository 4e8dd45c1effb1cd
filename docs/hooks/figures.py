"""Figures on a page, read from the result files when the site builds: a line
`<!-- figures: DAY/FILE.json -->` becomes that file's table, with the command,
commit and machine that made it, so no figure on the site is typed by hand."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.apiserver.shared_pool import SHARED_POOL
from benchmarks.controlplane.releases import PINNED
from benchmarks.day.day_report import ROWS, DayReport
from benchmarks.report.instruments import report_cases
from optimist.offline.provenance import short_commit

MARKER = re.compile(r"^<!-- figures: (\S+) -->$", re.MULTILINE)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    folder = Path(config["docs_dir"]) / "results"
    depth = page.file.src_uri.count("/")  # the page's folder, to link the file from it
    prefix = "../" * depth + "results/"
    return MARKER.sub(lambda m: figures(folder / m.group(1), prefix + m.group(1)), markdown)


def figures(path: Path, link: str) -> str:
    """The table of one result file (the simulated bench's, or beside kube-scheduler)."""
    report = json.loads(path.read_text())
    if "happenings" in report:
        rows = _day(report)
    elif report.get("sweep", {}).get("variable") == "shards":
        rows = _conflicts(report)
    else:
        rows = (
            [
                *_beside(report),
                *_faults(report),
                *_shared(report),
                *_restarts(report),
                *_memory(report),
            ]
            if "cluster" in report
            else _simulated(report)
        )
    return "\n".join([*rows, "", _made_by(report, path.name, link)])


def _simulated(report: dict[str, Any]) -> list[str]:
    """One row per workload and number of shards: each run, the median, the ratio to one
    shard run by run, the CPU per pod of each role, the time to the first decision. A
    workload that failed (a case optimist cannot run) has no row."""
    groups: dict[tuple[str, int, int], list[Mapping[str, Any]]] = {}
    ran = [case for case in report_cases(report) if not case.get("error")]
    for case in ran:
        key = (f"{case['case']}/{case['workload']}", case["nodes"], len(case["shards"]))
        groups.setdefault(key, []).append(case)
    out = [
        "| workload | nodes | shards | pods/s, each run | median | vs 1 shard, "
        "median of run-by-run ratios | CPU µs per pod: driver / shards / Redis |",
        "|---|---|---|---|---|---|---|",
    ]
    for (name, nodes, shards), cases in groups.items():
        rates = [c["throughput_pods_per_s"]["average"] for c in cases]
        one = groups.get((name, nodes, 1), [])
        ratio = ""
        if shards > 1 and one:
            pairs = zip(rates, (c["throughput_pods_per_s"]["average"] for c in one), strict=False)
            ratio = f"{statistics.median(a / b for a, b in pairs):.2f}"
        cpu = " / ".join(
            f"{statistics.median(c['cpu_us_per_pod'][role] for c in cases):.0f}"
            for role in ("driver", "shards", "redis")
        )
        out.append(
            f"| {name} | {nodes:,} | {shards} | {_each(rates)} | "
            f"**{statistics.median(rates):,.0f}** | {ratio} | {cpu} |"
        )
    if not ran:
        return ["No workload of this file ran: each failed, its result file says why."]
    first = ran[0]["first_decision_s"]  # later runs count from the same start
    return [*out, "", f"The first decision came {first:.1f} s after the command started."]


def _conflicts(report: dict[str, Any]) -> list[str]:
    """A sweep of shards: per workload and number of shards, the pods/s, the attempts
    each pod took and the conflicts per committed unit (what optimism costs as the
    cluster fills), and whether every pod was placed (no livelock)."""
    out = [
        "| workload | shards | pods/s | attempts per pod | conflicts per committed unit | placed |",
        "|---|---|---|---|---|---|",
    ]
    cases = report_cases(report)
    names = list(dict.fromkeys(f"{c['case']}/{c['workload']}" for c in cases))  # file order
    for case in sorted(
        cases, key=lambda c: (names.index(f"{c['case']}/{c['workload']}"), len(c["shards"]))
    ):
        if case.get("error"):
            out.append(f"| {case['case']}/{case['workload']} | {len(case['shards'])} | "
                       f"failed: {case['error']} | | | |")  # fmt: skip
            continue
        attempts = case["attempts"] / case["pods_scheduled"] if case["pods_scheduled"] else 0.0
        out.append(
            f"| {case['case']}/{case['workload']} | {len(case['shards'])} | "
            f"{case['throughput_pods_per_s']['average']:,.0f} | {attempts:.3f} | "
            f"{case['conflicts_per_committed_unit']:.3f} | "
            f"{case['pods_scheduled']:,} of {case['pods_created']:,} |"
        )
    return out


def _beside(report: dict[str, Any]) -> list[str]:
    """One row per workload and scheduler, through a real API server, side by side."""
    out = [
        "| workload | scheduler | pods/s, each round | median | vs the other | "
        "scheduler CPU s per 1,000 pods | scheduler peak RSS | created to scheduled, p99 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in report["cases"]:
        for name, s in case["schedulers"].items():
            if not s["pods_per_s"]:  # a case the API server cannot run (PodGroups, quotas)
                continue
            ratio = f"{case['ratio']:.2f}" if "ratio" in case and name == "optimist" else ""
            out.append(
                f"| {case['name']} | {name} | {_each(s['pods_per_s_runs'])} | "
                f"**{s['pods_per_s']:,.0f}** | {ratio} | "
                f"{s['cpu_s_per_1000_pods']['scheduler']:.2f} | "
                f"{s['memory_peak_bytes']['scheduler'] / 2**20:,.0f} MiB | "
                f"{s['latency_p99_s']:.2f} s |"
            )
    return out


def _faults(report: dict[str, Any]) -> list[str]:
    """Under `--chaos`, one row per run and kind of fault: how many, the time to the next
    binding after each, and the longest pause in bindings after each."""
    runs = [r for r in report["runs"] if r.get("chaos")]
    if not runs:
        return []
    out = [
        "",
        "| workload | scheduler | fault | injected | to the next binding, median / max | "
        "longest pause in bindings, median / max |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        for kind, r in run["chaos"]["recovery_s"].items():
            out.append(
                f"| {run['name']} | {run['scheduler']} | {kind} | {r['count']} | "
                f"{_seconds(r['median_s'])} / {_seconds(r['max_s'])} | "
                f"{_seconds(r.get('stall_median_s'))} / {_seconds(r.get('stall_max_s'))} |"
            )
    return out


def _shared(report: dict[str, Any]) -> list[str]:
    """Where two schedulers shared the nodes (`shared_pool`), one row per workload and
    setup: the nodes over-committed at the end and the pods kubelets would turn away,
    by profile, each round."""
    if not any(name in SHARED_POOL for name in report["schedulers"]):
        return []
    out = [
        "",
        "| workload | schedulers | nodes over-committed, each round | pods a kubelet would "
        "reject, each round, by profile |",
        "|---|---|---|---|",
    ]
    for case in report["cases"]:
        for name in case["schedulers"]:
            runs = [
                r["over_committed"]
                for r in report["runs"]
                if r["name"] == case["name"] and r["scheduler"] == name and "over_committed" in r
            ]
            rejected = " / ".join(
                ", ".join(f"{n} {p}" for p, n in r["rejected"].items()) or "0" for r in runs
            )
            nodes = " / ".join(str(r["nodes"]) for r in runs)
            out.append(f"| {case['name']} | {name} | {nodes} | {rejected} |")
    return out


def _restarts(report: dict[str, Any]) -> list[str]:
    """Where a case restarted the scheduler (`restartScheduler`), one row per workload,
    scheduler and restart: the seconds from the kill to the first binding, each round,
    and the peak RSS of the scheduler's processes over the run."""
    runs = [r for r in report["runs"] if r.get("restarts")]
    if not runs:
        return []
    out = [
        "",
        "| workload | scheduler | restart | kill to the first binding, each round | "
        "scheduler peak RSS, largest round |",
        "|---|---|---|---|---|",
    ]
    keys = list(dict.fromkeys((r["name"], r["scheduler"]) for r in runs))
    for name, scheduler in keys:
        rounds = [r for r in runs if (r["name"], r["scheduler"]) == (name, scheduler)]
        peak = max(r["memory_peak_bytes"]["scheduler"] for r in rounds) / 2**20
        for i, first in enumerate(rounds[0]["restarts"]):
            how = "leader killed, standby waiting" if first["failover"] else "cold"
            each = " / ".join(_seconds(r["restarts"][i]["first_binding_s"]) for r in rounds)
            out.append(f"| {name} | {scheduler} | {how} | {each} | {peak:,.0f} MiB |")
    return out


def _memory(report: dict[str, Any]) -> list[str]:
    """Where a case made a large cluster's running pods (boundAtCreation), one row per
    run: the scheduler's resident memory by part, at its peak and at the end (steady),
    with the pods it held then."""
    runs = [
        r
        for r in report["runs"]
        if r.get("scheduler_memory") and r.get("all_pods", {}).get("bound_at_creation")
    ]
    if not runs:
        return []
    out = [
        "",
        "| workload | scheduler | round | nodes | pods bound | main | shards | redis | ray | "
        "whole tree |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        peak, end = r["scheduler_memory"]["peak_bytes"], r["scheduler_memory"]["end_bytes"]
        cells = [
            f"{end.get(part, 0) / 2**20:,.0f} ({peak.get(part, 0) / 2**20:,.0f})" if part in peak
            else "-"
            for part in ("main", "shards", "redis", "ray")
        ]  # fmt: skip
        pods = r["all_pods"]["bound"] + r["all_pods"]["bound_at_creation"]
        out.append(
            f"| {r['name']} | {r['scheduler']} | {r['round'] + 1} | {r['nodes']:,} | {pods:,} | "
            f"{' | '.join(cells)} | {sum(end.values()) / 2**20:,.0f} MiB |"
        )
    out += ["", "MiB at the end, every pod settled (the peak over the run in brackets)."]
    return out


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _day(report: dict[str, Any]) -> list[str]:
    """`optimist day`: its figures, a column per scheduler, as the terminal shows them."""
    day = DayReport.model_validate({k: v for k, v in report.items() if k in DayReport.model_fields})
    names = [f.scheduler for f in day.schedulers]
    out = [f"| figure | {' | '.join(names)} |", "|---" * (len(names) + 1) + "|"]
    for label, cell in ROWS:
        out.append(f"| {label} | {' | '.join(cell(f) for f in day.schedulers)} |")
    return out


def _each(rates: Iterable[float]) -> str:
    return " / ".join(f"{r:,.0f}" for r in rates)


def _made_by(report: dict[str, Any], name: str, link: str) -> str:
    machine = report.get("machine") or {}
    cores = f", {machine['cores']} cores" if "cores" in machine else ""
    if "cluster" in report or "happenings" in report:  # a control plane's: its release
        cores += f", Kubernetes {report.get('kubernetes') or PINNED}"
    if not report.get("command"):
        return f"From [{name}]({link}){cores}; its day's README says how it was made."
    commit = short_commit(str(report.get("commit", "")))  # the day's README says what "+dirty" was
    return f"From [{name}]({link}): `{report['command']}`, at {commit}, {report['made']}{cores}."
