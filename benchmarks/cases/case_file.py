"""Case files in upstream scheduler_perf's format, parsed strictly into one dataclass per op.

A file is a list of test cases; each has a `workloadTemplate` (the ops) and
`workloads` whose `params` fill the ops' `*Param: $name` fields. Every
workload is instantiated when the file is loaded, so an unknown op, an
unknown field or a missing param is an error before anything runs, naming
the case, the workload, the op index, the field and the value. Ops optimist
knows but cannot run (volumes, DRA) load as `UnsupportedOp`: the case that
holds one stops with that error when it is run, the others run.
Template paths are the file's folder's, or the nearest folder's above it that has
them (upstream's are the scheduler_perf folder's); templates are read once, at load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from benchmarks.cases.case_fields import (
    Fields,
    PerfConfigError,
    Templates,
    Unsupported,
    Where,
    indexed_template,
    text,
    texts,
)
from benchmarks.cases.case_ops import OPS, UNSUPPORTED_OPCODES, CaseDefaults, Op, UnsupportedOp

# Case-level fields that change nothing here: optimist measures with its own collectors.
_IGNORED_CASE_FIELDS = ("metricsCollectorConfig", "defaultThresholdMetricSelector")
_IGNORED_WORKLOAD_FIELDS = ("thresholdMetricSelector",)


class MissingParam(PerfConfigError):
    """An op's `$name` that its workload does not give: upstream's harness fails the
    workload at that op, and the others run; so does the op here (an UnsupportedOp)."""


# Params whose field upstream names with the Param suffix alone (no field without it):
# their value is the workload's, under the same key.
_PARAM_ONLY = ("countMultiplierParam",)


@dataclass(frozen=True, slots=True)
class CaseWorkload:
    """One workload of one case, its ops instantiated with the workload's params."""

    case: str
    workload: str
    ops: tuple[Op | UnsupportedOp, ...]
    params: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None  # upstream's published threshold, if the file gives one
    labels: tuple[str, ...] = ()
    feature_gates: dict[str, bool] | None = None
    # the case's own scheduler configuration (schedulerConfigPath); None: the run's
    scheduler_config: Path | None = None
    # the params the command line set to other values than the file's (--nodes, --pods)
    overrides: dict[str, Any] = field(default_factory=dict)
    # params no op uses: upstream's Go test code for the file may read them (its
    # WithPreRunFn and WithNodeUpdateFn hooks), which optimist does not have
    unused_params: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The file's case/workload, with the params set otherwise beside it, such as
        `SchedulingBasic/5000Nodes_10000Pods[initNodes=20000]`: a run is named by what
        it ran, not by the file's workload whose params were replaced."""
        changed = ",".join(f"{k}={v}" for k, v in self.overrides.items())
        return f"{self.case}/{self.workload}" + (f"[{changed}]" if changed else "")

    def unsupported(self) -> UnsupportedOp | None:
        """The first op optimist cannot run; or, if params are left unused, that (as
        upstream says it once the last op ran, after it)."""
        found = next((op for op in self.ops if isinstance(op, UnsupportedOp)), None)
        if found is None and self.unused_params:
            return UnsupportedOp(
                "params",
                len(self.ops),
                f"params={list(self.unused_params)!r}: not used by any op (upstream's Go "
                "test code for a file may read some, e.g. to change its nodes; optimist "
                "runs what the file says alone)",
            )
        return found


