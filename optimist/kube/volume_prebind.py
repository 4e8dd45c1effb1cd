"""VolumeBinding's PreBind: the claims of a pod that wait for their first consumer are
bound to volumes on the pod's node before the pod is bound there, as kube-scheduler does.

For each such claim, on the node the binder committed: the volume the commit gave it
(`Binding.volumes`, picked before the commit by `cluster.volumes.picks`) is given the
claim (its claimRef, for the PV controller to finish); a claim given none is told the
node (its selected-node annotation, for the provisioner). Each write is conditional on
the object as last seen, so a volume two schedulers gave goes to one.
The pod is then bound once the PV controller has bound every claim, or not at all after
bindTimeoutSeconds, as upstream's PreBind waits; the pod goes back to the queue.

Nothing waits on a thread: the claims' and volumes' watches bring each change here
(`observe`), which binds the pods whose claims are all bound; one timer thread fails
those whose time is up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from cluster.cluster_adapter import Binding
from cluster.objects import Pod
from cluster.volumes.index import VolumeChange, VolumeIndex
from cluster.volumes.matching import reaches
from cluster.volumes.picks import waiting_claims
from cluster.volumes.resolve import VOLUME_BINDING
from cluster.volumes.storage_objects import (
    BOUND_BY_CONTROLLER,
    SELECTED_NODE,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolume,
)
from optimist.kube.client import MERGE_PATCH, ApiError, KubeClient


class PreBindError(Exception):
    """A claim could not be given its volume or node: the pod is not bound."""

    def __init__(self, why: str) -> None:
        super().__init__(f'running PreBind plugin "{VOLUME_BINDING}": binding volumes: {why}')


@dataclass(slots=True)
class _Given:
    """What a claim was given: a volume, or ("") its provisioning on the node; and whether
    the watch has shown the write yet (until then, not seeing it is no reset)."""

    volume: str
    seen: bool = False


@dataclass(slots=True)
class _Waiting:
    binding: Binding
    labels: Mapping[str, str]  # the node's, which a provisioned volume must suit
    claims: dict[str, _Given]  # by claim key
    deadline: float  # time.monotonic()


@dataclass
class VolumePreBind:
    client: KubeClient
    bind: Callable[[Binding], None]  # the pod's claims are bound: bind it now
    failed: Callable[[Binding, str], None]  # they will not be: the pod goes back, and why
    # where the API server is 1.35 or newer: status.nominatedNodeName written before the
    # claims are, so that autoscalers see where the pod is going (upstream's
    # NominatedNodeNameForExpectation); None: nothing written
    nominate: Callable[[Binding], None] | None = None
    # bindTimeoutSeconds of each profile that runs VolumeBinding (the others bind no claim)
    timeouts: Mapping[str, float] = field(default_factory=dict)
    # the claims, volumes and classes as the watches show them (the control loop keeps
    # its own, which it reads without a lock)
    index: VolumeIndex = field(default_factory=VolumeIndex)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _volumes: dict[str, tuple[PodVolume, ...]] = field(default_factory=dict)  # pod -> claims
    _profiles: dict[str, str] = field(default_factory=dict)  # pod -> its scheduler name
    _waiting: dict[str, _Waiting] = field(default_factory=dict)  # by pod key
    _wake: threading.Condition = field(init=False)
    _timer: threading.Thread | None = None
    _stopped: bool = False

    def __post_init__(self) -> None:
        self._wake = threading.Condition(self._lock)

    def start(self) -> None:
        self._timer = threading.Thread(target=self._expire, name="volume-prebind", daemon=True)
        self._timer.start()

    def stop(self) -> list[Binding]:
        """Stop waiting; returns the bindings abandoned, whose pods were never bound."""
        with self._wake:
            self._stopped = True
            abandoned = [w.binding for w in self._waiting.values()]
            self._waiting.clear()
            self._wake.notify()
        if self._timer is not None:
            self._timer.join()
        return abandoned

    # --- the adapter's threads --------------------------------------------

    def note(self, pod: Pod) -> None:
        """A pod queued with claims: what PreBind looks up if it is placed."""
        with self._lock:
            self._volumes[pod.key] = pod.volumes
            self._profiles[pod.key] = pod.spec.profile

    def forget(self, pod: str) -> None:
        """A pod bound or deleted: nothing of it is kept (a wait under way ends with it)."""
        with self._lock:
            self._volumes.pop(pod, None)
            self._profiles.pop(pod, None)
            self._waiting.pop(pod, None)

    def observe(self, change: VolumeChange) -> None:
        """A claim, volume or class as its watch brings it; pods whose claims are now all
        bound are bound, and those whose claims went wrong go back."""
        ready, wrong = [], []
        with self._lock:
            self.index.apply(*change)
            for key, waiting in list(self._waiting.items()):
                try:
                    done = self._bound(waiting)
                except PreBindError as err:
                    wrong.append((waiting.binding, str(err)))
                    del self._waiting[key]
                    continue
                if done:
                    ready.append(waiting.binding)
                    del self._waiting[key]
        for binding in ready:
            self.bind(binding)
        for binding, why in wrong:
            self.failed(binding, why)

    def prebind(self, binding: Binding, labels: Mapping[str, str]) -> bool:
        """Give each claim of the pod that waits for its first consumer its volume, or its
        node. True: the pod waits for the PV controller (`bind` or `failed` follows);
        False: it has no such claim, bind it now. Raises PreBindError where a claim
        cannot be given either; what was written for its other claims stays, as upstream's."""
        with self._lock:
            # kept until the pod is seen bound: a binding that fails is tried again
            volumes = self._volumes.get(binding.pod, ())
            timeout = self.timeouts.get(self._profiles.get(binding.pod, ""))
            if timeout is None:
                return False
            plan = self._plan(binding, volumes)
        if not plan:
            return False
        if self.nominate is not None:
            self.nominate(binding)
        for claim, volume in plan:
            self._write(claim, volume, binding.node)
        waiting = _Waiting(
            binding,
            labels,
            {claim.key: _Given(volume.name if volume else "") for claim, volume in plan},
            time.monotonic() + timeout,
        )
        with self._wake:
            if self._stopped:
                raise PreBindError("the scheduler is stopping")
            ready = self._bound(waiting)  # the watch may have been quicker than this thread
            if not ready:
                self._waiting[binding.pod] = waiting
                self._wake.notify()
        if ready:
            self.bind(binding)
        return True

    # --- what is given, and when it is done (the lock held) ------------------

    def _plan(
        self, binding: Binding, volumes: tuple[PodVolume, ...]
    ) -> list[tuple[PersistentVolumeClaim, PersistentVolume | None]]:
        """Per claim to bind on the pod's node: the volume the commit gave it, or None to
        provision it."""
        given = dict(binding.volumes)
        plan: list[tuple[PersistentVolumeClaim, PersistentVolume | None]] = []
        namespace = binding.pod.split("/", 1)[0]
        for waiting in waiting_claims(self.index, namespace, volumes, match=False):
            claim = waiting.claim
            volume = self._given(given.get(claim.key), claim)
            if volume is None and not waiting.storage_class.provisions:
                raise PreBindError(f'no volume left for claim "{claim.key}" on this node')
            plan.append((claim, volume))
        return plan

    def _given(self, name: str | None, claim: PersistentVolumeClaim) -> PersistentVolume | None:
        """The volume the commit gave the claim (None: none); PreBindError if it is gone."""
        if not name:
            return None
        volume = self.index.volume(name)
        if not isinstance(volume, PersistentVolume):
            raise PreBindError(f'pv "{name}" given to claim "{claim.key}" is gone')
        return volume

    def _write(
        self, claim: PersistentVolumeClaim, volume: PersistentVolume | None, node: str
    ) -> None:
        """The claimRef on the volume, or the node on the claim: conditional on the
        object as last seen."""
        if volume is None:
            path = f"/api/v1/namespaces/{claim.namespace}/persistentvolumeclaims/{claim.name}"
            meta = {"resourceVersion": claim.resource_version, "annotations": {SELECTED_NODE: node}}
            body: dict[str, object] = {"metadata": meta}
        else:
            path = f"/api/v1/persistentvolumes/{volume.name}"
            ref = {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": claim.namespace,
                "name": claim.name,
                "uid": claim.uid,
            }
            meta = {
                "resourceVersion": volume.resource_version,
                "annotations": {BOUND_BY_CONTROLLER: "yes"},
            }
            body = {"metadata": meta, "spec": {"claimRef": ref}}
        try:
            self.client.request("PATCH", path, body=body, content_type=MERGE_PATCH)
        except ApiError as err:
            raise PreBindError(f"{claim.key}: {err}") from err

    def _bound(self, waiting: _Waiting) -> bool:
        """Whether every claim is bound, to a volume the node reaches; raises PreBindError
        where one will not be (upstream's checkBindings)."""
        done = True
        for key, given in waiting.claims.items():
            claim = self.index.claim(key)
            if not isinstance(claim, PersistentVolumeClaim):
                raise PreBindError(f'claim "{key}" is gone')
            if given.volume:
                volume = self.index.volume(given.volume)
                ours = isinstance(volume, PersistentVolume) and bool(
                    volume.claim_ref and volume.claim_ref.names(claim)
                )
                if given.seen and not ours:
                    raise PreBindError(f'ClaimRef got reset for pv "{given.volume}"')
                given.seen |= ours
            elif not claim.volume_name:
                chosen = claim.selected_node == waiting.binding.node
                if given.seen and not chosen:
                    raise PreBindError(f'selectedNode annotation reset for PVC "{claim.name}"')
                given.seen |= chosen
            if not claim.bound:
                done = False
                continue
            volume = self.index.volume(claim.volume_name)
            if not isinstance(volume, PersistentVolume):
                done = False  # its watch is behind the claim's
            elif not reaches(volume, waiting.labels):
                node = waiting.binding.node
                raise PreBindError(f'pv "{volume.name}" node affinity doesn\'t match node "{node}"')
        return done

    def _expire(self) -> None:
        """The timer thread: fails the pods whose claims were not bound in time."""
        while True:
            with self._wake:
                if self._stopped:
                    return
                now = time.monotonic()
                late = [w for w in self._waiting.values() if w.deadline <= now]
                for waiting in late:
                    del self._waiting[waiting.binding.pod]
                if not late:
                    first = min((w.deadline for w in self._waiting.values()), default=now + 3600)
                    self._wake.wait(first - now)
                    continue
            for waiting in late:
                self.failed(
                    waiting.binding, str(PreBindError("timed out waiting for the condition"))
                )
