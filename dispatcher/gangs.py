"""Gangs: the pods of a PodGroup wait, holding nothing, until `minMember` of them exist.

Then they go to a shard as one unit, placed and committed all-or-nothing.
Pods of a gang that is already bound go one by one; pods that arrive while
the gang's unit is still being tried wait for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cluster.objects import Pod, PodGroup


@dataclass
class Gangs:
    groups: dict[str, PodGroup] = field(default_factory=dict)
    waiting: dict[str, list[Pod]] = field(default_factory=dict)  # group -> pods not yet sent
    bound: set[str] = field(default_factory=set)  # groups whose gang is running
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

    def gang_bound(self, group: str) -> list[list[Pod]]:
        """The gang runs: the pods that waited for it go one by one."""
        self.bound.add(group)
        return [[pod] for pod in self.waiting.pop(group, [])]

    def waiting_reasons(self) -> dict[str, str]:
        """Why each waiting pod is not being scheduled, for the report."""
        out = {}
        for key, pods in self.waiting.items():
            group = self.groups.get(key)
            if group is None:
                reason = f"waiting for PodGroup {key}, which does not exist"
            elif key in self.bound:
                continue
            else:
                reason = f"waiting for PodGroup {key}: {len(pods)} of {group.min_member} pods exist"
            out.update(dict.fromkeys((p.key for p in pods), reason))
        return out

    def _complete(self, key: str) -> list[list[Pod]]:
        group = self.groups.get(key)
        pods = self.waiting.get(key, [])
        if group is None or len(pods) < group.min_member:
            return []
        del self.waiting[key]
        return [pods]
