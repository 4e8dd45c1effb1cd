"""The batches out with each shard: several in flight each, to hide the round trip,
and a shard that holds one too long is restarted."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import ray
from ray.actor import ActorHandle
from ray.exceptions import RayError

from cluster.messages import ShardBatch, ShardResult
from cluster.wire import MalformedMessage
from optimist.loop.faults import Faults

if TYPE_CHECKING:
    from shards.shard_actor import ShardActor

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Sent:
    shard: int
    batch_id: int
    at: float  # time.monotonic() when it was sent


class ShardPipelines:
    def __init__(
        self, shards: list[ActorHandle[ShardActor]], depth: int, timeout_s: float, faults: Faults
    ) -> None:
        self.shards = shards
        self.depth = depth  # batches in flight per shard
        self.timeout_s = timeout_s
        self.faults = faults
        self.out: dict[ray.ObjectRef[bytes], Sent] = {}  # oldest first
        self._per_shard = [0] * len(shards)
        self._restarting: set[int] = set()  # shards killed, until their batches came back

    def has_room(self, shard: int) -> bool:
        return shard not in self._restarting and self._per_shard[shard] < self.depth

    def in_flight(self, shard: int) -> int:
        """Batches out with the shard: what a call to it waits behind."""
        return self._per_shard[shard]

    def send(self, shard: int, batch: ShardBatch) -> None:
        ref: ray.ObjectRef[bytes] = self.shards[shard].schedule.remote(batch.encode())
        self.out[ref] = Sent(shard, batch.batch_id, time.monotonic())
        self._per_shard[shard] += 1

    def take(self, ref: ray.ObjectRef[bytes]) -> tuple[Sent, ShardResult | None]:
        """A batch back, with the shard's answer; None if no answer came (the shard
        failed, or sent what cannot be read)."""
        sent = self.out.pop(ref)
        self._per_shard[sent.shard] -= 1
        if not self._per_shard[sent.shard]:
            self._restarting.discard(sent.shard)
        try:
            return sent, ShardResult.decode(ray.get(ref))
        except (RayError, MalformedMessage) as err:
            log.error("shard %d failed on batch %d: %s", sent.shard, sent.batch_id, err)
            self.faults.shard_failures += 1
            return sent, None

    def restart_overdue(self) -> None:
        """A shard that holds a batch past `timeout_s` is stuck (or cut off): kill it for
        Ray to start again. Its batches then fail, and their units are tried again."""
        if not self.out:
            return
        now = time.monotonic()
        if now - next(iter(self.out.values())).at < self.timeout_s:
            return
        late = [
            ref
            for ref, s in self.out.items()
            if now - s.at >= self.timeout_s and s.shard not in self._restarting
        ]
        if not late:
            return
        # an answer that came while the driver itself was slow is not the shard's fault
        answered, _ = ray.wait(late, num_returns=len(late), timeout=0)
        overdue = {self.out[ref].shard for ref in late} - {self.out[ref].shard for ref in answered}
        for shard in sorted(overdue):
            log.error("shard %d has not answered in %.0f s: restarting it", shard, self.timeout_s)
            ray.kill(self.shards[shard], no_restart=False)
            self.faults.shard_restarts += 1
            self._restarting.add(shard)
