"""`optimist explain`: why a pod went where it went, or why it waits."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
import yaml

from optimist.cli.shared_options import (
    console,
    load_or_exit,
    refuse,
    usage_error,
)
from optimist.configuration import (
    default_configuration,
)
from optimist.explain import ExplainError, ask_endpoint
from optimist.explain_view import page, terminal
from optimist.offline.explain_snapshot import explain_snapshot
from optimist.offline.replay import SnapshotError
from optimist.settings import Settings


class Output(StrEnum):
    table = "table"
    json = "json"
    html = "html"


def explain(
    pod: Annotated[
        str | None, typer.Argument(help="NAMESPACE/NAME of a pod optimist holds or has bound")
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="a pod manifest (YAML or JSON) to judge as if it were created now",
        ),
    ] = None,
    endpoint: Annotated[
        str,
        typer.Option(help="the metrics address of the optimist to ask (run, or bench)"),
    ] = "127.0.0.1:10259",
    snapshot: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="judge against this snapshot (`kubectl get nodes,pods -A -o yaml`, or a "
            "bench's --save-state) instead of a running optimist",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(dir_okay=False, help="with --snapshot: the KubeSchedulerConfiguration file"),
    ] = None,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.table,
    top: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="nodes to show per pod, best first [default: 10 in the "
            "table, every node in json and html]",
        ),
    ] = None,
) -> None:
    """Why a pod went where it went, or why it is still pending, plugin by plugin.

    Each Filter plugin's verdict over every node, each Score plugin's raw, normalized and
    weighted score on every feasible node, and the node the shard's own search chooses
    now, with its margin; for a pod not bound, where the queue holds it and what it
    waits for. Exits 1 if the pod cannot be explained (not found, or no optimist answers).
    """
    if (pod is None) == (manifest is None):
        refuse("name a pod (NAMESPACE/NAME) or give --manifest, one of them")
    if config and not snapshot:
        refuse("--config goes with --snapshot (optimist runs with its own)")
    shown = top if top is not None else (10 if output is Output.table else 0)
    body = None
    if manifest is not None:
        with usage_error(yaml.YAMLError, OSError):
            body = yaml.safe_load(manifest.read_text())
    try:
        if snapshot:
            configuration = load_or_exit(config) if config else default_configuration()
            with usage_error(SnapshotError, ValueError):
                settings = Settings.from_configuration(configuration)
                found = explain_snapshot(snapshot, settings, pod or "", body, shown)
        else:
            found = ask_endpoint(endpoint, pod or "", body, shown)
    except ExplainError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    if output is Output.json:
        typer.echo(json.dumps(found.to_json(), indent=2))
    elif output is Output.html:
        typer.echo(page(found))
    else:
        console.print(terminal(found, shown))
