"""Pages made each time the site builds, so they cannot drift: every command and option
(the typer app), every configuration field (the models), every metric (the registry),
every plugin with its extension points against kube-scheduler v1.30's, and every
result file under docs/results/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import typer
from mkdocs.structure.files import File, Files
from prometheus_client.metrics import MetricWrapperBase
from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from benchmarks.report.instruments import report_cases
from cluster.durations import GoDuration
from optimist.cli.main import app
from optimist.configuration import KubeSchedulerConfiguration, OptimistOptions
from optimist.configuration.arg_readers import ARG_MODELS
from optimist.configuration.model_reader import field_model
from optimist.configuration.plugins import (
    DEFAULT_MULTI_POINT,
    HANDLED_OUTSIDE_SHARDS,
    UPSTREAM_PLUGINS,
    inactive_reason,
    point_title,
)
from optimist.metrics.definitions import ApiSample, SchedulerMetrics
from optimist.offline.provenance import short_commit
from shards.plugins.registry import REGISTRY, filter_plugins, score_plugins


def on_files(files: Files, config: Any) -> Files:
    for name, text in (
        ("reference/cli.md", cli_page()),
        ("reference/configuration.md", configuration_page()),
        ("reference/metrics.md", metrics_page()),
        ("reference/plugins.md", plugins_page()),
        ("results.md", results_page(Path(config["docs_dir"]) / "results")),
    ):
        files.append(File.generated(config, name, content=text))
    return files


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def cli_page() -> str:
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    made = "Made from the command line's own definitions (`optimist/cli/`; the harness's"
    out = ["# Commands", "", f"{made} commands in `benchmarks/commands/`)."]
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
        "(`optimist/metrics/definitions.py`).",
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
        outside = HANDLED_OUTSIDE_SHARDS.get(name)
        if name in REGISTRY:
            served = [p for p, s in (("Filter", filters), ("Score", scores)) if name in s]
            status = "runs in the shards: " + ", ".join(served)
            if outside is not None:
                status += f"; {', '.join(map(point_title, outside[0]))}: {outside[1]}"
        elif outside is not None:
            status = outside[1]
        else:
            status = f"inactive: {inactive_reason(name)}"
        out.append(f"| `{name}` | {points} | {in_default} | {_cell(status)} |")
    out += ["", "## Arguments", "", "Read from each plugin's typed model, beside the plugin."]
    for name, model in sorted(ARG_MODELS.items()):
        out += ["", f"### {name}", *_model_tables(model)]
    return "\n".join(out) + "\n"


def configuration_page() -> str:
    return (
        "\n".join(
            [
                "# Configuration fields",
                "",
                "Every field of the two documents a configuration file holds, read from the",
                "models the loader reads the file into (`optimist/configuration/`). Names are",
                "as the file writes them; a field left out, or null, takes its default.",
                "How the two documents fit together: [Configuration](../configuration.md).",
                "",
                "## KubeSchedulerConfiguration",
                "",
                "`apiVersion: kubescheduler.config.k8s.io/v1`, as kube-scheduler v1.30 reads it.",
                *_model_tables(KubeSchedulerConfiguration),
                "",
                "### A profile",
                "",
                "`profiles[]` are merged into v1.30's default plugins as kube-scheduler does,",
                "so they are read by the loader rather than a model:",
                "",
                "| field | type | default | meaning |",
                "|---|---|---|---|",
                "| `schedulerName` | string | `default-scheduler` when there is one profile "
                "| the pods' `spec.schedulerName` this profile schedules |",
                "| `percentageOfNodesToScore` | integer, 0 to 100 | the file's | "
                "this profile's share of feasible nodes to score |",
                "| `plugins.<point>.enabled[]` | `{name, weight}` | | plugins added at an "
                "extension point (`multiPoint`, `queueSort`, `preFilter`, `filter`, `postFilter`, "
                "`preScore`, `score`, `reserve`, `permit`, `preBind`, `bind`, `postBind`) |",
                "| `plugins.<point>.disabled[]` | `{name}` | | plugins taken out there "
                '(`"*"`: all of the defaults) |',
                "| `pluginConfig[]` | `{name, args}` | | a plugin's arguments: "
                "[each plugin's](plugins.md#arguments) |",
                "",
                "## OptimistConfiguration",
                "",
                "`apiVersion: optimist.io/v1alpha1`, optional, after the first document.",
                *_model_tables(OptimistOptions),
            ]
        )
        + "\n"
    )


def _model_tables(model: type[BaseModel]) -> list[str]:
    """A table of the model's fields, then one for each model its fields hold."""
    out: list[str] = []
    for part in _models_within(model):
        heading = [] if part is model else ["", f"`{part.__name__}`:"]
        out += [*heading, "", "| field | type | default | meaning |", "|---|---|---|---|"]
        for field_name, f in part.model_fields.items():
            out.append(
                f"| `{f.alias or field_name}` | {_type_name(f.annotation)} | "
                f"{_default(f)} | {_cell(f.description or '')} |"
            )
    return out


