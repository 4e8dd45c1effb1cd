"""Logging for operators: plain lines, or one JSON object per line for a log pipeline.

A line about a unit names it: the caller passes `extra=unit_key(key)`, and a
JSON line carries it as its own field (`unit`), so the lines of one unit can
be found by a query, not a regular expression.
"""

from __future__ import annotations

import json
import logging
from typing import Any

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FORMATS = ("text", "json")


def unit_key(key: str) -> dict[str, Any]:
    """The `extra` of a log call about a unit."""
    return {"unit": key}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        unit = getattr(record, "unit", None)
        if unit is not None:
            line["unit"] = unit
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


def configure(log_format: str = "text", *, verbose: bool = False) -> None:
    """The root logger's handler, in `log_format` ("text" or "json"); a process that has
    set up logging already (an embedding program, a test runner) keeps its own."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format {log_format!r}: must be one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler()
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
