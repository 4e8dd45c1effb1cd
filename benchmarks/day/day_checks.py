"""What a day is judged by, on what the API server holds: the invariants while it runs and
at its end, no pod placed on a node after it went NotReady or was cordoned, and at the
end every controller's pods Running or each pending pod explained."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from benchmarks.apiserver.pod_watch import PodWatch
from benchmarks.apiserver.server_state import cluster_of
from benchmarks.day.day_plan import NAMESPACE, NEVER_FITS_LABEL
from benchmarks.report.bench_report import Figures
from cluster.manifests import condition, scheduler_name, terminated
from optimist.kube.client import KubeClient
from optimist.kube.informer import list_all, object_key
from optimist.offline.invariants import (
    bound_once,
    check_invariants,
    gangs_whole,
    no_over_commit,
    recount,
)

SLACK_S = 1.0  # the API's timestamps are whole seconds


def invariants_now(client: KubeClient, names: frozenset[str], watch: PodWatch) -> list[str]:
    """The invariants that hold at every moment: bound once, no over-commit, gangs whole
    (nothing lost is for the end, when every pod has had its chance)."""
    cluster = cluster_of(client, names, watch)
    counted = recount(cluster)
    return [*bound_once(cluster), *no_over_commit(cluster, counted), *gangs_whole(cluster, counted)]


def invariants_at_end(
    client: KubeClient,
    names: frozenset[str],
    watch: PodWatch,
    pods: list[dict[str, Any]],
    explained: Iterable[str],
) -> list[str]:
    """Every invariant, nothing lost included, on `pods` as listed once at the end (with
    what `end_state` read of the same list: a controller may make pods meanwhile)."""
    return check_invariants(cluster_of(client, names, watch, pods), explained)


def made_in_time(pods: list[dict[str, Any]], cut: set[str] | None) -> list[dict[str, Any]]:
    """The pods the end's checks judge: all but those still pending that are not in
    `cut`, the pods made before a day that never settled ended (the ones made after
    have had no chance yet). None: the day settled, and every pod is judged."""
    if cut is None:
        return pods
    return [p for p in pods if p["spec"].get("nodeName") or object_key(p) in cut]


@dataclass
class Closures:
    """When each node stopped taking new pods (NotReady seen, or cordoned) and when it
    took them again: wall-clock times, as the API server stamps its objects."""

    closed: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)

    def close(self, node: str, at: float) -> None:
        spans = self.closed.setdefault(node, [])
        if not spans or spans[-1][1] is not None:
            spans.append((at, None))

    def reopen(self, node: str, at: float) -> None:
        spans = self.closed.get(node)
        if spans and spans[-1][1] is None:
            spans[-1] = (spans[-1][0], at)

    def placed_while_closed(self, pods: Iterable[Mapping[str, Any]]) -> list[str]:
        """Pods bound to a node while it was closed (DaemonSets' pods tolerate that, as
        their controller means them to)."""
        out = []
        for pod in pods:
            node = pod["spec"].get("nodeName")
            if not node or node not in self.closed or daemon_pod(pod):
                continue
            bound = _scheduled_at(pod)
            for start, end in self.closed[node]:
                if bound is not None and bound >= start + SLACK_S and (end is None or bound < end):
                    out.append(
                        f"pod {object_key(dict(pod))} was bound to {node} at {bound:.0f}, "
                        f"{bound - start:.0f} s after it stopped taking new pods"
                    )
        return out


def daemon_pod(pod: Mapping[str, Any]) -> bool:
    """A DaemonSet's pod: it goes where its node is, cordoned or not."""
    owners = pod["metadata"].get("ownerReferences") or []
    return any(o.get("kind") == "DaemonSet" for o in owners)


def _scheduled_at(pod: Mapping[str, Any]) -> float | None:
    """When the binding was made: the PodScheduled condition the binding sets."""
    scheduled = condition(pod, "PodScheduled")
    if (
        not scheduled
        or scheduled.get("status") != "True"
        or not scheduled.get("lastTransitionTime")
    ):
        return None
    return datetime.fromisoformat(scheduled["lastTransitionTime"]).timestamp()


