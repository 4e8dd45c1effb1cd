"""The runtime: starts Redis and Ray and places the shard and binder actors.

The control process hosts the dispatcher and the binder, and runs the loop
(`optimist.loop`) over what `Platform` started; shards are Ray actors, and so
are the binder actors when there are several binders.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import ray
from ray._private import ray_constants
from ray.exceptions import ActorUnavailableError, RayError

from binder.binder_actor import BinderActor
from cluster.redis_server import EmbeddedRedis
from cluster.store import Keys, open_store
from optimist import collector
from optimist.lean_ray import SYSTEM_CONFIG, lean_start
from optimist.settings import Settings
from shards.shard_actor import RayNode, ShardActor, ShardInfo

log = logging.getLogger(__name__)

# Ray turns token authentication on for a new local cluster (unless RAY_AUTH_MODE says
# otherwise) and says so, telling how to turn it off. It stays on for the private Ray:
# loopback keeps other machines out, not this machine's other users. What it says is
# nothing a user of optimist can act on, so its logger is quiet while Ray starts.
_TOKEN_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
_OBJECT_STORE_BYTES = 256 * 1024 * 1024  # batches are small; Ray's default takes 30% of RAM


class RayStartError(RuntimeError):
    """Ray could not be started or joined; the message says what to do."""


def init_ray(address: str | None) -> bool:
    """Join `address`, or start a local Ray bound to loopback; True if we started it."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with _own_sigterm_handler():
        _init_ray(address)
    return True


def _init_ray(address: str | None) -> None:
    try:
        if address:
            # a Ray this machine started on loopback is joined as it was started
            with _single_node() if _loopback(address) else nullcontext():
                ray.init(address=address, logging_level=logging.WARNING)
        else:
            with _single_node():
                _start_local()
    except Exception as e:
        ray.shutdown()
        what = f"could not join Ray at {address}" if address else "could not start a local Ray"
        hint = (
            "check that the address is a running Ray's (ray status)"
            if address
            else "check free memory and /tmp/ray, or join a running one with --ray-address"
        )
        reason = " ".join(str(e).split()) or type(e).__name__
        raise RayStartError(f"{what} ({reason}); {hint}") from e


@contextmanager
def _own_sigterm_handler() -> Iterator[None]:
    """`ray.init` puts a SIGTERM handler of its own (an exit) in the place of the one
    the command installed (`optimist.lifetime.interrupts`): the command's is kept."""
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if callable(before) and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, before)


def _start_local() -> None:
    """A local Ray, started lean (`optimist.lean_ray`: 0.6 s against 4.7); plainly if
    that fails, as it may with a Ray whose internals moved. Always a new one
    (`address="local"`): without it Ray joins whatever /tmp/ray/ray_current_cluster
    or a running GCS names, a cluster that may be dead or another program's."""
    options: dict[str, Any] = dict(  # ray.init's keywords, each of its own type
        address="local",
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        object_store_memory=_OBJECT_STORE_BYTES,
        logging_level=logging.WARNING,
    )
    try:
        with lean_start(), _quiet(_TOKEN_AUTH_LOGGER):
            ray.init(**options, _system_config=dict(SYSTEM_CONFIG))
        return
    except Exception as e:  # whatever broke it, a plain start may not have
        log.warning("a lean start of Ray failed (%s); starting it as it is", e)
        ray.shutdown()
    with _quiet(_TOKEN_AUTH_LOGGER):
        ray.init(**options)


@contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """Only errors from `logger` while the context lasts."""
    target = logging.getLogger(logger)
    level = target.level
    target.setLevel(logging.ERROR)
    try:
        yield
    finally:
        target.setLevel(level)


def _loopback(address: str) -> bool:
    """The addresses Ray would turn into the machine's own, as `_single_node` says."""
    host = address.split("://")[-1].rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1")


@contextmanager
def _single_node() -> Iterator[None]:
    """Ray, believing a cluster may grow, turns 127.0.0.1 into the machine's address, and
    its GCS, raylet and workers then listen on every interface. It keeps to loopback
    when told that this is a single-node Ray (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`):
    a constant read when `ray` is imported, and the variable for the processes it
    starts. Both only while the local Ray starts, so that this process may still
    join a cluster later. A process joining such a Ray (at 127.0.0.1) must say so too,
    or it looks for it at the machine's address. tests/optimist/test_ray_loopback.py
    checks the sockets."""
    variable = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    was, before = os.environ.get(variable), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[variable], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
        if was is None:
            del os.environ[variable]
        else:
            os.environ[variable] = was


