"""The ops of a case file, one dataclass each, read from their fields (`case_fields`);
the ops optimist knows and cannot run load as `UnsupportedOp`, saying why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from benchmarks.cases.case_fields import (
    NO_DRA,
    NO_GO_TEMPLATE,
    NO_VOLUMES,
    Fields,
    LabelValues,
    Manifest,
    PerIndex,
    Template,
    Unsupported,
    count,
    duration,
    flag,
    indexed_template,
    node_allocatable,
    one_of,
    positive,
    template,
    templates,
    text,
    text_map,
    texts,
    unique_label,
)
from benchmarks.cases.go_template import TextTemplate

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


# Kinds churn may cycle; a Service selects pods for default spreading.
CHURN_KINDS = ("Node", "Pod", "Service")


UNSUPPORTED_OPCODES = {
    "createResourceClaims": NO_DRA,
    "createResourceDriver": NO_DRA,
    "allocResourceClaims": NO_DRA,
    "createResourceClass": NO_DRA,  # v1.30's DRA ops, before createAny took them
    "createResourceClaimTemplate": NO_DRA,
}


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
            f.unsupported_if_present(key, NO_VOLUMES)
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
            raise Unsupported(f"podTemplatePath={manifest.name!r}: {NO_GO_TEMPLATE}")
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
