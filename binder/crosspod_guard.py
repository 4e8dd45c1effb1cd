"""The binder's re-check of constraints between pods, against the committed state.

Rule for PodTopologySpread and InterPodAffinity (DESIGN.md invariant 5): a
shard judged them on the pods it had seen, and other shards may have placed
pods since. The binder is the one writer of commits, so its view of the
committed pods, synced just before a batch and extended by the batch's
earlier units, is exact: a placement that breaks a required spread or
(anti-)affinity rule there is refused as a conflict and goes back to the
queue, before anything reaches the store. With several binders, units with
such constraints must all go through one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cluster.crosspod.committed import CommittedView
from cluster.crosspod.inter_pod_affinity import filter_node, keeps_away, terms_of
from cluster.crosspod.topology_spread import spread_filter
from cluster.crosspod.view import ClusterView
from cluster.messages import Decision, UnitOutcome
from cluster.objects import Peer, SchedulingSpec
from cluster.profile_config import ProfileConfig
from cluster.store import NodeStore

# plugin name -> (args -> the per-node rule: spec, node, view -> reason or None)
Rule = Callable[[SchedulingSpec, str, ClusterView], str | None]
RULES: dict[str, Callable[[dict[str, Any]], Rule]] = {
    "PodTopologySpread": lambda args: spread_filter,
    "InterPodAffinity": lambda args: filter_node,
}


def _constrained(spec: SchedulingSpec) -> bool:
    return bool(
        spec.affinity_required
        or spec.anti_affinity_required
        or any(c.when_unsatisfiable == "DoNotSchedule" for c in spec.topology_spread)
    )


class CrossPodGuard:
    def __init__(self, store: NodeStore, profiles: Sequence[ProfileConfig]) -> None:
        self.store = store
        self.view = CommittedView()
        self.rules: dict[str, list[Rule]] = {
            p.scheduler_name: [RULES[n](p.args.get(n, {})) for n in p.filters if n in RULES]
            for p in profiles
        }
        self._keeping_away: list[Peer] = []  # committed peers with required anti-affinity
        self._selected: dict[SchedulingSpec, bool] = {}  # spec -> selected by one of those
        self.refused = 0

    def screen(
        self, classes: Sequence[SchedulingSpec], decisions: Sequence[Decision]
    ) -> tuple[list[Decision], list[UnitOutcome]]:
        """Split a batch into units to commit and units refused for a broken cross-pod rule."""
        if not any(self._needs_check(classes[p.cls]) for d in decisions for p in d.placements):
            return list(decisions), []
        self.view.sync(self.store)
        self._keep_away(self.view.keeping_away())
        admitted: list[Decision] = []
        refused: list[UnitOutcome] = []
        added: list[tuple[str, SchedulingSpec]] = []
        for decision in decisions:
            reason, unit_added = self._place(classes, decision)
            if reason is None:
                admitted.append(decision)
                added.extend(unit_added)
            else:
                refused.append(UnitOutcome(decision.unit, "conflict", detail=reason))
                self._undo(unit_added)
        self._undo(added)  # the next sync brings what the store really committed
        self.refused += len(refused)
        return admitted, refused

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
        if _constrained(spec):
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
                reasons = [self._broken(spec, node) for node in placement.nodes]
                passing = [n for n, r in zip(placement.nodes, reasons, strict=True) if r is None]
                if not passing:
                    return f"pod {placement.pod}: node {placement.nodes[0]}: {reasons[0]}", added
                chosen = placement.nodes.index(passing[0])
                placement.nodes = [passing[0]]
                placement.versions = [placement.versions[chosen]]
            self.view.add(placement.nodes[0], spec.peer)
            added.append((placement.nodes[0], spec))
        return None, added

    def _broken(self, spec: SchedulingSpec, node: str) -> str | None:
        for rule in self.rules[spec.profile]:
            reason = rule(spec, node, self.view)
            if reason is not None:
                return reason
        return None

    def _undo(self, added: list[tuple[str, SchedulingSpec]]) -> None:
        for node, spec in added:
            self.view.add(node, spec.peer, -1)
