"""What `pip install` puts in a user's site-packages: optimist, the four role
packages and the harness above them (`benchmarks`), the shipped cases, KWOK's
configuration and the Lua scripts with them, and no test file."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "README.md")
PACKAGES = ("optimist", "cluster", "dispatcher", "shards", "binder", "benchmarks")


def test_the_wheel_holds_the_packages_and_their_data_and_no_test(tmp_path):
    # built from a copy: setuptools leaves its build/ folder where it builds
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        shutil.copy(ROOT / name, source / name)
    for name in (*PACKAGES, "tests"):  # the last must be left out
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == set(PACKAGES)
    assert [n for n in names if Path(n).name.startswith(("test_", "conftest"))] == []
    assert "benchmarks/cases/shipped/performance-config.yaml" in names
    assert "benchmarks/cases/shipped/day.yaml" in names
    assert "benchmarks/cases/shipped/templates/node-default.yaml" in names
    assert "benchmarks/controlplane/kwok.yaml" in names
    assert "cluster/store/commit.lua" in names
    assert "shards/plugins/node_affinity/node_affinity.py" in names
    # the harness's commands join `optimist` by the entry points, never by an import
    [points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    commands = zipfile.ZipFile(wheel).read(points).decode().partition("[optimist.commands]")[2]
    assert {line.split(" = ")[0] for line in commands.split("[")[0].split("\n") if line} == {
        "bench",
        "day",
        "replay",
        "replay-gpu-trace",
    }


def test_no_two_modules_share_a_name():
    """A name says which module it is: `adapter.py` in two packages made a reader (and
    a traceback) guess."""
    seen: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py" and not path.name.startswith("test_"):
                seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_no_module_over_700_lines_and_no_function_over_100():
    """Sizes a reader can hold: a longer module wants splitting by concept, a longer
    function by step (ruff's C901 gate holds their branching)."""
    too_long: list[str] = []
    for path in sorted(p for top in (*PACKAGES, "tests") for p in (ROOT / top).rglob("*.py")):
        text = path.read_text()
        where = path.relative_to(ROOT)
        if len(text.splitlines()) > 700:
            too_long.append(f"{where}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 100:
                    too_long.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    assert too_long == []
