"""A shard's scheduling cycle: sync, then place every unit of a batch.

For each equivalence class the filters and scorers run once over all nodes;
after a pod is placed, only the node it went to is judged again. A unit is
placed whole in the shard's own table or not at all.
"""

from __future__ import annotations

import copy
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from cluster.events import EVENTS
from cluster.explanation import ExplainRequest, PodExplanation, UnitExplanation
from cluster.messages import Decision, PodPlacement, ShardBatch, ShardResult, UnitRequest
from cluster.objects import SchedulingSpec
from cluster.store import Delta, EpochChanged, Store
from shards.class_state import ClassState, pick
from shards.extender import ExtenderError, HTTPExtender
from shards.framework import PodClass, Profile, Rejection
from shards.home_nodes import HomeNodes
from shards.node_table import NodeTable
from shards.plugin_verdicts import explain_pod
from shards.stopwatch import Stopwatch

log = logging.getLogger(__name__)

_CLASS_CACHE = 4096
Taken = tuple[int, PodClass, tuple[int, ...]]  # a pod assumed: its row, class and GPUs


def with_volumes(pod: PodClass, unit: UnitRequest, i: int) -> PodClass:
    """The unit's i-th pod's class with the volumes that pod itself attaches, which its
    class does not name (`UnitRequest.volumes`)."""
    return replace(pod, attach=unit.volumes[i]) if unit.volumes else pod


