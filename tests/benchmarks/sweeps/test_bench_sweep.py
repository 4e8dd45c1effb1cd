"""`optimist bench --sweep`: one setting varied over the same pods, and its mistakes."""

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks.cases import cases_file
from benchmarks.report.bench_report import BenchReport
from benchmarks.simulated.sim_bench import BenchRun, Plan
from benchmarks.sweeps import bench_sweep
from benchmarks.sweeps.bench_sweep import SweepError, parse_sweep
from optimist.cli.main import app
from optimist.settings import Settings
from tests.benchmarks.report.result_files import figures

SHIPPED = cases_file()


def test_values_are_read_by_the_variable():
    assert parse_sweep("shards=1,2,4") == ("shards", [1, 2, 4])
    assert parse_sweep("candidates=1,3") == ("candidates", [1, 3])
    assert parse_sweep("node-partitions=false,true") == ("node-partitions", [False, True])
    assert parse_sweep("percentageOfNodesToScore=0,50") == ("percentageOfNodesToScore", [0, 50])


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("replicas=1,2", "'replicas' is not one of"),
        ("shards", "give values"),
        ("shards=1,x", "value 'x'"),
        ("shards=0", "at least 1"),
        ("percentageOfNodesToScore=101", "from 0 (adaptive) to 100"),
        ("node-partitions=yes", "true or false"),
    ],
)
def test_bad_sweeps_name_the_value(text, says):
    with pytest.raises(SweepError, match=None) as err:
        parse_sweep(text)
    assert says in str(err.value)


@pytest.mark.usefixtures("ray_session")
def test_a_sweep_runs_the_same_pods_once_per_value(tmp_path, redis_url):
    report, page = tmp_path / "r.json", tmp_path / "r.html"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            *(str(SHIPPED), "--workload", "SchedulingBasic/tiny"),
            *("--sweep", "binders=1,2"),
            *("--redis-url", redis_url, "--no-progress"),
            *("--report", str(report), "--html", str(page)),
        ],
    )
    assert result.exit_code == 0, result.output
    r = json.loads(report.read_text())
    assert r["sweep"]["variable"] == "binders" and r["invariant_violations"] == []
    runs = r["sweep"]["runs"]
    assert [run["value"] for run in runs] == [1, 2]
    assert [run["report"]["config"]["binders"] for run in runs] == [1, 2]
    assert len({run["report"]["pods_created"] for run in runs}) == 1
    assert all(run["report"]["pods_scheduled"] == run["report"]["pods_created"] for run in runs)
    assert "quality" in runs[0]["report"] and "<svg" in page.read_text()


def test_a_bad_conflict_mode_stops_before_any_run():
    result = CliRunner().invoke(app, ["bench", "--sweep", "conflict-mode=fine,sloppy"])
    assert result.exit_code == 2 and "value 'sloppy'" in result.output


def test_each_run_of_a_sweep_times_its_start_up_from_its_own_start(monkeypatch):
    """The first run's first decision is timed from the command's start (Ray's start is
    its to pay); a later run's from its own, not charged with the runs before it (which
    made every later run warn that start-up dominated)."""
    report = BenchReport.model_validate(figures("failed-op"))  # nothing measured
    began: list[float | None] = []

    def run_bench(settings: Settings, plan: Plan, **options: Any) -> BenchRun[BenchReport]:
        began.append(options["began"])
        return BenchRun(report, {})

    monkeypatch.setattr(bench_sweep, "run_bench", run_bench)
    bench_sweep.run_sweep(Settings(), Plan(()), "binders", [1, 2, 3])
    assert began[0] is None and all(isinstance(b, float) for b in began[1:])
    assert began[1] < began[2]
