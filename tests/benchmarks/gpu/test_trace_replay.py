"""`optimist replay-gpu-trace`: the FGD paper's protocol, through the real platform, small."""

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.gpu.trace_files import TraceError, read_nodes, read_tasks
from benchmarks.gpu.trace_replay import arrivals, replay_settings, replay_trace
from optimist.cli.main import app
from shards.plugins.gpu_placement import POLICIES

TRACES = Path(__file__).resolve().parents[4] / "shared" / "traces" / "alibaba-gpu-v2023"
NODE_COLUMNS = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
POD_COLUMNS = [
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
    "creation_time", "deletion_time", "scheduled_time",
]  # fmt: skip
TAIL = ["LS", "Running", 0, 0, 0]  # qos, phase and times: the replay reads none of them
REPORT_KEYS = {
    "policy",
    "seeds",
    "gpu_total",
    "unallocated_gpu_pct_at_100",
    "unallocated_gpu_pct_end",
    "fragmentation_rate_at_100",
    "failed_pods",
}


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(columns)
        out.writerows(rows)
    return path


@pytest.fixture
def small_trace(tmp_path):
    """12 nodes of two models and 2, 4 or 8 GPUs; 60 tasks of every kind."""
    nodes = [
        [f"node-{i:02d}", 32000, 131072, (2, 4, 8)[i % 3], "T4" if i % 2 else "V100"]
        for i in range(12)
    ]
    kinds = [(0, 0, ""), (1, 1000, ""), (1, 500, ""), (1, 250, "T4"), (2, 1000, ""), (8, 1000, "")]
    pods = [
        [f"pod-{i:03d}", 2000 + 500 * (i % 5), 4096, *kinds[i % len(kinds)], *TAIL]
        for i in range(60)
    ]
    return (
        write_csv(tmp_path / "nodes.csv", NODE_COLUMNS, nodes),
        write_csv(tmp_path / "pods.csv", POD_COLUMNS, pods),
    )


def test_a_bad_value_names_the_file_line_and_column(tmp_path):
    bad = write_csv(
        tmp_path / "n.csv", NODE_COLUMNS, [["a", 1000, 1024, 2, "T4"], ["b", "x", 1, 1, "T4"]]
    )
    with pytest.raises(TraceError, match=r"n\.csv: line 3: cpu_milli='x': not an integer"):
        read_nodes(bad)
    row = ["p", 1000, 1024, 2, 500, "", "LS", "Running", 0, 0, 0]
    with pytest.raises(
        TraceError, match="line 2: gpu_milli=500: a task of 2 GPUs takes them whole"
    ):
        read_tasks(write_csv(tmp_path / "p.csv", POD_COLUMNS, [row]))
    with pytest.raises(TraceError, match="missing columns gpu_milli"):
        read_tasks(write_csv(tmp_path / "q.csv", POD_COLUMNS[:4], [row[:4]]))


def test_arrivals_shuffle_and_top_up_to_130_percent_the_same_way_for_a_seed(small_trace):
    _, pods = small_trace
    tasks = read_tasks(pods)
    capacity = 100_000  # milli: more than the 60 tasks ask for, less than 130% of it
    order = arrivals(tasks, capacity, 42)
    assert order == arrivals(tasks, capacity, 42) != arrivals(tasks, capacity, 43)
    assert sorted(t.name for t in order[: len(tasks)]) == sorted(t.name for t in tasks)
    requested = sum(t.gpu_request for t in order)
    assert requested >= 1.3 * capacity > requested - max(t.gpu_request for t in tasks)


@pytest.mark.skipif(not TRACES.is_dir(), reason=f"the Alibaba trace is not at {TRACES}")
def test_every_trace_file_reads():
    nodes = read_nodes(TRACES / "openb_node_list_gpu_node.csv")
    assert len(nodes) == 1213 and sum(n.gpus for n in nodes) == 6212
    for path in sorted(TRACES.glob("openb_pod_list_*.csv")):
        tasks = read_tasks(path)
        assert tasks and all(t.kind for t in tasks), path.name


@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("shards", [1, 2])
def test_the_replay_places_through_the_platform_and_reports(
    small_trace, redis_url, key_prefix, shards
):
    nodes, pods = small_trace
    settings = replace(replay_settings(shards, redis_url=redis_url), key_prefix=key_prefix)
    report = replay_trace(nodes, pods, "fgd", [42, 43], settings)
    assert report.keys() >= REPORT_KEYS
    several = shards > 1  # partitions, small batches one at a time: the replay's defaults
    assert (report["node_partitions"], report["batch_pods"]) == (several, 64 if several else 256)
    assert report["inflight_per_shard"] == (1 if several else 2)
    assert report["invariant_violations"] == []  # per-GPU accounting checked too
    assert report["gpu_total"] == 4 * (2 + 4 + 8)
    at_100 = report["unallocated_gpu_pct_at_100"]
    assert len(at_100["per_seed"]) == 2 and 0 <= at_100["mean"] < 100
    assert report["unallocated_gpu_pct_end"]["mean"] <= at_100["mean"]  # nothing leaves
    assert report["failed_pods"], "130% of capacity arrived: some tasks must fail"
    assert report["attempts_per_pod"]["mean"] >= 1
    assert len(report["curve_unallocated_gpu_pct"]) >= 100


@pytest.mark.usefixtures("ray_session")
def test_the_command_compares_policies_in_a_report_and_a_png(small_trace, tmp_path, redis_url):
    nodes, pods = small_trace
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    args = ["replay-gpu-trace", "--nodes", str(nodes), "--pods", str(pods), "--seeds", "42"]
    args += ["--policy", "best-fit,fgd", "--report", str(out), "--plot", str(png)]
    result = CliRunner().invoke(app, [*args, "--redis-url", redis_url])
    assert result.exit_code == 0, result.output
    runs = json.loads(out.read_text())["runs"]
    assert [r["policy"] for r in runs] == ["best-fit", "fgd"]
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "best-fit" in result.output and "fgd" in result.output
    bad = CliRunner().invoke(app, [*args[:-4], "--policy", "tightest"])
    assert bad.exit_code == 2 and all(p in bad.output for p in POLICIES)


def test_the_command_replays_a_resampled_mix_and_reports_it(small_trace, tmp_path, redis_url):
    nodes, pods = small_trace
    out = tmp_path / "r.json"
    args = ["replay-gpu-trace", "--nodes", str(nodes), "--pods", str(pods), "--seeds", "42"]
    args += ["--policy", "fgd", "--redis-url", redis_url, "--report", str(out)]
    result = CliRunner().invoke(app, [*args, "--resample", "share=60", "--resample-seed", "3"])
    assert result.exit_code == 0, result.output
    mix = json.loads(out.read_text())["mix"]
    assert (mix["targets"], mix["seed"]) == ({"share": 60.0}, 3)
    assert mix["composition_pct"]["share"] == pytest.approx(60, abs=5)
    assert "resampled share=60 (seed 3)" in result.output
    bad = CliRunner().invoke(app, [*args, "--resample", "share=lots"])
    assert bad.exit_code == 2 and "'lots' is not a percent" in bad.output