class Platform:
    """Redis (private or given), Ray, and the shard actors, for as long as the context lasts."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.embedded_redis: EmbeddedRedis | None = None  # the private one, if started
        self.embedded_servers: list[EmbeddedRedis] = []  # each partition's, if split
        self._own_ray = False
        self.shards: list[ray.actor.ActorHandle[ShardActor]] = []
        # beside the driver's own binder
        self.binders: list[ray.actor.ActorHandle[BinderActor]] = []
        self.shard_info: list[ShardInfo] = []

    def __enter__(self) -> Platform:
        # the driver's, for as long as it runs the roles
        self._thresholds = collector.collect_less_often()
        try:
            self._start()
        except BaseException:
            self.__exit__()  # what did start stops: no Redis or actor is left behind
            raise
        return self

    def _start(self) -> None:
        s = self.settings
        if s.private_redis:
            for _ in range(s.redis_partitions):
                self.embedded_servers.append(EmbeddedRedis().start())
            self.embedded_redis = self.embedded_servers[0]
        given = [s.redis_url] if s.redis_url else list(s.redis_urls)
        self.redis_urls = given or [e.url for e in self.embedded_servers]
        self.redis_url = self.redis_urls[0]
        self.store = open_store(self.redis_urls, Keys(s.key_prefix))
        self.store.open()
        self._own_ray = init_ray(s.ray_address)
        profiles = [p.to_wire() for p in s.profiles]
        at_shards = _spread(s.shard_resources, s.shards, "shardResources")
        at_binders = _spread(s.binder_resources, s.binders - 1, "binderResources")
        self.shards = [
            ShardActor.options(**at_shards).remote(  # type: ignore[attr-defined]  # ray.remote made it an ActorClass
                i,
                self.redis_urls,
                s.key_prefix,
                profiles,
                [e.to_wire() for e in s.extenders],
                s.candidates,
                s.seed * 1000 + i,
                s.node_partition_count,
                s.shards,
            )
            for i in range(s.shards)
        ]
        self.binders = [
            BinderActor.options(**at_binders).remote(  # type: ignore[attr-defined]  # ray.remote made it an ActorClass
                self.redis_url, s.key_prefix, s.conflict_mode
            )
            for _ in range(s.binders - 1)
        ]
        self.shard_info = ray.get([shard.info.remote() for shard in self.shards])
        for info in self.shard_info:
            info["ray_nodes"] = [_node(info)]

    def start_over(self) -> None:
        """An empty store and shards that know nothing, on the processes already running:
        a new workload without the second a shard's process takes to start."""
        self.store.clear()
        ray.get([shard.start_over.remote() for shard in self.shards])

    def locate_shards(self, timeout_s: float = 10.0) -> None:
        """Where each shard runs now, noted in its info: Ray starts a shard whose node was
        lost on another node, and its `ray_nodes` then names both. A shard whose node was
        lost so lately that Ray has not started it again yet is asked again; one that
        does not answer in time keeps what was known."""
        deadline = time.monotonic() + timeout_s
        waiting = set(range(len(self.shards)))
        while waiting and time.monotonic() < deadline:
            asked: dict[ray.ObjectRef[ShardInfo], int] = {
                self.shards[i].info.remote(): i for i in sorted(waiting)
            }
            left = max(deadline - time.monotonic(), 0.0)
            answered, _ = ray.wait(list(asked), num_returns=len(asked), timeout=left)
            for ref in answered:
                try:
                    now = ray.get(ref)
                except ActorUnavailableError:
                    continue  # its node is going: Ray starts it again elsewhere
                except RayError:
                    now = None  # gone for good: what was known stays
                waiting.discard(asked[ref])
                if now is None:
                    continue
                info = self.shard_info[asked[ref]]
                seen = info["ray_nodes"]
                if seen[-1] != _node(now):
                    seen.append(_node(now))
                info.update(now)  # then ray_nodes, as update(now, ray_nodes=seen) did: a
                info["ray_nodes"] = seen  # TypedDict's update takes no keywords
            if waiting:
                time.sleep(0.1)

    def revive_redis(self) -> int:
        """Start again, empty, each private Redis that has exited: nobody else will (a
        given Redis is its operator's to restart). How many; the store is then built
        again from the cluster, as after any Redis that lost what it held."""
        dead = [server for server in self.embedded_servers if server.exited]
        for server in dead:
            log.warning("private Redis on %s exited: starting it again, empty", server.socket)
            server.start()
        return len(dead)

    def __exit__(self, *exc: object) -> None:
        for actor in self.shards + self.binders:
            ray.kill(actor)
        if self._own_ray:
            ray.shutdown()
        if hasattr(self, "store"):
            self.store.close()
        for server in self.embedded_servers:
            server.stop()
        collector.restore(self._thresholds)


def _node(info: ShardInfo) -> RayNode:
    return {"id": info["ray_node_id"], "ip": info["ray_node_ip"]}


class PlacementError(RuntimeError):
    """The Ray cluster offers too little of a resource the actors ask for."""


def _spread(resources: dict[str, float], count: int, setting: str) -> dict[str, object]:
    """Options that spread `count` actors over the Ray nodes offering `resources`. A
    resource no node offers is refused now, not left for the actors to wait on; too
    little of one is waited for, as an autoscaler adds the nodes that offer it."""
    offered: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]  # ray leaves it unannotated (checked only under --strict)
    for name, amount in resources.items():
        if not count or offered.get(name, 0.0) >= amount * count:
            continue
        have = f"{count} actors asking for {name}={amount:g} each; the Ray cluster offers"
        if not offered.get(name):
            raise PlacementError(
                f"{setting}: {have} none of it (ray start --resources "
                f"'{{\"{name}\": N}}' on the nodes for them)"
            )
        log.warning("%s: %s %g of it: the rest wait for nodes", setting, have, offered[name])
    return {"scheduling_strategy": "SPREAD", "resources": dict(resources)}
