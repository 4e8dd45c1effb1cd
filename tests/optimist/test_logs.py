"""Log lines for operators: JSON with the unit in its own field, or plain text."""

import json
import logging

from typer.testing import CliRunner

from optimist.cli import app
from optimist.logs import JsonFormatter, unit_key


def record(message: str, *args, **extra) -> logging.LogRecord:
    rec = logging.LogRecord("optimist.runtime", logging.WARNING, __file__, 1, message, args, None)
    rec.__dict__.update(extra)
    return rec


def test_a_json_line_names_its_unit():
    line = json.loads(JsonFormatter().format(record("pod %s waits", "ns/p", **unit_key("ns/p"))))
    assert line["unit"] == "ns/p" and line["message"] == "pod ns/p waits"
    assert line["level"] == "WARNING" and line["logger"] == "optimist.runtime"
    assert "unit" not in json.loads(JsonFormatter().format(record("no unit here")))


def test_an_unknown_log_format_is_refused():
    result = CliRunner().invoke(app, ["--log-format", "xml", "bench", "--help"])
    assert result.exit_code == 2 and "--log-format" in result.output
