"""A result file: the figures of a run, with what made them (`optimist.offline.provenance`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from optimist.offline.provenance import provenance


def write_report(path: Path, doc: Mapping[str, Any] | BaseModel) -> None:
    """A result file, with the command and the commit that made it; a typed report
    (`benchmarks.report.bench_report`) as its JSON dump, whose keys are the file's."""
    figures = doc.model_dump(mode="json") if isinstance(doc, BaseModel) else doc
    text = json.dumps({**figures, **provenance(["optimist", *sys.argv[1:]])}, indent=2)
    path.write_text(text + "\n")
