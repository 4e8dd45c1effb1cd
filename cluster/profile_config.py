"""A scheduler profile as configured: which plugins run, with what weights and args.

This is what travels from the configuration file (read in `optimist/`) to
every shard, which builds its plugin objects from it. Args are plain data,
already defaulted and validated where the file was read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cluster.wire import Wire


@dataclass(frozen=True, slots=True)
class ProfileConfig(Wire):
    scheduler_name: str
    filters: tuple[str, ...]  # Filter plugins, in the order they run
    scorers: tuple[tuple[str, int], ...]  # Score plugins with their weights
    args: dict[str, dict[str, Any]] = field(default_factory=dict)  # pluginConfig, by plugin
    # None: upstream's adaptive rule; 100: score every feasible node
    percentage_of_nodes_to_score: int | None = None
