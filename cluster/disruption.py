"""PodDisruptionBudgets, as preemption weighs them: how many more pods each lets go.

The API's disruption controller publishes `status.disruptionsAllowed`; with
no such controller beside the simulator, the allowance is worked out here
from the bound pods the budget selects (every one counted healthy and
expected, as a pod without a scaling controller is).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cluster.inventory import BoundPod, BoundPods
from cluster.selectors import LabelSelector

IntOrPercent = int | str  # 3, or "30%"


def scaled(value: IntOrPercent, total: int) -> int:
    """An IntOrString against `total`: a percentage rounds up, as the controller does."""
    if isinstance(value, int):
        return value
    return math.ceil(int(value[:-1]) * total / 100)


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector | None  # None selects no pod
    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None  # at most one of the two is set

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, pod: BoundPod) -> bool:
        """Preemption, as upstream, counts only budgets with a non-empty selector."""
        selector = self.selector
        if selector is None or not (selector.match_labels or selector.match_expressions):
            return False
        return pod.namespace == self.namespace and selector.matches(dict(pod.labels))

    def allowed(self, healthy: int) -> int:
        """Disruptions allowed while `healthy` selected pods run (all of them expected)."""
        if self.min_available is not None:
            desired = scaled(self.min_available, healthy)
        elif self.max_unavailable is not None:
            desired = healthy - scaled(self.max_unavailable, healthy)
        else:
            return healthy  # a budget that sets neither limits nothing
        return max(healthy - desired, 0)


class DisruptionBudgets:
    """The budgets in the cluster, counted against the bound pods."""

    def __init__(self, inventory: BoundPods) -> None:
        self.inventory = inventory
        self._by_namespace: dict[str, dict[str, DisruptionBudget]] = {}

    def put(self, budgets: Iterable[DisruptionBudget]) -> None:
        for budget in budgets:
            self._by_namespace.setdefault(budget.namespace, {})[budget.key] = budget

    def violating(self, pods: Sequence[BoundPod]) -> set[str]:
        """Of these pods, evicted in this order, those a budget does not let go
        (upstream's filterPodsWithPDBViolation)."""
        left: dict[str, int] = {}
        out = set()
        for pod in pods:
            for budget in self._by_namespace.get(pod.namespace, {}).values():
                if not budget.selects(pod):
                    continue
                if budget.key not in left:
                    running = self.inventory.in_namespace(pod.namespace)
                    left[budget.key] = budget.allowed(sum(budget.selects(p) for p in running))
                left[budget.key] -= 1
                if left[budget.key] < 0:
                    out.add(pod.key)
        return out
