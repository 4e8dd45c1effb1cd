"""Preemption carried out: victims for units that fit nowhere, evicted in one step.

The planner (`binder.preemption`) picks victims over the store's copy of the
nodes; this step takes them out of the store and holds their room for the
preemptor atomically, and only then deletes them in the cluster, so a plan
that met a changed store evicts nobody.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from binder.preemption import Plan, PreemptionPlanner, Preemptor
from cluster.cluster_adapter import ClusterAdapter
from cluster.inventory import BoundPods
from cluster.messages import Status
from cluster.store import STORE_ERRORS, Hold, Preempted, Store
from dispatcher.answers import PreemptionAsk
from dispatcher.dispatcher import Dispatcher
from optimist.logs import unit_key
from optimist.loop.recovery import StoreRecovery
from optimist.metrics.recorder import LoopMetrics

log = logging.getLogger(__name__)


@dataclass
class Eviction:
    planner: PreemptionPlanner
    store: Store
    dispatcher: Dispatcher
    cluster: ClusterAdapter
    bound_pods: BoundPods
    recovery: StoreRecovery
    hold_ttl_s: float
    metrics: LoopMetrics | None

    def run(self, asks: list[PreemptionAsk]) -> None:
        """Find victims for units that fit nowhere: single pods alike share one dry run
        (`PreemptionPlanner.plan_alike`), other units are planned one by one."""
        started = time.perf_counter()
        tried: list[tuple[str, int, bool]] = []  # (profile, pods, victims found) per unit
        alike: dict[tuple[object, ...], list[tuple[PreemptionAsk, Preemptor]]] = {}
        for ask in asks:
            preemptors = self._preemptors(ask)
            if len(preemptors) == 1:
                p = preemptors[0]
                key = (p.requests, p.priority, p.quota, tuple(p.nodes))
                alike.setdefault(key, []).append((ask, p))
            else:
                found = self._carry_out(ask, preemptors, self.planner.plan(preemptors))
                tried.append((preemptors[0].profile, len(preemptors), found))
        for group in alike.values():
            plans = self.planner.plan_alike([p for _, p in group])
            for (ask, p), plan in zip(group, plans, strict=True):
                tried.append((p.profile, 1, self._carry_out(ask, [p], plan)))
        if self.metrics:
            self.metrics.post_filter(time.perf_counter() - started, tried)

    def _preemptors(self, ask: PreemptionAsk) -> list[Preemptor]:
        quotas = self.dispatcher.quotas
        return [
            Preemptor(
                p.key,
                p.priority,
                p.spec.requests,
                nodes,
                quotas.leaf_of(p) if quotas is not None else None,
                p.spec.profile,
            )
            for p, nodes in ask.pods
        ]

    def _carry_out(self, ask: PreemptionAsk, pods: list[Preemptor], plan: Plan | None) -> bool:
        """Evict the plan's victims and reserve their room for the unit in one step in the
        store, then delete them in the cluster. False if there is no plan, or the store
        refused it."""
        if plan is None:
            self.dispatcher.no_victims(ask.unit)
            return False
        expires_at = time.time() + self.hold_ttl_s
        holds = [Hold(p.key, plan.nominated[p.key], p.requests, expires_at) for p in pods]
        victims = [v.key for v in plan.victims]
        verdict = self._take_step(victims, holds)
        if verdict is None:  # the store failed before it took the step: tried again
            self.dispatcher.retry_preemption(ask.unit)
            return False
        if not verdict.reserved:  # the plan met a changed store: tried again as usual
            log.info(
                "preemption for %s refused by the store: %s",
                ask.unit,
                verdict.detail,
                extra=unit_key(ask.unit),
            )
            self.dispatcher.no_victims(ask.unit)
            return False
        self.bound_pods.remove(victims)  # no longer in the store: nobody else's victims
        self.dispatcher.nominate(ask.unit, plan.nominated, victims)
        self.cluster.nominate(plan.nominated)
        if self.metrics:
            self.metrics.preempted(len(victims))
        self._evict(ask, victims)
        return True

    def _evict(self, ask: PreemptionAsk, victims: list[str]) -> None:
        if not victims:
            return
        for victim, error in zip(victims, self.cluster.evict(victims), strict=True):
            if error is not None:
                log.warning(
                    "evicting %s for %s failed: %s",
                    victim,
                    ask.unit,
                    error,
                    extra=unit_key(ask.unit),
                )

    def _take_step(self, victims: list[str], holds: list[Hold]) -> Preempted | None:
        """`store.preempt`; if the store fails meanwhile, what it holds once it is back
        says whether the step was taken: the holds are there (its victims released in the
        store, to be evicted in the cluster as well), or nothing of it is (None)."""
        epoch, failed = self.store.epoch, False
        while True:
            try:
                if not failed:
                    return self.store.preempt(victims, holds)
                held = self.store.holds() if self.store.epoch == epoch else {}
                break
            except STORE_ERRORS as err:
                failed = True
                self.recovery.recover(err)
        mine = [held.get(h.pod) for h in holds]
        if all(
            m is not None and (m.node, m.expires_at) == (h.node, h.expires_at)
            for m, h in zip(mine, holds, strict=True)
        ):
            return Preempted(0, Status.RESERVED, "taken before the node store failed")
        return None
