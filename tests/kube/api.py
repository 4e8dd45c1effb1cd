"""A test's hands on the real API server: objects made, read and removed as a test
sets a cluster up and checks it, with the admin's client, straight to the server;
and the fault proxy that the code under test talks through.

No controller manager runs beside the server, so two of its jobs are done here
where a test needs them, as the controllers end them: a namespace deleted is
finalized (the namespace controller's last step), and a pod deleted goes at
once (grace 0: no kubelet will confirm it stopped).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.apiserver.server_state import build_cluster
from benchmarks.controlplane.control_plane import ControlPlane
from cluster.cluster_adapter import Binding
from optimist.kube.client import ApiError, KubeClient
from optimist.kube.informer import object_key
from optimist.offline.simulator import SimulatedCluster
from tests.kube.proxy import FaultProxy, Request

# resource -> (its API's path, namespaced, kind)
RESOURCES = {
    "nodes": ("/api/v1", False, "Node"),
    "pods": ("/api/v1", True, "Pod"),
    "namespaces": ("/api/v1", False, "Namespace"),
    "events": ("/api/v1", True, "Event"),
    "configmaps": ("/api/v1", True, "ConfigMap"),
    "priorityclasses": ("/apis/scheduling.k8s.io/v1", False, "PriorityClass"),
    "poddisruptionbudgets": ("/apis/policy/v1", True, "PodDisruptionBudget"),
    "leases": ("/apis/coordination.k8s.io/v1", True, "Lease"),
    "podgroups": ("/apis/scheduling.x-k8s.io/v1alpha1", True, "PodGroup"),
    "elasticquotas": ("/apis/scheduling.x-k8s.io/v1alpha1", True, "ElasticQuota"),
    "reservations": ("/apis/scheduling.koordinator.sh/v1alpha1", False, "Reservation"),
    "deployments": ("/apis/apps/v1", True, "Deployment"),
    "replicasets": ("/apis/apps/v1", True, "ReplicaSet"),
    "statefulsets": ("/apis/apps/v1", True, "StatefulSet"),
    "replicationcontrollers": ("/api/v1", True, "ReplicationController"),
    "jobs": ("/apis/batch/v1", True, "Job"),
    "services": ("/api/v1", True, "Service"),
    "persistentvolumeclaims": ("/api/v1", True, "PersistentVolumeClaim"),
    "persistentvolumes": ("/api/v1", False, "PersistentVolume"),
    "storageclasses": ("/apis/storage.k8s.io/v1", False, "StorageClass"),
}
# what makes pods: removed, and gone, before the pods are (on the living plane)
_WORKLOADS = ("deployments", "replicasets", "statefulsets", "replicationcontrollers", "jobs")
_SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
_WITH_STATUS = frozenset({"pods", "nodes", "podgroups"})  # status is a subresource


_T = TypeVar("_T")


def wait_for(
    check: Callable[[], _T],
    timeout_s: float = 60.0,
    what: str = "the cluster to settle",
    every_s: float = 0.05,
) -> _T:
    """Poll `check` until it gives something true, and give that back."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}")


def path(resource: str, namespace: str = "", name: str = "") -> str:
    prefix, namespaced, _ = RESOURCES[resource]
    where = f"/namespaces/{namespace}" if namespaced and namespace else ""
    return f"{prefix}{where}/{resource}" + (f"/{name}" if name else "")


