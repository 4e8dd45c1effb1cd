"""The ops of a case file, one dataclass each, read from their fields (`case_fields`);
the ops optimist knows and cannot run load as `UnsupportedOp`, saying why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from benchmarks.cases.case_fields import (
    NO_DRA,
    NO_GO_TEMPLATE,
    NO_UPDATES,
    NO_WORKLOAD_API,
    Fields,
    LabelValues,
    Manifest,
    NodeAllocatable,
    PerIndex,
    Template,
    Unsupported,
    bound,
    count,
    duration,
    flag,
    indexed_template,
    one_of,
    positive,
    template,
    template_params,
    templates,
    text,
    text_map,
    texts,
    unique_label,
)
from benchmarks.cases.go_template import TextTemplate
from cluster.volumes.index import CLAIMS, CLASSES, CSI_NODES, VOLUMES

# Kinds createAny may create; the runner says what it does with each.
# Kinds whose pods controllers make: only a living cluster (--cluster kwok) runs them.
WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet")
# the volume objects createAny makes, by the resource `cluster.volumes.index` names them by
VOLUME_KINDS = {
    "StorageClass": CLASSES,
    "PersistentVolume": VOLUMES,
    "PersistentVolumeClaim": CLAIMS,
    "CSINode": CSI_NODES,
}


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
    *VOLUME_KINDS,
)


# Kinds churn may cycle; a Service selects pods for default spreading.
CHURN_KINDS = ("Node", "Pod", "Service")


NO_PROFILES = "it profiles kube-scheduler's process; optimist profiles its own (--profile)"


UNSUPPORTED_OPCODES = {
    "createResourceClaims": NO_DRA,
    "createResourceDriver": NO_DRA,
    "allocResourceClaims": NO_DRA,
    "createResourceClass": NO_DRA,  # v1.30's DRA ops, before createAny took them
    "createResourceClaimTemplate": NO_DRA,
    "startCollectingProfile": NO_PROFILES,
    "stopCollectingProfile": NO_PROFILES,
}


@dataclass(frozen=True, slots=True)
class CreateNodes:
    opcode: ClassVar[str] = "createNodes"
    count: int
    template: Template
    allocatable: NodeAllocatable | None = None
    label_values: LabelValues | None = None
    unique_label: str | None = None

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreateNodes:
        params = f.take("templateParams", template_params, {})
        return cls(
            f.take("count", count),
            f.take("nodeTemplatePath", indexed_template("Node", params=params), case.node_template),
            f.take("nodeAllocatableStrategy", NodeAllocatable.read, None),
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
class ClaimTemplates:
    """createPods' persistentVolumeTemplatePath and persistentVolumeClaimTemplatePath:
    each pod gets a volume and a claim of its own, bound to each other, as upstream's
    harness makes them (`workload_objects.claimed`)."""

    volume: Manifest
    claim: Manifest


@dataclass(frozen=True, slots=True)
class CreatePods:
    """Pods from a template; without `namespace`, in `namespace-<op index>` as upstream does.

    With `signatureBatchSize` b, pod i is labelled `signature: signature-label-<i // b>`.
    Upstream labels every pod made from a template file so (b defaulting to 1: each
    its own); optimist does only where the file sets b, the label's one use, so that
    pods alike are still made and read as one batch.

    `boundAtCreation` (ours): each pod is made with spec.nodeName, on the nodes made so
    far in turn, bound without a scheduler, as a large cluster's running pods are: its
    bound pods made at the rate the server creates objects, never waited for or
    measured (the case sizes them to fit; the checker says where they do not).
    """

    opcode: ClassVar[str] = "createPods"
    count: int
    template: Template
    namespace: str
    collect_metrics: bool = False
    skip_wait: bool = False
    per_index: PerIndex | None = None
    signature_batch: int | None = None
    claims: ClaimTemplates | None = None
    bound_at_creation: bool = False

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreatePods:
        keys = ("persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath")
        volume = f.take(keys[0], template("PersistentVolume"), None)
        claim = f.take(keys[1], template("PersistentVolumeClaim"), None)
        if claim is not None and volume is None:  # upstream's op fails as it runs
            raise Unsupported(f"{keys[1]}: needs {keys[0]} beside it")
        # a volume template alone is not read, as upstream's harness does not read it
        claims = ClaimTemplates(volume, claim) if volume is not None and claim is not None else None
        pods = f.take("count", count) * f.take("countMultiplierParam", count, 1)
        steady = f.take("steadyState", flag, False)
        lasting = f.take("duration", duration, 0.0)
        batch = f.take("signatureBatchSize", count, None)
        fields = _pod_fields(f, case, pods)
        if steady and fields[3]:
            raise f.error("steadyState", True, "skipWaitToCompletion waits for nothing to hold")
        if steady and lasting <= 0:
            raise f.error("duration", lasting, "must be > 0 when creating pods in a steady state")
        per_index = f.take("perIndexStrategy", PerIndex.read, None)
        bound_at_creation = f.take("boundAtCreation", flag, False)
        if bound_at_creation and (fields[2] or claims is not None):
            problem = "pods bound at creation are not scheduled: nothing to measure or to claim"
            raise f.error("boundAtCreation", True, problem)
        if steady:
            f.done()
            raise Unsupported("steadyState: steady-state pod creation is not implemented")
        return cls(
            pods,
            *fields,
            per_index=per_index,
            signature_batch=batch or None,
            claims=claims,
            bound_at_creation=bound_at_creation,
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
    """`count` PodGroups `<namePrefix>-<i>`, each with `podsPerGroup` pods `<group>-<j>`.

    Upstream's op of this name (since v1.35) takes a `templatePath` instead: PodGroups
    of the Workload API alone, whose pods a createPods op makes; read as upstream
    reads it, it cannot run here (NO_WORKLOAD_API)."""

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
        if "templatePath" in f.raw:
            _workload_pod_groups(f)
        counts = f.take("count", count), f.take("minMember", positive)
        pods_per_group = f.take("podsPerGroup", positive)
        if counts[1] > pods_per_group:
            raise f.error("minMember", counts[1], f"exceeds podsPerGroup {pods_per_group}")
        manifest, namespace, collect, skip_wait = _pod_fields(f, case, 1)
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


def _workload_pod_groups(f: Fields) -> None:
    """Upstream's createPodGroups read strictly (its PodGroups are rendered without
    `.Count`); Unsupported once read."""
    params = f.take("templateParams", template_params, {})
    made = f.take("templatePath", indexed_template("PodGroup", params=params))
    f.take("namespace", text)
    groups = f.take("count", count)
    if groups < 1:
        raise f.error("count", groups, "must be an integer >= 1")
    f.done()
    version = made.render(0, None) if isinstance(made, TextTemplate) else made
    raise Unsupported(f"templatePath: {version.get('apiVersion')} PodGroup: {NO_WORKLOAD_API}")


@dataclass(frozen=True, slots=True)
class CreateAny:
    opcode: ClassVar[str] = "createAny"
    template: Template
    count: int = 1
    namespace: str = "default"

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> CreateAny:
        params = f.take("templateParams", template_params, {})
        made = f.take("count", count, 1)
        manifest = f.take("templatePath", indexed_template(params=params))
        if isinstance(manifest, TextTemplate):
            manifest = bound(f.where, "templatePath", manifest, (), params, made)
        _can_act_on(manifest.render(0, made) if isinstance(manifest, TextTemplate) else manifest)
        return cls(manifest, made, f.take("namespace", text, "default"))


def _can_act_on(first: Manifest) -> None:
    """Unsupported for an object createAny makes that optimist has no model of."""
    kind, version = first["kind"], str(first.get("apiVersion", ""))
    if version.startswith("resource.k8s.io/"):
        raise Unsupported(f"templatePath: kind {kind} ({version}): {NO_DRA}")
    if kind == "PodGroup" and version.startswith("scheduling.k8s.io/"):
        raise Unsupported(f"templatePath: kind {kind} ({version}): {NO_WORKLOAD_API}")
    if kind not in CREATE_ANY_KINDS:
        raise Unsupported(
            f"templatePath: kind {kind} ({version}): optimist "
            f"cannot act on it (createAny takes {', '.join(CREATE_ANY_KINDS)})"
        )


@dataclass(frozen=True, slots=True)
class UpdateAny:
    """Upstream's updateAny, read strictly: each object its template renders replaced."""

    opcode: ClassVar[str] = "updateAny"

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> UpdateAny:
        made = f.take("count", count, 1)
        f.take("templatePath", indexed_template(params={}))
        f.take("namespace", text, None)
        f.take("updatePerSecond", count, 0)
        f.take("subresources", texts, ())
        f.done()
        raise Unsupported(f"updating {made} object(s): {NO_UPDATES}")


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
            f.take("skipWaitToCompletion", flag, False),
        )


