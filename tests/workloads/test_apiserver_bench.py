"""`optimist bench --cluster apiserver` through the session's real API server: the pods
made by the bench, scheduled by `optimist run` in its own process and by upstream's
kube-scheduler, and judged from what the server holds."""

from __future__ import annotations

import json
from collections import Counter
from html import escape

from typer.testing import CliRunner

from cluster.kube.informer import list_all
from optimist.cli import app
from optimist.report import comparison_rows
from tests.workloads.test_fidelity import anti_affine_case


def test_both_schedulers_place_an_upstream_case_through_the_api_server(
    tmp_path, control_plane, kube_api
):
    """10 pods with required anti-affinity on the hostname over 5 nodes: each scheduler
    binds 5, one a node, and reports 5 unschedulable through the PodScheduled
    condition; the invariant checker reads the server; what each run made is gone
    after it. The HTML page carries the terminal's figures."""
    path = anti_affine_case(tmp_path)
    report, page = tmp_path / "report.json", tmp_path / "report.html"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            str(path),
            "--cluster",
            "apiserver",
            "--compare",
            "kube-scheduler",
            "--kubeconfig",
            str(control_plane.admin_kubeconfig),
            "--shards",
            "1",
            "--timeout",
            "120",
            "--no-progress",
            "--report",
            str(report),
            "--html",
            str(page),
        ],
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(report.read_text())
    assert [r["scheduler"] for r in figures["runs"]] == ["optimist", "kube-scheduler"]
    for run in figures["runs"]:
        assert run["error"] is None and run["invariant_violations"] == [], run
        assert run["pods_created"] == 10 and run["nodes"] == 5
        assert run["pods_scheduled"] == 5 and run["pods_unschedulable"] == 5, run
        assert run["nodes_used"] == 5
        assert run["cpu_s"]["scheduler"] > 0 and run["memory_peak_bytes"]["scheduler"] > 0
        assert run["latency_s"]["created_to_scheduled"]["count"] == 5
    [case] = figures["cases"]
    assert set(case["schedulers"]) == {"optimist", "kube-scheduler"} and case["ratio"] > 0
    assert figures["ceiling_pods_per_s"]["median"] > 0
    assert "optimist / kube-scheduler" in result.output
    html = page.read_text()
    assert "<h2>Through a real kube-apiserver</h2>" in html and "<svg" in html
    for label, cells in comparison_rows(case, figures["ceiling_pods_per_s"]["median"]):
        assert label in result.output and f"<th>{escape(label)}</th>" in html
        assert all(f'<td class="n">{escape(cell)}</td>' in html for cell in cells)
    client = kube_api.client()
    assert list_all(client, "/api/v1/nodes")[0] == []
    namespaces = {n["metadata"]["name"] for n in list_all(client, "/api/v1/namespaces")[0]}
    assert "optimist-ceiling" not in namespaces
    pods = list_all(client, "/api/v1/pods")[0]
    assert Counter(p["metadata"]["namespace"] for p in pods) == Counter()
