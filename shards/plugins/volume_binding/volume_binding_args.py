"""VolumeBindingArgs, as v1 declares and validates them."""

from __future__ import annotations

from pydantic import field_validator

from cluster.config_types import Int64, PluginArgs


class VolumeBindingArgs(PluginArgs):
    """Upstream's, read as v1 reads them."""

    bind_timeout_seconds: Int64 = 600
    """How long PreBind waits for the PV controller to bind a pod's claims before the
    pod goes back to the queue (through an API server: optimist/kube/volume_prebind.py)."""
    shape: None = None
    """VolumeCapacityPriority's score shape: refused, the gate is off in v1.30."""

    @field_validator("bind_timeout_seconds")
    @classmethod
    def _not_negative(cls, seconds: int) -> int:
        if seconds < 0:
            raise ValueError("should not be a negative value")
        return seconds

    @field_validator("shape", mode="before")
    @classmethod
    def _gated(cls, value: object) -> None:
        raise ValueError(
            "needs the VolumeCapacityPriority feature gate, which v1.30 has off; remove it"
        )
