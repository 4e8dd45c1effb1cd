"""Every message that crosses a process boundary. Each frame is a `cluster.wire.Wire`:
its fields say what it holds, and the one codec there how it travels and what a frame
that does not fit raises (`MalformedMessage`).

Roles never import each other; they exchange these. A batch carries each
equivalence class once and its pods refer to it by index, so the bytes on
the wire grow with the number of distinct pod shapes, not with pod count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cluster.histogram import Series
from cluster.objects import SchedulingSpec
from cluster.volumes.needs import Attachable
from cluster.wire import Wire


@dataclass(slots=True)
class UnitRequest:
    """One unit to place: its pods, each naming its class in the batch."""

    key: str
    pods: list[tuple[str, int]]  # (pod key, index into ShardBatch.classes)
    min_member: int = 1
    # the pods' manifests, sent only when scheduler extenders need whole pods
    manifests: list[dict[str, Any]] = field(default_factory=list)
    # if no node fits: name the nodes where evicting pods might make room
    # (`Decision.preemptible`): its pods may preempt, and some pod bound is of lower priority
    preempt: bool = False
    # per pod, the node that room is reserved on for it after a preemption ("": none);
    # empty when no pod has one
    nominated: list[str] = field(default_factory=list)
    # per pod, the volumes it attaches to its node (`Pod.attached`): a pod's own, not its
    # class's, so that pods of volumes of their own still share a class; empty when no
    # pod has any
    volumes: list[tuple[Attachable, ...]] = field(default_factory=list)
    # per pod, its ReadWriteOncePod claims (`Pod.exclusive`); empty when no pod has any
    claims: list[tuple[str, ...]] = field(default_factory=list)


@dataclass(slots=True)
class ShardBatch(Wire):
    """Dispatcher → shard: units to place, and which earlier batches are settled.

    `resolved` lists this shard's earlier batches whose placements the binder
    has committed or rejected; the shard stops assuming them once it has
    synced the store past that point.
    """

    batch_id: int
    classes: list[SchedulingSpec]
    units: list[UnitRequest]
    resolved: list[int] = field(default_factory=list)


@dataclass(slots=True)
class PodPlacement:
    """Where a shard puts one pod: ranked candidate nodes and the versions it saw."""

    pod: str
    cls: int
    nodes: list[str]
    versions: list[int]
    gpus: list[int] = field(default_factory=list)  # its GPUs on the first candidate, if any
    volumes: list[Attachable] = field(default_factory=list)  # those it attaches there
    claims: list[str] = field(default_factory=list)  # its ReadWriteOncePod claims
    # per candidate (as `nodes`), the free volumes its claims that wait for their first
    # consumer are given there: (claim, volume), volume "" where none is left and the
    # claim's class cannot provision. Chosen by the control process before the commit
    # (optimist/loop/volume_picks.py); the commit refuses a volume another claim holds.
    picks: list[tuple[tuple[str, str], ...]] = field(default_factory=list)

    def picked(self, node: str) -> tuple[tuple[str, str], ...]:
        """The free volumes its claims were picked on `node`, one of its candidates."""
        return self.picks[self.nodes.index(node)] if self.picks else ()


@dataclass(slots=True)
class Decision:
    """A shard's answer for one unit: placements for all its pods, or none and why."""

    unit: str
    placements: list[PodPlacement]
    reasons: dict[str, int] = field(default_factory=dict)  # reason -> nodes that gave it
    nodes: int = 0  # nodes the shard considered
    # when nothing was placed: the filters that rejected nodes, and the cluster
    # events (`cluster.events`) that could make one pass; none means any event
    plugins: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    # when nothing was placed and the unit asked (`UnitRequest.preempt`): per class
    # index, the nodes that only filters evicting pods can satisfy rejected
    preemptible: dict[int, list[str]] = field(default_factory=dict)
    # a plugin's PreFilter rejected the unit before any node was judged: its words
    prefilter: str = ""

    @property
    def placed(self) -> bool:
        return bool(self.placements)

    def summary(self) -> str:
        """kube-scheduler's FailedScheduling wording: `0/5 nodes are available: ...`."""
        if self.prefilter:
            return f"0/{self.nodes} nodes are available: {self.prefilter}."
        parts = ", ".join(
            f"{n} {r}" for r, n in sorted(self.reasons.items(), key=lambda x: (-x[1], x[0]))
        )
        return (
            f"0/{self.nodes} nodes are available: {parts}."
            if parts
            else f"0/{self.nodes} nodes are available."
        )


