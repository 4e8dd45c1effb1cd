"""`optimist bench` as a user runs it, at a small size."""

import csv
import json

import pytest
from typer.testing import CliRunner

from optimist.cli import app

pytestmark = pytest.mark.usefixtures("ray_session")

REPORT_KEYS = {
    "pods_created",
    "pods_scheduled",
    "pods_unschedulable",
    "unschedulable_reasons",
    "conflicts",
    "attempts",
    "duration_s",
    "throughput_pods_per_s",
    "shards",
    "config",
    "machine",
    "versions",
}


def test_bench_writes_report_and_placements(tmp_path, redis_url):
    report, placements = tmp_path / "r.json", tmp_path / "p.csv"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "--nodes",
            "50",
            "--pods",
            "300",
            "--shards",
            "2",
            "--no-progress",
            "--redis-url",
            redis_url,
            "--report",
            str(report),
            "--placements",
            str(placements),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "pods/s average" in result.output
    r = json.loads(report.read_text())
    assert r.keys() >= REPORT_KEYS
    assert r["pods_created"] == r["pods_scheduled"] == 300
    assert set(r["throughput_pods_per_s"]) == {"average", "p50", "p90", "p99"}
    assert [set(s) >= {"id", "ray_node_id", "units", "pods"} for s in r["shards"]] == [True, True]
    assert r["machine"]["cores"] >= 1 and r["versions"]["redis_server"]
    rows = list(csv.reader(placements.open()))
    assert rows[0] == ["namespace", "pod", "node"] and len(rows) == 301


def test_redis_password_never_reaches_the_report():
    from optimist.config import Settings

    public = Settings(redis_url="redis://:s3cret@127.0.0.1:6399/0").public()
    assert "s3cret" not in json.dumps(public)
    assert public["redis_url"] == "redis://:***@127.0.0.1:6399/0"


def test_extender_keys_never_reach_the_report():
    from optimist.config import Settings

    tls = {"keyData": "c2VjcmV0LWtleQ==", "caData": "Y2E=", "insecure": False}
    public = Settings(extenders=({"urlPrefix": "https://x", "tlsConfig": tls},)).public()
    assert "c2VjcmV0LWtleQ==" not in json.dumps(public)
    assert public["extenders"][0]["tlsConfig"]["insecure"] is False
