"""A case's ops, walked in order: one dispatch for the simulated bench and the API bench.

Each runner says how an op is carried out where it runs (the abstract methods);
the order of the ops, the checks that hold everywhere and the error naming the
case and the op are here, once.
"""

from __future__ import annotations

import itertools
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from benchmarks.cases import workload_objects
from benchmarks.cases.case_fields import Manifest
from benchmarks.cases.case_file import CaseWorkload
from benchmarks.cases.case_ops import (
    Barrier,
    Churn,
    ClaimTemplates,
    CreateAny,
    CreateNamespaces,
    CreateNodes,
    CreatePodGroups,
    CreatePods,
    CreatePodSets,
    DeletePods,
    Op,
    RestartScheduler,
    Sleep,
    StartCollectingMetrics,
    StopCollectingMetrics,
    UnsupportedOp,
)

W = TypeVar("W")  # a runner's window of collected metrics

# a workload (`case_file.WORKLOAD_KINDS`) where no controller runs
NO_CONTROLLERS = "its pods are made by controllers, which run only on --cluster kwok"


class CaseError(Exception):
    """The case cannot go on past this op; the message names the case and the op, and
    the op's index and opcode are kept for the report's `failed`."""

    def __init__(self, case: str, index: int, opcode: str, reason: str) -> None:
        super().__init__(f"case {case}: op {index} ({opcode}): {reason}")
        self.index = index
        self.opcode = opcode
        self.reason = reason

    def record(self) -> dict[str, Any]:
        """The report's `failed`: which op stopped the case, and why."""
        return {"op": self.index, "opcode": self.opcode, "reason": self.reason}


def phase_takes(
    namespaces: tuple[str, ...],
    selector: Mapping[str, str] | None,
    namespace: str,
    labels: Mapping[str, str],
) -> bool:
    """Whether a measured phase over `namespaces` (all, if none) and `selector` counts
    a pod of that namespace with those labels."""
    return (not namespaces or namespace in namespaces) and (
        not selector or all(labels.get(k) == v for k, v in selector.items())
    )


@dataclass(slots=True)
class ChurnTask:
    op: Churn
    due: float
    ticks: int = 0
    alive: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # slot -> (kind, key)

    def turn(
        self,
        now: float,
        make: Callable[[Manifest, str], list[tuple[str, str]]],
        remove: Callable[[list[tuple[str, str]]], None],
    ) -> None:
        """One turn, if it is due, in the op's namespace: in recreate mode, slot by
        slot, what the slot made last is removed and made again; in create mode, one
        of each template is made, for `number` turns (all of them, if 0)."""
        op = self.op
        if now < self.due or (op.mode == "create" and 0 < op.number <= self.ticks):
            return
        self.due = now + op.interval_s
        slot = self.ticks % op.number if op.number else 0
        self.ticks += 1
        if op.mode == "recreate":
            remove(self.alive.pop(slot, []))
        made = []
        for manifest in op.templates:
            made += make(manifest, op.namespace)
        if op.mode == "recreate":
            self.alive[slot] = made


@dataclass(slots=True)
class DeleteTask:
    keys: list[str]
    per_second: int
    started: float
    deleted: int = 0

    def due(self, now: float) -> list[str]:
        """The pods to delete now, at `per_second` from the start (all at once without
        a rate); counted as deleted."""
        until = len(self.keys)
        if self.per_second:
            until = min(until, int((now - self.started) * self.per_second) + 1)
        due, self.deleted = self.keys[self.deleted : until], max(self.deleted, until)
        return due

    @property
    def done(self) -> bool:
        return self.deleted == len(self.keys)