@dataclass(slots=True)
class ShardResult(Wire):
    """Shard → binder and dispatcher: the decisions of one batch."""

    shard: int
    batch_id: int
    store_version: int
    decisions: list[Decision]
    sync_s: float = 0.0
    decide_s: float = 0.0
    extender_errors: int = 0  # calls to extenders that failed and were skipped (ignorable)
    # units the shard placed in part in its table and undid (fewer than minMember fit)
    rollbacks: int = 0
    round_trips: int = 0  # calls the shard made to Redis for this batch
    # store versions its table was behind when the batch came (what its sync caught up)
    versions_behind: int = 0
    synced_from_log: bool = False  # its sync read the store's commit log, not every node
    # the shard's timings (`shards.stopwatch`): per extension point and per plugin, the
    # series of a histogram as `cluster.histogram.Histograms.to_wire` lays them out
    observed: tuple[list[Series], list[Series]] = field(default_factory=lambda: ([], []))
    epoch: str = ""  # the node store's epoch the decisions were made in


class Status(StrEnum):
    """What became of a placed unit: the store's verdict, then the binder's. The Lua
    scripts send these values (commit.lua, preempt.lua)."""

    COMMITTED = "committed"  # the store accepted every pod (the binder then binds them)
    BOUND = "bound"  # committed and bound in the cluster
    CONFLICT = "conflict"  # some pod no longer fits the committed state; nothing applied
    BIND_FAILED = "bind-failed"  # committed, the cluster refused every binding; released
    # committed, some pods bound; those the cluster refused (`unbound`) are released again
    PARTLY_BOUND = "partly-bound"
    DUPLICATE = "duplicate"  # a pod or the unit was already committed; nothing applied
    INVALID = "invalid"  # the store refused a malformed request; nothing applied
    RESERVED = "reserved"  # a preemption's step: victims released, their room held

    @property
    def bound(self) -> bool:
        """Its pods (but the outcome's `unbound`) are bound."""
        return self in (Status.BOUND, Status.PARTLY_BOUND)


class Conflict(StrEnum):
    """Why a commit (or a preemption's step) was refused, as a label of few values. The
    Lua scripts send the kind beside the reason's text, so nothing reads the text."""

    RESOURCES = "resources"  # a candidate lacks room for some resource
    GPUS = "gpus"  # too few of a candidate's GPUs have room (in one group, if asked)
    HOST_PORT = "host-port"
    VOLUME_LIMIT = "volume-limit"  # a candidate would attach more volumes than it may
    VOLUME_IN_USE = "volume-in-use"  # a pod's ReadWriteOncePod claim is another pod's
    # a free volume picked for a claim is another claim's, or none was left for it
    VOLUME_TAKEN = "volume-taken"
    NODE_GONE = "node-gone"
    CHANGED = "changed"  # coarse mode: a candidate changed since the shard saw it
    # the binder's inter-pod re-check, or a keeping-away pod committed after routing
    CROSS_POD = "cross-pod"
    FENCE = "fence"  # another binder committed in the unit's namespaces since its check
    VICTIM_GONE = "victim-gone"  # a preemption plan's victim is no longer committed
    PARTITION = "partition"  # a unit or a plan across store partitions could not hold
    STORE_FAILED = "store-failed"  # the node store failed during the commit
    BINDER_FAILED = "binder-failed"  # the binder actor failed: the store says what it did


@dataclass(slots=True)
class UnitOutcome:
    """What became of a placed unit (`Status`), and if refused, the `Conflict` why."""

    unit: str
    status: Status
    nodes: list[str] = field(default_factory=list)  # the node of each pod, once committed
    detail: str = ""
    unbound: list[str] = field(default_factory=list)  # pods whose binding failed
    gpus: list[list[int]] = field(default_factory=list)  # the GPUs of each pod, once committed
    conflict: Conflict | None = None

    def __post_init__(self) -> None:
        self.status = Status(self.status)  # a stray string fails here, not far downstream

    @classmethod
    def refused(cls, unit: str, conflict: Conflict, detail: str) -> UnitOutcome:
        return cls(unit, Status.CONFLICT, detail=detail, conflict=conflict)

    @property
    def committed(self) -> bool:
        return self.status == Status.COMMITTED


@dataclass(slots=True)
class CommitRequest(Wire):
    """Driver → binder actor: placed units of one batch to commit, none needing the
    cross-pod re-check, the keep-away count their routing knew (binder/fences.py), and
    the node store's epoch the shard placed them in."""

    keep_away_seen: int
    classes: list[SchedulingSpec]
    decisions: list[Decision]
    epoch: str


@dataclass(slots=True)
class CommitReply(Wire):
    """Binder actor → driver: the store's verdict on each unit, in request order."""

    outcomes: list[UnitOutcome]
    keep_away: int  # the store's keep-away count after the commit
