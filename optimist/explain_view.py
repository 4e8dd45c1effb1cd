"""An explanation (`cluster.explanation.Explanation`) for people: rich tables for the
terminal, and a page whose per-node table sorts by any column."""

from __future__ import annotations

import html
import json

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from cluster.explanation import Explanation, PodExplanation, Standing


def terminal(found: Explanation, top: int) -> RenderableType:
    """The pod's standing, then per pod of its unit the filters and the `top` best nodes."""
    parts: list[RenderableType] = [Text(_headline(found), style="bold")]
    unit = found.unit
    if found.standing is not None:
        parts.append(_standing(found.standing))
    if unit.error:
        parts.append(Text(f"not judged: {unit.error}", style="red"))
    gang = len(unit.pods) > 1
    if gang:
        fits = "fits now" if unit.fits else "does not fit now"
        parts.append(Text(f"gang {unit.unit}: minMember {unit.min_member}, {fits}"))
    for pod in unit.pods:
        if gang:
            parts.append(Text(f"\npod {pod.pod}", style="bold"))
        parts.extend(_pod(pod, top))
    parts.append(
        Text(
            f"judged by shard {unit.shard} at store version {unit.store_version} "
            f"in {unit.seconds * 1000:.1f} ms",
            style="dim",
        )
    )
    return Group(*parts)


def _headline(found: Explanation) -> str:
    if found.bound_to:
        return f"{found.pod}: bound to {found.bound_to} ({found.source})"
    if found.standing is not None:
        return f"{found.pod}: pending, {found.standing.state} ({found.source})"
    return f"{found.pod}: {found.source}"


def _standing(standing: Standing) -> Table:
    rows = [
        ("queue", standing.state),
        ("attempts", str(standing.attempts)),
        ("last attempt", standing.reason or "-"),
        ("rejected by", ", ".join(standing.plugins) or "-"),
        ("waits for", ", ".join(standing.waits_for) or "-"),
        ("backoff left", f"{standing.backoff_left_s:.1f} s"),
        ("waiting", f"{standing.waiting_s:.1f} s"),
        ("quota", standing.quota or "-"),
        ("preemption", standing.preemption),
    ]
    if standing.group:
        rows.insert(0, ("gang", f"{standing.group} (minMember {standing.min_member})"))
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="cyan")
    table.add_column()
    for name, value in rows:
        table.add_row(name, value)
    return table


def _pod(pod: PodExplanation, top: int) -> list[RenderableType]:
    out: list[RenderableType] = []
    filters = Table(title=f"Filter ({pod.profile}): {pod.feasible} of {pod.nodes} nodes feasible")
    filters.add_column("plugin")
    filters.add_column("rejects", justify="right")
    filters.add_column("first to", justify="right")
    filters.add_column("why")
    for f in pod.filters:
        why = ", ".join(f"{n} {r}" for r, n in sorted(f.reasons.items(), key=lambda x: -x[1]))
        filters.add_row(f.plugin, str(f.rejected), str(f.first), why)
    out.append(filters)
    if pod.summary:
        out.append(Text(pod.summary, style="red"))
    if not pod.feasible:
        return out
    scores = Table(
        title=f"Score: the best {min(top, pod.feasible)} of {pod.feasible} feasible nodes "
        f"({pod.scored} scored by the shard's search)"
    )
    scores.add_column("node")
    for s in pod.scorers:
        scores.add_column(f"{_SHORT.get(s.plugin, s.plugin)}\nw{s.weight}", justify="right")
    scores.add_column("total", justify="right")
    for v in [v for v in pod.verdicts() if v.total >= 0][:top]:
        cells = [
            f"{n}" if raw == n else f"{n} ({raw})"
            for raw, n in zip(v.raw, v.normalized, strict=True)
        ]
        name = v.node + ("" if v.scored else " ·")
        style = "bold green" if v.node == pod.chosen else None
        scores.add_row(name, *cells, str(v.total), style=style)
    scores.caption = (
        "per Score plugin (w: its weight): normalized, (raw) where it differs; "
        "· not among the nodes the shard's search scored"
    )
    out.append(scores)
    if pod.chosen:
        against = f", {pod.margin} ahead of {pod.runner_up}" if pod.runner_up else ""
        out.append(Text(f"chosen: {pod.chosen}{against}", style="green"))
    return out