def load(
    path: str | Path, default_node: Path, overrides: Mapping[str, Any] | None = None
) -> list[CaseWorkload]:
    """Every workload of every case in the file, instantiated; PerfConfigError if any is wrong.

    `overrides` replace the params of that name in every workload that has them; each
    that changes a workload's value is recorded on it, and named in its `name`.
    """
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise PerfConfigError(f"{path}: cannot read: {e}") from e
    if not isinstance(doc, list):
        raise PerfConfigError(f"{path}: must be a list of test cases, got {type(doc).__name__}")
    files = Templates(path.parent)
    node = files.load(Where("(default)"), "nodeTemplatePath", str(default_node), ("Node",))
    out: list[CaseWorkload] = []
    names: set[str] = set()
    for i, raw in enumerate(doc):
        where = Where(raw.get("name", f"#{i}") if isinstance(raw, Mapping) else f"#{i}")
        case = Fields(raw, where, files)
        name = case.take("name", text)
        if name in names:
            raise where.error("name", name, "another case has this name")
        names.add(name)
        try:
            default_pod = case.take("defaultPodTemplatePath", indexed_template("Pod"), None)
            unreadable = ""
        except Unsupported as e:  # only the ops that use it cannot run
            default_pod, unreadable = None, str(e)
        ops = case.take("workloadTemplate", _op_list)
        workloads = case.take("workloads", _op_list)
        labels = case.take("labels", texts, ())
        gates = case.take("featureGates", _gates, None)
        scheduler_config = case.take("schedulerConfigPath", _existing_file, None)
        for key in _IGNORED_CASE_FIELDS:
            case.raw.pop(key, None)
        case.done()
        defaults = CaseDefaults(default_pod, node, unreadable)
        seen: set[str] = set()
        for j, w in enumerate(workloads):
            run = _instantiate(name, j, w, ops, defaults, files, labels, gates, overrides or {})
            run = replace(run, scheduler_config=scheduler_config)
            if run.workload in seen:
                raise Where(name).error(f"workloads[{j}].name", run.workload, "is used twice")
            seen.add(run.workload)
            out.append(run)
    return out


def _existing_file(f: Fields, key: str, value: Any) -> Path:
    """A path as templates' are (`Templates.resolve`), to a file that is there."""
    if not isinstance(value, str) or not value:
        raise f.error(key, value, "must be a path")
    path = f.templates.resolve(value)
    if not path.is_file():
        raise f.error(key, value, f"no such file {path}")
    return path


def _op_list(f: Fields, key: str, value: Any) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise f.error(key, value, "must be a non-empty list")
    return value


def _gates(f: Fields, key: str, value: Any) -> dict[str, bool]:
    if not isinstance(value, Mapping) or not all(isinstance(v, bool) for v in value.values()):
        raise f.error(key, value, "must be a map of feature gate names to true or false")
    return dict(value)


def _instantiate(
    case: str,
    index: int,
    raw: object,
    ops: list[Any],
    defaults: CaseDefaults,
    files: Templates,
    case_labels: tuple[str, ...],
    case_gates: dict[str, bool] | None,
    overrides: Mapping[str, Any],
) -> CaseWorkload:
    w = Fields(raw, Where(case), files, f"workloads[{index}].")
    name = w.take("name", text)
    params = w.take("params", _params, {})
    changed = {k: v for k, v in overrides.items() if k in params and params[k] != v}
    params.update(changed)
    labels = w.take("labels", texts, ())
    gates = w.take("featureGates", _gates, None)
    threshold = w.take("threshold", _threshold, None)
    for key in _IGNORED_WORKLOAD_FIELDS:
        w.raw.pop(key, None)
    w.done()
    used: set[str] = set()
    made = []
    for i, raw_op in enumerate(ops):
        where = Where(case, name, i, _opcode(Where(case, name, i), raw_op))
        made.append(_parse_op(where, raw_op, params, used, defaults, files))
    return CaseWorkload(
        case,
        name,
        tuple(made),
        params,
        threshold,
        case_labels + labels,
        {**(case_gates or {}), **(gates or {})} or None,
        overrides=changed,
        unused_params=tuple(sorted(params.keys() - used)),
    )


def _params(f: Fields, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise f.error(key, value, "must be a map of names to values")
    return dict(value)


def _threshold(f: Fields, key: str, value: Any) -> float | None:
    """A number, or upstream's map of topic to number (its Go test names the topic:
    `dra`...), which gives no one threshold here: None."""
    values = value.values() if isinstance(value, Mapping) else (value,)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in values):
        raise f.error(key, value, "must be a number >= 0, or a map of topics to numbers >= 0")
    return None if isinstance(value, Mapping) else float(value)


def _opcode(where: Where, raw: object) -> str:
    if not isinstance(raw, Mapping):
        raise where.error("op", raw, "must be a map with an opcode")
    opcode = raw.get("opcode")
    if opcode not in OPS and opcode not in UNSUPPORTED_OPCODES:
        where = Where(where.case, where.workload, where.index, str(opcode))
        raise where.error("opcode", opcode, f"unknown op (known: {', '.join(OPS)})")
    return str(opcode)


