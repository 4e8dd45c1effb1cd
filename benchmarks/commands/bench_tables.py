"""The bench's figures as the terminal shows them."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from benchmarks.report.bench_report import (
    BenchReport,
    CaseReport,
    ChaosFigures,
    ExplainFigures,
    QueueFigures,
    SweepReport,
)
from benchmarks.simulated.sim_bench import (
    UPSTREAM_NOTE,
)


def sweep_table(r: SweepReport) -> Table:
    """One row per value of the swept setting: the figures to compare."""
    name = r.sweep.variable
    table = Table(title=f"optimist bench --sweep {name}")
    for column in (name, "pods/s avg", "p50 / p90 / p99", "attempts/pod", "conflicts/unit"):
        table.add_column(column, justify="right")
    for run in r.sweep.runs:
        x = run.report.figures
        t = x.throughput_pods_per_s
        # a run of several workloads pools no conflicts per unit: 0, as it always showed
        per_unit = x.conflicts_per_committed_unit if isinstance(x, CaseReport) else 0.0
        table.add_row(
            str(run.value),
            f"{t.average:.0f}",
            f"{t.p50:.0f} / {t.p90:.0f} / {t.p99:.0f}",
            f"{x.attempts_per_pod:.3f}",
            f"{per_unit:.3f}",
        )
    return table


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}"


def explained(case: str, probe: ExplainFigures) -> str:
    """One line on what explaining pods mid-run took (`--explain-every`)."""
    waited, judged = probe.waited_s, probe.judged_s
    if not waited.count:
        return f"{case}: explain: no call answered ({'; '.join(probe.errors) or 'no pod yet'})"
    return (
        f"{case}: explain: {waited.count} calls at {probe.nodes} nodes; waited p50 "
        f"{_ms(waited.p50)} ms, max {_ms(waited.max)} ms; the shard judged "
        f"in p50 {_ms(judged.p50)} ms, max {_ms(judged.max)} ms"
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _waiting(queue: QueueFigures) -> str:
    if not queue.waiting_pods:
        return "-"
    return f"{queue.attempts_per_waiting_pod:.2f} ({queue.waiting_pods} pods)"


def _preemptions(queue: QueueFigures) -> str:
    p = queue.preemption
    return f"{p.preemptions} / {p.victims}" if p.attempts else "-"


def _named(case: CaseReport) -> str:
    """A workload's name as the tables show it; a failed one's says so, and names the
    op that stopped it where one did (its figures are what it measured until then)."""
    name = escape(case.name)
    if not case.error:
        return name
    failed = case.failed
    at = f" at op {failed.op}, {failed.opcode}" if failed else ""
    return f"{name} [red](failed{at})[/red]"


def summary_table(r: BenchReport) -> Table:
    """One row per workload when several ran; else the figures of the one that did (the
    run's own: `BenchReport.figures`)."""
    if len(r.cases) > 1:
        return _cases_table(r.cases, len(r.figures.shards))
    [case] = r.cases
    t = case.throughput_pods_per_s
    table = Table(
        title=f"optimist bench: {_named(case)}: {case.nodes} nodes, {len(case.shards)} shard(s)"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows: list[tuple[str, object]] = [
        ("pods created", case.pods_created),
        ("pods scheduled", case.pods_scheduled),
        ("pods unschedulable", case.pods_unschedulable),
        ("pods pending", case.pods_pending),
        ("conflicts", case.conflicts),
        ("attempts (pods sent to shards)", case.attempts),
        ("attempts per pod left unschedulable (all run)", _waiting(case.queue)),
        ("preemptions / victims (all run)", _preemptions(case.queue)),
        ("rollbacks (in shards / at commit)", f"{case.rollbacks.shard} / {case.rollbacks.commit}"),
        (
            "Redis round trips / commands per pod",
            f"{case.redis_round_trips_per_pod:.3f} / {case.redis_commands_per_pod:.1f}",
        ),
        (
            "CPU per pod: driver / shards / redis / other",
            " / ".join(f"{us:.0f}" for us in case.cpu_us_per_pod.values()) + " us",
        ),
        (
            "shards idle",
            " / ".join(
                f"{s.idle_fraction:.0%}" for s in case.shards if s.idle_fraction is not None
            ),
        ),
        ("duration", f"{case.duration_s:.2f} s"),
        ("pods/s average", f"{t.average:.0f}"),
        ("first decision, from the start of the command", _seconds(case.first_decision_s)),
        ("pods/s p50 / p90 / p99", f"{t.p50:.0f} / {t.p90:.0f} / {t.p99:.0f}"),
        *_latency_and_memory(case),
        *chaos_rows(case.chaos),
    ]
    if case.upstream_threshold:
        rows.append((case.upstream_threshold.note, case.upstream_threshold.pods_per_s))
    for label, value in rows:
        table.add_row(label, str(value))
    for reason, count in list(case.unschedulable_reasons.items())[:5]:
        table.add_row(f"  {reason}", str(count))
    return table


def _latency_and_memory(case: CaseReport) -> list[tuple[str, object]]:
    """A bound pod's time from created to bound, and each role's peak memory."""
    rows: list[tuple[str, object]] = []
    latency = case.latency_s.get("created_to_bound")
    if latency and latency.count:
        rows.append(
            (
                "created -> bound p50 / p90 / p99",
                f"{latency.p50:.3f} / {latency.p90:.3f} / {latency.p99:.3f} s",
            )
        )
    for role, peak in case.memory_peak_bytes.items():
        rows.append((f"peak RSS {role}", f"{peak / 2**20:.0f} MiB"))
    return rows


def chaos_rows(chaos: ChaosFigures | None) -> list[tuple[str, object]]:
    """The faults injected (`--chaos`) and how long the platform took to recover."""
    if chaos is None:
        return []
    rows: list[tuple[str, object]] = []
    for kind, rec in chaos.recovery_s.items():
        rows.append(
            (
                f"chaos {kind}: injected / recovered; recovery median / max",
                f"{rec.count} / {rec.recovered}; {_seconds(rec.median_s)} / {_seconds(rec.max_s)}",
            )
        )
        if rec.stall_max_s is not None:
            rows.append(
                (
                    f"chaos {kind}: longest pause in bindings after it, median / max",
                    f"{_seconds(rec.stall_median_s)} / {_seconds(rec.stall_max_s)}",
                )
            )
    if chaos.retries is not None:
        rows.append(("chaos: pods tried again for the faults", chaos.retries))
    rows.append(("chaos: faults stopped by", chaos.stopped))
    return rows


def _cases_table(cases: list[CaseReport], shards: int) -> Table:
    table = Table(title=f"optimist bench: {len(cases)} workloads, {shards} shard(s)")
    for column in ("workload", "nodes", "pods", "bound", "unsched.", "pending"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for column in ("pods/s avg", "p50 / p90 / p99", "upstream threshold*"):
        table.add_column(column, justify="right")
    for c in cases:
        t = c.throughput_pods_per_s
        threshold = c.upstream_threshold
        table.add_row(
            _named(c),
            str(c.nodes),
            str(c.pods_created),
            str(c.pods_scheduled),
            str(c.pods_unschedulable),
            str(c.pods_pending),
            f"{t.average:.0f}",
            f"{t.p50:.0f} / {t.p90:.0f} / {t.p99:.0f}",
            f"{threshold.pods_per_s:.0f}" if threshold else "",
        )
    table.caption = f"* {UPSTREAM_NOTE}"
    return table
