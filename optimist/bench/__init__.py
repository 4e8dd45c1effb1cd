"""`optimist bench`: scheduler_perf's case files run on a simulated cluster or through a
real API server, measured as upstream measures them.

- `case_file`: the case-file format, parsed strictly into one dataclass per op;
  `workload_objects` makes the manifests its ops ask for, from `go_template`s;
- `simulated` runs workloads on the platform with the simulated cluster
  (`sim_runner` walks the ops); `sweep` repeats it over one variable;
- `apiserver` runs them through kube-apiserver, optimist or kube-scheduler in a
  process of its own (`api_runner` walks the ops);
- `cases/`: the shipped case file, its templates and scheduler configurations.
"""

from importlib import resources
from pathlib import Path


def template(name: str) -> Path:
    """Path of a template shipped with optimist, e.g. `node-default.yaml`."""
    return Path(str(resources.files(__package__) / "cases" / "templates" / name))


def cases_file() -> Path:
    """The shipped case file, in scheduler_perf's performance-config.yaml format."""
    return Path(str(resources.files(__package__) / "cases" / "performance-config.yaml"))
