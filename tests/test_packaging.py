"""What `pip install` puts in a user's site-packages: optimist and the four role
packages, the shipped cases and Lua scripts with them, and no test file; the
repository's tests and micro-benchmarks stay in the repository."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "README.md")
PACKAGES = ("optimist", "cluster", "dispatcher", "shards", "binder")


def test_the_wheel_holds_the_packages_and_their_data_and_no_test(tmp_path):
    # built from a copy: setuptools leaves its build/ folder where it builds
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        shutil.copy(ROOT / name, source / name)
    for name in (*PACKAGES, "benchmarks", "tests"):  # the last two must be left out
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
    assert "optimist/bench/cases/performance-config.yaml" in names
    assert "optimist/bench/cases/templates/node-default.yaml" in names
    assert "cluster/store/commit.lua" in names
    assert "shards/plugins/node_affinity/node_affinity.py" in names


def test_no_two_modules_share_a_name():
    """A name says which module it is: `adapter.py` in two packages made a reader (and
    a traceback) guess."""
    seen: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py" and not path.name.startswith("test_"):
                seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
