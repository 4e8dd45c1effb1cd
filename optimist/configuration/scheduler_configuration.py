"""The KubeSchedulerConfiguration document's own fields, typed as upstream's v1 types.

The profiles are read apart (`profiles.py`): merging a profile's plugins into
the defaults needs the plugin registry, not just types.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, field_validator, model_validator

from cluster.config_types import Finding, Int32, Int64, Items, WireModel, in_range
from optimist.configuration.component import ClientConnection, LeaderElection
from optimist.configuration.kinds import API_VERSION, KIND
from shards.extender_config import ExtenderConfig


def _greater_than_zero(problem: str) -> AfterValidator:
    def check(value: int) -> int:
        if value <= 0:
            raise ValueError(problem)
        return value

    return AfterValidator(check)


class KubeSchedulerConfiguration(WireModel):
    """kube-scheduler's file, read unchanged: what optimist runs and what it carries."""

    api_version: Literal["kubescheduler.config.k8s.io/v1"] = API_VERSION
    """The document's API version (v1 only, as v1.30)."""
    kind: Literal["KubeSchedulerConfiguration"] = KIND
    """The document's kind."""
    parallelism: Annotated[
        Int32, _greater_than_zero("should be an integer value greater than zero")
    ] = 16
    """kube-scheduler's worker count (carried; optimist's parallelism is its shards)."""
    leader_election: LeaderElection = LeaderElection()
    """The Lease that replicas of `optimist run` share."""
    client_connection: ClientConnection = ClientConnection()
    """How `optimist run` talks to the API server."""
    enable_profiling: bool = True
    """Serve profiling (carried; `optimist run --profiling-endpoint` decides)."""
    enable_contention_profiling: bool | None = None
    """Lock contention profiling (carried) [default: enableProfiling]."""
    percentage_of_nodes_to_score: Annotated[Int32, in_range(0, 100)] | None = None
    """The share of feasible nodes to score [0 or unset: upstream's adaptive rule]."""
    pod_initial_backoff_seconds: Annotated[Int64, _greater_than_zero("must be greater than 0")] = 1
    """A failed pod's first backoff."""
    pod_max_backoff_seconds: Int64 = 10
    """The longest backoff (at least podInitialBackoffSeconds)."""
    profiles: list[dict[str, Any]] = []
    """The profiles, one per schedulerName (below: a profile)."""
    extenders: Items[ExtenderConfig] = ()
    """Scheduler extenders, called over HTTP after the shard's own plugins."""
    delay_cache_until_active: bool = False
    """Fill the cache only once leader (carried)."""

    @field_validator("extenders")
    @classmethod
    def _one_binder_each_resource_once(
        cls, extenders: tuple[ExtenderConfig, ...]
    ) -> tuple[ExtenderConfig, ...]:
        seen: set[str] = set()
        for i, extender in enumerate(extenders):
            for j, resource in enumerate(extender.managed_resources):
                if resource.name in seen:
                    raise Finding(
                        "duplicate extender managed resource name",
                        (i, "managedResources", j, "name"),
                        resource.name,
                    )
                seen.add(resource.name)
        binders = [i for i, e in enumerate(extenders) if e.bind_verb]
        if len(binders) > 1:
            raise Finding(
                "only one extender can implement bind",
                (),
                f"found {len(binders)} extenders implementing bind (extenders{binders})",
            )
        return extenders

    @model_validator(mode="after")
    def _backoff_in_order(self) -> Self:
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds:
            raise Finding(
                "must be greater than or equal to podInitialBackoffSeconds",
                ("podMaxBackoffSeconds",),
                self.pod_max_backoff_seconds,
            )
        return self

    @property
    def contention_profiling(self) -> bool:
        """enableContentionProfiling as upstream defaults it: enableProfiling's value."""
        if self.enable_contention_profiling is None:
            return self.enable_profiling
        return self.enable_contention_profiling
