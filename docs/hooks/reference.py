"""Reference pages made from the code each time the site builds, so they cannot drift:
every command and option (the typer app), every metric (the registry), and every
plugin with its extension points against kube-scheduler v1.30's."""

from __future__ import annotations

from typing import Any

import typer
from mkdocs.structure.files import File, Files
from prometheus_client.metrics import MetricWrapperBase

from optimist.cli import app
from optimist.configuration.plugins import (
    DEFAULT_MULTI_POINT,
    HANDLED_OUTSIDE_SHARDS,
    UPSTREAM_PLUGINS,
    inactive_reason,
)
from optimist.metrics import ApiSample, SchedulerMetrics
from shards.plugins.registry import REGISTRY, filter_plugins, score_plugins


def on_files(files: Files, config: Any) -> Files:
    for name, text in (
        ("reference/cli.md", cli_page()),
        ("reference/metrics.md", metrics_page()),
        ("reference/plugins.md", plugins_page()),
    ):
        files.append(File.generated(config, name, content=text))
    return files


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def cli_page() -> str:
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    out = ["# Commands", "", "Made from the command line's own definitions (`optimist/cli.py`)."]
    for name in sorted(commands):
        command = commands[name]
        out += ["", f"## `optimist {name}`", "", _cell(command.help or "")]
        params = [p for p in command.params if p.name != "help"]
        if not params:
            continue
        out += ["", "| argument or option | default | meaning |", "|---|---|---|"]
        for p in params:
            option = p.param_type_name == "option"
            flags = ", ".join(f"`{o}`" for o in (p.opts if option else [(p.name or "").upper()]))
            default = (
                "" if p.default in (None, False, ()) or callable(p.default) else f"`{p.default}`"
            )
            meaning = getattr(p, "help", "") or ""
            out.append(f"| {flags} | {_cell(default)} | {_cell(meaning)} |")
    return "\n".join(out) + "\n"


def metrics_page() -> str:
    out = [
        "# Metrics",
        "",
        "Every metric `optimist run` serves at `/metrics`, read from its registry",
        "(`optimist/metrics.py`).",
        "",
        "| name | type | labels | meaning |",
        "|---|---|---|---|",
    ]
    metrics = SchedulerMetrics()
    metrics.watch_api(ApiSample)  # the adapter's, served by `optimist run` only
    # a family's label names before any series has them: prometheus_client keeps them on
    # the metric (a wrapper) or the family (a collector's) only
    labels = {
        m._name: m._labelnames for m in vars(metrics).values() if isinstance(m, MetricWrapperBase)
    }
    for family in sorted(metrics.registry.collect(), key=lambda f: f.name):
        name = family.name + ("_total" if family.type == "counter" else "")
        known = labels.get(family.name) or getattr(family, "_labelnames", ())
        shown = ", ".join(f"`{label}`" for label in known)
        out.append(f"| `{name}` | {family.type} | {shown} | {_cell(family.documentation)} |")
    return "\n".join(out) + "\n"


def plugins_page() -> str:
    filters, scores = filter_plugins(), score_plugins()
    default = dict(DEFAULT_MULTI_POINT)
    out = [
        "# Plugins",
        "",
        "kube-scheduler v1.30's in-tree plugins and optimist's own, from the registry",
        "(`shards/plugins/registry.py`) and the configuration's plugin table",
        "(`optimist/configuration/plugins.py`).",
        "",
        "| plugin | v1.30 extension points | in v1.30's default profile (weight) | optimist |",
        "|---|---|---|---|",
    ]
    for name in sorted(UPSTREAM_PLUGINS.keys() | REGISTRY.keys()):
        points = ", ".join(sorted(UPSTREAM_PLUGINS.get(name, ()))) or "(optimist's own)"
        weight = default.get(name, "")
        in_default = "" if name not in default else ("yes" if weight is None else f"yes ({weight})")
        if name in REGISTRY:
            served = [p for p, s in (("Filter", filters), ("Score", scores)) if name in s]
            status = "runs in the shards: " + ", ".join(served)
        elif name in HANDLED_OUTSIDE_SHARDS:
            status = HANDLED_OUTSIDE_SHARDS[name][1]
        else:
            status = f"inactive: {inactive_reason(name)}"
        out.append(f"| `{name}` | {points} | {in_default} | {_cell(status)} |")
    return "\n".join(out) + "\n"
