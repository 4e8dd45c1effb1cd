"""A result file: the figures of a run, with what made them (`optimist.offline.provenance`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from optimist.offline.provenance import provenance


def write_report(path: Path, doc: dict[str, Any]) -> None:
    """A result file, with the command and the commit that made it."""
    path.write_text(json.dumps({**doc, **provenance(["optimist", *sys.argv[1:]])}, indent=2) + "\n")
