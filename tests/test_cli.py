"""`optimist bench` as a user runs it, at a small size."""

import csv
import json
import logging
import os
import pstats
import signal
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.simulated.sim_bench import case_warnings
from optimist.cli.main import app
from tests.process_tree import MarkedCommand

pytestmark = pytest.mark.usefixtures("ray_session")

CASES = Path(__file__).parent / "benchmarks" / "cases" / "performance-config.yaml"

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
    "seed",
    "cases",
    "throughput_samples",
    "latency_s",
    "memory_peak_bytes",
    "redis_commands",
    "redis_commands_per_pod",
    "redis_round_trips",
    "redis_round_trips_per_pod",
    "cpu_s",
    "cpu_us_per_pod",
    "first_decision_s",
    "rollbacks",
}


def test_bench_writes_report_and_placements(tmp_path, redis_url):
    report, placements = tmp_path / "r.json", tmp_path / "p.csv"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "--workload",  # one with a threshold upstream published
            "SchedulingBasic/5000Nodes_10000Pods",
            "--nodes",
            "50",
            "--pods",
            "300",
            "--shards",
            "2",
            "--cpu-affinity",
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
    # each shard pinned to a core of its own (round robin), its own decision rate beside
    cores = sorted(os.sched_getaffinity(0))
    assert [s["core"] for s in r["shards"]] == [cores[0], cores[1 % len(cores)]]
    assert sum(s["decided_pods"] for s in r["shards"]) >= 300
    rates = [s["decisions_per_busy_s"] for s in r["shards"] if s["decided_pods"]]
    assert rates and all(rate > 0 for rate in rates)
    # the shipped SchedulingBasic workload, its initNodes and measurePods set by the flags
    [case] = r["cases"]
    assert case["name"] == "SchedulingBasic/5000Nodes_10000Pods[initNodes=50,measurePods=300]"
    assert (case["case"], case["workload"]) == ("SchedulingBasic", "5000Nodes_10000Pods")
    assert case["overrides"] == {"initNodes": 50, "measurePods": 300}
    # named so in the table's heading too: text, not markup
    assert f"optimist bench: {case['name']}: 50 nodes" in " ".join(result.output.split())
    assert case["params"] == {"initNodes": 50, "initPods": 1000, "measurePods": 300}
    assert r["pods_created"] == r["pods_scheduled"] == 300
    assert r["upstream_threshold"]["note"] == "published upstream threshold, other hardware"
    assert "published upstream threshold, other hardware" in result.output
    assert set(r["throughput_pods_per_s"]) == {"average", "p50", "p90", "p99"}
    shard_keys = {"id", "ray_node_id", "units", "pods", "busy_s", "idle_fraction"}
    assert [set(s) >= shard_keys for s in r["shards"]] == [True, True]
    assert [[n["id"] for n in s["ray_nodes"]] for s in r["shards"]] == [
        [s["ray_node_id"]] for s in r["shards"]
    ]
    assert r["machine"]["cores"] >= 1 and r["versions"]["redis_server"]
    # what made it: the command (here, the test's) and this checkout's commit
    assert r["command"].startswith("optimist") and len(r["commit"].split("+")[0]) == 40
    rows = list(csv.reader(placements.open()))
    assert rows[0] == ["namespace", "pod", "node"] and len(rows) == 1 + 1000 + 300
    # 300 pods take less time than starting did (this process's start counts), and
    # less than the 10 s a throughput figure needs: both said
    short, start_up = r["warnings"]
    assert short.startswith("the measured phase took") and "under the 10 s" in short
    assert start_up.startswith("start-up, not scheduling, dominates this run")
    assert "warning: start-up, not scheduling" in result.output


def test_a_long_run_longer_than_its_start_up_is_not_warned_of():
    assert case_warnings(30.0, 4.0, None) == []
    [said] = case_warnings(12.0, 14.0, None)
    assert "first decision came 14.0 s after" in said and "took 12.00 s" in said
    [short] = case_warnings(9.5, 1.0, None)
    assert "the measured phase took 9.50 s, under the 10 s" in short


