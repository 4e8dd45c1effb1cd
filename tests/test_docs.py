"""What the README and the documentation show a user works as shown: every
configuration they print is one optimist accepts, and every `optimist` command
they show runs, at a test's scale, on the files a reader has (a line that needs
a cluster says so, `# needs a cluster`: tests/test_kubernetes_end_to_end.py runs
`optimist run`). `make docs` builds the site strictly, so a broken link fails
`make test`."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cluster import explanation
from optimist.cli.main import app
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


NEEDS_CLUSTER = "# needs a cluster"
_ASSIGNMENT = re.compile(r"^(\w+)=(\S+)$")


def optimist_lines() -> Iterator[tuple[Path, str, list[str]]]:
    """Every `optimist ...` line of a shell block (continuation lines joined): its page,
    the line, and its words with the block's shell variables filled in."""
    for page in PAGES:
        for block in re.findall(r"```sh\n(.*?)```", page.read_text(), re.S):
            variables: dict[str, str] = {}
            for line in block.replace("\\\n", " ").splitlines():
                if m := _ASSIGNMENT.match(line.strip()):
                    variables[m.group(1)] = m.group(2)
                words = shlex.split(line, comments=True)
                if not words or not words[0].endswith("optimist") or "<<" in line:
                    continue
                for name, value in variables.items():
                    words = [w.replace(f"${name}", value) for w in words]
                yield page, line, words


def shown_commands(*, runnable: bool = False) -> list[tuple[str, list[str]]]:
    """Every `optimist ...` command shown, with where it is; `runnable`: only those
    that need no cluster."""
    return [
        (f"{page.relative_to(ROOT)}: {line.strip()[:60]}", words[1:])
        for page, line, words in optimist_lines()
        if not (runnable and NEEDS_CLUSTER in line)
    ]


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


def test_a_command_that_needs_a_cluster_says_so():
    """`optimist run` schedules a live cluster's pods: every line showing it says so."""
    for page, line, words in optimist_lines():
        if words[1:2] == ["run"]:
            assert NEEDS_CLUSTER in line, f"{page.name}: {line}"


@pytest.fixture
def reader_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with what a reader of the pages has: the checkout's files where the
    commands name them (`../shared` beside it, where the team's traces are), and the
    files the pages tell them to write."""
    if (ROOT.parent / "shared").is_dir():
        (tmp_path / "shared").symlink_to(ROOT.parent / "shared")
    tmp_path = tmp_path / "checkout"
    tmp_path.mkdir()
    for name in ("optimist", "benchmarks"):
        (tmp_path / name).symlink_to(ROOT / name)
    readme = (ROOT / "README.md").read_text()
    [(name, text)] = _HEREDOC.findall(readme.split("## Quick start", 1)[1])
    (tmp_path / name).write_text(text + "\n")
    page = (ROOT / "docs" / "configuration.md").read_text()
    (tmp_path / "scheduler.yaml").write_text(page.split("```yaml\n", 1)[1].split("```", 1)[0])
    cases = ROOT / "benchmarks" / "cases" / "shipped"
    (tmp_path / "my-cases.yaml").write_text((cases / "performance-config.yaml").read_text())
    for beside in cases.iterdir():  # the templates and configurations the cases name
        if not beside.name.endswith("-config.yaml"):
            (tmp_path / beside.name).symlink_to(beside)
    (tmp_path / "snapshot.yaml").write_text(
        (ROOT / "tests/optimist/offline/snapshot.yaml").read_text()
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def at_test_scale(words: list[str]) -> list[str]:
    """The command as a test runs it: a bench at its case's `tiny` workload (the
    scale flags left out; of a whole file, SchedulingBasic's, since
    tests/benchmarks/simulated runs every case's; a sweep's first two values), a GPU trace
    replay with one seed and its first policy."""
    out: list[str] = []
    dropped = {"--nodes", "--pods"} if words[0] == "bench" else set()
    it = iter(words)
    for word in it:
        if word in dropped:
            next(it)
        elif word == "--workload":
            name = next(it)
            if "/" in name:
                name = f"{name.split('/')[0]}/tiny"
            else:  # of the case --case names, or of the whole file
                name = "tiny" if "--case" in words else "SchedulingBasic/tiny"
            out += [word, name]
        elif word == "--seeds":
            out += [word, next(it).split("-")[0]]
        elif word == "--policy":
            out += [word, next(it).split(",")[0]]
        elif word == "--sweep":
            setting, _, values = next(it).partition("=")
            out += [word, f"{setting}={','.join(list(dict.fromkeys(values.split(',')))[:2])}"]
        else:
            out.append(word)
    if words[0] == "bench":
        out += [] if "--workload" in words else ["--workload", "SchedulingBasic/tiny"]
        out += ["--no-progress"]
    return out


@pytest.mark.usefixtures("ray_session", "reader_files")
@pytest.mark.parametrize(
    ("where", "words"), shown_commands(runnable=True), ids=lambda v: str(v)[:50]
)
def test_every_command_shown_runs(where, words):
    """What a reader copies runs, at a test's scale; the files it says it writes are
    written."""
    command = at_test_scale(words)
    trace = command[command.index("--nodes") + 1] if command[0] == "replay-gpu-trace" else ""
    if trace and not Path(trace).exists():
        pytest.skip(f"{where}: the Alibaba trace is not beside the checkout (../shared/traces)")
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, f"{where}: {' '.join(command)}\n{result.output}"
    for flag in ("--report", "--placements", "--html", "--plot"):
        if flag in command:
            assert Path(command[command.index(flag) + 1]).stat().st_size > 0, flag


def test_the_performance_page_types_no_figure_by_hand():
    """Its figures are the result files' (docs/hooks/figures.py fills them in as the
    site builds); a rate typed into the page would drift from them."""
    text = (ROOT / "docs" / "performance.md").read_text()
    assert not re.findall(r"\d[\d,.]* pods/s", text)
    shown = re.findall(r"<!-- figures: (\S+) -->", text)
    assert shown and all((ROOT / "docs" / "results" / name).is_file() for name in shown)


def test_the_explain_page_documents_every_field_of_the_json():
    """`optimist explain -o json` prints the messages of cluster/explanation.py as they
    are: a field added there and not to docs/explain.md's tables fails here."""
    page = (ROOT / "docs" / "explain.md").read_text()
    documented = set(re.findall(r"`(\w+)`", page))
    messages = [
        explanation.Explanation,
        explanation.Standing,
        explanation.UnitExplanation,
        explanation.PodExplanation,
        explanation.FilterVerdict,
        explanation.ScorerColumn,
        explanation.NodeColumns,
    ]
    missing = {
        f"{m.__name__}.{f.name}"
        for m in messages
        for f in dataclasses.fields(m)
        if f.name not in documented
    }
    assert not missing


def test_a_result_file_whose_every_workload_failed_renders_saying_so():
    """docs/hooks/figures.py renders a simulated result file none of whose workloads ran
    (each refused, saying why) as a sentence, not a table with no rows."""
    spec = importlib.util.spec_from_file_location("figures", ROOT / "docs/hooks/figures.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    failed = ROOT / "tests/benchmarks/report/results/failed-op.json"
    assert "No workload of this file ran" in hook.figures(failed, "failed-op.json")
