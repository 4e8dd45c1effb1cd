"""A pod's stages as the loop sees them, for latency breakdowns.

The hook is called with the stage ("queued", "sent", "decided", "committed"), the
pod keys and the time.perf_counter() when they reached it; "sent" again on every
attempt. Bound pods are reported to the loop's `on_bound` as well.
"""

from __future__ import annotations

from collections.abc import Callable

StageHook = Callable[[str, list[str], float], None]
