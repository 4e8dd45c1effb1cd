"""scheduler_perf's case files: the format, parsed strictly into one dataclass per op
(`case_file`, with Go's decoding rules in `go_decoding`), the manifests its ops ask for
(`workload_objects`, from `go_template`s), and the walk through a workload's ops that
both runners share (`op_walker`). `shipped/` holds the case file optimist ships, its
templates and scheduler configurations, and the day file of `optimist day`."""

from importlib import resources
from pathlib import Path

CASE_FILE_NAME = "performance-config.yaml"  # scheduler_perf's name, in every folder of it


def template(name: str) -> Path:
    """Path of a template shipped with optimist, e.g. `node-default.yaml`."""
    return Path(str(resources.files(__package__) / "shipped" / "templates" / name))


def day_file() -> Path:
    """The shipped day file, for `optimist day` (`benchmarks.day.day_file`)."""
    return Path(str(resources.files(__package__) / "shipped" / "day.yaml"))


def cases_file() -> Path:
    """The shipped case file, in scheduler_perf's performance-config.yaml format."""
    return Path(str(resources.files(__package__) / "shipped" / CASE_FILE_NAME))
