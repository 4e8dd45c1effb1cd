"""The binder's re-check of constraints between pods, against the committed state.

Rule for PodTopologySpread and InterPodAffinity (docs/design.md, invariant 5): a
shard judged them on the pods it had seen, and other shards may have placed
pods since. The binder is the one writer of commits, so its view of the
committed pods, synced just before a batch and extended by the batch's
earlier units, is exact: a placement that breaks a required spread or
(anti-)affinity rule there is refused as a conflict and goes back to the
queue, before anything reaches the store. With several binders, units that
need the check all go through this one, and fences.py keeps it exact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from binder.fences import namespaces_watched
from cluster.crosspod.affinity import filter_node, keeps_away, terms_of
from cluster.crosspod.committed import CommittedView
from cluster.crosspod.topology_spread import (
    DO_NOT_SCHEDULE,
    NO_DEFAULTS,
    DefaultSpreading,
    spread_filter,
    spreads,
)
from cluster.crosspod.view import ClusterView
from cluster.messages import Conflict, Decision, UnitOutcome
from cluster.objects import Peer, SchedulingSpec
from cluster.profile_config import ProfileConfig
from cluster.store import NodeStore, Store

# the per-node rule: spec, node, view -> reason or None
Rule = Callable[[SchedulingSpec, str, ClusterView], str | None]


def _spread_rule(defaults: DefaultSpreading) -> Rule:
    return lambda spec, node, view: spread_filter(spec, node, view, defaults)


# plugin name -> (the profile's default spreading -> its rule)
RULES: dict[str, Callable[[DefaultSpreading], Rule]] = {
    "PodTopologySpread": _spread_rule,
    "InterPodAffinity": lambda defaults: filter_node,
}


def _constrained(spec: SchedulingSpec, defaults: DefaultSpreading) -> bool:
    return bool(
        spec.affinity_required
        or spec.anti_affinity_required
        or spreads(spec, DO_NOT_SCHEDULE, defaults)
    )


class Screened(NamedTuple):
    admitted: list[Decision]
    refused: list[UnitOutcome]
    fences: list[list[tuple[str, int]]]  # per admitted unit: (namespace, fence) it was checked at


class CrossPodGuard:
    def __init__(
        self, store: Store, profiles: Sequence[ProfileConfig], fenced: bool = False
    ) -> None:
        self.store = store
        self.fenced = fenced  # other binders commit too: read fences with every sync
        # per profile, the default spreading its filter applies (DoNotSchedule defaults
        # make a pod that a Service or controller selects need the re-check)
        self.spreading = {
            p.scheduler_name: DefaultSpreading.from_args(p.args.get("PodTopologySpread", {}))
            if "PodTopologySpread" in p.filters
            else NO_DEFAULTS
            for p in profiles
        }
        self.rules: dict[str, list[Rule]] = {
            p.scheduler_name: [
                RULES[n](self.spreading[p.scheduler_name]) for n in p.filters if n in RULES
            ]
            for p in profiles
        }
        self.refused = 0
        self.reset()

    def reset(self) -> None:
        """Know nothing of the store: at the start, and when it was built again."""
        self.keep_away = 0  # the store's keep-away count that the view reflects
        self._stale = self.fenced  # the store's count moved past `keep_away`: sync first
        self.view = CommittedView()
        self._keeping_away: list[Peer] = []  # committed peers with required anti-affinity
        self._selected: dict[SchedulingSpec, bool] = {}  # spec -> selected by one of those

    def needs_check(self, classes: Sequence[SchedulingSpec], decisions: Sequence[Decision]) -> bool:
        """Whether any pod of the batch needs the re-check (so only this binder may commit it)."""
        if self._stale:
            self._sync(set())
        return any(self._needs_check(classes[p.cls]) for d in decisions for p in d.placements)

    def saw_keep_away(self, count: int) -> None:
        """A commit reported the store's keep-away count: sync before routing if it moved."""
        self._stale = self._stale or (self.fenced and count != self.keep_away)

    def screen(self, classes: Sequence[SchedulingSpec], decisions: Sequence[Decision]) -> Screened:
        """Split a batch into units to commit and units refused for a broken cross-pod rule."""
        if not self.needs_check(classes, decisions):
            return Screened(list(decisions), [], [[] for _ in decisions])
        watched = [self._watched(classes, d) for d in decisions]
        fences = self._sync(set().union(*watched))
        admitted: list[Decision] = []
        admitted_fences: list[list[tuple[str, int]]] = []
        refused: list[UnitOutcome] = []
        added: list[tuple[str, SchedulingSpec]] = []
        for decision, namespaces in zip(decisions, watched, strict=True):
            reason, unit_added = self._place(classes, decision)
            if reason is None:
                admitted.append(decision)
                admitted_fences.append([(ns, fences[ns]) for ns in sorted(namespaces)])
                added.extend(unit_added)
            else:
                refused.append(UnitOutcome.refused(decision.unit, Conflict.CROSS_POD, reason))
                self._undo(unit_added)
        self._undo(added)  # the next sync brings what the store really committed
        self.refused += len(refused)
        return Screened(admitted, refused, admitted_fences)

    def _sync(self, namespaces: set[str]) -> dict[str, int]:
        """Bring the view up to the store; fenced, read the fences first, so that any
        commit the view misses has moved them."""
        fences: dict[str, int] = {}
        if self.fenced:
            # several binders commit only to a store on one Redis (Settings refuses them
            # over a split one, which keeps no fences)
            assert isinstance(self.store, NodeStore)
            self.keep_away, fences = self.store.fence_counts(namespaces)
            self._stale = False
        self.view.sync(self.store)
        self._keep_away(self.view.keeping_away())
        return fences

    def _watched(self, classes: Sequence[SchedulingSpec], decision: Decision) -> set[str]:
        if not self.fenced:
            return set()
        specs = {classes[p.cls] for p in decision.placements}
        return set().union(*(namespaces_watched(s) for s in specs if self._needs_check(s)))

    def note_committed(self, spec: SchedulingSpec) -> None:
        """A committed pod that keeps others away makes the pods it selects worth a re-check."""
        if spec.anti_affinity_required and spec.peer not in self._keeping_away:
            self._keep_away([*self._keeping_away, spec.peer])

    def _keep_away(self, peers: list[Peer]) -> None:
        if len(peers) != len(self._keeping_away):
            self._selected.clear()
        self._keeping_away = peers

    def _needs_check(self, spec: SchedulingSpec) -> bool:
        if not self.rules.get(spec.profile):
            return False
        if _constrained(spec, self.spreading[spec.profile]):
            return True
        selected = self._selected.get(spec)
        if selected is None:
            pod = terms_of(spec.peer)
            selected = self._selected[spec] = any(
                keeps_away(terms_of(peer), pod, self.view.namespace_labels)
                for peer in self._keeping_away
            )
        return selected

    def _place(
        self, classes: Sequence[SchedulingSpec], decision: Decision
    ) -> tuple[str | None, list[tuple[str, SchedulingSpec]]]:
        """Check each pod of the unit, adding it to the view so its siblings count it.

        A checked pod keeps only its first candidate that passes, so that the
        store commits it where the check was made.
        """
        added: list[tuple[str, SchedulingSpec]] = []
        for placement in decision.placements:
            spec = classes[placement.cls]
            if self._needs_check(spec):
                chosen, first = self._first_passing(spec, placement.nodes)
                if chosen < 0:
                    return f"pod {placement.pod}: node {placement.nodes[0]}: {first}", added
                placement.nodes = [placement.nodes[chosen]]
                placement.versions = [placement.versions[chosen]]
            self.view.add(placement.nodes[0], spec.peer)
            added.append((placement.nodes[0], spec))
        return None, added

    def _first_passing(self, spec: SchedulingSpec, nodes: Sequence[str]) -> tuple[int, str]:
        """The first candidate the rules let the pod onto (the rest are not checked), or
        -1 and why the first was refused."""
        first = ""
        for i, node in enumerate(nodes):
            reason = self._broken(spec, node)
            if reason is None:
                return i, first
            first = first or reason
        return -1, first

    def _broken(self, spec: SchedulingSpec, node: str) -> str | None:
        for rule in self.rules[spec.profile]:
            reason = rule(spec, node, self.view)
            if reason is not None:
                return reason
        return None

    def _undo(self, added: list[tuple[str, SchedulingSpec]]) -> None:
        for node, spec in added:
            self.view.add(node, spec.peer, -1)
