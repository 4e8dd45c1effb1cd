"""The typed report reads and writes the result files `optimist bench` always wrote.

The files under results/ were written when the report was a dict (see the README
there): each must read back into the model, strictly, and dump to the same text;
the tables must show what they showed; and a run now must write a file of the same
keys, in the same order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError
from rich.console import Console
from typer.testing import CliRunner

from benchmarks.commands.bench_tables import explained, summary_table, sweep_table
from benchmarks.report.bench_report import BenchReport, SweepReport
from optimist.cli.main import app
from tests.benchmarks.report.result_files import RESULTS, figures, report_of

FILES = ("one-workload-chaos-explain", "two-workloads", "failed-op", "sweep")


def model(doc: dict[str, Any]) -> BenchReport | SweepReport:
    return SweepReport.model_validate(doc) if "sweep" in doc else BenchReport.model_validate(doc)


@pytest.mark.parametrize("name", FILES)
def test_a_result_file_reads_back_and_dumps_to_the_same_text(name):
    doc = figures(name)
    dumped = model(doc).model_dump(mode="json")
    # the same text: keys, their order, nesting and every value (an int stays an int)
    assert json.dumps(dumped, indent=2) == json.dumps(doc, indent=2)
    assert model(doc).model_dump() == dumped  # what the HTML page gets


def test_the_run_figures_are_the_one_workload_s_or_pooled():
    one = BenchReport.model_validate(figures("one-workload-chaos-explain"))
    assert one.pooled is None and one.figures is one.cases[0]
    assert one.faults_injected == {"kill-binder": 2, "kill-shard": 2}
    assert one.cases[0].explain is not None and one.cases[0].chaos is not None
    two = BenchReport.model_validate(figures("two-workloads"))
    assert two.pooled is not None and two.figures is two.pooled
    assert two.figures.pods_created == sum(c.pods_created for c in two.cases)
    assert "faults_injected" not in two.model_dump()  # a run without --chaos has none


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(new_figure=1),  # at the top
        lambda d: d["cases"][0].update(new_figure=1),  # in a workload
        lambda d: d["cases"][0]["queue"].update(new_figure=1),  # deeper
        lambda d: d["shards"][0].update(new_figure=1),
        lambda d: d.pop("pods_created"),  # a figure missing
        lambda d: d.update(pods_created=d["pods_created"] + 1),  # unlike its workload's
    ],
)
def test_a_key_the_model_does_not_know_fails(change):
    doc = figures("one-workload-chaos-explain")
    change(doc)
    with pytest.raises(ValidationError):
        BenchReport.model_validate(doc)


def test_a_several_workload_report_knows_its_pooled_keys_too():
    doc = figures("two-workloads")
    doc["queue"] = doc["cases"][0]["queue"]  # a workload's, not pooled
    with pytest.raises(ValidationError):
        BenchReport.model_validate(doc)


def test_the_tables_show_what_they_showed_from_the_dicts():
    out = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    for name in FILES:
        report = model(figures(name))
        if isinstance(report, SweepReport):
            out.print(sweep_table(report))
            continue
        out.print(summary_table(report))
        for case in report.cases:
            if case.explain:
                out.print(explained(case.name, case.explain))
    assert out.export_text() == (RESULTS / "tables.txt").read_text()


@pytest.mark.usefixtures("ray_session")
def test_a_run_writes_the_keys_it_always_wrote(tmp_path, redis_url):
    path = tmp_path / "r.json"
    args = ["bench", "--nodes", "40", "--pods", "300", "--shards", "2", "--explain-every", "0.01"]
    args += ["--no-progress", "--redis-url", redis_url, "--report", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(path.read_text())
    before = json.loads((RESULTS / "one-workload-chaos-explain.json").read_text())
    assert list(doc) == [k for k in before if k != "faults_injected"]  # no --chaos here
    assert list(doc["cases"][0]) == list(before["cases"][0])
    report = report_of(doc)
    assert json.dumps(model(report).model_dump(mode="json")) == json.dumps(report)