class ShardCore:
    """Everything a shard does, without Ray: the actor is a thin shell around this."""

    def __init__(
        self,
        shard_id: int,
        store: Store,
        profiles: list[Profile],
        seed: int,
        extenders: Sequence[HTTPExtender] = (),
        candidates: int = 1,
        node_partitions: int = 0,
        shards: int = 1,
    ) -> None:
        self.candidates = candidates  # nodes offered per pod, best first, for the binder
        # with node partitions, this shard looks at its own slice of the nodes first
        home = HomeNodes(shard_id % node_partitions, node_partitions) if node_partitions else None
        self.home = home
        self.shard_id = shard_id
        self.store = store
        self.profiles = {p.name: p for p in profiles}
        self.stopwatch = Stopwatch()
        for profile in profiles:
            profile.stopwatch = self.stopwatch
        self.extenders = list(extenders)
        self._extender_errors = 0  # since the last result
        self._rollbacks = 0  # units placed in part and undone, since the last result
        self._next_start = 0  # where the next search for feasible nodes begins
        self.table = NodeTable()
        # a fixed ranking of the nodes for ties starts a share of the way round in each
        # shard: shards that rank alike all go for the same node first, and conflict
        self.table.ranking_start = (shard_id % max(shards, 1)) / max(shards, 1)
        self.rng = np.random.default_rng(seed)
        # unit -> each pod this shard placed and assumes until it sees the unit
        # committed in the store (then the store's usage holds it) or the
        # dispatcher says its batch is settled
        self._assumed: dict[str, list[Taken]] = {}
        self._batch_units: dict[int, list[str]] = {}
        self._classes: OrderedDict[SchedulingSpec, PodClass] = OrderedDict()

    def handle(self, batch: ShardBatch) -> ShardResult:
        started = time.perf_counter()
        trips = self.store.round_trips
        self.stopwatch.batch()
        for batch_id in batch.resolved:
            for unit in self._batch_units.pop(batch_id, []):
                self._stop_assuming(unit)
        before = self.table.store_version
        delta = self._sync()
        synced = time.perf_counter()
        decisions = self._decide(batch)
        errors, self._extender_errors = self._extender_errors, 0
        rollbacks, self._rollbacks = self._rollbacks, 0
        return ShardResult(
            shard=self.shard_id,
            batch_id=batch.batch_id,
            store_version=self.table.store_version,
            decisions=decisions,
            sync_s=synced - started,
            decide_s=time.perf_counter() - synced,
            extender_errors=errors,
            rollbacks=rollbacks,
            round_trips=self.store.round_trips - trips,
            versions_behind=max(self.table.store_version - before, 0),
            synced_from_log=delta.from_log,
            observed=self.stopwatch.take(),
            epoch=self.store.working_epoch(),
        )

    def _sync(self) -> Delta:
        """Catch the table up with the store; units seen committed are no longer assumed."""
        delta = self.table.sync(self.store, list(self._assumed))
        for unit in delta.committed:
            self._stop_assuming(unit)
        return delta

    def explain(self, request: ExplainRequest) -> UnitExplanation:
        """The unit judged now, plugin by plugin, as `_place` would place it (extenders
        aside), leaving the table, the tie-breaks and the search's start as they were."""
        started = time.perf_counter()
        self._sync()
        table = self.table
        rng = copy.deepcopy(self.rng)  # the draws the next batch will make, left to it
        start = self._next_start
        home = self.home.rows(table) if self.home else None
        credited: list[tuple[int, PodClass]] = []
        taken: list[Taken] = []
        pods: list[PodExplanation] = []
        error = ""
        try:
            for i, (key, cls) in enumerate(request.pods):
                pod = self._compile(request.classes[cls])
                profile = self.profiles.get(pod.spec.profile)
                if profile is None:
                    error = f"pod {key}: profile {pod.spec.profile!r} is not configured"
                    break
                node = request.bound[i] if request.bound else ""
                if node in table.index:  # judged as before it came: its room is free
                    credited.append((table.index[node], pod))
                    table.forget(table.index[node], pod.request, pod.ports, pod.peer)
                state = ClassState(pod, profile, table)
                row, searched = state.best(rng, start, home)
                start = (start + searched) % max(table.size, 1)
                pods.append(explain_pod(key, state, row, request.top))
                if row >= 0:
                    taken.append(self._take(row, pod, profile))
        finally:
            self._forget(taken)
            for row, pod in credited:
                table.assume(row, pod.request, pod.ports, pod.peer)
        placed = sum(bool(p.chosen) for p in pods)
        return UnitExplanation(
            request.unit,
            self.shard_id,
            table.store_version,
            request.min_member,
            not error and placed >= min(request.min_member, len(request.pods)),
            pods,
            error,
            time.perf_counter() - started,
        )

    def _stop_assuming(self, unit: str) -> None:
        self._forget(self._assumed.pop(unit, []))

    def _forget(self, taken: list[Taken]) -> None:
        """Take pods this shard assumed (`_take`) out of its table again."""
        for row, pod, gpus in taken:
            self.table.forget(
                row, pod.request, pod.ports, pod.peer, gpus, pod.gpu.per_device, pod.attach
            )

    def _take(self, row: int, pod: PodClass, profile: Profile) -> Taken:
        """Assume a pod on `row`, on the GPUs there that the profile's GPU policy picks."""
        gpus = profile.choose_gpus(self.table, row, pod) if pod.gpu else ()
        self.table.assume(
            row, pod.request, pod.ports, pod.peer, gpus, pod.gpu.per_device, pod.attach
        )
        return row, pod, gpus

    def _compile(self, spec: SchedulingSpec) -> PodClass:
        pod = self._classes.get(spec)  # by value: hashing a spec costs less than a digest
        if pod is None:
            pod = self._classes[spec] = PodClass.compile(spec, self.table)
            if len(self._classes) > _CLASS_CACHE:
                self._classes.popitem(last=False)
        else:
            self._classes.move_to_end(spec)
        return pod

    def _decide(self, batch: ShardBatch) -> list[Decision]:
        self.table.changed_rows.clear()
        classes = [self._compile(spec) for spec in batch.classes]
        self._observe(batch, classes)
        states: dict[int, ClassState] = {}
        decisions = []
        placed = []
        units = batch.units
        i = 0
        watch = self.stopwatch
        while i < len(units):
            run = self._run_length(units, i, classes)
            mark = watch.mark()
            try:
                if run > 1:
                    outcomes = self._place_run(units[i : i + run], classes, states)
                else:
                    outcomes = [self._place(units[i], classes, states)]
            except EpochChanged:
                raise  # the store was built again: the actor starts over
            except Exception as err:  # a fault met on these units fails them, not the batch
                outcomes = self._faulted(units[i : i + run], states, err)
            pods_placed = pods_failed = 0
            for unit, (decision, assumed) in zip(units[i : i + run], outcomes, strict=True):
                if assumed:
                    self._assumed[unit.key] = assumed
                    placed.append(unit.key)
                    pods_placed += len(decision.placements)
                else:
                    pods_failed += len(unit.pods)
                decisions.append(decision)
            profile = classes[units[i].pods[0][1]].spec.profile
            watch.attribute(mark, profile, pods_placed, pods_failed)
            i += run
        if placed:
            self._batch_units[batch.batch_id] = placed
        return decisions

    def _observe(self, batch: ShardBatch, classes: list[PodClass]) -> None:
        """Show each profile the batch's pods before any is placed (`Profile.observe`)."""
        counts = Counter(cls for unit in batch.units for _, cls in unit.pods)
        by_profile: dict[str, list[tuple[PodClass, int]]] = {}
        for cls, count in sorted(counts.items()):
            by_profile.setdefault(classes[cls].spec.profile, []).append((classes[cls], count))
        for name, pods in by_profile.items():
            if name in self.profiles:
                self.profiles[name].observe(pods)

    def _run_length(self, units: list[UnitRequest], i: int, classes: list[PodClass]) -> int:
        """How many units from `i` on are single pods of one class that nothing but the
        class's own state decides for (no extenders, no node partitions): a run."""
        if self.extenders or self.home is not None:
            return 1
        first = units[i]
        if (
            len(first.pods) != 1
            or first.nominated
            or self._shares_volumes(first, 0)
            or classes[first.pods[0][1]].spec.profile not in self.profiles
        ):
            return 1
        cls = first.pods[0][1]
        end = i + 1
        while (
            end < len(units)
            and len(units[end].pods) == 1
            and units[end].pods[0][1] == cls
            and not units[end].nominated
            and not self._shares_volumes(units[end], 0)
        ):
            end += 1
        return end - i

    def _state_for(
        self,
        unit: UnitRequest,
        i: int,
        classes: list[PodClass],
        states: dict[int, ClassState],
    ) -> ClassState | None:
        """The state the unit's i-th pod is judged in: its class's, made on first use, or
        one of its own where it shares a volume; None if its profile is not configured."""
        cls = unit.pods[i][1]
        shares = self._shares_volumes(unit, i)
        if cls in states and not shares:
            return states[cls]
        profile = self.profiles.get(classes[cls].spec.profile)
        if profile is None:
            return None
        if shares:
            return ClassState(with_volumes(classes[cls], unit, i), profile, self.table)
        state = states[cls] = ClassState(classes[cls], profile, self.table)
        return state

    def _shares_volumes(self, unit: UnitRequest, i: int) -> bool:
        """Whether the unit's i-th pod attaches a volume some node has already, which its
        class cannot say (`NodeVolumeLimits`): it is then judged alone."""
        return bool(unit.volumes) and any(
            self.table.volumes.rows_with(v.volume) for v in unit.volumes[i]
        )

    def _place_run(
        self, units: list[UnitRequest], classes: list[PodClass], states: dict[int, ClassState]
    ) -> list[tuple[Decision, list[Taken]]]:
        """Single-pod units of one class, placed one after another (`ClassState.best_of_run`)."""
        cls = units[0].pods[0][1]
        pod = classes[cls]
        state = states.get(cls)
        if state is None:
            state = states[cls] = ClassState(pod, self.profiles[pod.spec.profile], self.table)
        out: list[tuple[Decision, list[Taken]]] = []
        try:
            self._run_into(out, units, cls, state)
        except Exception:
            self._forget([taken for _, assumed in out for taken in assumed])
            raise
        return out

    def _run_into(
        self,
        out: list[tuple[Decision, list[Taken]]],
        units: list[UnitRequest],
        cls: int,
        state: ClassState,
    ) -> None:
        """`_place_run`'s loop: each unit's outcome appended to `out` as it is decided."""
        pod, names = state.pod, self.table.names
        while len(out) < len(units):
            left = len(units) - len(out)
            for row, searched, runners in state.best_of_run(
                self.rng, self._next_start, left, self.candidates - 1
            ):
                self._next_start = (self._next_start + searched) % max(self.table.size, 1)
                unit = units[len(out)]
                if row < 0:
                    preemptible = {cls: state.preemptible()} if unit.preempt else {}
                    out.append((self._unplaced(unit.key, state.why(), preemptible), []))
                    continue
                own = with_volumes(pod, unit, 0)
                taken = self._take(row, own, state.profile)
                state.took(row)
                rows = [row, *runners]
                versions = [int(self.table.version[r]) for r in rows]
                placement = PodPlacement(
                    unit.pods[0][0],
                    cls,
                    [names[r] for r in rows],
                    versions,
                    list(taken[2]),
                    list(own.attach),
                    list(unit.claims[0]) if unit.claims else [],
                )
                out.append((Decision(unit.key, [placement]), [taken]))

    def _choose(
        self, unit: UnitRequest, i: int, state: ClassState
    ) -> tuple[int, bool, Rejection | None]:
        """The row for the unit's i-th pod (-1: none), whether it is the pod's nominated
        node, and the extenders' refusal: the nominated node first, else the extenders
        interested in the pod, else the shard's own search."""
        nominated = self._on_nominated(state, unit.nominated[i] if unit.nominated else "")
        if nominated >= 0:
            return nominated, True, None
        manifest = unit.manifests[i] if unit.manifests else None
        consulted = [e for e in self.extenders if manifest and e.interested(manifest)]
        if manifest and consulted:
            row, refused = self._consult(state, manifest, consulted)
            return row, False, refused
        home = self.home.rows(self.table) if self.home else None
        row, searched = state.best(self.rng, self._next_start, home)
        self._next_start = (self._next_start + searched) % max(self.table.size, 1)
        return row, False, None

    def _place(
        self, unit: UnitRequest, classes: list[PodClass], states: dict[int, ClassState]
    ) -> tuple[Decision, list[Taken]]:
        """At least `min_member` pods of the unit placed (and assumed), or none and the reasons.

        A gang tries every pod it holds; the pods that found no node stay
        out of the placement, as long as enough of them did.
        """
        chosen: list[Taken] = []
        try:
            return self._place_pods(unit, classes, states, chosen)
        except Exception:
            self._forget(chosen)  # nothing of the unit stays assumed
            raise

    def _place_pods(
        self,
        unit: UnitRequest,
        classes: list[PodClass],
        states: dict[int, ClassState],
        chosen: list[Taken],
    ) -> tuple[Decision, list[Taken]]:
        """`_place`'s work, each pod assumed added to `chosen` as it is placed."""
        offered: list[list[int]] = []
        placed: list[int] = []  # the unit's pods placed, by index
        rejection: Rejection | None = None
        for i, (_, cls) in enumerate(unit.pods):
            state = self._state_for(unit, i, classes, states)
            if state is None:
                self._undo(chosen)
                why = f"profile {classes[cls].spec.profile!r} is not configured"
                return Decision(unit.key, [], {why: 1}, self.table.size), []
            row, nominated, refused = self._choose(unit, i, state)
            if row < 0:
                # the reasons count the unit's own pods placed so far; the events of
                # every pod that found no node may help the unit
                failed = refused or state.why()
                rejection = failed if rejection is None else rejection.joined(failed)
                if len(unit.pods) - i - 1 + len(chosen) < unit.min_member:
                    break  # too few pods left to reach min_member
                continue
            pod = with_volumes(classes[cls], unit, i)
            if nominated:  # the node's usage holds its reservation: count nothing twice
                pod = replace(pod, request=np.zeros_like(pod.request))
            chosen.append(self._take(row, pod, state.profile))
            state.took(row)
            placed.append(i)
            if nominated:  # its reserved room is there and nowhere else
                offered.append([row])
                continue
            home_mask = self.home.mask(self.table) if self.home else None
            offered.append([row, *state.runners_up(row, self.candidates - 1, home_mask)])
        if len(chosen) < min(unit.min_member, len(unit.pods)) or not chosen:
            self._undo(chosen)
            preemptible = {}
            for _, cls in unit.pods if unit.preempt else ():
                profile = self.profiles.get(classes[cls].spec.profile)
                if cls not in states and profile is not None:  # too few were left to try it
                    states[cls] = ClassState(classes[cls], profile, self.table)
                if cls in states:
                    preemptible[cls] = states[cls].preemptible()
            return self._unplaced(unit.key, rejection or Rejection.unexplained(), preemptible), []
        names, versions = self.table.names, self.table.version
        placements = [
            PodPlacement(
                *unit.pods[i],
                [names[r] for r in rows],
                [int(versions[r]) for r in rows],
                list(gpus),
                list(pod.attach),
                list(unit.claims[i]) if unit.claims else [],
            )
            for i, rows, (_, pod, gpus) in zip(placed, offered, chosen, strict=True)
        ]
        return Decision(unit.key, placements), chosen

    def _on_nominated(self, state: ClassState, node: str) -> int:
        """The row of the node room is reserved on for this pod, if every filter lets it on
        there counting that room as its own (upstream tries the nominated node first); -1
        if not. The reservation is in the node's usage: it is credited for this check."""
        row = self.table.index.get(node, -1) if node else -1
        pod = state.pod
        if row < 0 or not state.profile.static_rows(pod, self.table).mask[row]:
            return -1
        rows = np.array([row], dtype=np.intp)
        self.table.forget(row, pod.request)
        fits = bool(state.profile.feasible(pod, self.table, rows, dynamic=True)[0])
        self.table.assume(row, pod.request)
        return row if fits else -1

    def _unplaced(
        self, unit: str, rejection: Rejection, preemptible: dict[int, list[str]] | None = None
    ) -> Decision:
        alive = int(self.table.alive[: self.table.size].sum())
        reasons, plugins = dict(rejection.reasons), list(rejection.plugins)
        events = sorted(rejection.events)
        return Decision(
            unit, [], reasons, alive, plugins, events, preemptible or {}, rejection.prefilter
        )

    def _undo(self, chosen: list[Taken]) -> None:
        """Take a unit's pods placed so far out of the table again: a rollback, if any were.
        The list is emptied: nothing in it is assumed any more."""
        self._forget(chosen)
        self._rollbacks += bool(chosen)
        chosen.clear()

    def _faulted(
        self, units: list[UnitRequest], states: dict[int, ClassState], err: Exception
    ) -> list[tuple[Decision, list[Taken]]]:
        """Units a fault (a bug) was met on, failed alone with it as their reason, as
        upstream fails a pod whose plugin returned an error: the rest of the batch goes
        on. What their classes had judged is dropped, as the fault may have left it half
        done; the pods wait as unschedulable, and are tried again after the wait's
        timeout or on an event."""
        log.exception("shard %d: %d unit(s) failed on a fault", self.shard_id, len(units))
        for unit in units:
            for _, cls in unit.pods:
                states.pop(cls, None)
        why = f"the shard failed on it: {type(err).__name__}: {err} (see the shard's log)"
        return [(Decision(unit.key, [], {why: 1}, self.table.size), []) for unit in units]

    def _consult(
        self, state: ClassState, manifest: dict[str, Any], extenders: list[HTTPExtender]
    ) -> tuple[int, Rejection | None]:
        """Upstream's extender steps for one pod: filter after the plugins, then add scores.

        Extenders see every feasible node. A failed filter call fails the
        attempt unless the extender is ignorable; a failed prioritize call is
        skipped, as upstream does. Both skips are counted in the result.
        """
        specs = (self.table.specs[row] for row in state.feasible_rows())
        nodes = [spec for spec in specs if spec is not None]
        failed: Counter[str] = Counter()
        for extender in extenders:
            if not extender.has_filter or not nodes:
                continue
            try:
                answer = extender.filter(manifest, nodes)
            except ExtenderError as err:
                if not extender.ignorable:
                    why = f"extender {extender.name} failed: {err}"
                    return -1, Rejection(Counter({why: len(nodes)}), (), EVENTS)
                self._extender_errors += 1
                continue
            failed.update(answer.failed.values())
            failed.update(answer.unresolvable.values())
            kept = set(answer.passed)
            nodes = [n for n in nodes if n.name in kept]
        if not nodes:  # an extender's verdict is opaque: any event may change it
            return -1, Rejection(failed, (), EVENTS) if failed else state.why()
        rows = np.array([self.table.index[n.name] for n in nodes], dtype=np.intp)
        scores = state.scores[rows].copy()
        for extender in extenders:
            if not extender.has_prioritize:
                continue
            try:
                raw = extender.prioritize(manifest, nodes)
            except ExtenderError:
                self._extender_errors += 1
                continue
            extra = extender.weighted_scores(raw)
            scores += np.array([extra.get(n.name, 0) for n in nodes], dtype=np.int64)
        return int(rows[pick(scores, self.rng)]), None
