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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, overload

import yaml

from benchmarks.cases import go_decoding
from benchmarks.cases.go_template import TemplateError, TextTemplate
from cluster.durations import parse_duration

Manifest = Mapping[str, Any]
Template = Manifest | TextTemplate  # a TextTemplate makes each object its own

# Kinds createAny may create; the runner says what it does with each.
# Kinds whose pods controllers make: only a living cluster (--cluster kwok) runs them.
WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet")
CREATE_ANY_KINDS = (
    "Namespace",
    "PriorityClass",
    "PodGroup",
    "PodDisruptionBudget",
    "ElasticQuota",
    "Reservation",
    "Pod",
    "Node",
    "Service",
    *WORKLOAD_KINDS,
)
# Kinds churn may cycle; a Service is recorded and has no effect (no default spreading).
CHURN_KINDS = ("Node", "Pod", "Service")
_VOLUMES = "optimist does not model volumes (PersistentVolumes, claims, CSI)"
_DRA = "optimist does not model dynamic resource allocation (DRA)"
_GO_TEMPLATE = (
    "a Go template ({{.Index}} and the like, upstream's since v1.31), which optimist "
    "renders for createPods, createNodes and createAny only"
)
UNSUPPORTED_OPCODES = {
    "createResourceClaims": _DRA,
    "createResourceDriver": _DRA,
    "allocResourceClaims": _DRA,
    "createResourceClass": _DRA,  # v1.30's DRA ops, before createAny took them
    "createResourceClaimTemplate": _DRA,
}
# Case-level fields that change nothing here: optimist measures with its own collectors.
_IGNORED_CASE_FIELDS = ("metricsCollectorConfig", "defaultThresholdMetricSelector")
_IGNORED_WORKLOAD_FIELDS = ("thresholdMetricSelector",)


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
    ) -> Template: ...

    def load(
        self,
        where: Where,
        field: str,
        value: object,
        kinds: tuple[str, ...],
        indexed: bool = False,
    ) -> Template:
        """The template at `value`; one with Go template fields is a TextTemplate where
        the op renders one per object (`indexed`), and cannot be run elsewhere."""
        if not isinstance(value, str) or not value:
            raise where.error(field, value, "must be a path")
        path = self.resolve(value)
        if path not in self._loaded:
            self._loaded[path] = self._read(where, field, value, path)
        doc, kind = self._loaded[path]
        if isinstance(doc, TextTemplate) and not indexed:
            # left as text, every object made of it would be one
            raise Unsupported(f"{field}={value!r}: {_GO_TEMPLATE}")
        if kinds and kind not in kinds:
            raise where.error(field, value, f"kind {kind}: must be {' or '.join(kinds)}")
        return doc

    def _read(self, where: Where, field: str, value: str, path: Path) -> tuple[Template, str]:
        """The template and its kind (a Go template's as its first object renders)."""
        try:
            source = path.read_text()
            if "{{" in source:
                made = TextTemplate(value, source)
                return made, made.kind
            doc = yaml.safe_load(source)
        except (OSError, yaml.YAMLError, TemplateError) as e:
            raise where.error(field, value, f"cannot read: {e}") from e
        if not isinstance(doc, Mapping) or not isinstance(doc.get("kind"), str):
            raise where.error(field, value, "not a Kubernetes object (no kind)")
        return go_decoding.canonical(doc), doc["kind"]  # keys' case as upstream reads it


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

    def take(
        self, key: str, read: Callable[[Fields, str, Any], Any], default: Any = _MISSING
    ) -> Any:
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


# --- readers: (fields, key, raw value) -> value -------------------------------------


