"""A control plane whose cluster lives: etcd and kube-apiserver (`ControlPlane`), with
kube-controller-manager v1.30 and KWOK beside them, all built from source by
`make kube` and all on 127.0.0.1.

- kube-controller-manager runs the controllers a cluster runs: Deployments,
  ReplicaSets, Jobs, StatefulSets and DaemonSets make pods; the node lifecycle
  controller taints a node whose heartbeat stopped and evicts its pods; pod GC,
  the garbage collector and the namespace controller remove what is gone;
  service accounts, the persistent-volume binder and disruption budgets' status.
  The binder provisions claims of the in-tree host-path class
  (`HOSTPATH_PROVISIONER`) as a cloud's would, once the scheduler has written the
  node it chose: a directory under /tmp/hostpath_pv, removed with its volume.
- KWOK fakes the nodes annotated for it (`KWOK_ANNOTATION`) and the pods bound to
  them: nodes turn Ready and renew their Leases (KWOK's own stages); pods turn
  Running and Ready, a Job's pods succeed after the time they ask for, and a pod
  deleted goes, as a kubelet would confirm (`kwok.yaml`).

A node heartbeats only while its KWOK runs: a pool's nodes have a KWOK of their own
(`start_kwok`), and once it is stopped, after the grace period (`NODE_GRACE_S`), the
node lifecycle controller marks them NotReady and taints them, as when kubelets die.
Each part is started when the one before serves, checked by an event only it can
cause (a service account made; a probe node turned Ready), and stopped by its PID.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.controlplane.control_plane import ControlPlane, ControlPlaneError, free_port
from cluster.manifests import condition_true
from cluster.objects import HOSTNAME_LABEL
from optimist.kube.client import ApiError

KWOK_ANNOTATION = "kwok.x-k8s.io/node"  # its value: the pool of the KWOK that runs the node
KWOK_POOL = "fake"  # the pool of the KWOK that starts with the plane
CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "job-controller",
    "statefulset-controller",
    "daemonset-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "pod-garbage-collector-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "persistentvolume-binder-controller",
    "disruption-controller",
)
CONFIGURATION = Path(__file__).with_name("kwok.yaml")  # its options and pod stages
JOB_RUNS_FOR = "pod-complete.stage.kwok.x-k8s.io/delay"  # a Job's pod's annotation: "30s"
NODE_GRACE_S = 10  # how long a node may miss its heartbeat before it is NotReady
HOSTPATH_PROVISIONER = "kubernetes.io/host-path"  # a StorageClass's, for the binder to serve


def run_by(pool: str = KWOK_POOL) -> dict[str, str]:
    """The annotations of a node the KWOK of `pool` runs."""
    return {KWOK_ANNOTATION: pool}


def kwok_node(
    name: str, cpu: str = "4", memory: str = "32Gi", pods: str = "110", pool: str = KWOK_POOL
) -> dict[str, Any]:
    """A node for the KWOK of `pool` to run, with the room it offers."""
    room = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": run_by(pool),
            "labels": {HOSTNAME_LABEL: name, "type": "kwok"},
        },
        "status": {"capacity": room, "allocatable": room},
    }


class LivingPlane(ControlPlane):
    """`ControlPlane` with kube-controller-manager and KWOK, for as long as the context
    lasts."""

    def __enter__(self) -> LivingPlane:
        super().__enter__()
        try:
            self._start_controller_manager()
            self.start_kwok()
        except BaseException:
            self.__exit__()
            raise
        return self

    def node_ready(self, name: str) -> bool:
        """Whether the node's Ready condition is True now."""
        try:
            node = self.client.request("GET", f"/api/v1/nodes/{name}")
        except ApiError:
            return False
        return condition_true(node, "Ready")

    def _start_controller_manager(self) -> None:
        d = self.dir
        self._spawn(
            "kube-controller-manager",
            f"--kubeconfig={self.admin_kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            f"--tls-cert-file={d / 'server.crt'}",
            f"--tls-private-key-file={d / 'server.key'}",
            f"--controllers={','.join(CONTROLLERS)}",
            "--leader-elect=false",
            "--enable-hostpath-provisioner",
            f"--root-ca-file={self.ca_file}",
            f"--service-account-private-key-file={d / 'sa.key'}",
            "--node-monitor-period=1s",
            f"--node-monitor-grace-period={NODE_GRACE_S}s",
            "--kube-api-qps=500",
            "--kube-api-burst=1000",
            "--profiling=false",
            "--v=1",
        )
        # the service account controller makes every namespace's `default`
        self._wait_until(
            "kube-controller-manager",
            lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/default"),
        )

    @staticmethod
    def kwok_name(pool: str) -> str:
        """The name of the KWOK process that keeps `pool`'s nodes, as `running` holds it."""
        return "kwok" if pool == KWOK_POOL else f"kwok-{pool}"

    def start_kwok(self, pool: str = KWOK_POOL) -> str:
        """A KWOK of its own for the nodes annotated with `pool`, once it runs them;
        returns its name, which `stop` takes: its nodes then stop heartbeating, as
        when a node's kubelet dies."""
        name = self.kwok_name(pool)
        if name in self.running:  # two would both keep the pool's nodes alive
            raise ControlPlaneError(f"{name} runs already")
        self._spawn(
            name,
            f"--config={CONFIGURATION}",  # and not a ~/.kwok of the user's
            f"--kubeconfig={self.admin_kubeconfig}",
            f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}={pool}",
            "--manage-all-nodes=false",
            f"--server-address=127.0.0.1:{free_port()}",
            "--node-ip=127.0.0.1",
            "--cidr=10.16.0.0/16",
            "--node-lease-duration-seconds=8",  # renewed every 2 s: well inside the grace
            binary="kwok",
        )
        probe = kwok_node(f"{name}-probe", pool=pool)
        probe["spec"] = {"unschedulable": True}  # no scheduler's pods for its few seconds
        self.client.request("POST", "/api/v1/nodes", body=probe)
        self._wait_until(name, lambda: self.node_ready(probe["metadata"]["name"]))
        self.client.request("DELETE", f"/api/v1/nodes/{probe['metadata']['name']}")
        return name

    def _exists(self, path: str) -> bool:
        try:
            self.client.request("GET", path)
            return True
        except ApiError as err:
            if err.status == 404:
                return False
            raise
