"""Result files the report models are proven on (`results/`, its README says how each
was made), read as reports: the file less what `write_report` adds of who made it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
PROVENANCE = ("command", "commit", "made")  # `write_report`'s, not the report's


def report_of(doc: dict[str, Any]) -> dict[str, Any]:
    """A result file's report: the file less what made it."""
    return {k: v for k, v in doc.items() if k not in PROVENANCE}


def figures(name: str) -> dict[str, Any]:
    """The report of the result file `name` of `results/`."""
    return report_of(json.loads((RESULTS / f"{name}.json").read_text()))