class Api:
    """The session's control plane as one test uses it; `clean` removes what it made."""

    def __init__(self, plane: ControlPlane, proxy: FaultProxy) -> None:
        self.plane = plane
        self.proxy = proxy
        self.admin = plane.client
        # the admin, by token, through the proxy: what the code under test is given
        self.kubeconfig: Path = plane.kubeconfig(plane.admin, server=proxy.url, name="proxied")

    def client(self, **kwargs: Any) -> KubeClient:
        """A client through the fault proxy, as the code under test has it."""
        return KubeClient.for_kubeconfig(str(self.kubeconfig), **kwargs)

    # --- objects --------------------------------------------------------------------

    def put(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create the object, or if it is there update what `obj` gives (its labels and
        annotations, each key of its spec, its other fields) and keep the rest, what
        admission added among it; its `status`, if given, is written through the status
        subresource, as a kubelet or a controller would."""
        meta = obj.setdefault("metadata", {})
        namespace = meta.setdefault("namespace", "default") if RESOURCES[resource][1] else ""
        current = self.get(resource, namespace, meta["name"])
        if current is None:
            body = {"apiVersion": _api_version(resource), "kind": RESOURCES[resource][2], **obj}
            made = self.admin.request("POST", path(resource, namespace), body=body)
        else:
            given = {k: v for k, v in meta.items() if k in ("labels", "annotations")}
            body = {
                **current,
                **{k: v for k, v in obj.items() if k not in ("metadata", "spec", "status")},
                "metadata": {**current["metadata"], **given},
            }
            if "spec" in obj:
                body["spec"] = {**current.get("spec", {}), **obj["spec"]}
            made = self.admin.request("PUT", path(resource, namespace, meta["name"]), body=body)
        if "status" in obj and resource in _WITH_STATUS and obj["status"] != made.get("status"):
            made = self.admin.request(
                "PATCH",
                path(resource, namespace, meta["name"]) + "/status",
                body={"status": obj["status"]},
                content_type="application/merge-patch+json",
            )
        return made

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.admin.request("GET", path(resource, namespace, name))
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    def delete(self, resource: str, namespace: str, name: str) -> None:
        """Gone at once: a pod with grace 0, a namespace finalized."""
        query = {"gracePeriodSeconds": "0"} if resource == "pods" else None
        self.admin.request("DELETE", path(resource, namespace, name), query)
        if resource == "namespaces":
            self._finalize(name)

    def bind(self, pod_key: str, node: str) -> None:
        """Bind as another scheduler does (a pod's nodeName is not to be updated)."""
        namespace, name = pod_key.split("/", 1)
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self.admin.request("POST", path("pods", namespace, name) + "/binding", body=binding)

    def items(self, resource: str, namespace: str = "", **query: str) -> list[dict[str, Any]]:
        return list(self.admin.request("GET", path(resource, namespace), query)["items"])

    @property
    def version(self) -> int:
        """The server's resourceVersion now (etcd's revision)."""
        listed = self.admin.request("GET", "/api/v1/namespaces", {"limit": "1"})
        return int(listed["metadata"]["resourceVersion"])

    def pods_bound(self) -> dict[str, str]:
        """pod key -> node, of every pod with spec.nodeName."""
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["nodeName"]
            for p in self.items("pods")
            if p["spec"].get("nodeName")
        }

    def events_for(self, key: str, kind: str = "Pod") -> list[dict[str, Any]]:
        """The events about an object (namespace/name; a cluster's object by its name,
        its events in default, as a kubelet's about its node are)."""
        namespace, name = key.split("/", 1) if "/" in key else ("default", key)
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"
        return self.items("events", namespace, fieldSelector=selector)

    def bindings(self) -> list[Request]:
        """Every binding the proxy passed on and the server accepted, in order."""
        return [
            r
            for r in self.proxy.requests
            if r.method == "POST" and r.path.endswith("/binding") and r.status == 201
        ]

    def as_cluster(self, scheduler_names: frozenset[str]) -> SimulatedCluster:
        """The server's state as the invariant checker reads a cluster: nodes, pod
        manifests, the pods bound, every binding accepted (through the proxy), the
        PodGroups."""
        pods = self.items("pods")
        bound = {object_key(p): p["spec"].get("nodeName") or "" for p in pods}
        log = [
            Binding(binding_pod(r.path), bound.get(binding_pod(r.path), ""))
            for r in self.bindings()
        ]
        return build_cluster(
            self.items("nodes"), pods, self.items("podgroups"), scheduler_names, log, Counter()
        )

    @contextmanager
    def kubelets(self) -> Iterator[None]:
        """What the kubelets would do of a pod deleted with a grace period (an eviction):
        stop it and confirm, here at once (grace 0). Without it such a pod stays
        Terminating, holding its room, for ever."""
        stop = threading.Event()

        def confirm() -> None:
            while not stop.wait(0.05):
                for pod in self.items("pods"):
                    meta = pod["metadata"]
                    if meta.get("deletionTimestamp"):
                        with suppress(ApiError):
                            self.delete("pods", meta["namespace"], meta["name"])

        thread = threading.Thread(target=confirm, name="kubelets", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(5)

    # --- faults, through the proxy --------------------------------------------------

    def throttle(self, requests: int, retry_after_s: int = 1) -> None:
        self.proxy.throttle(requests, retry_after_s)

    def drop_watches(self, abruptly: bool = False) -> None:
        self.proxy.drop_watches(abruptly)

    @property
    def open_watches(self) -> int:
        return self.proxy.open_watches

    @property
    def requests(self) -> list[Request]:
        return self.proxy.requests

    def compact(self) -> int:
        return self.plane.compact()

    # --- between tests ----------------------------------------------------------------

    def clean(self) -> None:
        """Remove what the tests make, so the next starts from a bare cluster."""
        spaces = [n["metadata"]["name"] for n in self.items("namespaces")]
        for namespace in spaces:
            for resource in _WORKLOADS:
                self._delete_all(resource, namespace)
        wait_for(lambda: not any(self.items(r) for r in _WORKLOADS), what="workloads gone")
        for namespace in spaces:
            for resource in ("pods", "events", "configmaps", "leases", "poddisruptionbudgets"):
                self._delete_all(resource, namespace)
            for resource in ("podgroups", "elasticquotas"):
                self._delete_all(resource, namespace)
            self._delete_services(namespace)
            self._delete_protected("persistentvolumeclaims", namespace)
        self._delete_protected("persistentvolumes")
        for resource in ("nodes", "reservations", "storageclasses"):
            self._delete_all(resource)
        for pc in self.items("priorityclasses"):
            if not pc["metadata"]["name"].startswith("system-"):
                self.delete("priorityclasses", "", pc["metadata"]["name"])
        for namespace in spaces:
            if namespace in _SYSTEM_NAMESPACES:
                labels = self.get("namespaces", "", namespace)["metadata"].get("labels") or {}
                if set(labels) - {"kubernetes.io/metadata.name"}:  # a test labelled it
                    self.put("namespaces", {"metadata": {"name": namespace, "labels": {}}})
            else:
                self.delete("namespaces", "", namespace)

    def _delete_services(self, namespace: str) -> None:
        """Services one by one (they take no collection DELETE), but the API server's own."""
        for service in self.items("services", namespace):
            if (namespace, service["metadata"]["name"]) != ("default", "kubernetes"):
                self.delete("services", namespace, service["metadata"]["name"])

    def _delete_protected(self, resource: str, namespace: str = "") -> None:
        """Claims and volumes, whose protection finalizers no controller may be there to
        lift: lifted here once they are being deleted."""
        self._delete_all(resource, namespace)
        for item in self.items(resource, namespace):
            if item["metadata"].get("finalizers"):
                self.admin.request(
                    "PATCH",
                    path(resource, namespace, item["metadata"]["name"]),
                    body={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json",
                )
        wait_for(lambda: not self.items(resource, namespace), what=f"{resource} gone")

    def _delete_all(self, resource: str, namespace: str = "") -> None:
        query = {"gracePeriodSeconds": "0"} if resource == "pods" else None
        if resource in _WORKLOADS:  # their pods too (a Job's default would orphan them)
            query = {"propagationPolicy": "Background"}
        try:
            self.admin.request("DELETE", path(resource, namespace), query)
        except ApiError as err:
            if err.status != 404:  # a custom resource without its CRD: nothing to remove
                raise

    def _finalize(self, name: str) -> None:
        try:
            namespace = self.admin.request("GET", path("namespaces", "", name))
        except ApiError as err:
            if err.status == 404:
                return
            raise
        namespace["spec"]["finalizers"] = []
        self.admin.request("PUT", path("namespaces", "", name) + "/finalize", body=namespace)


def _api_version(resource: str) -> str:
    prefix = RESOURCES[resource][0]
    return "v1" if prefix == "/api/v1" else prefix.removeprefix("/apis/")


def binding_pod(binding_path: str) -> str:
    """.../namespaces/NS/pods/NAME/binding -> NS/NAME"""
    parts = binding_path.split("/")
    return f"{parts[-4]}/{parts[-2]}"