@dataclass(frozen=True, slots=True)
class Churn:
    """In the background until the workload ends, every `interval_s`, in `namespace`:
    `create` makes one object of each template, `number` times (0: until the end);
    `recreate` keeps `number` of each alive, replacing the oldest."""

    opcode: ClassVar[str] = "churn"
    mode: str
    templates: tuple[Manifest, ...]
    namespace: str
    interval_s: float = 0.5
    number: int = 0

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> Churn:
        mode = f.take("mode", one_of("recreate", "create"))
        service = f.take("serviceTemplatePath", template("Service"), None)
        made = f.take("templatePaths", templates(*CHURN_KINDS), ())
        if service is None and not made:
            raise f.error("templatePaths", None, "is required")
        number = f.take("number", count, 0)
        if mode == "recreate" and number == 0:
            raise f.error("number", number, "must be an integer >= 1 in recreate mode")
        return cls(
            mode,
            made + ((service,) if service is not None else ()),
            f.take("namespace", text, f"namespace-{f.where.index}"),
            (f.take("intervalMilliseconds", count, 0) or 500) / 1000,
            number,
        )


@dataclass(frozen=True, slots=True)
class Barrier:
    """Wait until every pod created so far (in `namespaces`, if given) is bound or has a verdict.

    Scheduled (the default) also ends when what is left waits on a "no node fits"
    that still holds; `stageRequirement: Attempted` as soon as every pod is bound or
    reported unschedulable once, while churn may go on making pods.
    """

    opcode: ClassVar[str] = "barrier"
    namespaces: tuple[str, ...] = ()
    label_selector: dict[str, str] | None = None
    attempted: bool = False

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> Barrier:
        stage = f.take("stageRequirement", one_of("Attempted", "Scheduled"), None)
        return cls(
            f.take("namespaces", texts, ()),
            f.take("labelSelector", text_map, None),
            stage == "Attempted",
        )


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
class RestartScheduler:
    """Ours: the scheduler under test restarted here, so that the report says how soon it
    binds again on the cluster made so far. Cold (the default): every replica killed and
    started afresh, to list and build all it holds; `failover: true`: the leader killed
    while a standby that waits on the Lease takes over."""

    opcode: ClassVar[str] = "restartScheduler"
    failover: bool = False

    @classmethod
    def parse(cls, f: Fields, case: CaseDefaults) -> RestartScheduler:
        return cls(f.take("failover", flag, False))


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
    | RestartScheduler
)


