"""A bench or replay report as one self-contained HTML page, its charts inline SVG.

The page opens anywhere, offline: the charts (`benchmarks.report.charts`) are in it, not
beside it. Each chart reads one key of the report and is left out when
that key is absent or empty, since reports of different commands (and
versions) carry different keys:

- `throughput_samples`: pods bound in each one-second window -> a line over time
  (or one line per workload, from each of `cases` when the run had several);
- `latency_s`: {stage: {p50, p90, p99}} in seconds -> grouped bars (a stage
  without those figures, such as a note, is left out);
- `sweep`: {"variable": name, "runs": [{"value": v, "report": {...}}]} -> average
  pods/s and attempts per pod against the variable;
- `quality` (`optimist.offline.quality`), one dict or {placement label: dict} to compare
  placements -> % of each resource stranded, and pods per zone;
- `gpu_mix_sweep` (`benchmarks.sweeps.gpu_mixes`) -> each GPU policy's unallocated
  share per workload mix, mean with the seeds' sd as error bars, and per mix the
  table of figures and of the failed GPU requests by kind of task;
- `cases` with `schedulers` (`optimist bench --cluster apiserver`) ->
  pods/s of each scheduler per workload, and each workload's table of figures
  (the rows the terminal shows);
- `cases` of a bench, or `runs` of the API bench -> a row per workload run: its
  name, its headline figures and its error (a failed one's figures are what it
  measured until it failed).

Every text from the report is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from benchmarks.report.api_report import ApiCaseComparison
from benchmarks.report.charts import Series, bar_chart, line_chart, svg
from benchmarks.report.instruments import comparison_rows

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STRANDED = (("cpu", "CPU"), ("memory", "memory"), ("nvidia.com/gpu", "GPU"))
PERCENTILES = ("p50", "p90", "p99")

# (label, key path, format) of the headline figures, in the order shown
HEADLINES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("pods created", ("pods_created",), "{:,}"),
    ("pods scheduled", ("pods_scheduled",), "{:,}"),
    ("pods unschedulable", ("pods_unschedulable",), "{:,}"),
    ("pods replayed", ("pods_replayed",), "{:,}"),
    ("pods placed", ("pods_placed",), "{:,}"),
    ("pods not placed", ("pods_unplaced",), "{:,}"),
    ("pods moved", ("pods_moved",), "{:,}"),
    ("pods placed that were pending", ("pods_newly_placed",), "{:,}"),
    ("conflicts", ("conflicts",), "{:,}"),
    ("attempts per pod", ("attempts_per_pod",), "{:.2f}"),
    ("Redis round trips per pod", ("redis_round_trips_per_pod",), "{:.2f}"),
    ("Redis commands per pod", ("redis_commands_per_pod",), "{:.2f}"),
    ("rollbacks in shards", ("rollbacks", "shard"), "{:,}"),
    ("rollbacks at commit", ("rollbacks", "commit"), "{:,}"),
    ("duration", ("duration_s",), "{:.2f} s"),
    ("pods/s average", ("throughput_pods_per_s", "average"), "{:,.0f}"),
    ("pods/s p50", ("throughput_pods_per_s", "p50"), "{:,.0f}"),
    ("pods/s p90", ("throughput_pods_per_s", "p90"), "{:,.0f}"),
    ("pods/s p99", ("throughput_pods_per_s", "p99"), "{:,.0f}"),
)
# the headline figures a workload's row shows
WORKLOAD_FIGURES = tuple(
    h
    for h in HEADLINES
    if h[0]
    in ("pods created", "pods scheduled", "pods unschedulable", "duration", "pods/s average")
)


def write_html(report: Mapping[str, Any], path: Path) -> None:
    """Write the report's page to `path`."""
    path.write_text(render_html(report), encoding="utf-8")


def render_html(report: Mapping[str, Any]) -> str:
    """The page: headline figures, then every chart whose key the report has."""
    title = "optimist bench"
    if "pods_replayed" in report:
        title = "optimist replay"
    elif "gpu_mix_sweep" in report:
        title = "GPU policies on workload mixes"
    elif "happenings" in report:
        title = "a day in a living cluster"
    parts = [f"<h1>{escape(title)}</h1>", _headlines(report)]
    sections = (_workloads, _throughput, _latency, _sweep, _quality, _comparison, _gpu_mixes, _day)
    for chart in sections:
        parts.extend(chart(report))
    body = "\n".join(p for p in parts if p)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:60em}"
    "table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}"
    "td.n{text-align:right}svg{display:block;margin:1em 0}"
)


# --- the sections ------------------------------------------------------------


