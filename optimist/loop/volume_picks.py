"""Volume picks: before a batch is committed, the free volumes each placed pod's claims
take on each of its candidate nodes (`cluster.volumes.picks`), so that the commit gives
every free volume to one claim, checked atomically with the rest of the unit: two shards
never give one volume to two claims, and a gang's claims get volumes whole or not at all.

The volumes the store has given already are read once a batch (and again for any it
named that turn out given); a pod's first candidate keeps its volumes from the pods
after it in the batch. What another scheduler, or a batch committed meanwhile, gives is
caught by the commit, which moves the pod to its next candidate or refuses the unit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from cluster.messages import Decision, PodPlacement, UnitOutcome
from cluster.objects import Pod
from cluster.store import Store
from cluster.volumes.index import VolumeIndex
from cluster.volumes.picks import WaitingClaim, picks_on, waiting_claims


@dataclass
class VolumePicks:
    index: VolumeIndex  # the control loop's claims, volumes and classes
    store: Store
    pods: Callable[[str], Sequence[Pod]]  # a placed unit's pods, by its key
    labels: Callable[[str], Mapping[str, str]]  # a node's labels, by its name
    profiles: frozenset[str]  # those that run VolumeBinding: the others bind no claim

    def pick(self, decisions: Sequence[Decision]) -> None:
        """Set the `picks` of every placement whose pod has claims waiting for their
        first consumer."""
        waiting: list[tuple[PodPlacement, list[WaitingClaim]]] = []
        for decision in decisions:
            pods = {p.key: p for p in self.pods(decision.unit)}
            for placement in decision.placements:
                pod = pods.get(placement.pod)
                if pod is None or not pod.volumes or pod.spec.profile not in self.profiles:
                    continue
                if claims := waiting_claims(self.index, pod.namespace, pod.volumes):
                    waiting.append((placement, claims))
        given: dict[str, str] = {}  # volume -> claim, as the store says
        asked: set[str] = set()
        while waiting:
            known = dict(given)  # and the first candidates' picks of the pods before
            for placement, claims in waiting:
                placement.picks = [
                    picks_on(claims, self.labels(node), known) for node in placement.nodes
                ]
                known.update((volume, claim) for claim, volume in placement.picks[0] if volume)
            named = {v for p, _ in waiting for picks in p.picks for _, v in picks if v} - asked
            asked |= named
            newly = self.store.given_volumes(named)
            if not newly:
                break
            given.update(newly)
        for placement, _ in waiting:
            if not any(placement.picks):  # its claims are all provisioned
                placement.picks = []

    def committed(self, decisions: Sequence[Decision], outcomes: Sequence[UnitOutcome]) -> None:
        """The volumes given to the pods bound (or waiting for their claims to be) are
        their claims' from now on, for every pod matched after (`VolumeIndex.assume`)."""
        by_unit = {o.unit: o for o in outcomes if o.status.bound}
        for decision in decisions:
            outcome = by_unit.get(decision.unit)
            if outcome is None:
                continue
            for placement, node in zip(decision.placements, outcome.nodes, strict=True):
                if placement.picks and placement.pod not in outcome.unbound:
                    self.index.assume(placement.pod, placement.picked(node))
