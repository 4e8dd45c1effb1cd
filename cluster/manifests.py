"""Kubernetes manifests (dicts) into the object model, with errors that name the field.

A manifest optimist cannot use is rejected with `InvalidObject`, naming the
object, the field path and the value; only that object is rejected.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cluster import resources as res
from cluster.disruption import DisruptionBudget
from cluster.durations import parse_duration
from cluster.errors import InvalidObject
from cluster.gpus import (
    GPU,
    GPU_TOPOLOGY_ANNOTATION,
    GpuTopology,
    imply_pod_milli,
    parse_topology,
    pod_locality,
)
from cluster.manifest_fields import (
    int_field,
    label_selector,
    list_field,
    map_field,
    metadata,
    node_selector_term,
    string_map,
    strings,
)
from cluster.objects import (
    DEFAULT_SCHEDULE_TIMEOUT_S,
    POD_GROUP_LABEL,
    ContainerImage,
    HostPort,
    Node,
    Pod,
    PodAffinityTerm,
    PodGroup,
    SchedulingSpec,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from cluster.reservations import RESERVATION_NAMESPACE, Reservation
from cluster.selectors import NodeSelectorTerm
from cluster.volumes.storage_manifests import pod_volumes

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PROTOCOLS = ("TCP", "UDP", "SCTP")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES = ("Honor", "Ignore")
PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER = "PreemptLowerPriority", "Never"  # spec.preemptionPolicy


# the phases of a pod that has ended: it holds no room on its node any more
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def scheduler_name(manifest: Mapping[str, Any]) -> str:
    """The profile the pod of this manifest asks for: `spec.schedulerName`, else
    kube-scheduler's default."""
    return str((manifest.get("spec") or {}).get("schedulerName") or "default-scheduler")


def terminated(manifest: Mapping[str, Any]) -> bool:
    """Whether the pod of this manifest has ended (`TERMINAL_PHASES`)."""
    status = manifest.get("status")
    return isinstance(status, Mapping) and status.get("phase") in TERMINAL_PHASES


def condition(manifest: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The object's status condition of type `kind` (a pod's PodScheduled, a node's
    Ready), if it has one."""
    for c in (manifest.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def condition_true(manifest: Mapping[str, Any], kind: str) -> bool:
    """Whether the object's condition of type `kind` says True."""
    found = condition(manifest, kind)
    return found is not None and found.get("status") == "True"


def copy_manifest(raw: Any) -> Any:
    """A deep copy of a manifest (maps, lists and scalars, as YAML and JSON give them),
    as an API server keeps its own: three times quicker than `copy.deepcopy`, which
    looks for shared and cyclic references that a manifest never has."""
    if isinstance(raw, dict):
        return {key: copy_manifest(value) for key, value in raw.items()}
    if isinstance(raw, list):
        return [copy_manifest(value) for value in raw]
    return raw


def _preferred_terms(obj: str, spec: Mapping[str, Any]) -> tuple[tuple[int, NodeSelectorTerm], ...]:
    base = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    node_affinity = map_field(obj, "spec.affinity", spec.get("affinity")).get("nodeAffinity") or {}
    out = []
    for i, raw in enumerate(
        list_field(
            obj,
            base,
            map_field(obj, "spec.affinity.nodeAffinity", node_affinity).get(
                "preferredDuringSchedulingIgnoredDuringExecution"
            ),
        )
    ):
        raw = map_field(obj, f"{base}[{i}]", raw)
        weight = int_field(obj, f"{base}[{i}].weight", raw.get("weight"), low=1, high=100)
        out.append(
            (weight, node_selector_term(obj, f"{base}[{i}].preference", raw.get("preference")))
        )
    return tuple(out)


def _pod_affinity_term(obj: str, path: str, raw: object) -> PodAffinityTerm:
    raw = map_field(obj, path, raw)
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InvalidObject(obj, f"{path}.topologyKey", key, "must be a non-empty string")
    return PodAffinityTerm(
        topology_key=key,
        label_selector=label_selector(obj, f"{path}.labelSelector", raw.get("labelSelector")),
        namespaces=strings(obj, f"{path}.namespaces", raw.get("namespaces")),
        namespace_selector=label_selector(
            obj, f"{path}.namespaceSelector", raw.get("namespaceSelector")
        ),
        match_label_keys=strings(obj, f"{path}.matchLabelKeys", raw.get("matchLabelKeys")),
        mismatch_label_keys=strings(obj, f"{path}.mismatchLabelKeys", raw.get("mismatchLabelKeys")),
    )


