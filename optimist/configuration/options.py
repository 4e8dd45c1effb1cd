"""The OptimistConfiguration document: optimist's own settings, beside kube-scheduler's.

Every field is optional: None where the file does not set it, so a flag or
the Settings default decides (`Settings.from_configuration`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PlainValidator

from cluster.config_types import Finding, Int32, Int64, Items, WireModel
from cluster.errors import InvalidObject
from cluster.quota import Quota, quotas_from_config
from optimist.configuration.kinds import OPTIMIST_API_VERSION, OPTIMIST_KIND


def _at_least(low: int) -> AfterValidator:
    def check(value: int) -> int:
        if value < low:
            raise ValueError(f"must be at least {low}")
        return value

    return AfterValidator(check)


def _not_empty(text: str) -> str:
    if not text:
        raise ValueError("must not be empty")
    return text


def _redis_url(url: str) -> str:
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError("must start with redis://, rediss:// or unix://")
    return url


def _host_port(text: str) -> str:
    host, colon, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if (
        not colon
        or not host
        or (":" in host and not bracketed)
        or not port.isascii()
        or not port.isdigit()
        or int(port) > 65535
    ):
        raise ValueError('must be host:port, such as "127.0.0.1:10259" or "[::1]:10259"')
    return text


def _positive(number: float) -> float:
    if not number > 0:
        raise ValueError("must be positive")
    return number


def _named(resources: dict[str, float]) -> dict[str, float]:
    for name in resources:
        if not name:
            raise Finding("a resource name must be a non-empty string", (), name)
    return resources


def _quotas(value: Any) -> tuple[Quota, ...]:
    """The elastic quota tree (`cluster/quota.py`), checked whole."""
    try:
        return tuple(quotas_from_config(value, "quotas"))
    except InvalidObject as err:
        inside = err.field.startswith("quotas")
        at = err.field.removeprefix("quotas") if inside else f": {err.obj}: {err.field}"
        raise Finding(err.problem, at, err.value) from None


AtLeastOne = Annotated[Int32, _at_least(1)]
NonEmpty = Annotated[str, AfterValidator(_not_empty)]
RedisURL = Annotated[str, AfterValidator(_redis_url)]
Positive = Annotated[float, AfterValidator(_positive)]
RayResources = Annotated[dict[str, Positive], AfterValidator(_named)]


def _two_or_more(urls: tuple[str, ...]) -> tuple[str, ...]:
    if len(urls) < 2:
        raise ValueError("name two servers or more (one is redisURL)")
    return urls


class OptimistOptions(WireModel):
    """optimist's own settings; a flag of the same name wins over the file."""

    api_version: Literal["optimist.io/v1alpha1"] = OPTIMIST_API_VERSION
    """The document's API version."""
    kind: Literal["OptimistConfiguration"] = OPTIMIST_KIND
    """The document's kind."""
    shards: AtLeastOne | None = None
    """Scheduler shards [default: 2]."""
    redis_url: RedisURL | None = Field(default=None, alias="redisURL")
    """The node store's Redis server [default: a private one the platform starts]."""
    redis_urls: Annotated[Items[RedisURL], AfterValidator(_two_or_more)] | None = Field(
        default=None, alias="redisURLs"
    )
    """The Redis servers the node store is split over (two or more)."""
    redis_partitions: AtLeastOne | None = None
    """Private Redis servers to split the node store over [default: 1]."""
    ray_address: NonEmpty | None = None
    """The Ray cluster to join [default: a local Ray on loopback]."""
    batch_pods: AtLeastOne | None = None
    """Pods per batch sent to a shard [default: about 1,024 in flight, shared out]."""
    inflight_per_shard: AtLeastOne | None = None
    """Batches a shard holds at once [default: 2 with up to two shards, else 1]."""
    seed: Annotated[Int64, _at_least(0)] | None = None
    """The seed of the shards' tie-breaks."""
    key_prefix: NonEmpty | None = None
    """The prefix of every Redis key (one store per prefix)."""
    metrics_address: Annotated[str, AfterValidator(_host_port)] | None = None
    """Where `optimist run` serves /metrics, /healthz and /readyz [default: 127.0.0.1:10259]."""
    node_partitions: bool | None = None
    """Give each shard a partition of the nodes to look at first."""
    binders: AtLeastOne | None = None
    """Binders: the driver's own and binder actors [default: 1]."""
    quotas: Annotated[tuple[Quota, ...], PlainValidator(_quotas)] | None = None
    """The elastic quota tree (name, parent, min, max, sharedWeight, namespaces)."""
    shard_timeout_s: Positive | None = Field(default=None, alias="shardTimeoutSeconds")
    """How long a shard may take with a batch before it is restarted."""
    shard_resources: RayResources | None = None
    """Ray resources each shard asks for, to place shards on chosen Ray nodes."""
    binder_resources: RayResources | None = None
    """Ray resources each binder actor asks for."""
    explain_hint: bool | None = None
    """End the PodScheduled condition's message of a pod that cannot be scheduled with the
    `optimist explain` command that shows why, plugin by plugin [default: false]."""
