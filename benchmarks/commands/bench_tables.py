"""The bench's figures as the terminal shows them."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from benchmarks.simulated.sim_bench import (
    UPSTREAM_NOTE,
)


def sweep_table(r: dict[str, Any]) -> Table:
    """One row per value of the swept setting: the figures to compare."""
    name = r["sweep"]["variable"]
    table = Table(title=f"optimist bench --sweep {name}")
    for column in (name, "pods/s avg", "p50 / p90 / p99", "attempts/pod", "conflicts/unit"):
        table.add_column(column, justify="right")
    for run in r["sweep"]["runs"]:
        t, x = run["report"]["throughput_pods_per_s"], run["report"]
        table.add_row(
            str(run["value"]),
            f"{t['average']:.0f}",
            f"{t['p50']:.0f} / {t['p90']:.0f} / {t['p99']:.0f}",
            f"{x['attempts_per_pod']:.3f}",
            f"{x.get('conflicts_per_committed_unit', 0.0):.3f}",
        )
    return table


def explained(case: str, probe: dict[str, Any]) -> str:
    """One line on what explaining pods mid-run took (`--explain-every`)."""
    waited, judged = probe["waited_s"], probe["judged_s"]
    if not waited["count"]:
        return f"{case}: explain: no call answered ({'; '.join(probe['errors']) or 'no pod yet'})"
    return (
        f"{case}: explain: {waited['count']} calls at {probe['nodes']} nodes; waited p50 "
        f"{waited['p50'] * 1000:.0f} ms, max {waited['max'] * 1000:.0f} ms; the shard judged "
        f"in p50 {judged['p50'] * 1000:.0f} ms, max {judged['max'] * 1000:.0f} ms"
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _pair(figures: dict[str, Any], a: str, b: str) -> str:
    return f"{figures.get(a, 0)} / {figures.get(b, 0)}"


def _per_pod_redis(r: dict[str, Any]) -> str:
    trips, commands = r.get("redis_round_trips_per_pod", 0.0), r.get("redis_commands_per_pod", 0.0)
    return f"{trips:.3f} / {commands:.1f}"


def _waiting(r: dict[str, Any]) -> str:
    queue = r.get("queue") or {}
    if not queue.get("waiting_pods"):
        return "-"
    return f"{queue['attempts_per_waiting_pod']:.2f} ({queue['waiting_pods']} pods)"


def _preemptions(r: dict[str, Any]) -> str:
    figures = (r.get("queue") or {}).get("preemption") or {}
    return _pair(figures, "preemptions", "victims") if figures.get("attempts") else "-"


def _named(case: dict[str, Any]) -> str:
    """A workload's name as the tables show it; a failed one's says so, and names the
    op that stopped it where one did (its figures are what it measured until then)."""
    name = escape(case["name"])
    if not case["error"]:
        return name
    failed = case.get("failed")
    at = f" at op {failed['op']}, {failed['opcode']}" if failed else ""
    return f"{name} [red](failed{at})[/red]"


def summary_table(r: dict[str, Any]) -> Table:
    """One row per workload when several ran; else the figures of the one that did."""
    cases = r.get("cases", [])
    if len(cases) > 1:
        return _cases_table(cases, len(r["shards"]))
    name = f"{_named(cases[0])}: " if cases else ""
    t = r["throughput_pods_per_s"]
    table = Table(title=f"optimist bench: {name}{r['nodes']} nodes, {len(r['shards'])} shard(s)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("pods created", r["pods_created"]),
        ("pods scheduled", r["pods_scheduled"]),
        ("pods unschedulable", r["pods_unschedulable"]),
        ("pods pending", r.get("pods_pending", 0)),
        ("conflicts", r["conflicts"]),
        ("attempts (pods sent to shards)", r["attempts"]),
        ("attempts per pod left unschedulable (all run)", _waiting(r)),
        ("preemptions / victims (all run)", _preemptions(r)),
        ("rollbacks (in shards / at commit)", _pair(r.get("rollbacks", {}), "shard", "commit")),
        ("Redis round trips / commands per pod", _per_pod_redis(r)),
        (
            "CPU per pod: driver / shards / redis / other",
            " / ".join(f"{us:.0f}" for us in r.get("cpu_us_per_pod", {}).values()) + " us",
        ),
        (
            "shards idle",
            " / ".join(
                f"{s['idle_fraction']:.0%}"
                for s in r["shards"]
                if s.get("idle_fraction") is not None
            ),
        ),
        ("duration", f"{r['duration_s']:.2f} s"),
        ("pods/s average", f"{t['average']:.0f}"),
        ("first decision, from the start of the command", _seconds(r.get("first_decision_s"))),
        ("pods/s p50 / p90 / p99", f"{t['p50']:.0f} / {t['p90']:.0f} / {t['p99']:.0f}"),
    ]
    latency = r.get("latency_s", {}).get("created_to_bound", {})
    if latency.get("count"):
        rows.append(
            (
                "created -> bound p50 / p90 / p99",
                f"{latency['p50']:.3f} / {latency['p90']:.3f} / {latency['p99']:.3f} s",
            )
        )
    for role, peak in r.get("memory_peak_bytes", {}).items():
        rows.append((f"peak RSS {role}", f"{peak / 2**20:.0f} MiB"))
    chaos = r.get("chaos") or {}
    for kind, rec in chaos.get("recovery_s", {}).items():
        rows.append(
            (
                f"chaos {kind}: injected / recovered; recovery median / max",
                f"{rec['count']} / {rec['recovered']}; "
                f"{_seconds(rec['median_s'])} / {_seconds(rec['max_s'])}",
            )
        )
    if chaos:
        rows.append(("chaos: pods tried again for the faults", chaos["retries"]))
        rows.append(("chaos: faults stopped by", chaos["stopped"]))
    if r.get("upstream_threshold"):
        rows.append((r["upstream_threshold"]["note"], r["upstream_threshold"]["pods_per_s"]))
    for label, value in rows:
        table.add_row(label, str(value))
    for reason, count in list(r["unschedulable_reasons"].items())[:5]:
        table.add_row(f"  {reason}", str(count))
    return table


def _cases_table(cases: list[dict[str, Any]], shards: int) -> Table:
    table = Table(title=f"optimist bench: {len(cases)} workloads, {shards} shard(s)")
    for column in ("workload", "nodes", "pods", "bound", "unsched.", "pending"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for column in ("pods/s avg", "p50 / p90 / p99", "upstream threshold*"):
        table.add_column(column, justify="right")
    for c in cases:
        t = c["throughput_pods_per_s"]
        threshold = c["upstream_threshold"]
        table.add_row(
            _named(c),
            str(c["nodes"]),
            str(c["pods_created"]),
            str(c["pods_scheduled"]),
            str(c["pods_unschedulable"]),
            str(c["pods_pending"]),
            f"{t['average']:.0f}",
            f"{t['p50']:.0f} / {t['p90']:.0f} / {t['p99']:.0f}",
            f"{threshold['pods_per_s']:.0f}" if threshold else "",
        )
    table.caption = f"* {UPSTREAM_NOTE}"
    return table
