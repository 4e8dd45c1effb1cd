"""Every message that crosses a process boundary, with its msgpack form.

Roles never import each other; they exchange these. A batch carries each
equivalence class once and its pods refer to it by index, so the bytes on
the wire grow with the number of distinct pod shapes, not with pod count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgpack

from cluster.objects import SchedulingSpec

# What taking apart a frame of the wrong shape raises (a map where a list was
# expected has no `items`, a short list unpacks badly, ...): all of it is malformed.
_WIRE_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError)


class MalformedMessage(ValueError):
    """A frame that is not a well-formed message; it is dropped, never applied."""


def _pack(wire: list[Any]) -> bytes:
    return msgpack.packb(wire, use_bin_type=True)


def _unpack(data: bytes, what: str) -> list[Any]:
    try:
        wire = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as err:
        raise MalformedMessage(f"{what}: {err}") from None
    if not isinstance(wire, list):
        raise MalformedMessage(f"{what}: expected a list, got {type(wire).__name__}")
    return wire


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


@dataclass(slots=True)
class ShardBatch:
    """Dispatcher → shard: units to place, and which earlier batches are settled.

    `resolved` lists this shard's earlier batches whose placements the binder
    has committed or rejected; the shard stops assuming them once it has
    synced the store past that point.
    """

    batch_id: int
    classes: list[SchedulingSpec]
    units: list[UnitRequest]
    resolved: list[int] = field(default_factory=list)

    def encode(self) -> bytes:
        return _pack(
            [
                self.batch_id,
                [c.to_wire() for c in self.classes],
                [
                    [
                        u.key,
                        [list(p) for p in u.pods],
                        u.min_member,
                        u.manifests,
                        u.preempt,
                        u.nominated,
                    ]
                    for u in self.units
                ],
                self.resolved,
            ]
        )

    @classmethod
    def decode(cls, data: bytes) -> ShardBatch:
        try:
            batch_id, classes, units, resolved = _unpack(data, "ShardBatch")
            return cls(
                batch_id=int(batch_id),
                classes=[SchedulingSpec.from_wire(c) for c in classes],
                units=[
                    UnitRequest(
                        k,
                        [(str(p), int(c)) for p, c in pods],
                        int(m),
                        list(manifests),
                        bool(preempt),
                        [str(n) for n in nominated],
                    )
                    for k, pods, m, manifests, preempt, nominated in units
                ],
                resolved=[int(b) for b in resolved],
            )
        except _WIRE_ERRORS as err:
            raise MalformedMessage(f"ShardBatch: {err}") from None


@dataclass(slots=True)
class PodPlacement:
    """Where a shard puts one pod: ranked candidate nodes and the versions it saw."""

    pod: str
    cls: int
    nodes: list[str]
    versions: list[int]
    gpus: list[int] = field(default_factory=list)  # its GPUs on the first candidate, if any


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

    @property
    def placed(self) -> bool:
        return bool(self.placements)

    def to_wire(self) -> list[Any]:
        return [
            self.unit,
            [[p.pod, p.cls, p.nodes, p.versions, p.gpus] for p in self.placements],
            self.reasons,
            self.nodes,
            self.plugins,
            self.events,
            self.preemptible,
        ]

    @classmethod
    def from_wire(cls, wire: list[Any]) -> Decision:
        unit, placements, reasons, nodes, plugins, events, preemptible = wire
        return cls(
            unit,
            [PodPlacement(*p) for p in placements],
            dict(reasons),
            int(nodes),
            [str(p) for p in plugins],
            [str(e) for e in events],
            {int(c): [str(n) for n in names] for c, names in preemptible.items()},
        )

    def summary(self) -> str:
        """kube-scheduler's FailedScheduling wording: `0/5 nodes are available: ...`."""
        parts = ", ".join(
            f"{n} {r}" for r, n in sorted(self.reasons.items(), key=lambda x: (-x[1], x[0]))
        )
        return (
            f"0/{self.nodes} nodes are available: {parts}."
            if parts
            else f"0/{self.nodes} nodes are available."
        )


