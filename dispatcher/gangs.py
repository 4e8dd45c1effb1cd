"""Gangs: the pods of a PodGroup wait, holding nothing, until `minMember` of them exist.

Then they go to a shard as one unit, placed and committed all-or-nothing.
Pods of a gang that is already bound go one by one; pods that arrive while
the gang's unit is still being tried wait for it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from cluster.objects import Pod, PodGroup


@dataclass
class Gangs:
    groups: dict[str, PodGroup] = field(default_factory=dict)
    waiting: dict[str, list[Pod]] = field(default_factory=dict)  # group -> pods not yet sent
    bound: set[str] = field(default_factory=set)  # groups whose gang is running
    trying: set[str] = field(default_factory=set)  # groups with a gang unit in the queue
    # pods bound of gangs not yet running: a binding failed after the commit
    members_bound: dict[str, int] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)

    def add_group(self, group: PodGroup) -> list[list[Pod]]:
        """Register a PodGroup; returns the units it completes (at most one)."""
        self.groups[group.key] = group
        return self._complete(group.key)

    def offer(self, pod: Pod) -> list[list[Pod]]:
        """A new pod of a gang; returns the units ready to schedule."""
        if pod.key in self._seen:
            return []
        self._seen.add(pod.key)
        if pod.group in self.bound:
            return [[pod]]
        self.waiting.setdefault(pod.group, []).append(pod)
        return self._complete(pod.group)

    def needed(self, group: str) -> int:
        """Pods of the group that must still be placed together for the gang to run."""
        known = self.groups.get(group)
        return max((known.min_member if known else 1) - self.members_bound.get(group, 0), 1)

    def note_bound(self, group: str, pods: int) -> list[list[Pod]]:
        """Pods of a gang were bound; once minMember are, the gang runs and the
        pods that waited for it go one by one."""
        if group in self.bound:
            return []
        known = self.groups.get(group)
        count = self.members_bound.get(group, 0) + pods
        if known is not None and count < known.min_member:
            self.members_bound[group] = count
            return []
        self.members_bound.pop(group, None)
        self.trying.discard(group)
        self.bound.add(group)
        return [[pod] for pod in self.waiting.pop(group, [])]

    def note_running(self, group: str, count: int) -> list[list[Pod]]:
        """Pods of the group found bound by others (a leader before this one): they count
        toward its minMember as its own bindings do, its PodGroup known yet or not;
        returns the units that completes."""
        if group not in self.groups and group not in self.bound:
            self.members_bound[group] = self.members_bound.get(group, 0) + count
            return []
        return self.note_bound(group, count) or self._complete(group)

    def wait_again(self, group: str, pods: list[Pod]) -> list[list[Pod]]:
        """A gang's unit lost members: its other pods wait for minMember again."""
        if group in self.bound:
            return [[pod] for pod in pods]
        self.trying.discard(group)
        self.waiting.setdefault(group, []).extend(pods)
        return self._complete(group)

    def forget(self, pod_key: str) -> None:
        """A pod was deleted: it no longer counts towards its gang."""
        self._seen.discard(pod_key)
        for key, pods in self.waiting.items():
            if any(p.key == pod_key for p in pods):
                self.waiting[key] = [p for p in pods if p.key != pod_key]
                return

    def waiting_reasons(
        self, verdicts: Mapping[str, str], only: Collection[str] | None = None
    ) -> dict[str, str]:
        """Why each waiting pod (of the groups `only`, or all) is not being scheduled, for
        the report; `verdicts` holds why the gang units now in backoff failed, by group."""
        out = {}
        groups = (
            self.waiting.items()
            if only is None
            else ((key, self.waiting[key]) for key in only if key in self.waiting)
        )
        for key, pods in groups:
            group = self.groups.get(key)
            if group is None:
                reason = f"waiting for PodGroup {key}, which does not exist"
            elif key in self.bound:
                continue
            elif key in verdicts:
                reason = f"waiting for PodGroup {key}: a gang of its pods failed: {verdicts[key]}"
            elif key in self.trying:
                reason = f"waiting for PodGroup {key}: a gang of its pods is being scheduled"
            else:
                reason = f"waiting for PodGroup {key}: {len(pods)} of {self.needed(key)} pods exist"
            out.update(dict.fromkeys((p.key for p in pods), reason))
        return out

    def _complete(self, key: str) -> list[list[Pod]]:
        pods = self.waiting.get(key, [])
        if key not in self.groups or len(pods) < self.needed(key):
            return []
        del self.waiting[key]
        self.trying.add(key)
        return [pods]
