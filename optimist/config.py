"""optimist's own settings: how many shards, where Redis and Ray are, how work is batched."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from cluster.profile_config import ProfileConfig
from cluster.redis_server import redact

# What optimist runs today of kube-scheduler's default profile.
DEFAULT_PROFILE = ProfileConfig(
    "default-scheduler",
    filters=("NodeUnschedulable", "NodeAffinity", "TaintToleration", "NodeResourcesFit"),
    scorers=(("NodeResourcesFit", 1),),
)


@dataclass(frozen=True, slots=True)
class Settings:
    shards: int = 2
    redis_url: str | None = None  # None: start a private Redis on a unix socket
    ray_address: str | None = None  # None: start Ray locally, bound to loopback
    key_prefix: str = "optimist:"
    profiles: tuple[ProfileConfig, ...] = (DEFAULT_PROFILE,)
    batch_pods: int = 256  # pods per Ray call to a shard
    inflight_per_shard: int = 2  # batches a shard may hold at once, to hide round trips
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 10.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("shards", "batch_pods", "inflight_per_shard"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0 < self.backoff_initial_s <= self.backoff_max_s:
            raise ValueError(
                "backoff must satisfy 0 < initial <= max, got "
                f"initial {self.backoff_initial_s}, max {self.backoff_max_s}"
            )

    @property
    def scheduler_names(self) -> frozenset[str]:
        return frozenset(p.scheduler_name for p in self.profiles)

    def public(self) -> dict[str, Any]:
        """The settings as a report shows them: no secret in them."""
        out = asdict(self)
        out["profiles"] = [p.to_wire() for p in self.profiles]
        if self.redis_url:
            out["redis_url"] = redact(self.redis_url)
        return out
