"""The shard as a Ray actor: a thin shell that decodes batches and encodes results."""

from __future__ import annotations

import cProfile
import logging
import marshal
import os
from typing import Any, NotRequired, TypedDict

import ray

from cluster.explanation import ExplainRequest
from cluster.messages import ShardBatch
from cluster.profile_config import ProfileConfig
from cluster.store import EpochChanged, Keys, open_store
from shards.extender import HTTPExtender
from shards.extender_config import ExtenderConfig
from shards.plugins import build_profile
from shards.scheduler import ShardCore

log = logging.getLogger(__name__)


class RayNode(TypedDict):
    id: str
    ip: str


class ShardInfo(TypedDict):
    """Where a shard runs (`ShardActor.info`). The platform adds each Ray node it was seen
    on, first to last; `--cpu-affinity`, the core it is pinned to."""

    id: int
    ray_node_id: str
    ray_node_ip: str
    pid: int
    ray_nodes: NotRequired[list[RayNode]]
    core: NotRequired[int]


@ray.remote(num_cpus=0, max_restarts=-1)  # a dead shard comes back and syncs afresh
class ShardActor:
    def __init__(
        self,
        shard_id: int,
        redis_urls: list[str],  # one, or the servers the node store is split over
        key_prefix: str,
        profiles: list[list[Any]],
        extenders: list[dict[str, Any]],
        candidates: int,
        seed: int,
        node_partitions: int,
        shards: int = 1,
    ) -> None:
        self._redis = (redis_urls, key_prefix)
        self._args = (shard_id, profiles, extenders, seed, candidates, node_partitions, shards)
        self.core = self._new_core()
        self._profile: cProfile.Profile | None = None

    def _new_core(self) -> ShardCore:
        shard_id, profiles, extenders, seed, candidates, node_partitions, shards = self._args
        store = open_store(self._redis[0], Keys(self._redis[1]))
        built = [build_profile(ProfileConfig.from_wire(p)) for p in profiles]
        consulted = [HTTPExtender.from_config(ExtenderConfig.from_wire(e)) for e in extenders]
        return ShardCore(
            shard_id, store, built, seed, consulted, candidates, node_partitions, shards
        )

    def info(self) -> ShardInfo:
        """Where this shard runs, for the report."""
        return {
            "id": self.core.shard_id,
            "ray_node_id": ray.get_runtime_context().get_node_id(),
            "ray_node_ip": ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]  # ray leaves it unannotated (checked only under --strict)
            "pid": os.getpid(),
        }

    def start_profile(self) -> None:
        """Profile this shard's calls from now on (an operator asked: `--profile`)."""
        self._profile = cProfile.Profile()
        self._profile.enable()

    def stop_profile(self) -> bytes:
        """The profile since `start_profile`, as pstats reads it (marshalled)."""
        profile, self._profile = self._profile, None
        if profile is None:  # never started, or this actor was restarted since
            raise RuntimeError("no profile was started in this shard")
        profile.disable()
        profile.create_stats()
        return marshal.dumps(profile.stats)

    def explain(self, frame: bytes) -> bytes:
        """One unit judged now, placing nothing (`ShardCore.explain`), between two batches."""
        return self.core.explain(ExplainRequest.decode(frame)).encode()

    def schedule(self, frame: bytes) -> bytes:
        """One batch in (msgpack), its decisions out (msgpack)."""
        batch = ShardBatch.decode(frame)
        try:
            return self.core.handle(batch).encode()
        except EpochChanged as err:
            if not err.ready:
                raise  # no store to decide against yet: the batch goes back to the queue
            # the store was built again: everything this shard knew or assumed is void
            log.warning("shard %d: %s; starting over", self.core.shard_id, err)
            self.start_over()
            return self.core.handle(batch).encode()

    def start_over(self) -> None:
        """Forget every node, pod and assumption, as a shard just started would know
        nothing: for a store built again, or a new workload on the same actors."""
        self.core.store.close()
        self.core = self._new_core()
