"""Values computed from some state, kept until that state moves on.

The shards' node table and the binder's cluster view both keep answers that
depend only on node specs (or on specs and pods): computed once, dropped as a
whole when what they were computed from changes, and bounded in number.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
KEPT = 1024  # values kept for one state at most; the oldest is dropped first


@dataclass
class Memo:
    state: Hashable = None
    values: dict[Hashable, Any] = field(default_factory=dict)

    def get(self, state: Hashable, key: Hashable, compute: Callable[[], T]) -> T:
        """The value for `key` at `state`, computed if this state has not got it yet."""
        if self.state != state:
            self.values.clear()
            self.state = state
        if key not in self.values:
            if len(self.values) >= KEPT:
                del self.values[next(iter(self.values))]
            self.values[key] = compute()
        value: T = self.values[key]  # computed by a `compute` for this key: the caller's T
        return value
