"""The component's standard sections: leaderElection and clientConnection.

Checked and defaulted as kube-scheduler v1.30 does (a zero or empty value means
the default), so a file it refuses is refused here too; `optimist run` takes its
Lease and its API client from them.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import ValidationInfo, field_validator, model_validator

from cluster.config_types import Finding, Int32, WireModel
from cluster.durations import GoDuration


class _ZeroIsDefault(WireModel):
    """A section whose fields, left zero or empty, take their defaults, as upstream's
    defaulting does."""

    @field_validator("*", mode="after")
    @classmethod
    def _zero_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool):
            return value
        zero = value.seconds == 0 if isinstance(value, GoDuration) else value in (0, "")
        if zero and info.field_name is not None:
            return cls.model_fields[info.field_name].default
        return value


class LeaderElection(_ZeroIsDefault):
    """The Lease replicas share: one schedules, the others wait to take over."""

    leader_elect: bool = True
    """Take part in leader election; off, this replica schedules at once, alone."""
    lease_duration: GoDuration = GoDuration("15s")
    """How long a replica that stopped renewing keeps the lease."""
    renew_deadline: GoDuration = GoDuration("10s")
    """How long the leader tries to renew before it stops scheduling."""
    retry_period: GoDuration = GoDuration("2s")
    """How often replicas try to take or renew the lease."""
    resource_lock: str = "leases"
    """The lock's kind; only leases, as v1.30."""
    resource_name: str = "kube-scheduler"
    """The Lease's name: give optimist its own (kube-scheduler's is refused by `optimist run`)."""
    resource_namespace: str = "kube-system"
    """The Lease's namespace."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if not self.leader_elect:
            return self
        for name in ("lease_duration", "renew_deadline", "retry_period"):
            duration: GoDuration = getattr(self, name)
            if duration.seconds <= 0:
                raise Finding("must be greater than zero", (_alias(name),), duration.text)
        if self.lease_duration.seconds <= self.renew_deadline.seconds:
            raise Finding(
                "must be greater than renewDeadline", ("leaseDuration",), self.lease_duration.text
            )
        if self.resource_lock != "leases":
            raise Finding('must be "leases"', ("resourceLock",), self.resource_lock)
        return self


class ClientConnection(_ZeroIsDefault):
    """How optimist talks to the API server."""

    kubeconfig: str = ""
    """The kubeconfig file [default: in-cluster]; `optimist run --kubeconfig` wins."""
    accept_content_types: str = ""
    """The Accept header's types (carried; the client asks for JSON)."""
    content_type: str = "application/vnd.kubernetes.protobuf"
    """The content type of requests (carried; the client sends JSON)."""
    qps: float = 50.0
    """Requests per second to the API server, on average."""
    burst: Int32 = 100
    """Requests allowed at once above qps."""

    @field_validator("burst")
    @classmethod
    def _not_negative(cls, burst: int) -> int:
        if burst < 0:
            raise ValueError("must be non-negative")
        return burst


def _alias(name: str) -> str:
    alias = LeaderElection.model_fields[name].alias
    assert alias is not None
    return alias