def _models_within(model: type[BaseModel]) -> list[type[BaseModel]]:
    """The model, then every model its fields hold (in lists and optionals too)."""
    found = [model]
    for part in found:
        for name in part.model_fields:
            kind = field_model(part, name)
            if kind is not None and kind not in found:
                found.append(kind)
    return found


def _type_name(annotation: Any) -> str:
    if get_origin(annotation) is Literal:
        return " or ".join(f"`{a}`" for a in get_args(annotation))
    if annotation is type(None):
        return "(none accepted)"
    if annotation is GoDuration:
        return "duration"
    if annotation is Any:
        return "any value"
    inner = [a for a in get_args(annotation) if a is not type(None) and a is not Ellipsis]
    if get_origin(annotation) in (list, tuple):
        return f"list of {_type_name(inner[0])}"
    if get_origin(annotation) is dict:
        return f"map of {_type_name(inner[0])} to {_type_name(inner[1])}"
    if inner:  # Annotated, or an optional
        return _type_name(inner[0])
    names = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
    name = getattr(annotation, "__name__", str(annotation))
    return _cell(names.get(name, name))


def _default(f: FieldInfo) -> str:
    if f.is_required():
        return "(required)"
    value = f.get_default(call_default_factory=True)
    if value is None:
        return ""
    shown = TypeAdapter(f.annotation).dump_python(
        value, mode="json", by_alias=True, exclude_none=True
    )
    return f"`{json.dumps(shown)}`"


def results_page(folder: Path) -> str:
    """Every result file, newest first: what made it (command, commit, machine) and its
    headline figures, read from the file itself; each day's folder has a README saying
    why the runs were made."""
    out = [
        "# Result files",
        "",
        "The figures the documentation quotes, each from a file the bench wrote",
        "(`--report`), committed under `docs/results/`. Files made before the reports",
        "carried their command and commit say so in their day's README.",
        "",
        "| file | made by | commit | machine | figures |",
        "|---|---|---|---|---|",
    ]
    for path in sorted(
        folder.glob("*/*.json"), key=lambda p: (p.parent.name, p.name), reverse=True
    ):
        report = json.loads(path.read_text())
        day = path.parent.name
        link = f"[{day}/{path.name}](results/{day}/{path.name})"
        command = (
            f"`{_cell(report['command'])}`"
            if report.get("command")
            else f"see [{day}](results/{day}/README.md)"
        )
        commit = short_commit(str(report.get("commit", "")))
        machine = report.get("machine") or {}
        cores = f"{machine['cores']} cores" if "cores" in machine else ""
        out.append(f"| {link} | {command} | {commit} | {cores} | {_cell(_figures(report))} |")
    return "\n".join(out) + "\n"


def _figures(report: dict[str, Any]) -> str:
    """A report's headline: pods/s per workload (per scheduler, beside kube-scheduler),
    or GPU placement's unallocated share: per policy of a GPU trace replay, per mix and
    policy of a sweep."""
    if "gpu_mix_sweep" in report:
        return "; ".join(
            f"{m['mix']}: " + ", ".join(f"{p} {f['mean']:.2f}%" for p, f in m["policies"].items())
            for m in report["gpu_mix_sweep"]["mixes"]
        )
    replays = report.get("runs") if "runs" in report else [report]
    if all("unallocated_gpu_pct_at_100" in r for r in replays):
        return "; ".join(
            f"{r['policy']}, {r['shards']} shard(s): {r['unallocated_gpu_pct_at_100']['mean']:.2f}%"
            f" ± {r['unallocated_gpu_pct_at_100']['std']:.2f} unallocated at 100%"
            for r in replays
        )
    if "happenings" in report:  # `optimist day`
        return "; ".join(
            f"{f['scheduler']}: {f['pods_bound']:,} pods bound over {report['duration_s']:g} s "
            f"on {report['nodes']:,} nodes, oldest pending at most "
            f"{f['oldest_pending_s'].get('max', 0):.1f} s, "
            f"{len(f['violations_during']) + len(f['violations_at_end'])} violations"
            for f in report["schedulers"]
        )
    if "workloads" in report:  # upstream's own harness
        return "; ".join(f"{n}: {w['Average']:,.0f} pods/s" for n, w in report["workloads"].items())
    shown = []
    cases = report["cases"] if "cluster" in report else report_cases(report)
    for case in cases:
        if "schedulers" in case:
            each = ", ".join(f"{s} {f['pods_per_s']:,.0f}" for s, f in case["schedulers"].items())
            ratio = f" ({case['ratio']:.2f}x)" if "ratio" in case else ""
            shown.append(f"{case['name']}: {each}{ratio}")
        elif "throughput_pods_per_s" in case:
            name = "/".join(str(case[k]) for k in ("case", "workload") if case.get(k))
            shown.append(f"{name}: {case['throughput_pods_per_s']['average']:,.0f} pods/s")
            probe = case.get("explain") or {}
            if probe.get("calls"):  # `bench --explain-every`
                judged, waited = probe["judged_s"]["p50"], probe["waited_s"]["p50"]
                shown[-1] += (
                    f" with {probe['calls']} explains at {probe['nodes']} nodes (judged p50 "
                    f"{judged * 1000:.0f} ms, waited p50 {waited * 1000:.0f} ms)"
                )
    return "; ".join(shown)