def _headlines(report: Mapping[str, Any]) -> str:
    rows = [
        (label, shown) for label, path, fmt in HEADLINES if (shown := _figure(report, path, fmt))
    ]
    for key in ("config", "machine", "versions"):
        if isinstance(report.get(key), Mapping):
            rows.append((key, _summary(report[key])))
    if not rows:
        return ""
    cells = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    return f"<h2>Headline figures</h2>\n<table>{cells}</table>"


def _workloads(report: Mapping[str, Any]) -> list[str]:
    """A row per workload run, named as the terminal names it (the scheduler and the
    round beside it through the API server)."""
    runs = [
        r
        for r in report.get("runs") or report.get("cases") or []
        if isinstance(r, Mapping) and "error" in r
    ]
    if not runs:
        return []
    head = "".join(f"<th>{escape(label)}</th>" for label, _, _ in WORKLOAD_FIGURES)
    rows = "".join(
        f"<tr><th>{escape(_run_name(r))}</th>"
        + "".join(f'<td class="n">{escape(_figure(r, p, f))}</td>' for _, p, f in WORKLOAD_FIGURES)
        + f"<td>{escape(str(r['error'] or ''))}</td></tr>"
        for r in runs
    )
    return [
        "<h2>Workloads</h2>",
        f"<table><tr><th>workload</th>{head}<th>error</th></tr>{rows}</table>",
    ]


def _throughput(report: Mapping[str, Any]) -> list[str]:
    """One line for the run, or one per workload when several ran (`cases`)."""
    series = [Series("pods/s", _numbers(report.get("throughput_samples")))]
    if not series[0].values and isinstance(report.get("cases"), list):
        series = [
            Series(str(c.get("name", i)), _numbers(c.get("throughput_samples")))
            for i, c in enumerate(report["cases"])
            if isinstance(c, Mapping)
        ]
    series = [s for s in series if s.values]
    if not series:
        return []
    chart = line_chart("pods bound per one-second window", "seconds since start", series)
    return ["<h2>Throughput over time</h2>", svg(chart)]


def _latency(report: Mapping[str, Any]) -> list[str]:
    latency = report.get("latency_s")
    if not isinstance(latency, Mapping):
        return []
    # stages with figures: a stage may also be a note saying why it is not measured
    stages = [s for s in latency if _has_percentiles(latency[s])]
    if not stages:
        return []
    series = [Series(p, [_number(_get(latency, (s, p))) for s in stages]) for p in PERCENTILES]
    chart = bar_chart("latency percentiles (seconds)", [str(s) for s in stages], series)
    return ["<h2>Latency</h2>", svg(chart)]


def _sweep(report: Mapping[str, Any]) -> list[str]:
    sweep = report.get("sweep")
    if not isinstance(sweep, Mapping):
        return []
    runs = [r for r in sweep.get("runs") or [] if isinstance(r, Mapping)]
    if not runs:
        return []
    variable = str(sweep.get("variable", "value"))
    ticks = [(float(i), str(r.get("value"))) for i, r in enumerate(runs)]

    def figure(path: tuple[str, ...]) -> list[float | None]:
        return [_number(_get(r, ("report", *path))) for r in runs]

    pods_per_s = Series("pods/s", figure(("throughput_pods_per_s", "average")))
    attempts = Series("attempts", figure(("attempts_per_pod",)))
    return [
        f"<h2>Scaling: {escape(variable)}</h2>",
        svg(line_chart("average pods/s", variable, [pods_per_s], ticks=ticks)),
        svg(line_chart("attempts per pod", variable, [attempts], ticks=ticks)),
    ]


def _comparison(report: Mapping[str, Any]) -> list[str]:
    ceiling = _get(report, ("ceiling_pods_per_s", "median"))
    cases = [c for c in report.get("cases") or [] if isinstance(c, Mapping) and "schedulers" in c]
    if not cases:
        return []
    schedulers = list(cases[0]["schedulers"])
    series = [
        Series(s, [_number(_get(c, ("schedulers", s, "pods_per_s"))) for c in cases])
        for s in schedulers
    ]
    parts = [
        "<h2>Through a real kube-apiserver</h2>",
        svg(bar_chart("pods/s (median of the rounds)", [str(c["name"]) for c in cases], series)),
    ]
    for case in _typed_cases(cases):
        head = "".join(f"<th>{escape(s)}</th>" for s in case.schedulers)
        rows = "".join(
            f"<tr><th>{escape(label)}</th>"
            + "".join(f'<td class="n">{escape(cell)}</td>' for cell in cells)
            + "</tr>"
            for label, cells in comparison_rows(
                case, float(ceiling) if isinstance(ceiling, int | float) else None
            )
        )
        parts.append(f"<h3>{escape(case.name)}</h3>\n<table><tr><th></th>{head}</tr>{rows}</table>")
    return parts


