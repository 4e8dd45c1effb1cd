"""The API bench's typed report reads and writes the result files it always wrote.

The `api-*.json` files under results/ were written when the report was a dict (see
the README there): each must read back into the model, strictly, and dump to the same
text; the comparison must come out of the runs as it did; and the tables and the page
must show what they showed.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from rich.console import Console

from benchmarks.apiserver.api_bench import compare
from benchmarks.commands.api_bench_command import apiserver_tables
from benchmarks.report.api_report import ApiBenchReport, ApiRunNotRun, ApiRunReport
from benchmarks.report.pages import render_html
from tests.benchmarks.report.result_files import RESULTS, figures

FILES = ("api-kwok", "api-apiserver")


@pytest.mark.parametrize("name", FILES)
def test_a_result_file_reads_back_and_dumps_to_the_same_text(name):
    doc = figures(name)
    report = ApiBenchReport.model_validate(doc)
    dumped = report.model_dump(mode="json")
    # the same text: keys, their order, nesting and every value (an int stays an int)
    assert json.dumps(dumped, indent=2) == json.dumps(doc, indent=2)
    assert report.model_dump() == dumped  # what the HTML page gets
    assert render_html(report.model_dump()) == render_html(doc)


@pytest.mark.parametrize("name", FILES)
def test_the_comparison_comes_out_of_the_runs_as_it_did(name):
    report = ApiBenchReport.model_validate(figures(name))
    assert all(isinstance(r, ApiRunReport) for r in report.runs)
    assert compare(report.runs, report.ceiling_pods_per_s.median) == report.cases


def test_ready_and_the_ratio_are_there_only_where_measured():
    kwok = ApiBenchReport.model_validate(figures("api-kwok"))
    assert all(f.ready_p50_s is not None for f in kwok.cases[0].schedulers.values())
    plain = ApiBenchReport.model_validate(figures("api-apiserver"))
    optimist = plain.cases[0].schedulers["optimist"]
    assert optimist.ready_p50_s is None and "ready_p50_s" not in optimist.model_dump()
    alone = compare([r for r in plain.runs if r.scheduler == "optimist"], 0.0)
    assert "ratio" not in alone[0].model_dump() and "share_of_ceiling" not in alone[0].model_dump()


def test_a_run_that_never_started_keeps_its_few_keys_and_is_left_out_of_the_medians():
    doc = figures("api-apiserver")
    never = {
        "name": doc["runs"][0]["name"],
        "scheduler": "optimist",
        "round": 2,
        "error": "case x: optimist run exited (1) before it was ready",
        "invariant_violations": [],
        "warnings": [],
    }
    doc["runs"].append(never)
    report = ApiBenchReport.model_validate(doc)
    assert isinstance(report.runs[-1], ApiRunNotRun)
    assert json.dumps(report.model_dump(mode="json")) == json.dumps(doc)
    [case] = compare(report.runs, report.ceiling_pods_per_s.median)
    assert case.schedulers["optimist"].errors == [never["error"]]
    assert (
        case.schedulers["optimist"].pods_per_s_runs
        == report.cases[0].schedulers["optimist"].pods_per_s_runs
    )


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(new_figure=1),  # at the top
        lambda d: d["cases"][0].update(new_figure=1),  # in a comparison
        lambda d: d["cases"][0]["schedulers"]["optimist"].update(new_figure=1),
        lambda d: d["runs"][0].update(new_figure=1),  # in a run
        lambda d: d["runs"][0]["all_pods"].update(new_figure=1),  # deeper
        lambda d: d["runs"][0].pop("nodes_used"),  # a figure missing
        lambda d: d["ceiling_pods_per_s"].pop("median"),
    ],
)
def test_a_key_the_model_does_not_know_fails(change):
    doc = figures("api-kwok")
    change(doc)
    with pytest.raises(ValidationError):
        ApiBenchReport.model_validate(doc)


def test_the_tables_show_what_they_showed_from_the_dicts():
    out = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    for name in FILES:
        for table in apiserver_tables(ApiBenchReport.model_validate(figures(name))):
            out.print(table)
    assert out.export_text() == (RESULTS / "api-tables.txt").read_text()


def test_a_bench_that_measured_no_ceiling_leaves_it_out_of_the_file_the_tables_and_the_page():
    """`--ceiling-pods 0`: no server is started for the ceiling, and nothing is said of it."""
    doc = figures("api-apiserver")
    del doc["ceiling_pods_per_s"]
    for case in doc["cases"]:
        del case["share_of_ceiling"]
    report = ApiBenchReport.model_validate(doc)
    assert report.ceiling_pods_per_s is None
    assert json.dumps(report.model_dump(mode="json")) == json.dumps(doc)
    assert compare(report.runs, None) == report.cases
    console = Console(record=True, width=200)
    for table in apiserver_tables(report):
        console.print(table)
    text = console.export_text()
    assert "pods/s (median)" in text and "ceiling" not in text
    page = render_html(report.model_dump())
    assert "Through a real kube-apiserver" in page and "ceiling" not in page
