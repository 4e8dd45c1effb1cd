"""A day file made concrete: the nodes, and what happens when, as manifests.

Everything is drawn from one seed, so both schedulers of a comparison live the
same day. Workloads are what users write (Deployments, Jobs, a DaemonSet, a
PodGroup with its Job) and kube-controller-manager makes their pods; the few
bare pods are the ones that can never fit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from benchmarks.controlplane.living_plane import JOB_RUNS_FOR, KWOK_POOL, kwok_node
from benchmarks.day.day_file import DayFile
from cluster.objects import POD_GROUP_LABEL, ZONE_LABEL

Manifest = dict[str, Any]
POOL_LABEL = "day.optimist.dev/pool"
NEVER_FITS_LABEL = "day.optimist.dev/never-fits"
NAMESPACE = "day"
JOBS_UNTIL = 0.9  # of the day: the last Jobs still finish within it


@dataclass(frozen=True, slots=True)
class Happening:
    """One thing that happens at `at_s` into the day."""

    at_s: float
    what: str  # create, scale, rollout, node-down, node-up, drain
    manifest: Manifest | None = None  # create: the object; scale, rollout: the Deployment
    pool: str = ""  # node-down, node-up, drain
    replicas: int = 0  # scale


@dataclass
class DayPlan:
    duration_s: float
    nodes: list[Manifest]
    happenings: list[Happening]
    scheduler_name: str
    # pools whose nodes a KWOK of their own runs (stopped for node-down)
    own_kwok: set[str] = field(default_factory=set)

    def counts(self) -> dict[str, int]:
        """How many of each happening, for the report."""
        out: dict[str, int] = {}
        for h in self.happenings:
            key = f"{h.what} {h.manifest['kind']}" if h.what == "create" and h.manifest else h.what
            out[key] = out.get(key, 0) + 1
        return out


def plan_day(
    day: DayFile, nodes: int, duration_s: float, seed: int, scheduler_name: str
) -> DayPlan:
    rng = random.Random(seed)
    scale = nodes / 100
    own_kwok = {day.node_down.pool} if day.node_down else set()
    plan = DayPlan(duration_s, _nodes(day, nodes, own_kwok), [], scheduler_name, own_kwok)
    make = _Maker(day, rng, scheduler_name)
    at = plan.happenings.append
    count = _at_least_one(day.deployments.per100_nodes * scale)
    deployments = [make.deployment(i) for i in range(count)]
    for deployment in deployments:
        at(Happening(0.0, "create", deployment))
        if rng.random() < day.deployments.budget_share:
            at(Happening(0.0, "create", make.budget(deployment)))
    if day.daemon_set_pool:
        at(Happening(0.0, "create", make.daemon_set(day.daemon_set_pool)))
    for i in range(day.never_fits):
        at(Happening(0.0, "create", make.never_fits(i)))
    every = day.deployments.change_every_seconds
    for i in range(1, int(duration_s / every) if deployments else 0):
        deployment = rng.choice(deployments)
        if rng.random() < day.deployments.rollout_share:
            at(Happening(i * every, "rollout", deployment))
        else:
            at(Happening(i * every, "scale", deployment, replicas=make.replicas()))
    rate = day.jobs.per_minute_per100_nodes * scale / 60
    t, j = rng.expovariate(rate) if rate else duration_s, 0
    while t < duration_s * JOBS_UNTIL:
        at(Happening(t, "create", make.job(j)))
        t, j = t + rng.expovariate(rate), j + 1
    gangs = _at_least_one(day.gangs.per100_nodes * scale)
    for g in range(gangs):
        group, job = make.gang(g)
        at_s = duration_s * JOBS_UNTIL * (g + 1) / (gangs + 1)
        plan.happenings += [Happening(at_s, "create", group), Happening(at_s, "create", job)]
    if day.node_down:
        at(Happening(day.node_down.at * duration_s, "node-down", pool=day.node_down.pool))
        at(Happening(day.node_down.back * duration_s, "node-up", pool=day.node_down.pool))
    if day.drain:
        at(Happening(day.drain.at * duration_s, "drain", pool=day.drain.pool))
    plan.happenings.sort(key=lambda h: h.at_s)
    return plan


def _at_least_one(share: float) -> int:
    """A count scaled down, one at least where the file asks for any."""
    return max(1, round(share)) if share > 0 else 0


def _nodes(day: DayFile, count: int, own_kwok: set[str]) -> list[Manifest]:
    """Each pool's share of `count` nodes (the first pool takes what rounding leaves),
    each node in the next zone in turn."""
    sizes = [round(p.share * count) for p in day.pools]
    sizes[0] += count - sum(sizes)
    out = []
    for pool, size in zip(day.pools, sizes, strict=True):
        for i in range(size):
            kwok = pool.name if pool.name in own_kwok else KWOK_POOL
            node = kwok_node(f"{pool.name}-{i}", cpu=pool.cpu, memory=pool.memory, pool=kwok)
            labels = node["metadata"]["labels"]
            labels[POOL_LABEL], labels[ZONE_LABEL] = pool.name, day.zones[i % len(day.zones)]
            out.append(node)
    return out


class _Maker:
    """The day's objects, drawn from the plan's generator."""

    def __init__(self, day: DayFile, rng: random.Random, scheduler_name: str) -> None:
        self.day, self.rng, self.scheduler_name = day, rng, scheduler_name

    def replicas(self) -> int:
        return self.rng.randint(*self.day.deployments.replicas)

    def _pod_spec(self, cpu_milli: int, **spec: Any) -> Manifest:
        container = {
            "name": "app",
            "image": "app",
            "resources": {"requests": {"cpu": f"{cpu_milli}m", "memory": f"{cpu_milli * 2}Mi"}},
        }
        return {"schedulerName": self.scheduler_name, "containers": [container], **spec}

    def deployment(self, i: int) -> Manifest:
        name = f"app-{i}"
        cpu = self.rng.randint(*self.day.deployments.cpu_milli)
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "replicas": self.replicas(),
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": self._pod_spec(cpu)},
            },
        }

    def budget(self, deployment: Manifest) -> Manifest:
        name = deployment["metadata"]["name"]
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": name}}},
        }

    def job(self, j: int) -> Manifest:
        jobs = self.day.jobs
        parallelism = self.rng.randint(*jobs.parallelism)
        runs_for = self.rng.randint(*jobs.runs_for_seconds)
        cpu = self.rng.randint(*jobs.cpu_milli)
        return self._job(
            f"job-{j}", parallelism, parallelism * self.rng.randint(*jobs.completions_per_pod),
            runs_for, cpu, {},
        )  # fmt: skip

    def _job(
        self,
        name: str,
        parallelism: int,
        completions: int,
        runs_for_seconds: float,
        cpu: int,
        labels: dict[str, str],
    ) -> Manifest:
        template = {
            "metadata": {"labels": labels, "annotations": {JOB_RUNS_FOR: f"{runs_for_seconds:g}s"}},
            "spec": self._pod_spec(cpu, restartPolicy="Never"),
        }
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"parallelism": parallelism, "completions": completions, "template": template},
        }

    def gang(self, g: int) -> tuple[Manifest, Manifest]:
        """A PodGroup and the Job whose pods are its members, all at once."""
        gangs = self.day.gangs
        members = self.rng.randint(*gangs.min_member)
        name = f"gang-{g}"
        group = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"minMember": members},
        }
        labels = {POD_GROUP_LABEL: name}
        return group, self._job(
            name, members, members, gangs.runs_for_seconds, gangs.cpu_milli, labels
        )

    def daemon_set(self, pool: str) -> Manifest:
        name = f"agent-{pool}"
        spec = self._pod_spec(100, nodeSelector={POOL_LABEL: pool})
        return {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
            },
        }

    def never_fits(self, i: int) -> Manifest:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"huge-{i}",
                "namespace": NAMESPACE,
                "labels": {NEVER_FITS_LABEL: "true"},
            },
            "spec": self._pod_spec(10_000_000),
        }