def _parse_op(
    where: Where,
    raw: Mapping[str, Any],
    params: Mapping[str, Any],
    used: set[str],
    defaults: CaseDefaults,
    files: Templates,
) -> Op | UnsupportedOp:
    assert where.index is not None
    try:
        fields = _filled(where, dict(raw), params, used)  # an op not run uses its params too
    except MissingParam as e:
        return UnsupportedOp(where.opcode, where.index, str(e))
    if where.opcode in UNSUPPORTED_OPCODES:
        return UnsupportedOp(where.opcode, where.index, UNSUPPORTED_OPCODES[where.opcode])
    del fields["opcode"]
    f = Fields(fields, where, files)
    try:
        op: Op = OPS[where.opcode].parse(f, defaults)
    except Unsupported as e:
        return UnsupportedOp(where.opcode, where.index, str(e))
    f.done()
    return op


def _filled(
    where: Where,
    fields: dict[str, Any],
    params: Mapping[str, Any],
    used: set[str],
    prefix: str = "",
) -> dict[str, Any]:
    """The op's `<field>Param: $name` fields and `templateParams` given the workload's
    values, in the ops nested in it too (createPodSets' createPodsOp); `used` gathers
    the names."""
    for key in [k for k in fields if k.endswith("Param")]:
        value = fields.pop(key)
        base = key if key in _PARAM_ONLY else key[: -len("Param")]
        if base in fields:
            raise where.error(prefix + key, value, f"give {base} or {key}, not both")
        if not isinstance(value, str) or not value.startswith("$"):
            raise where.error(prefix + key, value, "must be $name, a param of the workload")
        fields[base] = _param(where, prefix + key, value, params, used)
    if isinstance(given := fields.get("templateParams"), Mapping):
        fields["templateParams"] = {
            k: _param(where, f"{prefix}templateParams.{k}", v, params, used, defaults=True)
            if isinstance(v, str) and v.startswith("$")
            else v
            for k, v in given.items()
        }
    for key, value in fields.items():
        if key.endswith("Op") and isinstance(value, Mapping):
            fields[key] = _filled(where, dict(value), params, used, f"{prefix}{key}.")
    return fields


def _param(
    where: Where,
    key: str,
    value: str,
    params: Mapping[str, Any],
    used: set[str],
    defaults: bool = False,
) -> Any:
    """The workload's param `$name`; in templateParams, `$name|default` gives the
    default (YAML) where the workload has no such param."""
    name, default = value[1:], None
    if defaults and value.find("|") > 1:
        name, default = value[1:].split("|", 1)
    if name in params:
        used.add(name)
        return params[name]
    if default is not None:
        try:
            return yaml.safe_load(default)
        except yaml.YAMLError as e:
            raise where.error(key, value, f"the default is not YAML: {e}") from e
    raise MissingParam(str(where.error(key, value, f"no param {name!r} in the workload's params")))


def labelled(label_filter: str, labels: tuple[str, ...]) -> bool:
    """Upstream's label filter (`-perf-scheduling-label-filter`): comma-separated labels
    a workload must have (`label` or `+label`) or must not have (`-label`)."""
    for label in filter(None, label_filter.split(",")):
        wanted = not label.startswith("-")
        if (label.lstrip("+-") in labels) != wanted:
            return False
    return True


def select(
    runs: list[CaseWorkload],
    case: str | None,
    workload: str | None,
    label_filter: str = "",
) -> list[CaseWorkload]:
    """The runs `--case`/`--workload`/`--label-filter` pick; `--workload Case/Workload`
    names both at once."""
    if workload and "/" in workload:
        case, workload = workload.split("/", 1)
    picked = [
        r
        for r in runs
        if (case is None or r.case == case)
        and (workload is None or r.workload == workload)
        and labelled(label_filter, r.labels)
    ]
    if not picked:
        known = ", ".join(f"{r.case}/{r.workload}" for r in runs)  # as --workload names them
        raise PerfConfigError(
            f"no workload matches case={case!r} workload={workload!r} "
            f"label-filter={label_filter!r}; the file has: {known}"
        )
    return picked
