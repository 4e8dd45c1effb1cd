"""The day file: what happens in a day of a living cluster, in proportions that scale.

Counts are per 100 nodes and times are shares of the day (0 to 1), so that one
file describes a 30-second smoke on 20 nodes and ten minutes on 1,000. The
shipped one is `benchmarks/cases/shipped/day.yaml`; `day_plan` turns a file,
a node count, a duration and a seed into the timeline the runner plays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import ConfigDict, Field, field_validator

from cluster.config_types import WireModel
from optimist.configuration.fields import ConfigError
from optimist.configuration.model_reader import read_model

Share = Annotated[float, Field(ge=0.0, le=1.0, strict=False)]
Seconds = Annotated[float, Field(gt=0.0, strict=False)]


def _ordered(span: tuple[float, float]) -> tuple[float, float]:
    if span[0] > span[1]:
        raise ValueError("must be [low, high] with low <= high")
    return span


class DayModel(WireModel):
    """Lax where YAML is: a [low, high] list is a span, a 5 is 5.0."""

    model_config = ConfigDict(**WireModel.model_config)
    model_config["strict"] = False


class Pool(DayModel):
    """A pool of KWOK nodes, spread over the zones in turn."""

    name: str
    share: Share
    """Its share of the nodes."""
    cpu: str = "16"
    memory: str = "64Gi"


class Deployments(DayModel):
    per100_nodes: Annotated[float, Field(ge=0.0, strict=False)] = 10
    """Deployments made at the start."""
    replicas: tuple[int, int] = (5, 40)
    """Each one's replicas, drawn from [low, high], at the start and at each scaling."""
    cpu_milli: tuple[int, int] = (100, 1000)
    """Each one's pods' CPU request."""
    change_every_seconds: Seconds = 5.0
    """How often one of them is scaled or rolled out."""
    rollout_share: Share = 0.3
    """Of those changes, the share that are rollouts (a new ReplicaSet)."""
    budget_share: Share = 0.3
    """The share of Deployments with a PodDisruptionBudget (maxUnavailable 1)."""

    _spans = field_validator("replicas", "cpu_milli")(_ordered)


class Jobs(DayModel):
    per_minute_per100_nodes: Annotated[float, Field(ge=0.0, strict=False)] = 20
    """Jobs arriving, evenly at random, until 90% of the day."""
    parallelism: tuple[int, int] = (1, 10)
    completions_per_pod: tuple[int, int] = (1, 3)
    """Completions, as a multiple of the Job's parallelism."""
    runs_for_seconds: tuple[int, int] = (5, 60)
    """How long each of a Job's pods runs before it succeeds (KWOK's stage)."""
    cpu_milli: tuple[int, int] = (250, 2000)

    _spans = field_validator("parallelism", "completions_per_pod", "runs_for_seconds", "cpu_milli")(
        _ordered
    )


class Gangs(DayModel):
    per100_nodes: Annotated[float, Field(ge=0.0, strict=False)] = 1
    """Gang Jobs (a PodGroup whose minMember is the Job's parallelism), over the day."""
    min_member: tuple[int, int] = (4, 16)
    runs_for_seconds: Seconds = 30.0
    cpu_milli: int = 1000

    _spans = field_validator("min_member")(_ordered)


class NodeDown(DayModel):
    """The pool's KWOK stops (its nodes stop heartbeating) and starts again."""

    pool: str
    at: Share
    back: Share


class Drain(DayModel):
    """The pool is cordoned, then its pods evicted through the Eviction API."""

    pool: str
    at: Share


class DayFile(DayModel):
    pools: list[Pool]
    zones: list[str] = Field(default_factory=lambda: ["zone-a", "zone-b", "zone-c"], min_length=1)
    deployments: Deployments = Field(default_factory=Deployments)
    jobs: Jobs = Field(default_factory=Jobs)
    gangs: Gangs = Field(default_factory=Gangs)
    daemon_set_pool: str | None = None
    """A DaemonSet over this pool."""
    never_fits: Annotated[int, Field(ge=0)] = 3
    """Pods that fit no node: each must end explained."""
    node_down: NodeDown | None = None
    drain: Drain | None = None

    @field_validator("pools")
    @classmethod
    def _shares(cls, pools: list[Pool]) -> list[Pool]:
        if not pools:
            raise ValueError("must name at least one pool")
        if abs(sum(p.share for p in pools) - 1.0) > 1e-6:
            raise ValueError("their shares must add up to 1")
        return pools

    def pool_names(self) -> set[str]:
        return {p.name for p in self.pools}


def load_day(path: Path) -> DayFile:
    """The file, checked: a bad field is a ConfigError naming its path and value."""
    raw = yaml.safe_load(path.read_text())
    day = read_model(DayFile, raw, "")
    named = {
        "daemonSetPool": day.daemon_set_pool,
        "nodeDown.pool": day.node_down.pool if day.node_down else None,
        "drain.pool": day.drain.pool if day.drain else None,
    }
    for where, pool in named.items():
        if pool is not None and pool not in day.pool_names():
            raise ConfigError(where, pool, f"no such pool (pools: {sorted(day.pool_names())})")
    if day.node_down and day.node_down.back <= day.node_down.at:
        raise ConfigError("nodeDown.back", day.node_down.back, "must come after nodeDown.at")
    return day
