"""Charts, drawn by matplotlib: inline SVG for the HTML report, PNG for a file.

A `Figure` of its own per chart, never pyplot: no global state and no GUI
backend, so a chart can be drawn from any thread or a machine without a
display. matplotlib is imported here only, on the first chart: commands that
draw none do not pay its second of import.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

SIZE_IN = (6.4, 3.0)  # a chart's width and height, in inches at 100 dpi
# what makes the SVG inline text, not glyph outlines, and the same bytes for the same chart
_SVG_STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "svg.hashsalt": "optimist"}


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    values: Sequence[float | None]  # one per x position; None leaves a gap
    x: Sequence[float] | None = None  # each value's x; 0, 1, ... when None
    errors: Sequence[float | None] | None = None  # each value's error bar (half its height)


def line_chart(
    title: str,
    x_label: str,
    series: Sequence[Series],
    *,
    y_label: str = "",
    ticks: Sequence[tuple[float, str]] = (),
) -> Figure:
    """Lines, with a marker on each value while there are few, and labelled x ticks."""
    figure, axes = _axes(title, x_label, y_label)
    for s in series:
        xs = s.x if s.x is not None else range(len(s.values))
        points = [(x, v) for x, v in zip(xs, s.values, strict=True) if v is not None]
        marker = "o" if len(points) <= 50 else ""
        axes.plot(
            [x for x, _ in points], [v for _, v in points], marker=marker, ms=3, label=s.label
        )
    if ticks:
        axes.set_xticks([x for x, _ in ticks], [label for _, label in ticks])
    elif all(s.x is None for s in series):  # positions 0, 1, ...: no tick between two
        from matplotlib.ticker import MaxNLocator

        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    return _finished(figure, axes, series)


def bar_chart(
    title: str, categories: Sequence[str], series: Sequence[Series], *, y_label: str = ""
) -> Figure:
    """Bars grouped by category, one bar per series, with error bars where it has them."""
    figure, axes = _axes(title, "", y_label)
    width = 0.8 / max(len(series), 1)
    for k, s in enumerate(series):
        errors = s.errors or [None] * len(s.values)
        bars = [
            (c, v, e or 0.0)
            for c, (v, e) in enumerate(zip(s.values, errors, strict=True))
            if v is not None
        ]
        offset = (k - (len(series) - 1) / 2) * width
        axes.bar(
            [c + offset for c, _, _ in bars],
            [v for _, v, _ in bars],
            width,
            yerr=[e for _, _, e in bars] if s.errors else None,
            capsize=2 if s.errors else 0,
            label=s.label,
        )
    if sum(len(c) + 2 for c in categories) > 80:  # too long to stand side by side
        figure.set_size_inches(max(SIZE_IN[0], 0.45 * len(categories)), SIZE_IN[1])
        axes.set_xticks(
            range(len(categories)),
            list(categories),
            rotation=35,
            ha="right",
            rotation_mode="anchor",
            fontsize=8,
        )
    else:
        axes.set_xticks(range(len(categories)), list(categories))
    return _finished(figure, axes, series)


def svg(figure: Figure) -> str:
    """The chart as an `<svg>` element, to be placed in a page."""
    from matplotlib import rc_context

    out = io.StringIO()
    with rc_context(_SVG_STYLE):
        figure.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg") :]  # without the XML prolog, which a page must not have


def save_png(figure: Figure, path: Path) -> None:
    figure.savefig(path, format="png", dpi=100, bbox_inches="tight")


def _axes(title: str, x_label: str, y_label: str) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=SIZE_IN)
    axes = figure.subplots()
    axes.set_title(title, loc="left", fontsize=10, fontweight="bold")
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    axes.grid(axis="y", color="#e5e5e5")
    axes.set_axisbelow(True)
    axes.spines[["top", "right"]].set_visible(False)
    return figure, axes


def _finished(figure: Figure, axes: Axes, series: Sequence[Series]) -> Figure:
    axes.set_ylim(bottom=0)
    if len(series) > 1:
        axes.legend(frameon=False, fontsize=8)
    return figure
