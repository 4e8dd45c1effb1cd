"""What the commands share: the options several take, how a user's mistake becomes
exit 2 with one line naming it, and how a command writes its result file."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from optimist.configuration import ConfigError, Configuration, load_file

console = Console()


# --shard-resource, for every command that starts shards
ShardResources = Annotated[
    list[str] | None,
    typer.Option(
        help="a Ray resource each shard asks for, NAME or NAME=AMOUNT (repeatable): in "
        "a Ray cluster, shards go to the nodes that offer it [default: shardResources]"
    ),
]


def refuse(problem: str) -> NoReturn:
    """A usage error: one line saying what is wrong, and exit 2."""
    typer.echo(f"error: {problem}", err=True)
    raise typer.Exit(2)


@contextmanager
def usage_error(*errors: type[Exception]) -> Iterator[None]:
    """These errors are the user's (a bad file, flags that do not go together): their
    message, and exit 2, as a usage error does."""
    try:
        yield
    except errors as e:
        refuse(str(e))


def resources_or_exit(given: list[str]) -> dict[str, float]:
    """`--shard-resource NAME[=AMOUNT]`, each once or more; exits 2 naming a bad one."""
    out: dict[str, float] = {}
    for item in given:
        name, _, amount = item.partition("=")
        try:
            out[name] = float(amount or 1)
        except ValueError:
            out[name] = float("nan")
        if not name or not out[name] > 0:
            refuse(f"--shard-resource {item!r}: want NAME or NAME=AMOUNT, AMOUNT > 0")
    return out


def load_or_exit(path: Path) -> Configuration:
    """The loaded file, or exit 2 with the problem, as a usage error does."""
    try:
        return load_file(path)
    except (ConfigError, OSError, UnicodeDecodeError) as e:
        refuse(f"{path}: {e}")