class PendingPod(Figures):
    """A pod of ours left unbound at the end, and what its PodScheduled condition says."""

    pod: str
    reason: str
    message: str
    never_fits: bool  # one the day made to fit nowhere
    explain_agrees: bool | None = None  # optimist explain finds no node for it (None: not asked)


class EndState(Figures):
    """The controllers' pods at the end of the day, and the pods still pending."""

    deployments_ready: int  # Deployments with every replica updated and Ready
    deployments: int
    not_rolled_out: list[str] = []  # the others, each with what its status says
    daemon_pods_ready: int
    daemon_pods_desired: int
    jobs_complete: int
    jobs_running: int
    jobs_failed: int
    pending: list[PendingPod]
    unexplained: list[str]  # pending pods whose condition says nothing


def end_state(client: KubeClient, names: frozenset[str], pods: list[dict[str, Any]]) -> EndState:
    """The workloads read from the API server at the end, and `pods` (the day's, listed)."""
    deployments, _ = list_all(client, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments")
    daemons, _ = list_all(client, f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets")
    jobs, _ = list_all(client, f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs")
    lagging = [d for d in deployments if not rolled_out(d)]
    job_states = [_job_state(j) for j in jobs]
    pending = [_pending(p) for p in pods if _ours_pending(p, names)]
    return EndState(
        deployments_ready=len(deployments) - len(lagging),
        deployments=len(deployments),
        not_rolled_out=[_rollout_state(d) for d in lagging],
        daemon_pods_ready=sum(d.get("status", {}).get("numberReady", 0) for d in daemons),
        daemon_pods_desired=sum(
            d.get("status", {}).get("desiredNumberScheduled", 0) for d in daemons
        ),
        jobs_complete=job_states.count("Complete"),
        jobs_running=job_states.count(""),
        jobs_failed=job_states.count("Failed"),
        pending=pending,
        unexplained=[p.pod for p in pending if not p.message],
    )


def rolled_out(deployment: Mapping[str, Any]) -> bool:
    """Every replica of the Deployment's current template updated and Ready."""
    want = deployment["spec"].get("replicas", 1)
    status = deployment.get("status") or {}
    return bool(
        status.get("observedGeneration") == deployment["metadata"].get("generation")
        and status.get("updatedReplicas", 0) == want
        and status.get("readyReplicas", 0) == want
        and status.get("replicas", 0) == want
    )


def _rollout_state(deployment: Mapping[str, Any]) -> str:
    """What a Deployment's status says of its rollout, for one not rolled out."""
    status = deployment.get("status") or {}
    seen, generation = status.get("observedGeneration"), deployment["metadata"].get("generation")
    return (
        f"{deployment['metadata']['name']}: {deployment['spec'].get('replicas', 1)} wanted, "
        f"{status.get('updatedReplicas', 0)} updated, {status.get('readyReplicas', 0)} ready, "
        f"{status.get('replicas', 0)} in all"
        + ("" if seen == generation else f"; generation {generation}, status of {seen}")
    )


def _job_state(job: Mapping[str, Any]) -> str:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return ""


def _ours_pending(pod: Mapping[str, Any], names: frozenset[str]) -> bool:
    spec = pod.get("spec") or {}
    return bool(
        scheduler_name(pod) in names
        and not spec.get("nodeName")
        and not terminated(pod)
        and not pod["metadata"].get("deletionTimestamp")
    )


def _pending(pod: Mapping[str, Any]) -> PendingPod:
    scheduled = condition(pod, "PodScheduled") or {}
    said = scheduled.get("status") == "False"
    return PendingPod(
        pod=object_key(dict(pod)),
        reason=str(scheduled.get("reason") or "") if said else "",
        message=str(scheduled.get("message") or "") if said else "",
        never_fits=(pod["metadata"].get("labels") or {}).get(NEVER_FITS_LABEL) == "true",
    )