# ops read as upstream reads them, then Unsupported: never instantiated
_READ_ONLY = (UpdateAny,)


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
        RestartScheduler,
        *_READ_ONLY,
    )
}


def _pod_fields(f: Fields, case: CaseDefaults, pods: int) -> tuple[Template, str, bool, bool]:
    """What every op that makes pods takes: template (rendered with its templateParams,
    `pods` of them), namespace, whether measured and waited."""
    params = f.take("templateParams", template_params, {})
    manifest = f.take("podTemplatePath", indexed_template("Pod", params=params), None)
    if manifest is None:
        manifest = case.pod_template()
        if isinstance(manifest, TextTemplate):
            manifest = bound(f.where, "defaultPodTemplatePath", manifest, ("Pod",), params, pods)
    first = manifest.render(0, pods) if isinstance(manifest, TextTemplate) else manifest
    if (first.get("spec") or {}).get("schedulingGroup") is not None:
        raise Unsupported(f"podTemplatePath: spec.schedulingGroup: {NO_WORKLOAD_API}")
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

    def pod_template(self) -> Template:
        """For an op without podTemplatePath: the case's defaultPodTemplatePath (one
        optimist cannot run makes the op so), or upstream's own pod (`BASE_POD`)."""
        if self.unreadable_pod:
            raise Unsupported(self.unreadable_pod)
        return BASE_POD if self.default_pod is None else self.default_pod


# The pod upstream's createPods makes without a template (its makeBasePod): one
# container asking for, and limited to, 100m of CPU and 500Mi of memory.
_AMOUNTS = {"cpu": "100m", "memory": "500Mi"}
BASE_POD: Manifest = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "pod-"},
    "spec": {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {"limits": dict(_AMOUNTS), "requests": dict(_AMOUNTS)},
            }
        ]
    },
}