def test_bench_runs_a_case_file(tmp_path, redis_url):
    report = tmp_path / "r.json"
    args = ["bench", str(CASES), "--workload", "Everything/small", "--shards", "1"]
    args += ["--no-progress", "--redis-url", redis_url, "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Everything/small" in result.output
    assert json.loads(report.read_text())["cases"][0]["pods_scheduled"] == 18


def test_bench_serves_its_metrics_and_lingers(redis_url, caplog):
    args = ["bench", str(CASES), "--workload", "Everything/small", "--shards", "1"]
    args += ["--no-progress", "--redis-url", redis_url]
    args += ["--metrics-address", "127.0.0.1:0", "--linger", "0.2"]
    with caplog.at_level(logging.INFO, logger="optimist"):
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert any("serving metrics on http://127.0.0.1:" in r.message for r in caplog.records)


def test_bench_takes_the_profiling_endpoint_only_with_its_metrics(redis_url, caplog):
    args = ["bench", str(CASES), "--workload", "Everything/small", "--shards", "1"]
    args += ["--no-progress", "--redis-url", redis_url, "--profiling-endpoint"]
    args += ["--metrics-address", "127.0.0.1:0", "--linger", "0.2"]
    assert CliRunner().invoke(app, args).exit_code == 0
    # without --metrics-address, or with --profile as well: refused before anything runs
    alone = CliRunner().invoke(app, ["bench", str(CASES), "--profiling-endpoint"])
    assert alone.exit_code == 2 and "needs --metrics-address" in alone.output


@pytest.mark.parametrize(
    "args",
    [["--compare", "kube-scheduler"], ["--rounds", "2"], ["--ceiling-pods", "200"]],
)
def test_the_simulated_bench_refuses_what_only_the_api_bench_takes(args):
    result = CliRunner().invoke(app, ["bench", str(CASES), *args])
    assert result.exit_code == 2 and "go with --cluster apiserver or kwok" in result.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--case", "Nothing"], "no workload matches case='Nothing'"),
        (["--workload", "Volumes/one"], "op 1 (createPods): optimist cannot run it"),
    ],
)
def test_bench_names_what_it_cannot_run(redis_url, args, expected):
    cmd = ["bench", str(CASES), *args, "--shards", "1", "--no-progress", "--redis-url", redis_url]
    result = CliRunner().invoke(app, cmd)
    assert result.exit_code == (2 if "Nothing" in args else 1)
    assert expected in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        ("optimist-shard", "offers none of it"),  # this Ray has no such resource: refused
        ("optimist-shard=0", "AMOUNT > 0"),
        ("=2", "want NAME or NAME=AMOUNT"),
    ],
)
def test_bench_refuses_shard_resources_it_cannot_have(redis_url, resource, expected):
    args = ["bench", str(CASES), "--workload", "Everything/small", "--shards", "2"]
    args += ["--no-progress", "--redis-url", redis_url, "--shard-resource", resource]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and expected in " ".join(result.output.split()), result.output


def test_bench_on_a_store_split_over_private_redis_servers(tmp_path):
    report = tmp_path / "r.json"
    args = ["bench", str(CASES), "--workload", "Everything/small", "--shards", "2"]
    args += ["--no-progress", "--redis-partitions", "3", "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    r = json.loads(report.read_text())
    assert r["config"]["redis_partitions"] == 3 and r["cases"][0]["pods_scheduled"] == 18
    refused = CliRunner().invoke(app, [*args[:-2], "--binders", "2"])
    assert refused.exit_code == 2 and "driver's binder alone" in refused.output


def test_redis_password_never_reaches_the_report():
    from optimist.settings import Settings

    public = Settings(redis_url="redis://:s3cret@127.0.0.1:6399/0").public()
    assert "s3cret" not in json.dumps(public)
    assert public["redis_url"] == "redis://:***@127.0.0.1:6399/0"


def test_extender_keys_never_reach_the_report():
    from optimist.settings import Settings
    from shards.extender_config import ExtenderConfig

    tls = {"keyData": "c2VjcmV0LWtleQ==", "caData": "Y2E=", "insecure": False}
    extender = ExtenderConfig.from_wire({"urlPrefix": "https://x", "tlsConfig": tls})
    public = Settings(extenders=(extender,)).public()
    assert "c2VjcmV0LWtleQ==" not in json.dumps(public)
    assert public["extenders"][0]["tlsConfig"]["insecure"] is False


def test_bench_writes_cpu_profiles_of_the_driver_and_each_shard(tmp_path, redis_url):
    args = ["bench", str(CASES), "--workload", "Everything/small", "--shards", "2"]
    args += ["--no-progress", "--redis-url", redis_url, "--profile", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in tmp_path.iterdir())
    stem = "Everything_small"
    assert names == [f"{stem}.driver.prof", f"{stem}.shard-0.prof", f"{stem}.shard-1.prof"]
    shard = pstats.Stats(str(tmp_path / f"{stem}.shard-0.prof"))
    assert any(name == "handle" for _, _, name in shard.stats)  # ShardCore.handle ran there
    driver = pstats.Stats(str(tmp_path / f"{stem}.driver.prof"))
    assert any(name == "step" for _, _, name in driver.stats)  # the control loop's turns


def test_run_refuses_kube_schedulers_own_lease(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: optimist}]\n"  # leaderElection left at upstream's defaults
    )
    result = CliRunner().invoke(app, ["run", "--config", str(config)])
    assert result.exit_code == 2
    assert "'kube-scheduler' is kube-scheduler's own lease" in " ".join(result.output.split())


def test_a_redirected_bench_prints_progress_lines_and_its_summary_before_lingering(
    tmp_path, redis_url
):
    """stdout to a file or a pipe: progress comes as lines, and the summary as soon as
    the run is over, not when the process exits 60 s of lingering later; a ^C while it
    lingers stops it and everything it started."""
    command = [str(Path(sys.executable).with_name("optimist")), "bench", "--nodes", "50"]
    command += ["--pods", "300", "--redis-url", redis_url]
    command += ["--metrics-address", "127.0.0.1:0", "--linger", "600"]
    out_path = tmp_path / "out.txt"
    with out_path.open("w") as out, MarkedCommand(command, out) as bench:
        bench.wait_for("summary", lambda: "pods/s average" in out_path.read_text())
        text = out_path.read_text()
        assert bench.process.poll() is None  # still lingering: the summary did not wait
        # initPods' pods too; no live bar written into a file
        assert (
            "SchedulingBasic/5000Nodes_150000Pods[initNodes=50,measurePods=300]: "
            "1300/1300 pods settled" in text
        )
        assert "measurePods=300] ━" not in text
        bench.process.send_signal(signal.SIGINT)  # as a user's ^C
        bench.process.wait(timeout=60)
        assert not bench.left_after(15)
