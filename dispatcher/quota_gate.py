"""Elastic quota at the dispatcher's door: a unit is sent to a shard only where its
quota has room, and waits (QUOTA_WAIT, unattempted) until room is freed.

Without quotas configured every unit passes; the dispatcher asks the gate either
way, so it holds no quota bookkeeping of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from cluster.inventory import BoundPod
from cluster.objects import Pod
from cluster.quota import Quota, QuotaTree


class QuotaGate:
    def __init__(self, tree: QuotaTree | None, room_grew: Callable[[], None]) -> None:
        self.tree = tree
        self._room_grew = room_grew  # the units waiting for quota are judged again

    def queued(self, pods: Iterable[Pod]) -> None:
        if self.tree is not None:
            self.tree.wait(pods)

    def blocked(self, pods: Sequence[Pod]) -> str | None:
        """Why the unit's quota has no room for these pods now, or None: admitted."""
        if self.tree is None:
            return None
        over = self.tree.blocked(pods)
        if over is None:
            self.tree.admit(pods)
        return over

    def given_back(self, pods: Iterable[Pod]) -> None:
        """Pods admitted and not bound (an attempt failed, a shard dropped them)."""
        if self.tree is not None:
            self.tree.return_to_queue(pods)
            self._if_room()

    def forget(self, pod_keys: Iterable[str]) -> None:
        if self.tree is not None:
            self.tree.forget(pod_keys)
            self._if_room()

    def standing(self, pod: Pod) -> str:
        """The pod's quota with what it uses and may use now, per resource ("": none)."""
        if self.tree is None:
            return ""
        leaf = self.tree.leaf_of(pod)
        if leaf is None:
            return ""
        allowed = self.tree.runtime()[leaf]
        used = self.tree.nodes[leaf].used
        parts = [f"{r} {used[r]} of {amount} in use" for r, amount in sorted(allowed.items())]
        return f"quota {leaf}: " + (", ".join(parts) or "no ceiling")

    def reclaimable(self) -> set[str]:
        """The quotas using room they must give back (preemption may take it)."""
        return self.tree.over_runtime() if self.tree is not None else set()

    def may_reclaim(self, pods: Sequence[Pod], reclaimable: set[str]) -> bool:
        """Some quota other than these pods' uses room it must give back."""
        if not reclaimable or self.tree is None:
            return False
        return bool(reclaimable - {self.tree.leaf_of(pods[0])})

    def set_capacity(self, capacity: dict[str, int]) -> None:
        """The cluster's allocatable, which the quotas at the top of the tree share."""
        if self.tree is not None:
            self.tree.set_capacity(capacity)
            self._if_room()

    def add(
        self,
        quota: Quota,
        capacity: dict[str, int],
        queued: Iterable[tuple[list[Pod], bool]],
        bound: Iterable[BoundPod],
    ) -> None:
        """A quota made while optimist runs (an ElasticQuota object): the tree is built
        again with it, and every pod it now covers is counted: `queued` units (their
        pods, and whether they are admitted), and the bound pods. Raises
        `InvalidObject` (the tree unchanged) if it does not fit the tree."""
        tree = QuotaTree([*(self.tree.quotas if self.tree else ()), quota], capacity)
        for pods, admitted in queued:
            tree.wait(pods)
            if admitted:
                tree.admit(pods)
        tree.count_running(bound)
        self.tree = tree
        self._room_grew()  # judged by the old tree: judged again

    def _if_room(self) -> None:
        if self.tree is not None and self.tree.take_room_grew():
            self._room_grew()
