"""Reading a case file's fields strictly: where a value sits (`Where`), the fields of one
op or workload taken one by one with their readers (`Fields`: an unknown or missing
field is an error naming the case, the op and the value), and templates read once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import yaml

from benchmarks.cases import go_decoding
from benchmarks.cases.go_template import NotRendered, TemplateError, TextTemplate, check
from cluster.durations import parse_duration

# the annotation upstream's harness writes on each CSINode; kube-scheduler does not read
# it for the plugins it migrates (any node with a CSINode counts them), nor does optimist
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NO_DRA = "optimist does not model dynamic resource allocation (DRA)"


NO_WORKLOAD_API = (
    "optimist models gangs as coscheduling PodGroups (scheduling.x-k8s.io/v1alpha1, "
    "pods labelled scheduling.x-k8s.io/pod-group), not the Workload API's "
    "scheduling.k8s.io PodGroups that pods name in spec.schedulingGroup"
)


NO_UPDATES = (
    "objects are not updated in place here: the simulated cluster cannot change a node "
    "or a bound pod once made (taints, capacity, labels, a resize), and the API runner "
    "sends no updates"
)


NO_GO_TEMPLATE = (
    "a Go template ({{.Index}} and the like, upstream's since v1.31), which upstream "
    "renders for createPods, createNodes, createAny, createPodGroups and updateAny only"
)


Manifest = Mapping[str, Any]


Template = Manifest | TextTemplate  # a TextTemplate makes each object its own


class PerfConfigError(ValueError):
    """A case file optimist cannot read as written; the message names where and what."""


class Unsupported(Exception):
    """Raised while reading an op that optimist knows but cannot run."""


@dataclass(frozen=True, slots=True)
class Where:
    """Where a value sits in the file, so an error can say it."""

    case: str
    workload: str = ""
    index: int | None = None
    opcode: str = ""

    def __str__(self) -> str:
        out = f"case {self.case}" + (f"/{self.workload}" if self.workload else "")
        if self.index is not None:
            out += f": op {self.index} ({self.opcode})"
        return out

    def error(self, field: str, value: object, problem: str) -> PerfConfigError:
        return PerfConfigError(f"{self}: {field}={value!r}: {problem}")


class Templates:
    """Reads template files, each once. A path is the case file's folder's, or else that
    of the nearest folder above it that has it: upstream's file names its templates
    from the scheduler_perf folder (`config/pod-default.yaml`), where `go test` runs."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._loaded: dict[Path, tuple[Template, str]] = {}  # and its kind

    def resolve(self, value: str) -> Path:
        """The file `value` names (the case file's folder's if no folder has it)."""
        for folder in (self.base, *self.base.parents):
            if (folder / value).exists():
                return (folder / value).resolve()
        return (self.base / value).resolve()

    @overload  # not indexed, a Go template raises Unsupported: what comes back is a manifest
    def load(
        self,
        where: Where,
        field: str,
        value: object,
        kinds: tuple[str, ...],
        indexed: Literal[False] = False,
    ) -> Manifest: ...

    @overload
    def load(
        self,
        where: Where,
        field: str,
        value: object,
        kinds: tuple[str, ...],
        indexed: bool,
        params: Mapping[str, Any] | None = None,
    ) -> Template: ...

    def load(
        self,
        where: Where,
        field: str,
        value: object,
        kinds: tuple[str, ...],
        indexed: bool = False,
        params: Mapping[str, Any] | None = None,
    ) -> Template:
        """The template at `value`; one with Go template fields is a TextTemplate where
        the op renders one per object (`indexed`), and cannot be run elsewhere. A Go
        template's kind is checked once `params` (the op's templateParams) are bound
        (`bound`): the case's defaultPodTemplatePath is bound by each op using it."""
        if not isinstance(value, str) or not value:
            raise where.error(field, value, "must be a path")
        path = self.resolve(value)
        if path not in self._loaded:
            self._loaded[path] = self._read(where, field, value, path)
        doc, kind = self._loaded[path]
        if isinstance(doc, TextTemplate):
            if not indexed:  # left as text, every object made of it would be one
                raise Unsupported(f"{field}={value!r}: {NO_GO_TEMPLATE}")
            return doc if params is None else bound(where, field, doc, kinds, params)
        if kinds and kind not in kinds:
            raise where.error(field, value, f"kind {kind}: must be {' or '.join(kinds)}")
        return doc

    def _read(self, where: Where, field: str, value: str, path: Path) -> tuple[Template, str]:
        """The template and its kind (a Go template's once its params are bound)."""
        try:
            source = path.read_text()
            if "{{" in source:
                check(value, source)
                return TextTemplate(value, source), ""
            doc = yaml.safe_load(source)
        except NotRendered as e:
            raise Unsupported(str(e)) from e
        except (OSError, yaml.YAMLError, TemplateError) as e:
            raise where.error(field, value, f"cannot read: {e}") from e
        if not isinstance(doc, Mapping) or not isinstance(doc.get("kind"), str):
            raise where.error(field, value, "not a Kubernetes object (no kind)")
        return go_decoding.canonical(doc), doc["kind"]  # keys' case as upstream reads it


