"""A fixed plugin registry, so these tests do not move as the shards gain plugins."""

from __future__ import annotations

from pathlib import Path

import pytest

from shards.plugins import registry

CONFIGS = Path(__file__).parent / "configs"
FILTERS = frozenset({"NodeUnschedulable", "NodeAffinity", "TaintToleration", "NodeResourcesFit"})
SCORES = frozenset({"NodeResourcesFit", "TaintToleration"})


@pytest.fixture
def fixed_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry answers FILTERS and SCORES, whatever the shards implement today."""
    monkeypatch.setattr(registry, "filter_plugins", lambda: FILTERS)
    monkeypatch.setattr(registry, "score_plugins", lambda: SCORES)