def _pod_affinity(
    obj: str, spec: Mapping[str, Any], kind: str
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    """The required and preferred terms of `podAffinity` or `podAntiAffinity`."""
    base = f"spec.affinity.{kind}"
    affinity = map_field(obj, base, map_field(obj, "spec.affinity", spec.get("affinity")).get(kind))
    req_path = f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
    pref_path = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_affinity_term(obj, f"{req_path}[{i}]", t)
        for i, t in enumerate(
            list_field(
                obj, req_path, affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
            )
        )
    )
    preferred = []
    for i, raw in enumerate(
        list_field(obj, pref_path, affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    ):
        raw = map_field(obj, f"{pref_path}[{i}]", raw)
        weight = int_field(obj, f"{pref_path}[{i}].weight", raw.get("weight"), low=1, high=100)
        term = _pod_affinity_term(
            obj, f"{pref_path}[{i}].podAffinityTerm", raw.get("podAffinityTerm")
        )
        preferred.append(WeightedPodAffinityTerm(weight, term))
    return required, tuple(preferred)


def _spread_constraint(obj: str, path: str, raw: object) -> TopologySpreadConstraint:
    raw = map_field(obj, path, raw)
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InvalidObject(obj, f"{path}.topologyKey", key, "must be a non-empty string")
    when = raw.get("whenUnsatisfiable")
    if when not in WHEN_UNSATISFIABLE:
        raise InvalidObject(
            obj,
            f"{path}.whenUnsatisfiable",
            when,
            f"must be one of {', '.join(WHEN_UNSATISFIABLE)}",
        )
    min_domains = raw.get("minDomains")
    if min_domains is not None:
        min_domains = int_field(obj, f"{path}.minDomains", min_domains, low=1)
        if when != "DoNotSchedule":
            raise InvalidObject(
                obj, f"{path}.minDomains", min_domains, "needs whenUnsatisfiable DoNotSchedule"
            )
    policies = {}
    for name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        value = raw.get(name)
        if value is not None and value not in INCLUSION_POLICIES:
            raise InvalidObject(obj, f"{path}.{name}", value, "must be Honor or Ignore")
        policies[name] = value
    return TopologySpreadConstraint(
        max_skew=int_field(obj, f"{path}.maxSkew", raw.get("maxSkew"), low=1),
        topology_key=key,
        when_unsatisfiable=when,
        label_selector=label_selector(obj, f"{path}.labelSelector", raw.get("labelSelector")),
        min_domains=min_domains,
        node_affinity_policy=policies["nodeAffinityPolicy"] or "Honor",
        node_taints_policy=policies["nodeTaintsPolicy"] or "Ignore",
        match_label_keys=strings(obj, f"{path}.matchLabelKeys", raw.get("matchLabelKeys")),
    )


def _host_ports(obj: str, containers: list[Any]) -> tuple[HostPort, ...]:
    ports = []
    for i, container in enumerate(containers):
        path = f"spec.containers[{i}].ports"
        for j, raw in enumerate(
            list_field(obj, path, map_field(obj, f"spec.containers[{i}]", container).get("ports"))
        ):
            raw = map_field(obj, f"{path}[{j}]", raw)
            if not raw.get("hostPort"):
                continue
            port = int_field(obj, f"{path}[{j}].hostPort", raw["hostPort"], low=1, high=65535)
            protocol = raw.get("protocol") or "TCP"
            if protocol not in PROTOCOLS:
                raise InvalidObject(
                    obj, f"{path}[{j}].protocol", protocol, f"must be one of {', '.join(PROTOCOLS)}"
                )
            host_ip = raw.get("hostIP") or ""
            if not isinstance(host_ip, str):
                raise InvalidObject(obj, f"{path}[{j}].hostIP", host_ip, "must be a string")
            ports.append(HostPort(protocol, host_ip, port))
    return tuple(ports)


def _images(obj: str, spec: Mapping[str, Any]) -> tuple[str, ...]:
    images = []
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(list_field(obj, f"spec.{kind}", spec.get(kind))):
            image = map_field(obj, f"spec.{kind}[{i}]", container).get("image")
            if image is not None and not isinstance(image, str):
                raise InvalidObject(obj, f"spec.{kind}[{i}].image", image, "must be a string")
            if image:
                images.append(image)
    return tuple(images)


def _required_terms(obj: str, spec: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...] | None:
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = map_field(obj, "spec.affinity", spec.get("affinity"))
    node_affinity = map_field(obj, "spec.affinity.nodeAffinity", affinity.get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    required = map_field(obj, base, required)
    terms = list_field(obj, f"{base}.nodeSelectorTerms", required.get("nodeSelectorTerms"))
    if not terms:
        raise InvalidObject(obj, f"{base}.nodeSelectorTerms", terms, "needs at least one term")
    return tuple(
        node_selector_term(obj, f"{base}.nodeSelectorTerms[{i}]", t) for i, t in enumerate(terms)
    )


def _toleration(obj: str, path: str, raw: object) -> Toleration:
    raw = map_field(obj, path, raw)
    key = raw.get("key") or ""
    op = raw.get("operator") or "Equal"
    value = raw.get("value") or ""
    effect = raw.get("effect") or ""
    if op not in ("Equal", "Exists"):
        raise InvalidObject(obj, f"{path}.operator", op, "must be Equal or Exists")
    if op == "Exists" and value:
        raise InvalidObject(obj, f"{path}.value", value, "must be empty when operator is Exists")
    if op == "Equal" and not key:
        raise InvalidObject(obj, f"{path}.key", key, "an empty key needs operator Exists")
    if effect and effect not in TAINT_EFFECTS:
        raise InvalidObject(
            obj, f"{path}.effect", effect, f"must be one of {', '.join(TAINT_EFFECTS)}"
        )
    return Toleration(str(key), op, str(value), effect)


def _container_requests(obj: str, path: str, raw: object) -> res.Resources:
    """Requests, defaulted from limits where only limits are set, as the API server does."""
    resources = map_field(obj, f"{path}.resources", map_field(obj, path, raw).get("resources"))
    requests = res.parse_resource_list(obj, f"{path}.resources.requests", resources.get("requests"))
    limits = res.parse_resource_list(obj, f"{path}.resources.limits", resources.get("limits"))
    for name, amount in limits.items():
        requests.setdefault(name, amount)
    return requests


def pod_from_manifest(raw: Mapping[str, Any]) -> Pod:
    """Parse a Pod manifest; raises `InvalidObject` naming the bad field."""
    name, namespace, meta = metadata(raw, "Pod")
    obj = f"Pod {namespace}/{name}"
    spec = map_field(obj, "spec", raw.get("spec"))
    containers = list_field(obj, "spec.containers", spec.get("containers"))
    if not containers:
        raise InvalidObject(obj, "spec.containers", containers, "needs at least one container")
    regular = [
        _container_requests(obj, f"spec.containers[{i}]", c) for i, c in enumerate(containers)
    ]
    inits = [
        (
            _container_requests(obj, f"spec.initContainers[{i}]", c),
            map_field(obj, f"spec.initContainers[{i}]", c).get("restartPolicy") == "Always",
        )
        for i, c in enumerate(list_field(obj, "spec.initContainers", spec.get("initContainers")))
    ]
    overhead = res.parse_resource_list(obj, "spec.overhead", spec.get("overhead"))
    requests = res.pod_requests(regular, inits, overhead)
    weighed = res.pod_requests(
        [res.with_nonzero_defaults(r) for r in regular],
        [(res.with_nonzero_defaults(r), sidecar) for r, sidecar in inits],
        {
            res.NONZERO_CPU: overhead.get(res.CPU, 0),
            res.NONZERO_MEMORY: overhead.get(res.MEMORY, 0),
        },
    )
    imply_pod_milli(obj, requests)
    requests[res.PODS] = 1
    requests.update(res.nonzero_on_node(regular, inits, overhead))
    tolerations = list_field(obj, "spec.tolerations", spec.get("tolerations"))
    priority = spec.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise InvalidObject(obj, "spec.priority", priority, "must be an integer")
    policy = spec.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
    if policy not in (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
        raise InvalidObject(
            obj,
            "spec.preemptionPolicy",
            policy,
            f"must be {PREEMPT_LOWER_PRIORITY} or {PREEMPT_NEVER}",
        )
    node_name = spec.get("nodeName") or ""
    if not isinstance(node_name, str):
        raise InvalidObject(obj, "spec.nodeName", node_name, "must be a string")
    labels = string_map(obj, "metadata.labels", meta.get("labels"))
    annotations = string_map(obj, "metadata.annotations", meta.get("annotations"))
    affinity_required, affinity_preferred = _pod_affinity(obj, spec, "podAffinity")
    anti_required, anti_preferred = _pod_affinity(obj, spec, "podAntiAffinity")
    spread_path = "spec.topologySpreadConstraints"
    return Pod(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or f"{namespace}/{name}"),
        priority=priority,
        spec=SchedulingSpec(
            requests=tuple(sorted((k, v) for k, v in requests.items() if v or k == res.PODS)),
            weighed=tuple(sorted((k, v) for k, v in weighed.items() if v != requests[k])),
            profile=scheduler_name(raw),
            namespace=namespace,
            labels=tuple(sorted(labels.items())),
            node_name=node_name,
            node_selector=tuple(
                sorted(string_map(obj, "spec.nodeSelector", spec.get("nodeSelector")).items())
            ),
            required_terms=_required_terms(obj, spec),
            preferred_terms=_preferred_terms(obj, spec),
            tolerations=tuple(
                _toleration(obj, f"spec.tolerations[{i}]", t) for i, t in enumerate(tolerations)
            ),
            host_ports=_host_ports(obj, containers),
            gpu_locality=pod_locality(obj, annotations),
            images=_images(obj, spec),
            topology_spread=tuple(
                _spread_constraint(obj, f"{spread_path}[{i}]", c)
                for i, c in enumerate(list_field(obj, spread_path, spec.get(spread_path[5:])))
            ),
            affinity_required=affinity_required,
            affinity_preferred=affinity_preferred,
            anti_affinity_required=anti_required,
            anti_affinity_preferred=anti_preferred,
        ),
        node_name=node_name,
        manifest=raw,
        group=pod_group(raw),
        gates=_scheduling_gates(obj, spec),
        preempts=policy == PREEMPT_LOWER_PRIORITY,
        volumes=pod_volumes(obj, name, spec),
    )


def pod_group(raw: Mapping[str, Any]) -> str:
    """The `namespace/name` of the PodGroup a pod's label puts it in, or ""."""
    meta = raw.get("metadata") or {}
    name = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
    return f"{meta.get('namespace') or 'default'}/{name}" if name else ""


def _scheduling_gates(obj: str, spec: Mapping[str, Any]) -> tuple[str, ...]:
    path = "spec.schedulingGates"
    gates = []
    for i, gate in enumerate(list_field(obj, path, spec.get("schedulingGates"))):
        name = map_field(obj, f"{path}[{i}]", gate).get("name")
        if not isinstance(name, str) or not name:
            raise InvalidObject(obj, f"{path}[{i}].name", name, "must be a non-empty string")
        gates.append(name)
    return tuple(gates)


def podgroup_from_manifest(raw: Mapping[str, Any]) -> PodGroup:
    """Parse a scheduling.x-k8s.io/v1alpha1 PodGroup (spec.minResources is not used yet)."""
    name, namespace, _ = metadata(raw, "PodGroup")
    obj = f"PodGroup {namespace}/{name}"
    spec = map_field(obj, "spec", raw.get("spec"))
    timeout = spec.get("scheduleTimeoutSeconds")
    return PodGroup(
        namespace=namespace,
        name=name,
        min_member=int_field(obj, "spec.minMember", spec.get("minMember"), low=1),
        schedule_timeout_s=DEFAULT_SCHEDULE_TIMEOUT_S
        if timeout is None
        else int_field(obj, "spec.scheduleTimeoutSeconds", timeout, low=1),
    )


def _int_or_percent(obj: str, path: str, raw: object) -> int | str | None:
    if raw is None:
        return None
    if isinstance(raw, str) and raw.endswith("%") and raw[:-1].isdigit():
        return raw
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < 0:
        raise InvalidObject(obj, path, raw, 'must be an integer >= 0 or a percentage ("30%")')
    return raw


def budget_from_manifest(raw: Mapping[str, Any]) -> DisruptionBudget:
    """Parse a policy/v1 PodDisruptionBudget."""
    name, namespace, _ = metadata(raw, "PodDisruptionBudget")
    obj = f"PodDisruptionBudget {namespace}/{name}"
    spec = map_field(obj, "spec", raw.get("spec"))
    low = _int_or_percent(obj, "spec.minAvailable", spec.get("minAvailable"))
    high = _int_or_percent(obj, "spec.maxUnavailable", spec.get("maxUnavailable"))
    if low is not None and high is not None:
        raise InvalidObject(
            obj, "spec.maxUnavailable", high, "cannot be set together with spec.minAvailable"
        )
    return DisruptionBudget(
        namespace,
        name,
        label_selector(obj, "spec.selector", spec.get("selector")),
        min_available=low,
        max_unavailable=high,
    )


def reservation_from_manifest(raw: Mapping[str, Any], now: float) -> Reservation:
    """Parse a Koordinator Reservation (scheduling.koordinator.sh/v1alpha1): its
    spec.template (a pod template: the room and where it may go), one owner (an object
    naming a pod, or a labelSelector, with the template's namespace if it names one),
    and spec.ttl or spec.expires. Only allocateOnce reservations are supported."""
    name, _, _ = metadata(raw, "Reservation")
    obj = f"Reservation {name}"
    spec = map_field(obj, "spec", raw.get("spec"))
    template = map_field(obj, "spec.template", spec.get("template"))
    if spec.get("allocateOnce", True) is not True:
        raise InvalidObject(
            obj, "spec.allocateOnce", spec["allocateOnce"], "only true is supported"
        )
    owners = list_field(obj, "spec.owners", spec.get("owners"))
    if len(owners) != 1:
        raise InvalidObject(obj, "spec.owners", owners, "must name exactly one owner")
    owner = map_field(obj, "spec.owners[0]", owners[0])
    namespace = str(
        map_field(obj, "spec.template.metadata", template.get("metadata")).get("namespace") or ""
    )
    owner_pod, selector = "", None
    if owner.get("object") is not None:
        ref = map_field(obj, "spec.owners[0].object", owner["object"])
        if not isinstance(ref.get("name"), str) or not ref["name"]:
            raise InvalidObject(
                obj, "spec.owners[0].object.name", ref.get("name"), "must be a name"
            )
        owner_pod = f"{ref.get('namespace') or namespace or 'default'}/{ref['name']}"
    else:
        selector = label_selector(obj, "spec.owners[0].labelSelector", owner.get("labelSelector"))
        if selector is None:
            raise InvalidObject(obj, "spec.owners[0]", owner, "needs an object or a labelSelector")
    if spec.get("ttl") is not None and spec.get("expires") is not None:
        raise InvalidObject(
            obj, "spec.expires", spec["expires"], "cannot be set together with spec.ttl"
        )
    expires_at = now + 24 * 3600.0  # Koordinator's default ttl
    if spec.get("ttl") is not None:
        try:
            expires_at = now + parse_duration(str(spec["ttl"]))
        except ValueError as err:
            raise InvalidObject(obj, "spec.ttl", spec["ttl"], str(err)) from None
    elif spec.get("expires") is not None:
        try:
            expires_at = datetime.fromisoformat(str(spec["expires"])).timestamp()
        except ValueError:
            raise InvalidObject(
                obj, "spec.expires", spec["expires"], "must be an RFC 3339 time"
            ) from None
    try:
        pod = pod_from_manifest(
            {
                "metadata": {"name": name, "namespace": RESERVATION_NAMESPACE},
                "spec": map_field(obj, "spec.template.spec", template.get("spec")),
            }
        )
    except InvalidObject as err:  # named as the reservation's field, not a pod's
        raise InvalidObject(obj, f"spec.template.{err.field}", err.value, err.problem) from None
    return Reservation(name, pod, expires_at, owner_pod, selector, namespace)


def node_from_manifest(raw: Mapping[str, Any]) -> Node:
    """Parse a Node manifest; allocatable falls back to capacity, as the API server defaults it."""
    name, _, meta = metadata(raw, "Node")
    obj = f"Node {name}"
    spec = map_field(obj, "spec", raw.get("spec"))
    status = map_field(obj, "status", raw.get("status"))
    field_name = (
        "status.allocatable" if status.get("allocatable") is not None else "status.capacity"
    )
    allocatable = res.parse_resource_list(obj, field_name, status.get(field_name.split(".")[1]))
    taints = []
    for i, t in enumerate(list_field(obj, "spec.taints", spec.get("taints"))):
        t = map_field(obj, f"spec.taints[{i}]", t)
        key, effect = t.get("key"), t.get("effect")
        if not isinstance(key, str) or not key:
            raise InvalidObject(obj, f"spec.taints[{i}].key", key, "must be a non-empty string")
        if effect not in TAINT_EFFECTS:
            raise InvalidObject(
                obj,
                f"spec.taints[{i}].effect",
                effect,
                f"must be one of {', '.join(TAINT_EFFECTS)}",
            )
        taints.append(Taint(key, str(t.get("value") or ""), effect))
    images = []
    for i, image in enumerate(list_field(obj, "status.images", status.get("images"))):
        image = map_field(obj, f"status.images[{i}]", image)
        size = int_field(obj, f"status.images[{i}].sizeBytes", image.get("sizeBytes", 0), low=0)
        images.append(
            ContainerImage(strings(obj, f"status.images[{i}].names", image.get("names")), size)
        )
    annotations = string_map(obj, "metadata.annotations", meta.get("annotations"))
    topology = annotations.get(GPU_TOPOLOGY_ANNOTATION)
    return Node(
        name=name,
        gpu_topology=GpuTopology()
        if topology is None
        else parse_topology(obj, topology, allocatable.get(GPU, 0)),
        allocatable=allocatable,
        labels=string_map(obj, "metadata.labels", meta.get("labels")),
        taints=tuple(taints),
        unschedulable=bool(spec.get("unschedulable", False)),
        images=tuple(images),
    )
