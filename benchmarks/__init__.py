"""Benchmark workloads: templates and case files for `optimist bench`."""

from importlib import resources
from pathlib import Path


def template(name: str) -> Path:
    """Path of a template shipped with optimist, e.g. `node-default.yaml`."""
    return Path(str(resources.files(__package__) / "templates" / name))


def cases_file() -> Path:
    """The shipped case file, in scheduler_perf's performance-config.yaml format."""
    return Path(str(resources.files(__package__) / "performance-config.yaml"))
