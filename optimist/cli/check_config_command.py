"""`optimist check-config`: what optimist runs of a configuration file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from optimist.cli.shared_options import (
    load_or_exit,
    usage_error,
)
from optimist.configuration import (
    HANDLED_OUTSIDE_SHARDS,
)
from optimist.settings import Settings


def check_config(
    file: Annotated[Path, typer.Argument(dir_okay=False, help="the configuration file")],
) -> None:
    """Validate a configuration file and show what optimist runs of it; exits 2 if it is bad."""
    configuration = load_or_exit(file)
    for profile, expanded in zip(configuration.profiles, configuration.expanded, strict=True):
        pct = profile.percentage_of_nodes_to_score
        typer.echo(f"profile {profile.scheduler_name}")
        typer.echo(f"  percentageOfNodesToScore: {pct if pct is not None else 'adaptive'}")
        typer.echo(f"  filters: {', '.join(profile.filters) or '(none)'}")
        scorers = ", ".join(f"{name} (weight {weight})" for name, weight in profile.scorers)
        typer.echo(f"  scorers: {scorers or '(none)'}")
        for name, (points, how) in HANDLED_OUTSIDE_SHARDS.items():
            for point in points:
                if name in expanded.points[point]:
                    typer.echo(f"  {point}: {name} ({how})")
    if configuration.inactive:
        typer.echo("inactive plugins (enabled in the file, not run by optimist):")
        for plugin in configuration.inactive:
            typer.echo(f"  {plugin}")
    with usage_error(ValueError):
        settings = Settings.from_configuration(configuration).public()
    settings.pop("profiles")
    typer.echo("optimist: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