class OpWalker(ABC, Generic[W]):
    # what a failing op raises where the runner runs, turned into a CaseError
    op_errors: ClassVar[tuple[type[Exception], ...]] = (ValueError, KeyError, TimeoutError)
    run: CaseWorkload
    rng: random.Random
    unique: itertools.count[int]
    churn: list[ChurnTask]
    collecting: W | None
    nodes_made: list[str]  # in order: where pods bound at creation go, in turn
    bound_next: int  # the index in nodes_made of the next such pod's node

    def _walk(self) -> CaseError | None:
        """Every op in order, up to the first that fails (returned). The phase being
        measured is closed either way, at the end or when the op failed, so that a
        failed case reports what it measured until then."""
        failure = None
        try:
            if unsupported := self.run.unsupported():
                raise CaseError(
                    self.run.name,
                    unsupported.index,
                    unsupported.opcode,
                    f"optimist cannot run it: {unsupported.reason}",
                )
            for index, op in enumerate(self.run.ops):
                assert not isinstance(op, UnsupportedOp)  # `unsupported()` found none above
                self._op(index, op)
        except CaseError as e:
            failure = e
        if self.collecting is not None:
            self._close(self.collecting)
        return failure

    def _op(self, index: int, op: Op) -> None:
        try:
            self._carry_out(index, op)
        except self.op_errors as e:
            raise CaseError(self.run.name, index, op.opcode, str(e)) from e

    def _carry_out(self, index: int, op: Op) -> None:
        match op:
            case CreateNodes() | CreateNamespaces() | CreatePods() | CreatePodSets():
                self._make(index, op)
            case CreatePodGroups():
                self._create_groups(index, op)
            case CreateAny():
                self._create_any(index, op)
            case DeletePods():
                self._delete_pods(op)
            case Churn():
                self.churn.append(ChurnTask(op, time.perf_counter()))
            case Barrier():
                self._barrier(op.namespaces, op.label_selector, op.attempted)
            case Sleep():
                self._sleep(op.seconds)
            case StartCollectingMetrics() | StopCollectingMetrics():
                self._collect(op)
            case RestartScheduler():
                self._restart_scheduler(op.failover)

    def _make(
        self, index: int, op: CreateNodes | CreateNamespaces | CreatePods | CreatePodSets
    ) -> None:
        """The ops that make nodes, namespaces and pods, in the batches the runner posts."""
        match op:
            case CreateNodes():
                for manifest, n in workload_objects.node_batches(op, self.rng, self.unique):
                    names = self._create_nodes(manifest, n)
                    self.nodes_made += names
                    made = [op.allocatable.csi_node(name) for name in names if op.allocatable]
                    if csi_nodes := [m for m in made if m is not None]:
                        self._create_csi_nodes(csi_nodes)
            case CreateNamespaces():
                for i in range(op.count):
                    self._create_namespace(f"{op.prefix}-{i}", op.labels)
            case CreatePods() if op.bound_at_creation:
                self._create_bound_pods(op.namespace, workload_objects.pod_batches(op))
            case CreatePods():
                batches = workload_objects.pod_batches(op)
                if op.claims is not None:
                    batches = self._claimed(op.claims, op.namespace, batches)
                self._create_pods(index, op.namespace, batches, op.collect_metrics, op.skip_wait)
            case CreatePodSets():
                pods = op.pods
                for namespace in op.namespaces():
                    batches = workload_objects.pod_batches(pods)
                    if pods.claims is not None:
                        batches = self._claimed(pods.claims, namespace, batches)
                    self._create_pods(
                        index, namespace, batches, pods.collect_metrics, pods.skip_wait
                    )

    def _next_nodes(self, count: int) -> list[str]:
        """The nodes made so far, in turn, for `count` pods bound at creation."""
        if not self.nodes_made:
            raise ValueError("boundAtCreation: no node is made before it")
        start, self.bound_next = self.bound_next, self.bound_next + count
        return [self.nodes_made[i % len(self.nodes_made)] for i in range(start, start + count)]

    def _claimed(
        self, templates: ClaimTemplates, namespace: str, batches: list[workload_objects.Batch]
    ) -> list[workload_objects.Batch]:
        """Each pod's volume and claim made before it, and the pod naming its claim."""
        pods = [manifest for manifest, n in batches for _ in range(n)]
        claimed = [workload_objects.claimed(templates, p, namespace, i) for i, p in enumerate(pods)]
        self._create_volumes(namespace, [(c.volume, c.claim) for c in claimed])
        return [(c.pod, 1) for c in claimed]

    def _collect(self, op: StartCollectingMetrics | StopCollectingMetrics) -> None:
        """Opens a window of collected metrics, or closes the one open."""
        if isinstance(op, StartCollectingMetrics):
            if self.collecting is not None:
                raise ValueError("metrics are already being collected")
            self.collecting = self._open(op.namespaces, op.label_selector)
        else:
            if self.collecting is None:
                raise ValueError("no startCollectingMetrics before it")
            self._close(self.collecting)

    @abstractmethod
    def _create_nodes(self, manifest: Manifest, count: int) -> list[str]:
        """`count` nodes of the manifest; their names."""

    @abstractmethod
    def _create_csi_nodes(self, manifests: list[dict[str, Any]]) -> None:
        """The CSINodes of nodes just made (nodeAllocatableStrategy's CSI parts)."""

    @abstractmethod
    def _create_namespace(self, name: str, labels: dict[str, str]) -> None: ...

    @abstractmethod
    def _create_volumes(self, namespace: str, pairs: list[tuple[Manifest, Manifest]]) -> None:
        """PersistentVolumes and their claims, (volume, claim) each."""

    @abstractmethod
    def _create_pods(
        self,
        index: int,
        namespace: str,
        batches: list[workload_objects.Batch],
        collect: bool,
        skip_wait: bool,
    ) -> None: ...

    @abstractmethod
    def _create_bound_pods(self, namespace: str, batches: list[workload_objects.Batch]) -> None:
        """Pods each bound at creation to the next node made so far (`boundAtCreation`)."""

    @abstractmethod
    def _create_groups(self, index: int, op: CreatePodGroups) -> None: ...

    @abstractmethod
    def _create_any(self, index: int, op: CreateAny) -> None: ...

    @abstractmethod
    def _delete_pods(self, op: DeletePods) -> None: ...

    @abstractmethod
    def _barrier(
        self, namespaces: tuple[str, ...], selector: dict[str, str] | None, attempted: bool
    ) -> None:
        """Wait until the pods of `namespaces` (of every namespace, if none) that
        `selector` matches (all, if None) are settled, or (`attempted`) each was bound
        or reported unschedulable once."""

    @abstractmethod
    def _sleep(self, seconds: float) -> None:
        """Let `seconds` pass, the scheduler and the churn going on meanwhile."""

    @abstractmethod
    def _restart_scheduler(self, failover: bool) -> None:
        """The scheduler under test restarted cold, or its leader killed (`failover`)."""

    @abstractmethod
    def _open(self, namespaces: tuple[str, ...], selector: dict[str, str] | None) -> W: ...

    @abstractmethod
    def _close(self, window: W) -> None: ...