# column heads narrow enough for a terminal; the page and the JSON use the full names
_SHORT = {
    "TaintToleration": "Taint",
    "NodeAffinity": "Affinity",
    "NodeResourcesFit": "Fit",
    "PodTopologySpread": "Spread",
    "InterPodAffinity": "PodAffinity",
    "NodeResourcesBalancedAllocation": "Balanced",
    "ImageLocality": "Image",
    "GPUPlacement": "GPU",
}


def page(found: Explanation) -> str:
    """A self-contained HTML page: the standing, and per pod its filters and every node
    in a table that sorts by the column clicked."""
    unit = found.unit
    body = [f"<h1>{html.escape(_headline(found))}</h1>"]
    if found.standing is not None:
        rows = "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in found.standing.to_json().items()
        )
        body.append(f"<table class=standing>{rows}</table>")
    if unit.error:
        body.append(f"<p class=bad>not judged: {html.escape(unit.error)}</p>")
    for pod in unit.pods:
        body.append(_pod_html(pod))
    body.append(
        f"<p class=dim>judged by shard {unit.shard} at store version {unit.store_version} "
        f"in {unit.seconds * 1000:.1f} ms</p>"
    )
    data = json.dumps(found.to_json()).replace("</", "<\\/")  # no early </script>
    return _PAGE.format(title=html.escape(found.pod), body="\n".join(body), data=data, script=_SORT)


def _pod_html(pod: PodExplanation) -> str:
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(f.plugin)}</td><td>{f.rejected}</td><td>{f.first}</td>"
        f"<td>{esc(', '.join(f'{n} {r}' for r, n in f.reasons.items()))}</td></tr>"
        for f in pod.filters
    )
    out = [
        f"<h2>{esc(pod.pod)} ({esc(pod.profile)}): {pod.feasible} of {pod.nodes} nodes "
        "feasible</h2>",
        "<table><tr><th>filter</th><th>rejects</th><th>first to</th><th>why</th></tr>"
        f"{rows}</table>",
    ]
    if pod.summary:
        out.append(f"<p class=bad>{esc(pod.summary)}</p>")
    if pod.chosen:
        against = f", {pod.margin} ahead of {esc(pod.runner_up)}" if pod.runner_up else ""
        out.append(f"<p class=good>chosen: {esc(pod.chosen)}{against}</p>")
    head = "".join(
        f"<th>{esc(s.plugin)} raw</th><th>{esc(s.plugin)} normalized, weight {s.weight}</th>"
        for s in pod.scorers
    )
    lines = []
    for v in pod.verdicts():
        if v.total >= 0:
            cells = "".join(
                f"<td>{r}</td><td>{n}</td>" for r, n in zip(v.raw, v.normalized, strict=True)
            )
        else:
            cells = "<td></td><td></td>" * len(pod.scorers)
        mark = " class=chosen" if v.node == pod.chosen else ""
        lines.append(
            f"<tr{mark}><td>{esc(v.node)}</td><td>{v.total}</td><td>{'yes' if v.scored else ''}"
            f"</td><td>{esc(', '.join(v.rejected_by))}</td>{cells}</tr>"
        )
    out.append(
        "<table class=sortable><thead><tr><th>node</th><th>total</th><th>scored</th>"
        f"<th>rejected by</th>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"
    )
    return "\n".join(out)


_SORT = """
for (const table of document.querySelectorAll("table.sortable")) {
  table.querySelectorAll("th").forEach((th, col) => th.addEventListener("click", () => {
    const body = table.tBodies[0], down = th.dataset.order !== "down";
    const key = (row) => row.cells[col].textContent;
    const rows = [...body.rows].sort((a, b) => {
      const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      const c = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
      return down ? -c : c;
    });
    th.dataset.order = down ? "down" : "up";
    body.append(...rows);
  }));
}
"""

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>optimist explain {title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 2px 8px; text-align: right; }}
th {{ background: #eee; }} table.sortable th {{ cursor: pointer; }}
td:first-child, th:first-child {{ text-align: left; }}
tr.chosen td {{ background: #dfd; font-weight: bold; }}
.bad {{ color: #b00; }} .good {{ color: #070; }} .dim {{ color: #777; }}
</style></head>
<body>
{body}
<script type="application/json" id="explanation">{data}</script>
<script>{script}</script>
</body></html>
"""
