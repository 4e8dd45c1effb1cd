"""The configuration as optimist holds it once read: the documents' identity and the results.

Kept apart from the readers so that every stage (plugins, profiles, the
loader) can build and pass these without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cluster.profile_config import ProfileConfig
from cluster.quota import Quota

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
OPTIMIST_API_VERSION = "optimist.io/v1alpha1"
OPTIMIST_KIND = "OptimistConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
_TYPE_META = frozenset({"apiVersion", "kind"})


@dataclass(frozen=True, slots=True)
class InactivePlugin:
    """An enabled plugin optimist does not run, reported once when the file is read."""

    profile: str
    plugin: str
    extension_points: tuple[str, ...]  # upstream's names: "Filter", "Score", ...
    reason: str

    def __str__(self) -> str:
        points = ", ".join(self.extension_points)
        return f"profile {self.profile}: {self.plugin} ({points}): {self.reason}"


@dataclass(frozen=True, slots=True)
class ExpandedProfile:
    """A profile as kube-scheduler v1.30 would run it: every point's plugins, active or not."""

    scheduler_name: str
    points: dict[str, tuple[str, ...]]  # extension point (as the file names it) -> plugins
    weights: dict[str, int]  # Score plugin -> weight
    args: dict[str, dict[str, Any]]  # plugin -> args, defaulted


@dataclass(frozen=True, slots=True)
class OptimistOptions:
    """The OptimistConfiguration document; None where the file does not set a field."""

    shards: int | None = None
    redis_url: str | None = None
    redis_urls: tuple[str, ...] | None = None
    redis_partitions: int | None = None
    ray_address: str | None = None
    batch_pods: int | None = None
    inflight_per_shard: int | None = None
    seed: int | None = None
    key_prefix: str | None = None
    metrics_address: str | None = None
    node_partitions: bool | None = None
    binders: int | None = None
    quotas: tuple[Quota, ...] | None = None
    shard_timeout_s: float | None = None
    shard_resources: dict[str, float] | None = None
    binder_resources: dict[str, float] | None = None


@dataclass(frozen=True, slots=True)
class Configuration:
    """A configuration file, defaulted and validated, in the shape optimist uses."""

    profiles: tuple[ProfileConfig, ...]  # what the shards run, active plugins only
    expanded: tuple[ExpandedProfile, ...]  # what kube-scheduler would run
    inactive: tuple[InactivePlugin, ...]
    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0  # the global value; 0 is upstream's adaptive rule
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    extenders: tuple[dict[str, Any], ...] = ()
    # leaderElection, clientConnection, the profiling switches, delayCacheUntilActive:
    # carried, defaulted, unused by optimist so far.
    component: dict[str, Any] = field(default_factory=dict)
    optimist: OptimistOptions = field(default_factory=OptimistOptions)