def count(f: Fields, key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise f.error(key, value, "must be an integer >= 0")
    return value


def positive(f: Fields, key: str, value: Any) -> int:
    if count(f, key, value) < 1:
        raise f.error(key, value, "must be an integer >= 1")
    return value


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
        return value

    return read


def template(*kinds: str) -> Callable[[Fields, str, Any], Manifest]:
    def read(f: Fields, key: str, value: Any) -> Manifest:
        return f.templates.load(f.where, f.prefix + key, value, kinds)

    return read


def indexed_template(*kinds: str) -> Callable[[Fields, str, Any], Template]:
    """A template an op makes its objects of one by one: Go template fields allowed."""

    def read(f: Fields, key: str, value: Any) -> Template:
        return f.templates.load(f.where, f.prefix + key, value, kinds, indexed=True)

    return read


def templates(*kinds: str) -> Callable[[Fields, str, Any], tuple[Manifest, ...]]:
    def read(f: Fields, key: str, value: Any) -> tuple[Manifest, ...]:
        if not isinstance(value, list) or not value:
            raise f.error(key, value, "must be a non-empty list of paths")
        return tuple(
            f.templates.load(f.where, f"{f.prefix}{key}[{i}]", v, kinds)
            for i, v in enumerate(value)
        )

    return read


# --- strategies ---------------------------------------------------------------------


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


def node_allocatable(f: Fields, key: str, value: Any) -> dict[str, str]:
    """nodeAllocatableStrategy: status.allocatable of every node; its CSI parts need volumes."""
    s = f.nested(key, value)
    s.unsupported_if_present("csiNodeAllocatable", _VOLUMES)
    s.unsupported_if_present("migratedPlugins", _VOLUMES)
    allocatable = s.take("nodeAllocatable", text_map)
    s.done()
    return allocatable


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


# --- ops ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateNodes:
    opcode: ClassVar[str] = "createNodes"
    count: int
    template: Template
    allocatable: dict[str, str] | None = None
    label_values: LabelValues | None = None
    unique_label: str | None = None

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreateNodes:
        return cls(
            f.take("count", count),
            f.take("nodeTemplatePath", indexed_template("Node"), case.node_template),
            f.take("nodeAllocatableStrategy", node_allocatable, None),
            f.take("labelNodePrepareStrategy", LabelValues.read, None),
            f.take("uniqueNodeLabelStrategy", unique_label, None),
        )


@dataclass(frozen=True, slots=True)
class CreateNamespaces:
    """`count` namespaces `<prefix>-<i>`, with the template's labels (namespaceSelector
    matches them)."""

    opcode: ClassVar[str] = "createNamespaces"
    prefix: str
    count: int
    labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreateNamespaces:
        made = f.take("namespaceTemplatePath", template("Namespace"), None)
        labels = dict((made or {}).get("metadata", {}).get("labels") or {})
        return cls(f.take("prefix", text), f.take("count", count), labels)


@dataclass(frozen=True, slots=True)
class CreatePods:
    """Pods from a template; without `namespace`, in `namespace-<op index>` as upstream does."""

    opcode: ClassVar[str] = "createPods"
    count: int
    template: Template
    namespace: str
    collect_metrics: bool = False
    skip_wait: bool = False
    per_index: PerIndex | None = None

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreatePods:
        for key in ("persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath"):
            f.unsupported_if_present(key, _VOLUMES)
        for key in ("steadyState", "duration"):
            f.unsupported_if_present(key, "steady-state pod creation is not implemented")
        return cls(
            f.take("count", count),
            *_pod_fields(f, case),
            per_index=f.take("perIndexStrategy", PerIndex.read, None),
        )


@dataclass(frozen=True, slots=True)
class CreatePodSets:
    """`count` times its createPods op, the i-th in namespace `<namespacePrefix>-<i>`."""

    opcode: ClassVar[str] = "createPodSets"
    count: int
    namespace_prefix: str
    pods: CreatePods

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreatePodSets:
        sets, prefix = f.take("count", count), f.take("namespacePrefix", text)
        return cls(sets, prefix, f.take("createPodsOp", _nested_create_pods(case)))

    def namespaces(self) -> list[str]:
        return [f"{self.namespace_prefix}-{i}" for i in range(self.count)]


def _nested_create_pods(case: CaseDefaults) -> Callable[[Fields, str, Any], CreatePods]:
    """createPodSets' createPodsOp: a createPods op of its own, its params already filled."""

    def read(f: Fields, key: str, value: Any) -> CreatePods:
        nested = f.nested(key, value)
        opcode = nested.take("opcode", text)
        if opcode != CreatePods.opcode:
            raise nested.error("opcode", opcode, "must be createPods")
        op = CreatePods.parse(nested, case)
        nested.done()
        return op

    return read


@dataclass(frozen=True, slots=True)
class CreatePodGroups:
    """`count` PodGroups `<namePrefix>-<i>`, each with `podsPerGroup` pods `<group>-<j>`."""

    opcode: ClassVar[str] = "createPodGroups"
    count: int
    min_member: int
    pods_per_group: int
    template: Manifest
    namespace: str
    name_prefix: str = "group"
    collect_metrics: bool = False
    skip_wait: bool = False

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreatePodGroups:
        counts = f.take("count", count), f.take("minMember", positive)
        pods_per_group = f.take("podsPerGroup", positive)
        if counts[1] > pods_per_group:
            raise f.error("minMember", counts[1], f"exceeds podsPerGroup {pods_per_group}")
        manifest, namespace, collect, skip_wait = _pod_fields(f, case)
        if isinstance(manifest, TextTemplate):
            raise Unsupported(f"podTemplatePath={manifest.name!r}: {_GO_TEMPLATE}")
        return cls(
            *counts,
            pods_per_group,
            manifest,
            namespace,
            f.take("namePrefix", text, "group"),
            collect,
            skip_wait,
        )


@dataclass(frozen=True, slots=True)
class CreateAny:
    opcode: ClassVar[str] = "createAny"
    template: Template
    count: int = 1
    namespace: str = "default"

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreateAny:
        manifest = f.take("templatePath", indexed_template())
        first = manifest.render(0, 1) if isinstance(manifest, TextTemplate) else manifest
        if first["kind"] not in CREATE_ANY_KINDS:
            raise Unsupported(
                f"templatePath: kind {first['kind']} ({first.get('apiVersion')}): optimist "
                f"cannot act on it (createAny takes {', '.join(CREATE_ANY_KINDS)})"
            )
        return cls(manifest, f.take("count", count, 1), f.take("namespace", text, "default"))


@dataclass(frozen=True, slots=True)
class DeletePods:
    """Delete a namespace's pods (matching `labelSelector`), `per_second` at a time (0: all)."""

    opcode: ClassVar[str] = "deletePods"
    namespace: str
    per_second: int = 0
    label_selector: dict[str, str] | None = None
    skip_wait: bool = False

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> DeletePods:
        return cls(
            f.take("namespace", text),
            f.take("deletePodsPerSecond", count, 0),
            f.take("labelSelector", text_map, None),
            f.take("skipWaitForPodsRemoval", flag, False),
        )


@dataclass(frozen=True, slots=True)
class Churn:
    """In the background until the workload ends, every `interval_s`: `create` makes `number`
    objects of each template; `recreate` keeps `number` of each alive, replacing the oldest."""

    opcode: ClassVar[str] = "churn"
    mode: str
    templates: tuple[Manifest, ...]
    interval_s: float = 0.5
    number: int = 1

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> Churn:
        mode = f.take("mode", one_of("recreate", "create"))
        service = f.take("serviceTemplatePath", template("Service"), None)
        made = f.take("templatePaths", templates(*CHURN_KINDS), ())
        if service is None and not made:
            raise f.error("templatePaths", None, "is required")
        return cls(
            mode,
            made + ((service,) if service is not None else ()),
            f.take("intervalMilliseconds", positive, 500) / 1000,
            f.take("number", positive, 1),
        )


@dataclass(frozen=True, slots=True)
class Barrier:
    """Wait until every pod created so far (in `namespaces`, if given) is bound or has a verdict.

    `stageRequirement` Attempted and Scheduled read the same here: the wait
    also ends when what is left waits on a "no node fits" that still holds.
    """

    opcode: ClassVar[str] = "barrier"
    namespaces: tuple[str, ...] = ()

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> Barrier:
        f.take("stageRequirement", one_of("Attempted", "Scheduled"), None)
        return cls(f.take("namespaces", texts, ()))


@dataclass(frozen=True, slots=True)
class Sleep:
    opcode: ClassVar[str] = "sleep"
    seconds: float

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> Sleep:
        return cls(f.take("duration", duration))


@dataclass(frozen=True, slots=True)
class StartCollectingMetrics:
    """Pods created from here to stopCollectingMetrics (in `namespaces`, matching the selector)
    are measured."""

    opcode: ClassVar[str] = "startCollectingMetrics"
    namespaces: tuple[str, ...] = ()
    label_selector: dict[str, str] | None = None

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> StartCollectingMetrics:
        f.take("name", text, None)
        return cls(f.take("namespaces", texts, ()), f.take("labelSelector", text_map, None))


@dataclass(frozen=True, slots=True)
class StopCollectingMetrics:
    opcode: ClassVar[str] = "stopCollectingMetrics"

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> StopCollectingMetrics:
        return cls()


@dataclass(frozen=True, slots=True)
class UnsupportedOp:
    """An op optimist knows and cannot run; running its case stops with this reason."""

    opcode: str
    index: int
    reason: str


Op = (
    CreateNodes
    | CreateNamespaces
    | CreatePods
    | CreatePodSets
    | CreatePodGroups
    | CreateAny
    | DeletePods
    | Churn
    | Barrier
    | Sleep
    | StartCollectingMetrics
    | StopCollectingMetrics
)
OPS: dict[str, Any] = {
    op.opcode: op
    for op in (
        CreateNodes,
        CreateNamespaces,
        CreatePods,
        CreatePodSets,
        CreatePodGroups,
        CreateAny,
        DeletePods,
        Churn,
        Barrier,
        Sleep,
        StartCollectingMetrics,
        StopCollectingMetrics,
    )
}


def _pod_fields(f: Fields, case: CaseDefaults) -> tuple[Template, str, bool, bool]:
    """What every op that makes pods takes: template, namespace, whether measured and waited."""
    manifest = f.take("podTemplatePath", indexed_template("Pod"), None) or case.pod_template(f)
    namespace = f.take("namespace", text, f"namespace-{f.where.index}")
    collect = f.take("collectMetrics", flag, False)
    skip_wait = f.take("skipWaitToCompletion", flag, False)
    if collect and skip_wait:
        raise f.error(
            "skipWaitToCompletion",
            True,
            "collectMetrics measures until the pods are scheduled; "
            "use startCollectingMetrics/stopCollectingMetrics around ops that do not wait",
        )
    return manifest, namespace, collect, skip_wait


@dataclass(frozen=True, slots=True)
class CaseDefaults:
    """What a case gives every op: its default pod template and the default node."""

    default_pod: Template | None
    node_template: Manifest
    unreadable_pod: str = ""  # why defaultPodTemplatePath cannot be run, if it cannot

    def pod_template(self, f: Fields) -> Template:
        """For an op without podTemplatePath: the case's defaultPodTemplatePath (one
        optimist cannot run makes the op so), or the field is required."""
        if self.unreadable_pod:
            raise Unsupported(self.unreadable_pod)
        if self.default_pod is None:
            raise f.error("podTemplatePath", None, "is required")
        return self.default_pod


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

    @property
    def name(self) -> str:
        """The file's case/workload, with the params set otherwise beside it, such as
        `SchedulingBasic/5000Nodes_10000Pods[initNodes=20000]`: a run is named by what
        it ran, not by the file's workload whose params were replaced."""
        changed = ",".join(f"{k}={v}" for k, v in self.overrides.items())
        return f"{self.case}/{self.workload}" + (f"[{changed}]" if changed else "")

    def unsupported(self) -> UnsupportedOp | None:
        return next((op for op in self.ops if isinstance(op, UnsupportedOp)), None)


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
    if unused := sorted(params.keys() - used):
        raise Where(case, name).error("params", unused, "not used by any op")
    return CaseWorkload(
        case,
        name,
        tuple(made),
        params,
        threshold,
        case_labels + labels,
        {**(case_gates or {}), **(gates or {})} or None,
        overrides=changed,
    )


def _params(f: Fields, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise f.error(key, value, "must be a map of names to values")
    return dict(value)


def _threshold(f: Fields, key: str, value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise f.error(key, value, "must be a number >= 0")
    return float(value)


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
    fields = _filled(where, dict(raw), params, used)  # an op not run uses its params too
    if where.opcode in UNSUPPORTED_OPCODES:
        return UnsupportedOp(where.opcode, where.index, UNSUPPORTED_OPCODES[where.opcode])
    del fields["opcode"]
    f = Fields(fields, where, files)
    try:
        op = OPS[where.opcode].parse(f, defaults)
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
    """The op's `<field>Param: $name` fields given the workload's values, in the ops
    nested in it too (createPodSets' createPodsOp); `used` gathers the names."""
    for key in [k for k in fields if k.endswith("Param")]:
        value = fields.pop(key)
        base = key[: -len("Param")]
        if base in fields:
            raise where.error(prefix + key, value, f"give {base} or {key}, not both")
        if not isinstance(value, str) or not value.startswith("$"):
            raise where.error(prefix + key, value, "must be $name, a param of the workload")
        if value[1:] not in params:
            raise where.error(
                prefix + key, value, f"no param {value[1:]!r} in the workload's params"
            )
        used.add(value[1:])
        fields[base] = params[value[1:]]
    for key, value in fields.items():
        if key.endswith("Op") and isinstance(value, Mapping):
            fields[key] = _filled(where, dict(value), params, used, f"{prefix}{key}.")
    return fields


def select(runs: list[CaseWorkload], case: str | None, workload: str | None) -> list[CaseWorkload]:
    """The runs `--case`/`--workload` pick; `--workload Case/Workload` names both at once."""
    if workload and "/" in workload:
        case, workload = workload.split("/", 1)
    picked = [
        r
        for r in runs
        if (case is None or r.case == case) and (workload is None or r.workload == workload)
    ]
    if not picked:
        known = ", ".join(f"{r.case}/{r.workload}" for r in runs)  # as --workload names them
        raise PerfConfigError(
            f"no workload matches case={case!r} workload={workload!r}; the file has: {known}"
        )
    return picked
