"""No secret reaches a log, a report or an error message: `optimist bench` run as a user
runs it, against a Redis that wants a password, with faults on the way, and once
with a wrong password."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from cluster.redis_server import EmbeddedRedis

OPTIMIST = [sys.executable, "-c", "from optimist.cli.main import app; app()"]


def bench(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["bench", "--nodes", "100", "--pods", "2000", "--shards", "2", "--no-progress"]
    return subprocess.run(
        [*OPTIMIST, *args, "--redis-url", url, *extra],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RAY_DEDUP_LOGS": "0"},  # every worker's lines, not a sample
    )


def test_the_redis_password_appears_in_no_log_report_or_error(tmp_path: Path) -> None:
    password = f"pw-{secrets.token_hex(8)}"
    with EmbeddedRedis(password=password) as server:
        report = tmp_path / "report.json"
        run = bench(
            f"{server.url}?password={password}",
            "--report",
            str(report),
            "--chaos",
            "kill-shard",
            "--chaos-interval",
            "0.05",  # both faults well before a quick run of 2,000 pods ends
            "--chaos-faults",
            "2",
        )
        said = run.stdout + run.stderr + report.read_text()
        assert run.returncode == 0, said[-3000:]
        assert "chaos: kill-shard" in said  # the error paths ran too
        assert password not in said
        assert "password=***" in report.read_text()  # the URL is there, redacted
        wrong = f"wrong-{password}"
        refused = bench(f"{server.url}?password={wrong}")
    assert refused.returncode != 0
    assert wrong not in refused.stdout + refused.stderr, refused.stderr[-3000:]
    assert "invalid username-password pair" in refused.stdout + refused.stderr
