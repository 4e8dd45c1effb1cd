"""The Services and controllers that select a pod: the selector its default spreading counts by.

Upstream's PodTopologySpread gives a pod without constraints of its own the
profile's default constraints (the system's: hostname and zone,
ScheduleAnyway), counting the pods that one selector matches: the union of the
selectors of the Services in its namespace that select it, plus that of its
controller when that is a ReplicationController, ReplicaSet or StatefulSet
(`helper.DefaultSelector`). A pod that nothing selects gets no default
constraint. `WorkloadSelectors` keeps those objects' selectors, decoded to the
selectors only, as the informers (or the simulator) tell them, and answers the
question for a pod when it is taken for scheduling.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cluster.errors import InvalidObject
from cluster.manifest_fields import label_selector
from cluster.objects import Pod
from cluster.selectors import LabelSelector, Requirement

SERVICE = "Service"
# a pod's controller is looked up by its reference's apiVersion and kind, exactly
CONTROLLERS = {
    ("v1", "ReplicationController"): "ReplicationController",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("apps/v1", "StatefulSet"): "StatefulSet",
}
KINDS = (SERVICE, *CONTROLLERS.values())
_MEMO = 4096  # (namespace, labels, controller) answers kept between changes


@dataclass(frozen=True, slots=True)
class WorkloadSelector:
    """One Service's or controller's selector, as default spreading reads it."""

    kind: str  # Service, ReplicationController, ReplicaSet or StatefulSet
    namespace: str
    name: str
    # a Service's and a ReplicationController's map; None where it has none (a Service
    # without a selector selects no pod)
    labels: tuple[tuple[str, str], ...] | None = None
    selector: LabelSelector | None = None  # a ReplicaSet's or StatefulSet's


def workload_selector_from_manifest(raw: Mapping[str, Any]) -> WorkloadSelector:
    """A Service, ReplicationController, ReplicaSet or StatefulSet, reduced to its selector;
    raises `InvalidObject` naming the field."""
    kind = raw.get("kind") if isinstance(raw, Mapping) else None
    if kind not in KINDS:
        raise InvalidObject(str(kind), "kind", kind, f"must be one of {', '.join(KINDS)}")
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    namespace = str((meta or {}).get("namespace") or "default")
    obj = f"{kind} {namespace}/{name}"
    if not isinstance(name, str) or not name:
        raise InvalidObject(obj, "metadata.name", name, "must be a non-empty string")
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InvalidObject(obj, "spec", spec, "must be a map")
    raw_selector = spec.get("selector")
    if kind in (SERVICE, "ReplicationController"):
        if raw_selector is None or raw_selector == {}:
            return WorkloadSelector(kind, namespace, name)
        if not isinstance(raw_selector, Mapping) or not all(
            isinstance(v, str) for v in raw_selector.values()
        ):
            raise InvalidObject(obj, "spec.selector", raw_selector, "must map strings to strings")
        labels = tuple(sorted((str(k), v) for k, v in raw_selector.items()))
        return WorkloadSelector(kind, namespace, name, labels=labels)
    return WorkloadSelector(
        kind, namespace, name, selector=label_selector(obj, "spec.selector", raw_selector)
    )


def controller_of(manifest: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(kind, name) of the pod's controller where default spreading reads it, else None."""
    meta = (manifest or {}).get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            kind = CONTROLLERS.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
            return (kind, str(ref.get("name"))) if kind else None
    return None


class WorkloadSelectors:
    """The selectors of the Services and controllers there are, by namespace; thread-safe,
    as informer threads tell it and the control loop asks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # namespace -> (kind, name) -> what default spreading reads of it
        self._known: dict[str, dict[tuple[str, str], WorkloadSelector]] = {}
        self._memo: dict[tuple[str, tuple[tuple[str, str], ...], object], LabelSelector | None]
        self._memo = {}

    def put(self, workload: WorkloadSelector) -> None:
        """A Service or controller created or changed (its selector unchanged, as with
        every status update of a ReplicaSet, keeps what is worked out)."""
        key = (workload.kind, workload.name)
        with self._lock:
            known = self._known.setdefault(workload.namespace, {})
            if known.get(key) != workload:
                known[key] = workload
                self._memo.clear()

    def remove(self, kind: str, namespace: str, name: str) -> None:
        """A Service or controller deleted."""
        with self._lock:
            if self._known.get(namespace, {}).pop((kind, name), None) is not None:
                self._memo.clear()

    def awaits_controller(self, pod: Pod) -> bool:
        """Whether the pod names a controller of these kinds that has not been told yet (its
        watch may deliver it a moment after the pod's)."""
        if pod.spec.topology_spread:
            return False
        owner = controller_of(pod.manifest)
        with self._lock:
            return owner is not None and owner not in self._known.get(pod.namespace, {})

    def with_spread_selector(self, pod: Pod) -> Pod:
        """The pod, its spec given the selector its default spreading counts by (none for a
        pod with constraints of its own, which defaults never touch)."""
        if pod.spec.topology_spread:
            return pod
        selector = self.selector_for(pod)
        if selector != pod.spec.spread_selector:
            pod.spec = replace(pod.spec, spread_selector=selector)
        return pod

    def selector_for(self, pod: Pod) -> LabelSelector | None:
        """Upstream's DefaultSelector: None where it would be empty."""
        owner = controller_of(pod.manifest)
        key = (pod.namespace, pod.spec.labels, owner)
        with self._lock:
            if key in self._memo:
                return self._memo[key]
            selector = self._select(pod.namespace, dict(pod.spec.labels), owner)
            if len(self._memo) >= _MEMO:
                self._memo.clear()
            self._memo[key] = selector
            return selector

    def _select(
        self, namespace: str, labels: dict[str, str], owner: tuple[str, str] | None
    ) -> LabelSelector | None:
        known = self._known.get(namespace, {})
        merged: dict[str, str] = {}
        for (kind, _), service in known.items():
            wanted = service.labels
            if (
                kind == SERVICE
                and wanted is not None
                and all(labels.get(k) == v for k, v in wanted)
            ):
                merged.update(wanted)
        extra: tuple[Requirement, ...] = ()
        controller = known.get(owner) if owner else None
        if controller is not None and controller.labels is not None:
            merged.update(controller.labels)
        elif controller is not None and controller.selector is not None:
            own = controller.selector
            # added as requirements, beside the Services' labels (upstream's Selector.Add)
            extra = tuple(Requirement(k, "In", (v,)) for k, v in own.match_labels)
            extra += own.match_expressions
        if not merged and not extra:
            return None
        return LabelSelector(tuple(sorted(merged.items())), extra)
