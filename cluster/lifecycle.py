"""A pod's life in optimist, as one state machine, written down in one place.

Every pod that enters is, at any moment, in exactly one of these states
(docs/design.md, invariant 4, "nothing lost"). The dispatcher owns the states up
to BOUND and refuses any transition not listed here.

    gated pod ──► GATED ──┐ last scheduling gate removed
                          ▼
    new pod ──► ACTIVE ──► IN_FLIGHT ──► AWAITING_COMMIT ──► BOUND
                  ▲  ▲         │                 │
                  │  │         │ no node fits    │ conflict, bind failed
                  │  │         ▼                 │ (a conflict: straight to ACTIVE)
                  │  └── UNSCHEDULABLE           │
                  │   an event it waits for, or  │
                  │   5 minutes; to BACKOFF while│
                  │   its backoff is not over    │
                  │              ▼               ▼
                  └──────────── BACKOFF ◄────────┘
                     backoff over, or nothing else queued

    ACTIVE ◄──► QUOTA_WAIT   over its quota when its turn came (no attempt made);
                             back to ACTIVE when quota is freed
    IN_FLIGHT ──► PREEMPTING ──► ACTIVE       no node fits, but evicting pods of lower
                      │                       priority may make room: victims found and
                      └──► UNSCHEDULABLE      deleted (room reserved for it), or none found
    bad manifest ─► REJECTED (reported unschedulable with its reason, never retried)

    deleted in the cluster, from any state but BOUND ──► DELETED

- GATED: the pod has `spec.schedulingGates`; it waits apart, in no unit and
  counting for no gang, and is reported `SchedulingGated` until the last gate
  is removed (gates can only be removed, never added).
- ACTIVE: in the active queue, ordered by priority, then arrival.
- QUOTA_WAIT: its quota (`cluster/quota.py`) has no room for it now; it waits,
  costing no attempt, until quota is freed (a pod of the quota deleted, an
  attempt given back, more room in the cluster), then goes back to ACTIVE.
- IN_FLIGHT: in a batch sent to a shard; the shard has not answered.
- PREEMPTING: no node fits, its pods may preempt, and the shard named nodes where
  evicting pods might help. Victims are chosen (`binder/preemption.py`), the store
  evicts them and reserves their room for the unit's pods in one step, and the
  unit waits for the cluster to confirm every victim deleted; it is then tried at
  once, on its nominated nodes first (or after 5 minutes anyway). With no victims
  to be found, it is UNSCHEDULABLE as any other.
- AWAITING_COMMIT: a shard placed it; the binder commits it in the store and
  binds it in the cluster.
- UNSCHEDULABLE: the last attempt found no node (the reason is kept and
  reported). The shard names the cluster events that could change that
  (`cluster.events`); the unit waits, costing no attempt, until one of them
  happens, or 5 minutes have passed (upstream's unschedulable queue and its
  QueueingHints). It then goes to BACKOFF if its backoff is not over yet.
- BACKOFF: waits out its backoff (1 s doubling to 10 s): an event it waits for
  happened while it was being tried, it was moved out of UNSCHEDULABLE early,
  or it met a conflict too often. Tried at once when nothing else is queued.
- BOUND: committed in the store and bound in the cluster; the dispatcher
  forgets it.
- REJECTED: its manifest cannot be scheduled as written.
- DELETED: the pod was deleted before it was bound; a unit whose every pod is
  deleted leaves the queue, and the shard's or binder's late answers for it
  are ignored (a binding of a deleted pod fails and is released).
"""

from __future__ import annotations

from enum import Enum


class PodState(Enum):
    ACTIVE = "active"
    IN_FLIGHT = "in-flight"
    AWAITING_COMMIT = "awaiting-commit"
    PREEMPTING = "preempting"
    QUOTA_WAIT = "quota-wait"
    UNSCHEDULABLE = "unschedulable"
    BACKOFF = "backoff"
    BOUND = "bound"
    REJECTED = "rejected"
    DELETED = "deleted"

    # Members are singletons compared by identity: hash them so, in C, not by name in
    # Python (Enum's own __hash__), as every transition of every unit looks one up.
    __hash__ = object.__hash__


TRANSITIONS: dict[PodState, frozenset[PodState]] = {
    PodState.ACTIVE: frozenset({PodState.IN_FLIGHT, PodState.QUOTA_WAIT, PodState.DELETED}),
    PodState.QUOTA_WAIT: frozenset({PodState.ACTIVE, PodState.DELETED}),
    PodState.IN_FLIGHT: frozenset(
        {
            PodState.AWAITING_COMMIT,
            PodState.PREEMPTING,
            PodState.UNSCHEDULABLE,
            PodState.BACKOFF,
            PodState.ACTIVE,
            PodState.DELETED,
        }
    ),
    PodState.AWAITING_COMMIT: frozenset(
        {
            PodState.BOUND,
            PodState.ACTIVE,
            PodState.UNSCHEDULABLE,
            PodState.BACKOFF,
            PodState.DELETED,
        }
    ),
    PodState.PREEMPTING: frozenset(
        {PodState.ACTIVE, PodState.UNSCHEDULABLE, PodState.BACKOFF, PodState.DELETED}
    ),
    PodState.UNSCHEDULABLE: frozenset({PodState.ACTIVE, PodState.BACKOFF, PodState.DELETED}),
    PodState.BACKOFF: frozenset({PodState.ACTIVE, PodState.DELETED}),
    PodState.BOUND: frozenset(),
    PodState.REJECTED: frozenset(),
    PodState.DELETED: frozenset(),
}


class IllegalTransition(RuntimeError):
    pass


def check_transition(unit: str, old: PodState, new: PodState) -> None:
    if new not in TRANSITIONS[old]:
        raise IllegalTransition(
            f"unit {unit}: {old.value} -> {new.value} is not a legal transition"
        )
