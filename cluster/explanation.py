"""What `optimist explain` says about a pod, as messages: the request to a shard, the
shard's verdict plugin by plugin, and the dispatcher's standing for the pod.

The request and the shard's answer cross between processes as every message does
(`cluster.wire`: checked on the way in, `MalformedMessage` if forged or cut short); the
answer then goes to the user as JSON, maps of the same fields (`to_json`), which
docs/explain.md documents field by field. A tool reading `optimist explain --output json`
reads exactly these.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from cluster.objects import SchedulingSpec
from cluster.wire import Wire


@dataclass(slots=True)
class ExplainRequest(Wire):
    """Control process → shard: one unit to judge now, placing nothing."""

    unit: str
    classes: list[SchedulingSpec]
    pods: list[tuple[str, int]]  # (pod key, index into classes), in the unit's order
    min_member: int = 1
    # per pod, the node it is bound to ("": none): its own requests there are credited
    # back, so that the node is judged as it was before the pod came
    bound: list[str] = field(default_factory=list)
    top: int = 0  # the best nodes to describe per pod; 0: every node


@dataclass(slots=True)
class FilterVerdict:
    """One Filter plugin over every node, each node judged by it alone."""

    plugin: str
    rejected: int  # nodes it rejects
    # nodes it is the first filter of the profile to reject: what upstream's summary counts
    first: int
    reasons: dict[str, int]  # its reasons, in upstream's words, for the nodes it rejects


@dataclass(slots=True)
class ScorerColumn:
    plugin: str
    weight: int
    normalizes: bool  # its raw scores are mapped to 0..100 over the feasible nodes


@dataclass(slots=True)
class NodeColumns:
    """The nodes described, best first, as columns: item i of each list is node i's (a
    table as pandas.DataFrame reads it). Columns, not a map per node: at 5,000 nodes
    building and encoding those cost twice the judging."""

    node: list[str]
    total: list[int]  # the sum of normalized times weight; -1 where a filter rejects it
    # among the nodes the shard scores for this pod (percentageOfNodesToScore: it stops
    # searching once it has found enough feasible nodes, from where the last pod stopped)
    scored: list[bool]
    rejects: list[list[bool]]  # per filter (`PodExplanation.filters` order), per node
    raw: list[list[int]]  # per scorer (`PodExplanation.scorers` order), per node
    # the same normalized (0..100 where the scorer normalizes); 0 where rejected
    normalized: list[list[int]]

    def rows(self, filters: list[str]) -> list[NodeVerdict]:
        """Node by node, for a reader; `filters` are the filters' names, in order."""
        return [
            NodeVerdict(
                name,
                self.total[i],
                self.scored[i],
                [f for f, column in zip(filters, self.rejects, strict=True) if column[i]],
                [column[i] for column in self.raw],
                [column[i] for column in self.normalized],
            )
            for i, name in enumerate(self.node)
        ]


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """One row of `NodeColumns`."""

    node: str
    total: int
    scored: bool
    rejected_by: list[str]
    raw: list[int]
    normalized: list[int]


@dataclass(slots=True)
class PodExplanation:
    pod: str
    profile: str
    nodes: int  # the nodes judged: every node the shard knows, cordoned ones included
    feasible: int
    filters: list[FilterVerdict]  # in the profile's order
    summary: str  # upstream's FailedScheduling message when no node is feasible, else ""
    scorers: list[ScorerColumn]
    scored: int  # how many nodes the shard's search scores for the pod
    chosen: str  # the node the shard chooses now ("": none)
    runner_up: str  # the next best of the nodes it scores ("": none)
    margin: int  # chosen's total minus the runner-up's, as the shard compared them
    # the chosen node and its runner-up first, then the other feasible ones by total, then
    # the rejected: `top` of them, or all
    ranked: NodeColumns

    def verdicts(self) -> list[NodeVerdict]:
        return self.ranked.rows([f.plugin for f in self.filters])

    def to_json(self) -> dict[str, Any]:
        return {
            **_flat(self),
            "filters": [_flat(f) for f in self.filters],
            "scorers": [_flat(s) for s in self.scorers],
            "ranked": _flat(self.ranked),
        }


