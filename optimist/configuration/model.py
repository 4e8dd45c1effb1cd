"""The configuration as optimist holds it once read.

Kept apart from the readers so that every stage (plugins, profiles, the
loader) can build and pass these without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cluster.profile_config import ProfileConfig
from optimist.configuration.component import ClientConnection, LeaderElection
from optimist.configuration.options import OptimistOptions
from shards.extender_config import ExtenderConfig


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
class Configuration:
    """A configuration file, defaulted and validated, in the shape optimist uses."""

    profiles: tuple[ProfileConfig, ...]  # what the shards run, active plugins only
    expanded: tuple[ExpandedProfile, ...]  # what kube-scheduler would run
    inactive: tuple[InactivePlugin, ...]
    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0  # the global value; 0 is upstream's adaptive rule
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    extenders: tuple[ExtenderConfig, ...] = ()
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    # carried, defaulted, unused by optimist so far
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    delay_cache_until_active: bool = False
    optimist: OptimistOptions = field(default_factory=OptimistOptions)
