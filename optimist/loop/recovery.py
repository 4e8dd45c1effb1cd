"""Surviving the node store: Redis away for a while, or back without what it held.

Every part of the loop that calls the store goes through `StoreRecovery`: it waits
for Redis, backing off, and builds the store again from the cluster's truth when
the one it finds is not the one the driver knew, so that a Redis failure loses
no pod (docs/design.md, invariant 4).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from binder.binder import Binder
from cluster.cluster_adapter import ClusterAdapter
from cluster.store import STORE_ERRORS, EpochChanged, Store
from cluster.volumes.index import VolumeIndex
from dispatcher.dispatcher import Dispatcher
from optimist.loop.faults import Faults

log = logging.getLogger(__name__)


@dataclass
class StoreRecovery:
    store: Store
    cluster: ClusterAdapter
    binder: Binder
    dispatcher: Dispatcher
    faults: Faults
    volumes: VolumeIndex  # the CSINodes' limits and the claims bound pods attach
    # starts the private Redis servers that exited, if any (`Platform.revive_redis`)
    revive: Callable[[], int] = lambda: 0

    @contextmanager
    def surviving(self, rebuild: bool = False) -> Iterator[None]:
        """Go on when Redis fails (what it held of a batch being committed is settled
        where the commit is, `Commits.guarded`). With `rebuild`, changes taken from the
        cluster may not have reached the store: it is built again from the cluster."""
        try:
            yield
        except STORE_ERRORS as err:
            self.recover(err, rebuild)

    def recover(self, err: Exception, rebuild: bool = False) -> None:
        """Redis is away, or lost the store: wait for it, backing off, and build the store
        again from the cluster's truth if it is not the one the driver knew (or if
        `rebuild`). Every reader starts over then (the epoch changed), and nothing
        placed before is committed. A store this driver never had (the start, or a new
        case's) is only built: that is no outage, and no error for an operator."""
        first = isinstance(err, EpochChanged) and err.known is None and not err.current
        if first:
            log.info("node store: empty; building it from the cluster")
        else:
            self.faults.store_outages += 1
            log.error("node store: %s", err)
        failures = 0
        while True:
            building = False
            try:
                current = self.store.current_epoch()
                if current == self.store.epoch and not rebuild:
                    return  # the same store: Redis was only out of reach
                building = True
                self._rebuild(logged_at=logging.INFO if first else logging.WARNING)
                return
            except STORE_ERRORS as again:
                rebuild = rebuild or building  # a rebuild cut short is done again
                if self.revive():
                    continue  # at once: what it held is gone, and is built again
                failures += 1
                wait = min(0.05 * 2**failures, 2.0)
                log.warning("node store away (%s): trying again in %.2f s", again, wait)
                time.sleep(wait)

    def notice_lost_store(self) -> None:
        """A shard failed: if Redis lost the store, build it now, not at the driver's next
        call to it (until then every shard fails every batch)."""
        with self.surviving():
            current = self.store.current_epoch()
            if current != self.store.epoch:
                self.recover(EpochChanged(self.store.epoch, current))

    def _rebuild(self, logged_at: int) -> None:
        started = time.perf_counter()
        truth = self.cluster.snapshot()
        rebuilt = self.store.rebuild(
            [self.volumes.limited(n) for n in truth.nodes],
            truth.namespaces,
            [self.dispatcher.resolve(p) for p in truth.pods],  # what they attach counts
        )
        for outcome in rebuilt:
            if not outcome.committed:
                log.warning("bound pod %s not counted: %s", outcome.unit, outcome.detail)
        self.binder.guard.reset()
        self.faults.fault_retries += self.dispatcher.store_rebuilt()
        self.faults.store_rebuilds.append(time.perf_counter() - started)
        log.log(
            logged_at,
            "node store built from the cluster: %d nodes, %d bound pods, in %.2f s",
            len(truth.nodes),
            len(truth.pods),
            self.faults.store_rebuilds[-1],
        )
