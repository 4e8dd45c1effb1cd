"""The `optimist` command: its app, with the scheduler's commands and those installed
beside it. The harness's (`optimist bench`, `optimist replay`, `optimist
replay-gpu-trace`) join from the `optimist.commands` entry-point group, so the
scheduler never imports the harness that measures it."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Annotated

import typer

from optimist import logs
from optimist.cli import check_config_command, explain_command, run_command
from optimist.cli.shared_options import refuse
from optimist.lifetime import interrupts, start_reaper, unwind
from optimist.runtime import RayStartError

# no locals in tracebacks: they would print what a user passed, secrets included
app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="The `optimist` command line.",
    pretty_exceptions_show_locals=False,
)

COMMANDS = "optimist.commands"  # the entry-point group of commands installed beside


def entry() -> None:
    """The `optimist` command: what it starts ends with it, however it ends
    (`optimist.lifetime`); a Ray that cannot start is one line saying what to do, not
    a traceback from inside Ray."""
    start_reaper()
    try:
        with interrupts(unwind):
            app()
    except RayStartError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(1) from None


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    log_format: Annotated[
        str, typer.Option(help="text, or json: one object per line, the unit in its own field")
    ] = "text",
) -> None:
    """optimist: a parallel, optimistic-concurrency scheduler for Kubernetes."""
    try:
        logs.configure(log_format, verbose=verbose)
    except ValueError as e:
        refuse(f"--log-format: {e}")


app.command()(run_command.run)
app.command()(explain_command.explain)
app.command("check-config")(check_config_command.check_config)
for command in entry_points(group=COMMANDS):
    command.load()(app)
