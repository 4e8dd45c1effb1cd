"""optimist's own settings: how many shards, where Redis and Ray are, how work is batched."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from cluster.profile_config import ProfileConfig
from cluster.quota import Quota
from cluster.redis_server import redact
from cluster.store.node_store import CONFLICT_MODES
from optimist.configuration import Configuration, default_configuration
from shards.extender_config import ExtenderConfig
from shards.plugins.volume_binding import VolumeBindingArgs

# What optimist runs of kube-scheduler v1.30's default profile: its active plugins.
DEFAULT_PROFILE = default_configuration().profiles[0]


@dataclass(frozen=True, slots=True)
class Settings:
    shards: int = 2
    # None: start a private Redis on a unix socket; never in a repr (it may hold a password)
    redis_url: str | None = field(default=None, repr=False)
    # the node store split over these Redis servers instead (cluster/store/partitioned.py)
    redis_urls: tuple[str, ...] = field(default=(), repr=False)
    redis_partitions: int = 1  # without URLs: private Redis servers the store is split over
    ray_address: str | None = None  # None: start Ray locally, bound to loopback
    key_prefix: str = "optimist:"
    profiles: tuple[ProfileConfig, ...] = (DEFAULT_PROFILE,)
    batch_pods: int | None = None  # pods per Ray call to a shard; None: `pods_per_batch`
    # batches a shard may hold at once, to hide round trips; None: `batches_in_flight`
    inflight_per_shard: int | None = None
    max_conflicts: int = 5  # conflicts in a row before a unit backs off instead of retrying
    conflict_mode: str = "fine"  # or "coarse": any change to a node since the shard looked
    candidates: int = (
        3  # nodes a shard offers per pod, best first: the binder takes the first that fits
    )
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 10.0
    seed: int = 0
    extenders: tuple[ExtenderConfig, ...] = ()  # HTTP scheduler extenders, as in the file
    metrics_address: str = "127.0.0.1:10259"  # carried from the file; not served yet
    node_partitions: bool = False  # each shard looks first at its own slice of the nodes
    binders: int = 1  # the driver's binder, and binder actors beside it that commit too
    quotas: tuple[Quota, ...] = ()  # elastic quota tree (cluster/quota.py); none: no limit
    # how long room freed by a preemption stays reserved for its preemptor: longer
    # than its victims take to terminate (30 s by default in Kubernetes)
    hold_ttl_s: float = 120.0
    # a shard that holds a batch longer is restarted, and the batch's units tried again
    shard_timeout_s: float = 30.0
    # Ray resources each shard (binder actor) asks for, e.g. {"optimist-shard": 1}: in a
    # Ray cluster, only the nodes started with them (`ray start --resources`) take it
    shard_resources: dict[str, float] = field(default_factory=dict)
    binder_resources: dict[str, float] = field(default_factory=dict)
    # the PodScheduled condition of a pod that cannot be scheduled says how to explain it
    explain_hint: bool = False

    def __post_init__(self) -> None:
        self._check_amounts()
        self._check_store()

    def _check_amounts(self) -> None:
        """Counts, times and resources in their ranges."""
        positive = ("shards", "batch_pods", "inflight_per_shard", "max_conflicts", "candidates")
        for name in (*positive, "binders", "redis_partitions"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.conflict_mode not in CONFLICT_MODES:
            raise ValueError(
                f"conflict_mode {self.conflict_mode!r}: must be one of {', '.join(CONFLICT_MODES)}"
            )
        for name in ("hold_ttl_s", "shard_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("shard_resources", "binder_resources"):
            for resource, amount in getattr(self, name).items():
                if not resource or not amount > 0:
                    raise ValueError(f"{name}: {resource!r}: {amount} must be positive")
        if not 0 < self.backoff_initial_s <= self.backoff_max_s:
            raise ValueError(
                "backoff must satisfy 0 < initial <= max, got "
                f"initial {self.backoff_initial_s}, max {self.backoff_max_s}"
            )

    def _check_store(self) -> None:
        """One Redis, or a store split over several, and who may commit to it."""
        if self.redis_url and (self.redis_urls or self.redis_partitions > 1):
            raise ValueError(
                "redis_url is one Redis; a store split over several takes redis_urls "
                "(their URLs) or redis_partitions (private servers), not both"
            )
        if len(self.redis_urls) == 1:
            raise ValueError("redis_urls: name two servers or more, or use redis_url")
        if self.store_partitions > 1 and self.binders > 1:
            raise ValueError(
                f"binders {self.binders}: a node store split over Redis servers is "
                "committed to by the driver's binder alone (it keeps no fences)"
            )

    @classmethod
    def from_configuration(
        cls,
        configuration: Configuration,
        *,
        shards: int | None = None,
        redis_url: str | None = None,
        ray_address: str | None = None,
        batch_pods: int | None = None,
        inflight_per_shard: int | None = None,
        seed: int | None = None,
        key_prefix: str | None = None,
    ) -> Settings:
        """Settings from a loaded file; an argument that is not None (a flag) wins over the file.

        What neither gives keeps the default above, so a file without an
        OptimistConfiguration document changes only the profiles and backoff.
        """
        flags = {
            "shards": shards,
            "redis_url": redis_url,
            "ray_address": ray_address,
            "batch_pods": batch_pods,
            "inflight_per_shard": inflight_per_shard,
            "seed": seed,
            "key_prefix": key_prefix,
        }
        given = configuration.optimist  # its fields are named as the fields here
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in flags and flags[f.name] is not None:
                values[f.name] = flags[f.name]
            elif getattr(given, f.name, None) is not None:
                values[f.name] = getattr(given, f.name)
        return cls(
            **values,
            profiles=configuration.profiles,
            extenders=configuration.extenders,
            backoff_initial_s=float(configuration.pod_initial_backoff_seconds),
            backoff_max_s=float(configuration.pod_max_backoff_seconds),
        )

    @property
    def batches_in_flight(self) -> int:
        """`inflight_per_shard`, or by default 2 with up to two shards and 1 beyond: a
        second batch hides a shard's round trip, and past two shards the others' batches
        do. With the pods in flight the same (1,024), 4 shards on 2 cores did 6% more
        with one batch of 256 each than with two of 128 (median of six interleaved
        pairs, SchedulingBasic, 5,000 nodes), their shards' CPU per pod 47 against 55 us."""
        if self.inflight_per_shard is not None:
            return self.inflight_per_shard
        return 2 if self.shards <= 2 else 1

    @property
    def pods_per_batch(self) -> int:
        """`batch_pods`, or by default 1,024 pods in flight shared out within 64..256 per
        batch: whatever the number of shards, no shard decides on a view many batches
        old (on 2 cores, 4 shards with two batches in flight each did 3,900 pods/s with
        batches of 256, 4,400 with 128)."""
        if self.batch_pods is not None:
            return self.batch_pods
        return min(max(1024 // (self.shards * self.batches_in_flight), 64), 256)

    @property
    def private_redis(self) -> bool:
        """The platform starts the node store's Redis servers itself (none is named)."""
        return self.redis_url is None and not self.redis_urls

    @property
    def store_partitions(self) -> int:
        """Redis servers the node store is split over (1: not split)."""
        return len(self.redis_urls) or self.redis_partitions

    @property
    def node_partition_count(self) -> int:
        """Node partitions: one per shard when enabled, else none."""
        return self.shards if self.node_partitions else 0

    @property
    def scheduler_names(self) -> frozenset[str]:
        return frozenset(p.scheduler_name for p in self.profiles)

    def volume_bind_timeouts(self) -> dict[str, float]:
        """Per profile running VolumeBinding: how long PreBind waits for the PV controller
        (its args' bindTimeoutSeconds)."""
        return {
            p.scheduler_name: float(
                VolumeBindingArgs.from_wire(p.args.get("VolumeBinding", {})).bind_timeout_seconds
            )
            for p in self.profiles
            if "VolumeBinding" in p.filters
        }

    def public(self) -> dict[str, Any]:
        """The settings as a report shows them: no secret in them."""
        out = asdict(self)
        out["pods_per_batch"] = self.pods_per_batch
        out["batches_in_flight"] = self.batches_in_flight
        out["profiles"] = [p.to_wire() for p in self.profiles]
        if self.redis_url:
            out["redis_url"] = redact(self.redis_url)
        out["redis_urls"] = [redact(u) for u in self.redis_urls]
        out["extenders"] = [_without_keys(e) for e in self.extenders]
        return out


_SECRET_TLS_FIELDS = ("keyData", "keyFile", "certData", "caData")


def _without_keys(extender: ExtenderConfig) -> dict[str, Any]:
    """An extender's settings with its TLS key and certificate material left out."""
    wire = extender.to_wire()
    tls = {
        k: ("***" if k in _SECRET_TLS_FIELDS and v else v)
        for k, v in (wire.get("tlsConfig") or {}).items()
    }
    return {**wire, "tlsConfig": tls} if tls else wire