def _typed_cases(cases: list[Mapping[str, Any]]) -> list[ApiCaseComparison]:
    """The workloads whose figures read as the API bench's (`ApiCaseComparison`); a file
    of another shape keeps its chart and goes without their tables."""
    typed = []
    for case in cases:
        try:
            typed.append(ApiCaseComparison.model_validate(case))
        except ValidationError:
            continue
    return typed


def _quality(report: Mapping[str, Any]) -> list[str]:
    quality = report.get("quality")
    if not isinstance(quality, Mapping) or not quality:
        return []
    placements = {"placement": quality} if "resources" in quality else dict(quality)
    placements = {str(k): q for k, q in placements.items() if isinstance(q, Mapping)}
    stranded = [
        Series(label, [_percent(q, resource) for resource, _ in STRANDED])
        for label, q in placements.items()
    ]
    zones = sorted({z for q in placements.values() for z in (_get(q, ("zones", "pods")) or {})})
    out = [
        "<h2>Placement quality</h2>",
        svg(
            bar_chart(
                "stranded: % of allocatable that no pending pod shape can use",
                [name for _, name in STRANDED],
                stranded,
            )
        ),
        _quality_table(placements),
    ]
    if zones:
        per_zone = [
            Series(label, [_number(_get(q, ("zones", "pods", z))) for z in zones])
            for label, q in placements.items()
        ]
        out.append(svg(bar_chart("pods per zone", zones, per_zone)))
    return out


def gpu_mix_chart(sweep: Mapping[str, Any]) -> Figure | None:
    """Each policy's unallocated GPU share per mix, the seeds' sd as error bars."""
    mixes = [m for m in sweep.get("mixes") or [] if isinstance(m, Mapping)]
    policies = [str(p) for p in sweep.get("policies") or []]
    if not mixes or not policies:
        return None

    def each(policy: str, key: str) -> list[float | None]:
        return [_number(_get(m, ("policies", policy, key))) for m in mixes]

    return bar_chart(
        f"unallocated GPUs at 100% arrived, mean and sd over {len(sweep.get('seeds') or [])} seeds",
        [str(m.get("mix")) for m in mixes],
        [Series(p, each(p, "mean"), errors=each(p, "sd")) for p in policies],
        y_label="% of GPU capacity",
    )


def _gpu_mixes(report: Mapping[str, Any]) -> list[str]:
    sweep = report.get("gpu_mix_sweep")
    chart = gpu_mix_chart(sweep) if isinstance(sweep, Mapping) else None
    if sweep is None or chart is None:
        return []
    mixes = [m for m in sweep["mixes"] if isinstance(m, Mapping)]
    policies = [str(p) for p in sweep["policies"]]
    head = "".join(f"<th>{escape(p)}</th>" for p in policies)
    rows = []
    for m in mixes:
        cells = []
        for p in policies:
            mean, sd = _number(_get(m, ("policies", p, "mean"))), _get(m, ("policies", p, "sd"))
            verdict = _get(m, ("policies", p, "vs_first", "verdict"))
            note = f" ({verdict})" if p != policies[0] and verdict else ""
            shown = f"{mean:.2f}% ± {_number(sd) or 0.0:.2f}" if mean is not None else ""
            cells.append(shown + note)
        rows.append(
            f"<tr><th>{escape(str(m.get('mix')))}</th>"
            + "".join(f'<td class="n">{escape(c)}</td>' for c in cells)
            + "</tr>"
        )
    return [
        "<h2>GPU policies on workload mixes</h2>",
        svg(chart),
        f"<p>Differences are paired by seed against {escape(policies[0])}.</p>",
        f"<table><tr><th>mix</th>{head}</tr>{''.join(rows)}</table>",
        *(_failed_table(m, policies) for m in mixes),
    ]


def _failed_table(mix: Mapping[str, Any], policies: Sequence[str]) -> str:
    """Per kind of task, the GPU requests that failed before 100% arrived."""
    failed = {p: _get(mix, ("policies", p, "failed_pct")) or {} for p in policies}
    kinds = sorted({str(k) for f in failed.values() for k in f})
    head = "".join(f"<th>{escape(p)}</th>" for p in policies)
    body = "".join(
        f"<tr><th>{escape(kind)}</th>"
        + "".join(f'<td class="n">{_number(failed[p].get(kind)) or 0.0:.2f}</td>' for p in policies)
        + "</tr>"
        for kind in kinds
    )
    title = f"{mix.get('mix')}: GPU requests failed before 100% arrived, % of capacity"
    return f"<h3>{escape(title)}</h3>\n<table><tr><th>kind</th>{head}</tr>{body}</table>"


