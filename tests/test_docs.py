"""What the README and the documentation show a user works as shown: every
configuration they print is one optimist accepts, and the quick start's commands
run (`optimist run` itself needs a cluster: tests/test_kubernetes_end_to_end.py
runs it). `make docs` builds the site strictly, so a broken link fails `make test`."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from optimist.cli import app
from optimist.configuration import parse_configuration

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_HEREDOC = re.compile(r"cat > (\S+) <<'EOF'\n(.*?)\nEOF\n", re.S)


def configurations() -> list[tuple[str, str]]:
    """Every YAML block that is a KubeSchedulerConfiguration, with where it is."""
    found = []
    for page in PAGES:
        blocks = re.findall(r"```(?:yaml|sh)\n(.*?)```", page.read_text(), re.S)
        for i, block in enumerate(blocks):
            for text in [m.group(2) for m in _HEREDOC.finditer(block)] or [block]:
                if "kind: KubeSchedulerConfiguration" in text:
                    found.append((f"{page.relative_to(ROOT)}#{i}", text))
    return found


@pytest.mark.parametrize(("where", "text"), configurations(), ids=lambda v: v[:40])
def test_every_configuration_shown_is_accepted(where, text):
    parse_configuration(text)


def test_the_quick_start_runs_up_to_the_cluster(tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text()
    start = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    [(name, text)] = _HEREDOC.findall(start)
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text + "\n")
    checked = CliRunner().invoke(app, ["check-config", name])
    assert checked.exit_code == 0, checked.output
    assert "profile optimist" in checked.output
    assert f"optimist run --config {name}" in start  # and run takes that file


def test_the_install_steps_name_a_command_that_exists():
    readme = (ROOT / "README.md").read_text()
    install = readme.split("## Install", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert "pip install ." in install and ".venv/bin/optimist --help" in install
    command = Path(sys.executable).parent / "optimist"  # the entry point pip installed
    shown = subprocess.run([str(command), "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "run" in shown.stdout, shown.stderr


def shown_commands() -> list[tuple[str, list[str]]]:
    """Every `optimist ...` command line in a shell block, continuation lines joined,
    with where it is."""
    found = []
    for page in PAGES:
        for block in re.findall(r"```sh\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words and words[0].endswith("optimist") and "<<" not in line:
                    found.append((f"{page.relative_to(ROOT)}: {line.strip()[:60]}", words[1:]))
    return found


@pytest.mark.parametrize(("where", "words"), shown_commands(), ids=lambda v: str(v)[:50])
def test_every_command_shown_names_a_command_and_options_that_exist(where, words):
    """What a reader copies runs as far as its options go: a command or a flag renamed
    in the code and not in the docs fails here. (The commands themselves are run by
    the tests of each: test_cli, the bench's and the replay's.)"""
    group = typer.main.get_command(app)
    if words == ["--help"]:
        return
    command = group.commands.get(words[0])  # type: ignore[attr-defined]
    assert command is not None, f"{where}: no command {words[0]!r}"
    known = {"--help"} | {o for p in command.params for o in getattr(p, "opts", [])}
    known |= {o for p in command.params for o in getattr(p, "secondary_opts", [])}
    flags = [w.split("=", 1)[0] for w in words[1:] if w.startswith("-")]
    assert [f for f in flags if f not in known] == [], f"{where}: unknown options"