@dataclass(slots=True)
class UnitExplanation(Wire):
    """Shard → control process: every pod of the unit, judged in order as the shard would
    place them, each on the view the earlier ones left (their placements assumed)."""

    unit: str
    shard: int
    store_version: int  # the node store's version the shard's view is at
    min_member: int
    fits: bool  # at least min_member of the pods find a node now
    pods: list[PodExplanation]
    error: str = ""  # why the unit could not be judged (its profile is not configured)
    seconds: float = 0.0  # what judging it took in the shard

    def to_json(self) -> dict[str, Any]:
        return {**_flat(self), "pods": [pod.to_json() for pod in self.pods]}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> UnitExplanation:
        pods = [
            PodExplanation(
                **{
                    **pod,
                    "filters": [FilterVerdict(**f) for f in pod["filters"]],
                    "scorers": [ScorerColumn(**s) for s in pod["scorers"]],
                    "ranked": NodeColumns(**pod["ranked"]),
                }
            )
            for pod in doc["pods"]
        ]
        return cls(**{**doc, "pods": pods})


@dataclass(slots=True)
class Standing:
    """Where the dispatcher holds a pod that is not bound, and what it waits for."""

    state: str  # the queue it is in (as kube-scheduler names them) or what it waits on
    attempts: int  # scheduling attempts that ended without a commit
    reason: str  # the last attempt's message ("": none yet)
    plugins: list[str]  # the filters that rejected nodes in that attempt
    # the cluster events that send it back to the active queue (its queueing hint); empty
    # when it waits for no event
    waits_for: list[str]
    backoff_left_s: float  # until its backoff after the last failure ends (0: over)
    waiting_s: float  # since it was last queued or found unschedulable
    quota: str  # its quota's standing ("": no quota applies)
    preemption: str  # whether preemption was tried for it, and what came of it
    group: str = ""  # its PodGroup, for a gang
    min_member: int = 1

    @classmethod
    def held_back(cls, state: str, reason: str, group: str = "", min_member: int = 1) -> Standing:
        """A pod held back before any attempt (gated, or its gang short)."""
        return cls(state, 0, reason, [], [], 0.0, 0.0, "", "", group, min_member)

    def to_json(self) -> dict[str, Any]:
        return _flat(self)


@dataclass(slots=True)
class Explanation:
    """What `optimist explain` prints: the pod, where it stands, and its unit judged now."""

    pod: str
    source: str  # what was asked: "running" (optimist run or a bench), "what-if", a snapshot
    bound_to: str  # the node it is bound to ("": not bound)
    standing: Standing | None  # where the dispatcher holds it (None: bound, or a what-if)
    unit: UnitExplanation

    def to_json(self) -> dict[str, Any]:
        standing = self.standing.to_json() if self.standing else None
        return {**_flat(self), "standing": standing, "unit": self.unit.to_json()}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Explanation:
        standing = doc.get("standing")
        return cls(
            str(doc["pod"]),
            str(doc["source"]),
            str(doc["bound_to"]),
            Standing(**standing) if standing else None,
            UnitExplanation.from_json(doc["unit"]),
        )


_FIELDS: dict[type, tuple[str, ...]] = {}


def _flat(message: Any) -> dict[str, Any]:
    """A message's fields as a map, the values as they are: nested messages are the
    caller's to convert (dataclasses.asdict deep-copies every list, which at 5,000 nodes
    cost ten times the judging)."""
    names = _FIELDS.get(type(message))
    if names is None:
        names = _FIELDS[type(message)] = tuple(f.name for f in fields(message))
    return {name: getattr(message, name) for name in names}