@dataclass(slots=True)
class ShardResult:
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
    observed: list[list[Any]] = field(default_factory=lambda: [[], []])
    epoch: str = ""  # the node store's epoch the decisions were made in

    def encode(self) -> bytes:
        return _pack(
            [
                self.shard,
                self.batch_id,
                self.store_version,
                [d.to_wire() for d in self.decisions],
                self.epoch,
                self.sync_s,
                self.decide_s,
                self.extender_errors,
                self.rollbacks,
                self.round_trips,
                self.versions_behind,
                self.synced_from_log,
                self.observed,
            ]
        )

    @classmethod
    def decode(cls, data: bytes) -> ShardResult:
        try:
            wire = _unpack(data, "ShardResult")
            if len(wire) != 13:
                raise ValueError(f"{len(wire)} fields, expected 13")
            (
                shard,
                batch_id,
                version,
                decisions,
                epoch,
                sync_s,
                decide_s,
                errors,
                rollbacks,
                trips,
                behind,
                from_log,
                observed,
            ) = wire
            return cls(
                shard=int(shard),
                batch_id=int(batch_id),
                store_version=int(version),
                decisions=[Decision.from_wire(d) for d in decisions],
                epoch=str(epoch),
                sync_s=float(sync_s),
                decide_s=float(decide_s),
                extender_errors=int(errors),
                rollbacks=int(rollbacks),
                round_trips=int(trips),
                versions_behind=int(behind),
                synced_from_log=bool(from_log),
                observed=_observed(observed),
            )
        except _WIRE_ERRORS as err:
            raise MalformedMessage(f"ShardResult: {err}") from None


def _observed(wire: Any) -> list[list[Any]]:
    """A result's histograms, each a list of [labels, counts per bucket, sum], checked."""
    if not isinstance(wire, list) or len(wire) != 2:
        raise ValueError(f"observed: expected two histograms, got {wire!r:.80}")
    return [
        [
            [[str(v) for v in labels], [int(c) for c in counts], float(total)]
            for labels, counts, total in histogram
        ]
        for histogram in wire
    ]


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
class CommitRequest:
    """Driver → binder actor: placed units of one batch to commit, none needing the
    cross-pod re-check, the keep-away count their routing knew (binder/fences.py), and
    the node store's epoch the shard placed them in."""

    keep_away_seen: int
    classes: list[SchedulingSpec]
    decisions: list[Decision]
    epoch: str

    def encode(self) -> bytes:
        return _pack(
            [
                self.keep_away_seen,
                [c.to_wire() for c in self.classes],
                [d.to_wire() for d in self.decisions],
                self.epoch,
            ]
        )

    @classmethod
    def decode(cls, data: bytes) -> CommitRequest:
        try:
            seen, classes, decisions, epoch = _unpack(data, "CommitRequest")
            return cls(
                int(seen),
                [SchedulingSpec.from_wire(c) for c in classes],
                [Decision.from_wire(d) for d in decisions],
                str(epoch),
            )
        except _WIRE_ERRORS as err:
            raise MalformedMessage(f"CommitRequest: {err}") from None


@dataclass(slots=True)
class CommitReply:
    """Binder actor → driver: the store's verdict on each unit, in request order."""

    outcomes: list[UnitOutcome]
    keep_away: int  # the store's keep-away count after the commit

    def encode(self) -> bytes:
        return _pack(
            [
                [
                    [o.unit, o.status, o.nodes, o.detail, o.gpus, o.conflict or ""]
                    for o in self.outcomes
                ],
                self.keep_away,
            ]
        )

    @classmethod
    def decode(cls, data: bytes) -> CommitReply:
        try:
            outcomes, keep_away = _unpack(data, "CommitReply")
            return cls(
                [
                    UnitOutcome(
                        str(u),
                        Status(s),
                        list(n),
                        str(d),
                        gpus=[list(g) for g in gpus],
                        conflict=Conflict(c) if c else None,
                    )
                    for u, s, n, d, gpus, c in outcomes
                ],
                int(keep_away),
            )
        except _WIRE_ERRORS as err:
            raise MalformedMessage(f"CommitReply: {err}") from None
