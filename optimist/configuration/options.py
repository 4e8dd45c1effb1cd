"""The OptimistConfiguration document: optimist's own settings, beside kube-scheduler's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster.errors import InvalidObject
from cluster.quota import Quota, quotas_from_config
from optimist.configuration.fields import (
    _INT64,
    ConfigError,
    _bool,
    _int,
    _list,
    _mapping,
    _number,
    _str,
)
from optimist.configuration.model import _TYPE_META, OptimistOptions

_OPTIMIST_FIELDS = {
    "shards",
    "redisURL",
    "redisURLs",
    "redisPartitions",
    "rayAddress",
    "batchPods",
    "inflightPerShard",
    "seed",
    "keyPrefix",
    "metricsAddress",
    "nodePartitions",
    "binders",
    "quotas",
    "shardTimeoutSeconds",
    "shardResources",
    "binderResources",
}


def _optimist_options(doc: dict[str, Any]) -> OptimistOptions:
    m = _mapping(doc, "", _OPTIMIST_FIELDS | _TYPE_META)

    def get(key: str, read: Callable[[Any, str], Any]) -> Any:
        return None if m.get(key) is None else read(m[key], key)

    return OptimistOptions(
        shards=get("shards", lambda v, p: _int(v, p, lo=1)),
        redis_url=get("redisURL", _redis_url),
        redis_urls=get("redisURLs", _redis_urls),
        redis_partitions=get("redisPartitions", lambda v, p: _int(v, p, lo=1)),
        ray_address=get("rayAddress", lambda v, p: _str(v, p, empty=False)),
        batch_pods=get("batchPods", lambda v, p: _int(v, p, lo=1)),
        inflight_per_shard=get("inflightPerShard", lambda v, p: _int(v, p, lo=1)),
        seed=get("seed", lambda v, p: _int(v, p, bits=_INT64, lo=0)),
        key_prefix=get("keyPrefix", lambda v, p: _str(v, p, empty=False)),
        metrics_address=get("metricsAddress", _host_port),
        node_partitions=get("nodePartitions", _bool),
        binders=get("binders", lambda v, p: _int(v, p, lo=1)),
        quotas=get("quotas", _quotas),
        shard_timeout_s=get("shardTimeoutSeconds", _positive),
        shard_resources=get("shardResources", _resources),
        binder_resources=get("binderResources", _resources),
    )


def _resources(value: Any, path: str) -> dict[str, float]:
    """Ray resources an actor asks for: name -> a positive amount, as `ray start
    --resources` offers them."""
    if not isinstance(value, dict):
        raise ConfigError(path, value, "must be a mapping of Ray resource names to amounts")
    out = {}
    for name, amount in value.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(path, name, "a resource name must be a non-empty string")
        out[name] = _positive(amount, f"{path}.{name}")
    return out


def _positive(value: Any, path: str) -> float:
    number = _number(value, path)
    if not number > 0:
        raise ConfigError(path, value, "must be positive")
    return number


def _quotas(value: Any, path: str) -> tuple[Quota, ...]:
    """The elastic quota tree (`cluster/quota.py`), checked whole."""
    try:
        return tuple(quotas_from_config(value, path))
    except InvalidObject as err:
        at = err.field if err.field.startswith(path) else f"{path}: {err.obj}: {err.field}"
        raise ConfigError(at, err.value, err.problem) from None


def _redis_urls(value: Any, path: str) -> tuple[str, ...]:
    """The Redis servers the node store is split over: two or more."""
    urls = tuple(_redis_url(v, f"{path}[{i}]") for i, v in enumerate(_list(value, path)))
    if len(urls) < 2:
        raise ConfigError(path, value, "name two servers or more (one is redisURL)")
    return urls


def _redis_url(value: Any, path: str) -> str:
    url = _str(value, path)
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(path, value, "must start with redis://, rediss:// or unix://")
    return url


def _host_port(value: Any, path: str) -> str:
    text = _str(value, path)
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
        raise ConfigError(
            path, value, 'must be host:port, such as "127.0.0.1:10259" or "[::1]:10259"'
        )
    return text
