"""Log lines for operators: JSON with the unit in its own field, or plain text."""

import json
import logging

import pytest
from typer.testing import CliRunner

from optimist.cli.main import app
from optimist.logs import JsonFormatter, unit_key
from optimist.loop import SchedulingLoop
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings


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


@pytest.mark.usefixtures("ray_session")
def test_a_case_that_begins_without_nodes_logs_no_error(caplog, redis_url, key_prefix):
    """Each case begins with an empty store that the loop builds: expected, so not an
    error (an operator alerts on errors), and no outage; it is said at info."""
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=1)
    with Platform(settings) as platform:
        platform.store.clear()  # as the bench does before each case
        loop = SchedulingLoop(platform, SimulatedCluster(settings.scheduler_names))
        with caplog.at_level(logging.INFO, logger="optimist"):
            loop.ingest()  # nothing made yet: its first call to the store finds none
    # not a warning either: nothing went wrong
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "node store: empty; building it from the cluster" in caplog.messages
    assert loop.faults.store_outages == 0 and len(loop.faults.store_rebuilds) == 1