def bound(
    where: Where,
    field: str,
    template: TextTemplate,
    kinds: tuple[str, ...],
    params: Mapping[str, Any],
    count: int | None = 1,
) -> TextTemplate:
    """The Go template with an op's templateParams, its first object rendered (with
    `.Count` as `count`, none where None) to check that it can be, and its kind."""
    made = template.bind(params)
    try:
        kind = made.render(0, count)["kind"]
    except TemplateError as e:
        raise where.error(field, template.name, f"cannot render: {e}") from e
    if kinds and kind not in kinds:
        raise where.error(field, template.name, f"kind {kind}: must be {' or '.join(kinds)}")
    return made


T = TypeVar("T")  # what a field's reader reads
D = TypeVar("D")  # a field's default where it is left out
_MISSING: Any = object()


class Fields:
    """An op's (or strategy's) fields, taken one by one; whatever is left over is unknown."""

    def __init__(self, raw: object, where: Where, templates: Templates, prefix: str = "") -> None:
        if not isinstance(raw, Mapping):
            raise where.error(prefix.rstrip(".") or "op", raw, "must be a map")
        self.raw = dict(raw)
        self.where = where
        self.templates = templates
        self.prefix = prefix

    @overload
    def take(self, key: str, read: Callable[[Fields, str, Any], T]) -> T: ...
    @overload
    def take(self, key: str, read: Callable[[Fields, str, Any], T], default: D) -> T | D: ...
    def take(self, key: str, read: Callable[[Fields, str, Any], T], default: Any = _MISSING) -> Any:
        """The field `key` as `read` reads it, taken out of those left to check; without
        it, `default`, or an error if there is none."""
        if key not in self.raw:
            if default is _MISSING:
                raise self.where.error(self.prefix + key, None, "is required")
            return default
        return read(self, key, self.raw.pop(key))

    def error(self, key: str, value: object, problem: str) -> PerfConfigError:
        return self.where.error(self.prefix + key, value, problem)

    def nested(self, key: str, raw: object) -> Fields:
        return Fields(raw, self.where, self.templates, f"{self.prefix}{key}.")

    def unsupported_if_present(self, key: str, reason: str) -> None:
        if self.raw.get(key) not in (None, "", [], {}):
            raise Unsupported(f"{self.prefix}{key}: {reason}")
        self.raw.pop(key, None)

    def done(self) -> None:
        for key, value in self.raw.items():
            raise self.error(key, value, "unknown field")


