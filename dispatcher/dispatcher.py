"""The dispatcher: owns every pod not yet bound, decides when and by whom a unit is tried.

It never decides where a unit goes. It groups pods into units, keeps them in
the queues, hands them to shards in batches, and moves each unit through
the states of `cluster.lifecycle` as decisions and outcomes come back.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable

from cluster.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    EVENTS,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT_S,
    VOLUMES_FREED,
)
from cluster.explanation import Standing
from cluster.inventory import BoundPod
from cluster.lifecycle import PodState
from cluster.messages import (
    Conflict,
    Decision,
    ShardBatch,
    ShardResult,
    Status,
    UnitOutcome,
    UnitRequest,
)
from cluster.node_partitions import node_partition, pinned_node
from cluster.objects import Pod, PodGroup
from cluster.quota import Quota, QuotaTree
from cluster.reservations import is_reservation
from dispatcher.answers import Bound, Held, PreemptionAsk, Reading, Unplaced
from dispatcher.batch_classes import BatchClasses, InFlightBatch, Resolve
from dispatcher.gangs import Gangs
from dispatcher.queue import ANY_SHARD, Backoff, QueuedUnit, SchedulingQueue
from dispatcher.quota_gate import QuotaGate
from dispatcher.stats import DispatchStats

MAX_LOST = 3  # batches in a row a unit may go unanswered in before it backs off


class Dispatcher:
    def __init__(
        self,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        send_manifests: bool = False,
        max_conflicts: int = 5,
        node_partitions: int = 0,
        unschedulable_timeout_s: float = UNSCHEDULABLE_TIMEOUT_S,
        quotas: QuotaTree | None = None,
        lowest_bound_priority: Callable[[], int | None] = lambda: None,
        preemptive_profiles: Collection[str] | None = None,
        resolve: Resolve | None = None,
    ) -> None:
        # a pod as a shard judges it: its volumes resolved afresh on each attempt
        self.resolve: Resolve = resolve or (lambda pod: pod)
        # the profiles whose pods may preempt (DefaultPreemption enabled); None: all
        self.preemptive_profiles = preemptive_profiles
        # the lowest priority of a bound pod (None: none bound): only a unit above it
        # that fits nowhere looks for victims (or one that may reclaim quota)
        self.lowest_bound_priority = lowest_bound_priority
        # units PREEMPTING whose victims are not chosen yet, with their decision
        self._asks: dict[str, tuple[PreemptionAsk, Decision]] = {}
        self._awaited_victims: dict[str, str] = {}  # victim pod key -> the unit that waits
        self._plugin_sets: dict[tuple[str, ...], tuple[str, ...]] = {}  # shared by units
        self.unschedulable_timeout_s = unschedulable_timeout_s
        self.node_partitions = node_partitions  # one per shard; 0: none
        self.max_conflicts = max_conflicts  # conflicts in a row before a unit backs off
        self.send_manifests = send_manifests  # scheduler extenders need whole pods
        self.gangs = Gangs()
        self.queue = SchedulingQueue(backoff or Backoff())
        self.quota = QuotaGate(quotas, self.queue.activate_quota_waiting)
        self.clock = clock
        self.units: dict[str, QueuedUnit] = {}
        self._unit_of: dict[str, str] = {}  # pod key -> key of the unit that holds it
        self.batches: dict[int, InFlightBatch] = {}
        self.rejected: dict[str, str] = {}  # pod key -> why its manifest cannot be scheduled
        self.gated: dict[str, Pod] = {}  # pods held back by spec.schedulingGates
        self.stats = DispatchStats()
        self._resolved: dict[int, list[int]] = defaultdict(list)
        self._next_batch = 0
        self._arrivals = time.time_ns()  # from now: gang unit keys a successor never reuses
        # Cluster events seen, and the count when each kind was last seen: a unit
        # found unschedulable after an event it waits for happened while it was
        # being tried was judged on a view from before it (upstream's in-flight events).
        self._events = 0
        self._last_event: dict[str, int] = {}

    # --- intake ----------------------------------------------------------------

    def add(self, pod: Pod, failures: int = 0) -> None:
        """A pod created, or changed while it waits. One with scheduling gates waits
        apart, holding nothing and counting for no gang, until its last gate is gone.
        One back after `failures` bindings failed past their commit waits out that
        backoff first."""
        if pod.key in self.gated or pod.gates:
            if pod.key not in self.gated and pod.key in self._unit_of:
                return  # gates cannot be added to a pod the queue already holds
            if pod.gates:
                if pod.key not in self.gated:
                    self.stats.incoming["gated", "PodAdd"] += 1
                self.gated[pod.key] = pod
                return
            del self.gated[pod.key]
        if pod.group:
            running = pod.group in self.gangs.bound  # its pods now go one by one
            for pods in self.gangs.offer(pod):
                self._enqueue(pods, "" if running else pod.group)
        elif pod.key not in self._unit_of:
            self._enqueue([pod], failures=failures)

    def gang_waits(self, groups: Collection[str]) -> dict[str, str]:
        """Pod key -> why, of these groups' pods that wait for their gang (too few
        members yet, or no PodGroup): what to tell the cluster as they begin to wait,
        as kube-scheduler's coscheduling plugin does at PreFilter."""
        return self.gangs.waiting_reasons({}, only=groups)

    def add_group(self, group: PodGroup) -> None:
        for pods in self.gangs.add_group(group):
            self._enqueue(pods, group.key)

    def _enqueue(self, pods: list[Pod], group: str = "", failures: int = 0) -> None:
        """A unit for these pods: a gang of PodGroup `group`, or else one pod."""
        if not pods:
            return
        self._arrivals += 1
        key = f"{group}#{self._arrivals}" if group else pods[0].key
        priority = max(p.priority for p in pods)
        min_member = self.gangs.needed(group) if group else len(pods)
        unit = QueuedUnit(
            key,
            pods,
            priority,
            self._arrivals,
            group=group,
            since=self.clock(),
            min_member=min_member,
            shard=self._home_shard(pods),
        )
        self.units[unit.key] = unit
        for pod in pods:
            self._unit_of[pod.key] = unit.key
        self.quota.queued(pods)
        if failures:  # it arrives in backoff, as a failed attempt leaves a unit
            unit.state, unit.attempts = PodState.BACKOFF, failures
            unit.backoff_until = self.clock() + self.queue.backoff.duration(failures)
            self.queue.push_backoff(unit)
            self.stats.incoming["backoff", "PodAdd"] += len(pods)
            return
        self.stats.incoming["active", "PodAdd"] += len(pods)
        self.queue.push_active(unit)

    def _home_shard(self, pods: list[Pod]) -> int:
        """The shard whose partition holds the one node these pods are pinned to, if any."""
        if not self.node_partitions:
            return ANY_SHARD
        nodes = {pinned_node(p.spec) for p in pods}
        if len(nodes) != 1 or "" in nodes:
            return ANY_SHARD
        return node_partition(nodes.pop(), self.node_partitions)

    def running(self, pods: list[Pod]) -> None:
        """Pods bound by others (a leader before this one too): not the queue's to place;
        a gang's count toward its minMember, as its own bindings do."""
        self.forget([p.key for p in pods])
        for group, count in Counter(p.group for p in pods if p.group).items():
            self._regather(group, self.gangs.note_running(group, count))

    def reject(self, pod_key: str, reason: str) -> None:
        """A pod whose manifest cannot be scheduled: reported, never retried."""
        self.rejected[pod_key] = reason

    def forget(self, pod_keys: list[str]) -> None:
        """Pods deleted in the cluster leave their units, and empty units leave the queue.
        A unit out with a shard or the binder keeps its place there; the binding of a
        deleted pod fails, and nothing is retried for it."""
        self.quota.forget(pod_keys)
        for key in pod_keys:
            self._victim_gone(key)
            self.rejected.pop(key, None)
            self.gated.pop(key, None)
            self.gangs.forget(key)
            unit = self.units.get(self._unit_of.pop(key, ""))
            if unit is None:
                continue
            unit.pods = [p for p in unit.pods if p.key != key]
            waiting = unit.state in (
                PodState.ACTIVE,
                PodState.QUOTA_WAIT,
                PodState.UNSCHEDULABLE,
                PodState.BACKOFF,
                PodState.PREEMPTING,
            )
            if not unit.pods or (waiting and len(unit.pods) < unit.min_member):
                self._drop(unit)

    # --- preemption ---------------------------------------------------------------

    def take_preemption_asks(self) -> list[PreemptionAsk]:
        """The PREEMPTING units whose victims are not chosen yet; the caller answers each
        with `nominate` or `no_victims`."""
        return [ask for ask, _ in self._asks.values()]

    def nominate(self, unit_key: str, nominated: dict[str, str], victims: list[str]) -> None:
        """Victims were evicted for the unit and room reserved for its pods on these
        nodes: it waits for the victims' deletion (none: it is tried at once)."""
        self._asks.pop(unit_key, None)
        unit = self.units.get(unit_key)
        if unit is None or unit.state is not PodState.PREEMPTING:
            return
        self.stats.preemptions += 1
        self.stats.victims += len(victims)
        held = ", ".join(sorted(set(nominated.values())))
        unit.preemption = f"{len(victims)} victims evicted; room held on {held}"
        unit.nominated = dict(nominated)
        unit.victims = set(victims)
        unit.unschedulable_since = self.clock()
        for victim in victims:
            self._awaited_victims[victim] = unit_key
        self.queue.preempting[unit_key] = unit
        if not victims:
            self._preempted(unit)

    def nominate_waiting(self, pod_key: str, node: str) -> bool:
        """Room is held on `node` for this pod (a reservation of its own): it is tried
        there first, at once if it waited as unschedulable. False if it is not queued."""
        unit = self.units.get(self._unit_of.get(pod_key, ""))
        if unit is None:
            return False
        unit.nominated = {**(unit.nominated or {}), pod_key: node}
        if unit.state is PodState.UNSCHEDULABLE:
            self.queue.activate(unit)
        return True

    def no_victims(self, unit_key: str) -> None:
        """No preemption helps the unit: it is unschedulable as any other."""
        entry = self._asks.pop(unit_key, None)
        unit = self.units.get(unit_key)
        if entry is not None and unit is not None and unit.state is PodState.PREEMPTING:
            nodes = len({node for _, names in entry[0].pods for node in names})
            unit.preemption = (
                f"tried on the {nodes} nodes where evicting pods might make room: no victims "
                "(none of lower priority, or evicting them would break a "
                "PodDisruptionBudget or still leave too little room)"
            )
            self._unschedulable(unit, entry[1])

    def retry_preemption(self, unit_key: str) -> None:
        """The store failed before it took the unit's preemption: tried again as it was,
        at once."""
        self._asks.pop(unit_key, None)
        unit = self.units.get(unit_key)
        if unit is not None and unit.state is PodState.PREEMPTING:
            self.queue.activate(unit)

    def _victim_gone(self, key: str) -> None:
        unit = self.units.get(self._awaited_victims.pop(key, ""))
        if unit is not None and unit.state is PodState.PREEMPTING and unit.victims is not None:
            unit.victims.discard(key)
            if not unit.victims:
                self._preempted(unit)

    def _preempted(self, unit: QueuedUnit) -> None:
        """Its victims are gone (or it waited too long for them): tried again at once."""
        for victim in unit.victims or ():
            self._awaited_victims.pop(victim, None)
        unit.victims = None
        self.queue.activate(unit)

    def on_event(self, event: str) -> int:
        """A cluster event (`cluster.events`): the unschedulable units waiting for it are
        tried again (after what is left of their backoff). Returns how many moved."""
        return len(self._retry_waiting_for(event))

    def store_rebuilt(self) -> int:
        """The node store was built anew from the cluster: whatever waits for room may fit
        there now, as after a NodeAdd. Returns how many pods go back to be tried."""
        return sum(len(unit.pods) for unit in self._retry_waiting_for(NODE_ADD))

    def _retry_waiting_for(self, event: str) -> list[QueuedUnit]:
        self._events += 1
        self._last_event[event] = self._events
        self.stats.events[event] += 1
        now = self.clock()
        units = self.queue.waiting_for(event)
        for unit in units:
            self.queue.retry(unit, now)
            self.stats.incoming[unit.state.value, event] += len(unit.pods)
        self.stats.moved_by_events += len(units)
        return units

    def _drop(self, unit: QueuedUnit) -> None:
        """Take a unit out of the queue; a gang's pods left wait for new members again."""
        self.queue.remove(unit)
        self._retire(unit, PodState.DELETED)
        if unit.group:
            self._regather(unit.group, self.gangs.wait_again(unit.group, unit.pods))

    def _retire(self, unit: QueuedUnit, state: PodState) -> None:
        """The unit's last state: the dispatcher forgets it and its pods."""
        unit.move(state)
        del self.units[unit.key]
        for pod in unit.pods:
            del self._unit_of[pod.key]

    def _regather(self, group: str, units: list[list[Pod]]) -> None:
        """A gang's units as `gangs` gives them back: one gang unit while it waits for
        minMember, its pods one by one once the gang runs."""
        for unit_pods in units:
            self._enqueue(unit_pods, "" if group in self.gangs.bound else group)

    # --- to shards ---------------------------------------------------------------

    def next_batch(self, shard: int, max_pods: int) -> ShardBatch | None:
        """Up to `max_pods` pods of the highest-priority active units, for one shard."""
        now = self.clock()
        for waited in self.queue.waited_too_long(now, self.unschedulable_timeout_s):
            self.queue.retry(waited, now)
            self.stats.moved_by_timeout += 1
        for stuck in list(self.queue.preempting.values()):
            if stuck.unschedulable_since + self.unschedulable_timeout_s <= now:
                self._preempted(stuck)  # its victims' deletion never showed: try anyway
                self.stats.moved_by_timeout += 1
        self.queue.flush_expired(now)
        classes = BatchClasses()
        # who may look for victims: a unit above the lowest bound priority, or one whose
        # quota may reclaim room another quota must give back
        floor = self.lowest_bound_priority()
        reclaimable = self.quota.reclaimable()
        units: list[UnitRequest] = []
        pods = 0
        while pods < max_pods:
            unit = self.queue.pop_active(shard)
            if unit is None:
                break
            over = self.quota.blocked(unit.pods)
            if over is not None:  # no attempt: it waits until quota is freed
                unit.reason = f"Quota: {over}"
                unit.move(PodState.QUOTA_WAIT)
                self.queue.quota_waiting[unit.key] = unit
                self.stats.quota_waits += 1
                continue
            unit.move(PodState.IN_FLIGHT)
            unit.sent_mark = self._events
            preempt = False
            if floor is not None or reclaimable:
                victims = self._victims_may_exist(unit, floor, reclaimable)
                preempt = victims and self._may_preempt(unit)
            judged = [self.resolve(pod) for pod in unit.pods]  # their volumes resolved
            units.append(classes.request(unit, judged, self.send_manifests, preempt))
            pods += len(unit.pods)
        resolved = self._resolved.pop(shard, [])
        if not units and not resolved:
            return None
        self._next_batch += 1
        batch = ShardBatch(self._next_batch, classes.specs, units, resolved)
        sent = {u.key: [i for _, i in u.pods] for u in units}
        self.batches[batch.batch_id] = InFlightBatch(shard, classes.specs, sent)
        self.stats.attempts += len(units)
        self.stats.pod_attempts += pods
        return batch

    # --- from shards and the binder ----------------------------------------------

    def on_result(self, result: ShardResult) -> Reading:
        """Take a shard's decisions: the placed ones go to the binder, the units that
        found no node fail once more, the units left unanswered go back to be tried."""
        batch = self.batches[result.batch_id]
        self.stats.extender_errors += result.extender_errors
        self.stats.shard_rollbacks += result.rollbacks
        self.stats.shard_round_trips += result.round_trips
        self.stats.busy_s_by_shard[batch.shard] += result.sync_s + result.decide_s
        self.stats.decided_by_shard[batch.shard] += sum(
            len(self.units[k].pods) for k in batch.units if k in self.units
        )
        answered = set()
        sent = set(batch.units)
        placed = []
        failed: list[QueuedUnit] = []
        no_node: dict[str, str] = {}
        # A placement the shard made is assumed in its table until the batch
        # is resolved, even one ignored here.
        assumed = any(d.placed for d in result.decisions)
        for decision in result.decisions:
            unit = self.units.get(decision.unit)
            if unit is not None and not decision.placed:
                no_node.setdefault(unit.key, unit.pods[0].spec.profile)
            if unit is None or unit.state is not PodState.IN_FLIGHT or decision.unit not in sent:
                continue  # not ours to act on: a late or forged answer
            answered.add(decision.unit)
            unit.lost = 0
            if decision.placed:
                unit.move(PodState.AWAITING_COMMIT)
                unit.placed = [p.pod for p in decision.placements]
                placed.append(decision)
                continue
            if decision.preemptible:
                self._ask_to_preempt(unit, decision, batch.units[unit.key])
            else:
                self._unschedulable(unit, decision)
            failed.append(unit)
        dropped = []
        for key in batch.units:
            unit = self.units.get(key)
            if key not in answered and unit is not None and unit.state is PodState.IN_FLIGHT:
                unit.lost += 1
                if unit.lost % MAX_LOST == 0:  # one that kills its shard each time
                    self._back_off(unit, f"no shard answered its last {unit.lost} attempts")
                    failed.append(unit)
                    continue
                self.quota.given_back(unit.pods)
                unit.move(PodState.ACTIVE)  # the shard dropped it: try again
                self.queue.push_active(unit)
                dropped.append(Unplaced(key, unit.pods, ""))
        if not assumed:
            del self.batches[result.batch_id]  # the shard assumed nothing: nothing to resolve
        elif not placed:
            self._close_batch(result.batch_id)
        # the reasons as they stand once the whole answer is read
        unplaced = [Unplaced(u.key, u.pods, u.reason) for u in failed]
        return Reading(batch.classes, placed, unplaced, dropped, no_node)

    def _may_preempt(self, unit: QueuedUnit) -> bool:
        """Its pods' preemptionPolicy and profiles let it preempt."""
        profiles = self.preemptive_profiles
        return all(
            p.preempts and (profiles is None or p.spec.profile in profiles) for p in unit.pods
        )

    def _victims_may_exist(
        self, unit: QueuedUnit, floor: int | None, reclaimable: set[str]
    ) -> bool:
        """Some bound pod may be evicted for the unit: one below its priority (`floor`: the
        lowest bound), or one of a quota that must give back room (`reclaimable`)."""
        return (floor is not None and unit.priority > floor) or self.quota.may_reclaim(
            unit.pods, reclaimable
        )

    def _ask_to_preempt(self, unit: QueuedUnit, decision: Decision, members: list[int]) -> None:
        """`members`: the class of each of the unit's pods in the batch it was sent in."""
        pods = [
            (p, decision.preemptible.get(i, [])) for p, i in zip(unit.pods, members, strict=True)
        ]
        self.stats.preemption_attempts += 1
        nodes = len({node for names in decision.preemptible.values() for node in names})
        unit.preemption = f"looking for victims on the {nodes} nodes where evicting pods may help"
        self._failed(unit, decision.summary())
        unit.move(PodState.PREEMPTING)
        self._asks[unit.key] = (PreemptionAsk(unit.key, pods), decision)

    def on_outcomes(self, batch_id: int, outcomes: list[UnitOutcome]) -> list[Bound]:
        """Apply the binder's outcomes for a batch; returns the pods now bound."""
        shard = self.batches[batch_id].shard
        bound: list[Bound] = []
        released: list[str] = []  # the events these outcomes are
        for outcome in outcomes:
            unit = self.units.get(outcome.unit)
            if unit is None or unit.state is not PodState.AWAITING_COMMIT:
                continue
            if outcome.status.bound:
                if outcome.unbound:
                    released.append(ASSIGNED_POD_DELETE)
                    self.stats.bind_failures += 1
                placed = [k for k in unit.placed if k not in outcome.unbound]
                self._bound(unit, placed)
                tries = unit.attempts + 1
                if len(unit.pods) == 1 and placed:  # most units: spare the dicts
                    node = outcome.nodes[0] if outcome.nodes else ""
                    bound.append(Bound(unit.pods[0], node, tries, unit.since, unit.group))
                elif placed:
                    nodes = dict(zip(unit.placed, outcome.nodes, strict=False))
                    pods = {p.key: p for p in unit.pods}
                    bound.extend(
                        Bound(pods[k], nodes.get(k, ""), tries, unit.since, unit.group)
                        for k in placed
                    )
                self.stats.units_by_shard[shard] += 1
                self.stats.pods_by_shard[shard] += len(placed)
            elif outcome.status in (Status.CONFLICT, Status.BIND_FAILED):
                # a shard's assumption, or a reservation, gave its room back
                released.append(ASSIGNED_POD_DELETE)
                self._not_committed(unit, outcome)
            else:  # duplicate or invalid: the store refused the request; no event helps
                self._wait_unschedulable(unit, f"{outcome.status}: {outcome.detail}", frozenset())
        self._close_batch(batch_id)
        if bound:
            released.append(ASSIGNED_POD_ADD)  # pods with affinity to these may fit now
        for event in dict.fromkeys(released):
            self.on_event(event)
        return bound

    def _not_committed(self, unit: QueuedUnit, outcome: UnitOutcome) -> None:
        """A conflict, or a binding that failed: tried again at once, unless it keeps
        meeting conflicts: a hot spot backs off instead of spinning (retried at once when
        nothing else is going on); volumes found taken each time wait for volumes to
        change (a gang's claims wanting the last one)."""
        if outcome.status == Status.BIND_FAILED:
            self.stats.bind_failures += 1
        else:
            self.stats.conflicts += 1
            self.stats.commit_rollbacks += len(unit.placed) > 1
            unit.conflicts += 1
            unit.nominated = None  # its reservation, if it still holds one, was not enough
            if unit.conflicts % self.max_conflicts == 0:
                self.stats.conflict_backoffs += 1
                why = f"conflict: {outcome.detail}"
                if outcome.conflict == Conflict.VOLUME_TAKEN:
                    self._wait_unschedulable(unit, why, VOLUMES_FREED)
                else:
                    self._back_off(unit, why)
                return
        self.quota.given_back(unit.pods)
        unit.move(PodState.ACTIVE)
        self.queue.push_active(unit)

    def _bound(self, unit: QueuedUnit, placed: list[str]) -> None:
        """The unit's `placed` pods are bound; its other pods are scheduled again.

        A gang that has minMember pods bound runs: its other pods, and those
        that waited for it, go one by one. A gang short of that (a binding
        failed) tries its other pods again, as a gang of what it still lacks.
        """
        self._retire(unit, PodState.BOUND)
        if not is_reservation(unit.key):  # a placed reservation binds no pod
            self.stats.bound_pods += len(placed)
        bound = set(placed)
        rest = [p for p in unit.pods if p.key not in bound]
        self.quota.given_back(rest)
        if not unit.group:
            self._enqueue(rest)
            return
        waited = self.gangs.note_bound(unit.group, len(bound))
        if unit.group in self.gangs.bound:
            for pods in [[p] for p in rest] + waited:
                self._enqueue(pods)
        else:
            self._regather(unit.group, self.gangs.wait_again(unit.group, rest))

    def _unschedulable(self, unit: QueuedUnit, decision: Decision) -> None:
        """No node fits: the unit waits for an event its filters named (none named: any
        event), unless one already happened while it was being tried."""
        plugins = tuple(decision.plugins)
        unit.plugins = self._plugin_sets.setdefault(plugins, plugins)  # one tuple per set
        events = frozenset(decision.events) or EVENTS
        if any(self._last_event.get(e, 0) > unit.sent_mark for e in events):
            self._back_off(unit, decision.summary())
        else:
            self._wait_unschedulable(unit, decision.summary(), events)

    def _wait_unschedulable(self, unit: QueuedUnit, reason: str, events: frozenset[str]) -> None:
        if unit.state is not PodState.PREEMPTING:  # counted when it started to preempt
            self._failed(unit, reason)
        unit.requeue_on = events
        unit.unschedulable_since = self.clock()
        unit.move(PodState.UNSCHEDULABLE)
        self.queue.push_unschedulable(unit)
        self.stats.incoming["unschedulable", "ScheduleAttemptFailure"] += len(unit.pods)

    def _back_off(self, unit: QueuedUnit, reason: str) -> None:
        if unit.state is not PodState.PREEMPTING:
            self._failed(unit, reason)
        unit.move(PodState.BACKOFF)
        self.queue.push_backoff(unit)
        self.stats.incoming["backoff", "ScheduleAttemptFailure"] += len(unit.pods)

    def _failed(self, unit: QueuedUnit, reason: str) -> None:
        """An attempt that ended without a commit: counted, its backoff set, its reason kept,
        its quota given back."""
        self.quota.given_back(unit.pods)
        unit.attempts += 1
        now = self.clock()
        unit.backoff_until = now + self.queue.backoff.duration(unit.attempts)
        group = self.gangs.groups.get(unit.group)
        if group and now - unit.since > group.schedule_timeout_s:
            reason = (
                f"PodGroup {group.key} not scheduled within {group.schedule_timeout_s}s: {reason}"
            )
        unit.reason = reason

    @property
    def quotas(self) -> QuotaTree | None:
        """The elastic quota tree, if quotas are configured (for the metrics and eviction)."""
        return self.quota.tree

    def set_quota_capacity(self, capacity: dict[str, int]) -> None:
        """The cluster's allocatable changed: the quotas at the top of the tree share it."""
        self.quota.set_capacity(capacity)

    def add_quota(self, quota: Quota, capacity: dict[str, int], bound: Iterable[BoundPod]) -> None:
        """A quota made while optimist runs (an ElasticQuota object), counting every unit
        queued and every pod bound. Raises `InvalidObject` if it does not fit the tree."""
        admitted = (PodState.IN_FLIGHT, PodState.AWAITING_COMMIT)
        queued = [(u.pods, u.state in admitted) for u in self.units.values()]
        self.quota.add(quota, capacity, queued, bound)

    def _close_batch(self, batch_id: int) -> None:
        batch = self.batches.pop(batch_id)
        self._resolved[batch.shard].append(batch_id)

    # --- explain ----------------------------------------------------------------

    def held(self, pod_key: str) -> Held | None:
        """The pod, if the dispatcher holds it (not bound): the unit it is tried as and
        where it stands; None for a pod bound, rejected or unknown."""
        unit = self.units.get(self._unit_of.get(pod_key, ""))
        if unit is not None:
            return Held(unit.key, unit.pods, unit.min_member, unit.shard, self._standing(unit))
        gated = self.gated.get(pod_key)
        if gated is not None:
            why = f"blocked by scheduling gates {', '.join(gated.gates)}"
            return Held(pod_key, [gated], 1, ANY_SHARD, Standing.held_back("gated", why))
        for group, pods in self.gangs.waiting.items():
            if any(p.key == pod_key for p in pods):
                why = self.gangs.waiting_reasons({}, only=[group])[pod_key]
                needed = self.gangs.needed(group)
                standing = Standing.held_back("gang-wait", why, group, needed)
                return Held(group, list(pods), needed, ANY_SHARD, standing)
        return None

    def rejection(self, pod_key: str) -> str | None:
        """Why the pod's manifest cannot be scheduled, if it was rejected."""
        return self.rejected.get(pod_key)

    def _standing(self, unit: QueuedUnit) -> Standing:
        quota = self.quota.standing(unit.pods[0]) if unit.pods else ""
        return unit.standing(self.clock(), quota, self._preemption(unit))

    def _preemption(self, unit: QueuedUnit) -> str:
        """Whether the unit may look for victims when it fits nowhere, and what came of
        its last look."""
        if not self._may_preempt(unit):
            return "not allowed: preemptionPolicy Never, or its profile does not preempt"
        if unit.preemption:
            return unit.preemption
        if not self._victims_may_exist(
            unit, self.lowest_bound_priority(), self.quota.reclaimable()
        ):
            return f"not tried: no bound pod has a priority below {unit.priority}"
        if unit.attempts:
            return "not tried: no node where evicting pods could make room (its filters say so)"
        return "not tried: no attempt has failed yet"

    # --- progress ---------------------------------------------------------------

    def skip_backoff(self) -> int:
        """Nothing else is queued: every unit waiting out a backoff is tried now, since a
        retry costs nothing then. Returns how many."""
        waiting = list(self.queue.backoff_units.values())
        for unit in waiting:
            self.queue.activate(unit)
        return len(waiting)

    def waiting_attempts(self) -> tuple[int, int]:
        """The pods waiting as unschedulable (for an event or a backoff), and the attempts
        their units have failed so far, counted per pod: what proving again and again
        that they do not fit has cost."""
        waiting = [*self.queue.unschedulable_units.values(), *self.queue.backoff_units.values()]
        return sum(len(u.pods) for u in waiting), sum(len(u.pods) * u.attempts for u in waiting)

    def held_units(self) -> Iterable[QueuedUnit]:
        """Every unit held, in whatever state (for the metrics' sample of the queues)."""
        return self.units.values()

    @property
    def gated_pods(self) -> int:
        """How many pods wait for their scheduling gates to be removed."""
        return len(self.gated)

    def idle(self) -> bool:
        """Nothing queued to send and nothing out with a shard or the binder."""
        return self.queue.active_count == 0 and not self.batches

    def settled(self) -> bool:
        """Every pod is bound, rejected, or unschedulable until an event it waits for."""
        return self.idle() and not self.queue.backoff_units and not self.queue.preempting

    def unschedulable(self) -> dict[str, str]:
        """Pod key -> reason, for every pod reported unschedulable and not since bound."""
        out = dict(self.rejected)
        for key, pod in self.gated.items():
            out[key] = f"SchedulingGated: blocked by scheduling gates {', '.join(pod.gates)}"
        waiting = [
            *self.queue.quota_waiting.values(),
            *self.queue.unschedulable_units.values(),
            *self.queue.backoff_units.values(),
            *self.queue.preempting.values(),
        ]
        out.update(self.gangs.waiting_reasons({u.group: u.reason for u in waiting if u.group}))
        for unit in waiting:
            for pod in unit.pods:
                out[pod.key] = unit.reason
        return out