def _quality_table(placements: Mapping[str, Mapping[str, Any]]) -> str:
    rows: list[tuple[str, Callable[[Mapping[str, Any]], object]]] = [
        ("CPU stranded (cores)", lambda q: _scaled(q, ("resources", "cpu", "stranded"), 1000)),
        ("memory stranded (GiB)", lambda q: _scaled(q, ("resources", "memory", "stranded"), 2**30)),
        ("GPUs stranded", lambda q: _get(q, ("resources", "nvidia.com/gpu", "stranded"))),
        ("whole free nodes", lambda q: q.get("whole_free_nodes")),
        ("whole free 8-GPU nodes", lambda q: q.get("whole_free_gpu8_nodes")),
        ("zone skew (pods)", lambda q: _get(q, ("zones", "skew"))),
    ]
    head = "".join(f"<th>{escape(label)}</th>" for label in placements)
    body = "".join(
        f"<tr><th>{escape(name)}</th>"
        + "".join(f'<td class="n">{escape(_text(value(q)))}</td>' for q in placements.values())
        + "</tr>"
        for name, value in rows
    )
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


# --- reading the report --------------------------------------------------------


# (title, y label, series key) of the day's charts over time, a line per scheduler
DAY_CHARTS = (
    ("pods bound per second", "pods", ("bound",)),
    (
        "the oldest pod still waiting (made to fit nowhere: left out)",
        "seconds",
        ("oldest_pending_s",),
    ),
    ("pods in the active queue", "pods", ("pending", "active")),
    ("pods in the backoff queue", "pods", ("pending", "backoff")),
    ("pods in the unschedulable queue", "pods", ("pending", "unschedulable")),
    ("conflicts so far", "conflicts", ("conflicts",)),
    ("scheduler CPU per second", "CPU seconds", ("scheduler_cpu_s",)),
)


def _day(report: Mapping[str, Any]) -> list[str]:
    """`optimist day`: each figure over the day, a line per scheduler, and what happened."""
    lived = [s for s in report.get("schedulers") or [] if isinstance(s, Mapping) and "series" in s]
    if not lived:
        return []
    parts = ["<h2>The day, second by second</h2>"]
    for title, y_label, path in DAY_CHARTS:
        series = [
            Series(
                str(s["scheduler"]),
                _numbers(_get(s["series"], path)),
                [float(t) for t in s["series"]["t_s"]],
            )
            for s in lived
        ]
        chart = line_chart(title, "seconds into the day", series, y_label=y_label)
        parts.append(svg(chart))
    happened = lived[0].get("happened") or []
    rows = "".join(
        f'<tr><td class="n">{t:g}</td><td>{escape(str(what))}</td></tr>' for t, what in happened
    )
    parts += ["<h2>What happened</h2>", f"<table><tr><th>s</th><th>what</th></tr>{rows}</table>"]
    return parts


def _get(data: object, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _figure(data: Mapping[str, Any], path: Sequence[str], fmt: str) -> str:
    """The number at `path`, formatted; "" where there is none."""
    value = _get(data, path)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return fmt.format(value)
    return ""


def _run_name(run: Mapping[str, Any]) -> str:
    if "scheduler" in run:
        return f"{run['name']} [{run['scheduler']}, round {run['round'] + 1}]"
    return str(run["name"])


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _numbers(value: object) -> list[float | None]:
    return [_number(v) for v in value] if isinstance(value, list) else []


def _has_percentiles(figures: object) -> bool:
    return any(_number(_get(figures, (p,))) is not None for p in PERCENTILES)


def _percent(quality: Mapping[str, Any], resource: str) -> float | None:
    stranded = _number(_get(quality, ("resources", resource, "stranded")))
    allocatable = _number(_get(quality, ("resources", resource, "allocatable")))
    if stranded is None or not allocatable:
        return None
    return 100 * stranded / allocatable


def _scaled(quality: Mapping[str, Any], path: Sequence[str], unit: int) -> str:
    value = _number(_get(quality, path))
    return "" if value is None else f"{value / unit:,.1f}"


def _text(value: object) -> str:
    """A number as people read it: thousands separated, a few significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"


def _summary(values: Mapping[str, Any]) -> str:
    """A nested dict on one line: scalars as key=value, lists and maps by their size."""
    items = []
    for key, value in values.items():
        if isinstance(value, list | Mapping):
            value = f"({len(value)})"
        items.append(f"{key}={value}")
    return ", ".join(items)