def count(f: Fields, key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise f.error(key, value, "must be an integer >= 0")
    return value


def positive(f: Fields, key: str, value: Any) -> int:
    n = count(f, key, value)
    if n < 1:
        raise f.error(key, value, "must be an integer >= 1")
    return n


def flag(f: Fields, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise f.error(key, value, "must be true or false")
    return value


def text(f: Fields, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise f.error(key, value, "must be a non-empty string")
    return value


def texts(f: Fields, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise f.error(key, value, "must be a list of strings")
    return tuple(value)


def text_map(f: Fields, key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str | int) for k, v in value.items()
    ):
        raise f.error(key, value, "must be a map of strings")
    return {k: str(v) for k, v in value.items()}


def duration(f: Fields, key: str, value: Any) -> float:
    try:
        seconds = parse_duration(value) if isinstance(value, str) else float("nan")
    except ValueError as e:
        raise f.error(key, value, str(e)) from e
    if not seconds >= 0:
        raise f.error(key, value, "must be a duration such as '5s' or '500ms'")
    return seconds


def one_of(*choices: str) -> Callable[[Fields, str, Any], str]:
    def read(f: Fields, key: str, value: Any) -> str:
        if value not in choices:
            raise f.error(key, value, f"must be one of {', '.join(choices)}")
        return str(value)

    return read


def template(*kinds: str) -> Callable[[Fields, str, Any], Manifest]:
    def read(f: Fields, key: str, value: Any) -> Manifest:
        return f.templates.load(f.where, f.prefix + key, value, kinds)

    return read


def indexed_template(
    *kinds: str, params: Mapping[str, Any] | None = None
) -> Callable[[Fields, str, Any], Template]:
    """A template an op makes its objects of one by one: Go template fields allowed,
    rendered with the op's templateParams (`params`; None: bound later, by the ops
    that use the case's defaultPodTemplatePath)."""

    def read(f: Fields, key: str, value: Any) -> Template:
        return f.templates.load(f.where, f.prefix + key, value, kinds, True, params)

    return read


def template_params(f: Fields, key: str, value: Any) -> dict[str, Any]:
    """templateParams, their `$name` values already the workload's (`case_file`)."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise f.error(key, value, "must be a map of names to values")
    return dict(value)


def templates(*kinds: str) -> Callable[[Fields, str, Any], tuple[Manifest, ...]]:
    def read(f: Fields, key: str, value: Any) -> tuple[Manifest, ...]:
        if not isinstance(value, list) or not value:
            raise f.error(key, value, "must be a non-empty list of paths")
        return tuple(
            f.templates.load(f.where, f"{f.prefix}{key}[{i}]", v, kinds)
            for i, v in enumerate(value)
        )

    return read


@dataclass(frozen=True, slots=True)
class LabelValues:
    """labelNodePrepareStrategy: each node gets one of `values` for `key`, chosen at random."""

    key: str
    values: tuple[str, ...]

    @classmethod
    def read(cls, f: Fields, key: str, value: Any) -> LabelValues:
        s = f.nested(key, value)
        out = cls(s.take("labelKey", text), s.take("labelValues", texts))
        s.done()
        if not out.values:
            raise f.error(f"{key}.labelValues", [], "needs at least one value")
        return out


def unique_label(f: Fields, key: str, value: Any) -> str:
    """uniqueNodeLabelStrategy: each node gets a value of `labelKey` no other node has."""
    s = f.nested(key, value)
    label = s.take("labelKey", text)
    s.done()
    return label


@dataclass(frozen=True, slots=True)
class NodeAllocatable:
    """nodeAllocatableStrategy: amounts set in every node's status.allocatable, and the
    CSINode made for each node: its drivers' attach limits (`count`, None where the
    driver gives none) and the in-tree plugins it says are migrated to CSI there."""

    allocatable: dict[str, str]
    csi_drivers: dict[str, int | None]
    migrated_plugins: tuple[str, ...] = ()

    @classmethod
    def read(cls, f: Fields, key: str, value: Any) -> NodeAllocatable:
        s = f.nested(key, value)
        allocatable = s.take("nodeAllocatable", text_map, {})
        drivers = s.take("csiNodeAllocatable", _csi_drivers, {})
        migrated = s.take("migratedPlugins", texts, ())
        s.done()
        return cls(allocatable, drivers, migrated)

    def csi_node(self, node: str) -> dict[str, Any] | None:
        """The CSINode upstream's harness makes for a node, if the strategy says any."""
        if not self.csi_drivers and not self.migrated_plugins:
            return None
        drivers = [
            {"name": name, "nodeID": node, "allocatable": {} if n is None else {"count": n}}
            for name, n in self.csi_drivers.items()
        ]
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {
                "name": node,
                "annotations": {MIGRATED_PLUGINS: ",".join(self.migrated_plugins)},
            },
            "spec": {"drivers": drivers},
        }


def _csi_drivers(f: Fields, key: str, value: Any) -> dict[str, int | None]:
    """csiNodeAllocatable: driver name -> {count}, the limit of its volumes on a node."""
    raw = f.nested(key, value)
    if not isinstance(value, Mapping):
        raise f.error(key, value, "must be a map of driver name to {count}")
    out: dict[str, int | None] = {}
    for driver, limits in value.items():
        s = raw.nested(str(driver), limits)
        out[str(driver)] = s.take("count", count, None)
        s.done()
    return out


@dataclass(frozen=True, slots=True)
class PerIndex:
    """optimist's own `perIndexStrategy` on createPods: pod i of the op differs from the rest.

    With spans C = cpuMilli[1] - cpuMilli[0] + 1 and M likewise for memoryMi,
    pod i requests (and is limited to) cpuMilli[0] + i % C millicores and
    memoryMi[0] + (i // C) % M MiB, so the first C x M pods all differ; with
    `nodeAffinity`, pod i requires `labelKey` In the `width` values of
    `labelValues` starting at i % len(labelValues).
    """

    cpu_milli: tuple[int, int]
    memory_mi: tuple[int, int]
    affinity: LabelValues | None = None
    width: int = 1

    @classmethod
    def read(cls, f: Fields, key: str, value: Any) -> PerIndex:
        s = f.nested(key, value)
        cpu = s.take("cpuMilli", _range)
        memory = s.take("memoryMi", _range)
        affinity, width = None, 1
        if "nodeAffinity" in s.raw:
            a = s.nested("nodeAffinity", s.raw.pop("nodeAffinity"))
            affinity = LabelValues(a.take("labelKey", text), a.take("labelValues", texts))
            width = a.take("width", positive, 1)
            a.done()
            if width > len(affinity.values):
                raise s.error("nodeAffinity.width", width, "exceeds the number of labelValues")
        s.done()
        return cls(cpu, memory, affinity, width)


def _range(f: Fields, key: str, value: Any) -> tuple[int, int]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 1 <= value[0] <= value[1]
    ):
        raise f.error(key, value, "must be [low, high] with 1 <= low <= high")
    return value[0], value[1]
