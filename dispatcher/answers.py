"""What the dispatcher answers the loop: what it made of a shard's answer (`Reading`),
the pods bound (`Bound`), a pod it holds (`Held`), and a unit that may preempt
(`PreemptionAsk`); so that the loop reads answers, never the dispatcher's books."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from cluster.explanation import Standing
from cluster.messages import Decision
from cluster.objects import Pod, SchedulingSpec


class Bound(NamedTuple):
    """A pod bound, with what the metrics of its way there need."""

    pod: Pod
    node: str
    attempts: int  # the attempts it took, this one included
    queued_at: float  # the dispatcher's clock when its unit entered the queue
    gang: str = ""  # the PodGroup whose minMember pods were bound together with it


@dataclass(frozen=True, slots=True)
class Held:
    """A pod the dispatcher holds: the unit it is tried as (for a gang still short of
    members, the pods there are), and where it stands."""

    unit: str
    pods: list[Pod]
    min_member: int
    shard: int  # the shard it is sent to, ANY_SHARD if any
    standing: Standing


class Unplaced(NamedTuple):
    """A unit of a shard's batch that goes back to a queue unplaced, with its pods."""

    unit: str
    pods: list[Pod]
    reason: str  # why no node fits it, as the cluster is told; "" if its shard dropped it


@dataclass(frozen=True, slots=True)
class Reading:
    """What the dispatcher made of a shard's answer, so that the loop need not look into
    its books to learn it."""

    classes: list[SchedulingSpec]  # the batch's classes, which its placements index
    placed: list[Decision]  # the placements to commit, for the binder
    failed: list[Unplaced]  # the units it now counts as failed once more, answer order
    dropped: list[Unplaced]  # the units the shard did not answer: active again, untried
    # unit -> profile, of every unit held here that the answer found no node for, a late
    # or repeated decision included: the attempts the metrics count
    no_node: dict[str, str]


@dataclass(frozen=True, slots=True)
class PreemptionAsk:
    """A unit that fits nowhere and may preempt: each pod with the nodes where evicting
    pods might make room for it, as its shard named them."""

    unit: str
    pods: list[tuple[Pod, list[str]]]
