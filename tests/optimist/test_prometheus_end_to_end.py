"""The dashboard's queries, evaluated by a real Prometheus that scraped a real run.

Prometheus is Debian's package (`make test` installs it where apt can); the
test is skipped, saying so, where the binary is absent.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from benchmarks.cases import cases_file
from benchmarks.simulated.sim_bench import load_plan, run_bench
from optimist.metrics.definitions import SchedulerMetrics
from optimist.metrics.recorder import LoopMetrics
from optimist.metrics.server import MetricsServer
from optimist.settings import Settings

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "optimist-dashboard.json"
PROMETHEUS = shutil.which("prometheus")

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None, reason="no prometheus binary (Debian's `prometheus` package): not tested"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return json.loads(reply.read())


def query(base: str, expr: str) -> list:
    answer = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    assert answer["status"] == "success", (expr, answer)
    return answer["data"]["result"]


def scrapes(base: str) -> int:
    """How many times Prometheus has scraped optimist in the last minute."""
    found = query(base, 'count_over_time(up{job="optimist"}[1m])')
    return int(float(found[0]["value"][1])) if found else 0


def wait_until(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def prometheus(tmp_path):
    """Prometheus on loopback, scraping 127.0.0.1:<port> every second: (its URL, port)."""
    target, web = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: optimist\n    static_configs: [{{targets: ['127.0.0.1:{target}']}}]\n"
    )
    process = subprocess.Popen(
        [
            str(PROMETHEUS),
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{web}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{web}"
    try:
        ready = f"{base}/-/ready"
        wait_until(lambda: urllib.request.urlopen(ready).status == 200, 30, "Prometheus")
        yield base, target
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_every_dashboard_query_returns_data(prometheus, ray_session, redis_url):
    base, port = prometheus
    metrics = SchedulerMetrics()
    plan = load_plan(cases_file(), case="PreemptionBasic", workload="tiny")
    settings = Settings(shards=2, redis_url=redis_url, key_prefix="prom:", seed=4)
    with MetricsServer(metrics, f"127.0.0.1:{port}"):
        run_bench(settings, plan, metrics=LoopMetrics(metrics))
        # scraped after the run more than once, so that rates have two samples
        wait_until(lambda: scrapes(base) >= 3, 30, "three scrapes")
    assert query(base, 'up{job="optimist"}')
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert len(exprs) >= 10
    for expr in exprs:
        assert query(base, expr.replace("$__rate_interval", "1m")), f"no data: {expr}"
    scheduled = query(base, 'sum(scheduler_schedule_attempts_total{result="scheduled"})')
    assert float(scheduled[0]["value"][1]) == 100  # 80 fill pods and 20 preemptors
