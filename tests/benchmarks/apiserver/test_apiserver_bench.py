"""`optimist bench --cluster apiserver` through the session's real API server: the pods
made by the bench, scheduled by `optimist run` in its own process and by upstream's
kube-scheduler, and judged from what the server holds."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from collections import Counter
from html import escape
from pathlib import Path

import psutil
import pytest
import ray
from typer.testing import CliRunner

from benchmarks.chaos import LIVING_FAULTS, PLANE_FAULTS
from benchmarks.controlplane.control_plane import stop_tree
from benchmarks.controlplane.living_plane import JOB_RUNS_FOR
from benchmarks.report.api_report import ApiCaseComparison
from benchmarks.report.instruments import comparison_rows
from optimist.cli.main import app
from optimist.kube.informer import list_all
from optimist.offline.replay import load_snapshot
from tests.benchmarks.simulated.test_fidelity import (
    anti_affine_case,
    waited_anti_affine_case,
    write_case,
)
from tests.kube.api import wait_for

# no ceiling measured (a server of its own for it, where none is given), but in the
# test of the comparison, on 200 pods: about a second, not the bench's eleven
NO_CEILING = ["--ceiling-pods", "0"]


def joined() -> list[str]:
    """optimist run joins the session's Ray, not starting one of its own (seconds each)."""
    return ["--ray-address", ray.get_runtime_context().gcs_address]


@pytest.mark.usefixtures("ray_session")
def test_both_schedulers_place_an_upstream_case_through_the_api_server(
    tmp_path, control_plane, kube_api
):
    """10 pods with required anti-affinity on the hostname over 5 nodes: each scheduler
    binds 5, one a node, and reports 5 unschedulable through the PodScheduled
    condition; the invariant checker reads the server; what each run made is gone
    after it. The HTML page carries the terminal's figures; the placements and the
    snapshot are what the server held at each run's end."""
    path = anti_affine_case(tmp_path)
    report, page = tmp_path / "report.json", tmp_path / "report.html"
    placements, state = tmp_path / "placements.csv", tmp_path / "state.json"
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
            "--placements",
            str(placements),
            "--save-state",
            str(state),
            "--ceiling-pods",
            "200",
            *joined(),
        ],
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(report.read_text())
    assert [r["scheduler"] for r in figures["runs"]] == ["optimist", "kube-scheduler"]
    # one workload, one round: the scheduler alone tells the runs apart
    header, *rows = [line.split(",") for line in placements.read_text().splitlines()]
    assert header == ["scheduler", "namespace", "pod", "node"]
    for name in ("optimist", "kube-scheduler"):
        nodes = [node for scheduler, _, _, node in rows if scheduler == name]
        assert len(nodes) == 5 and len(set(nodes)) == 5  # apart by hostname
    snapshot = load_snapshot(state, frozenset({"default-scheduler"}))  # the last run's
    assert len(snapshot.node_manifests) == 5 and len(snapshot.replayed) == 10
    assert sorted(snapshot.actual.values()) == sorted(
        node for scheduler, _, _, node in rows if scheduler == "kube-scheduler"
    )
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
    assert figures["ceiling_pods_per_s"]["pods"] == 200
    assert "optimist / kube-scheduler" in result.output
    html = page.read_text()
    assert "<h2>Through a real kube-apiserver</h2>" in html and "<svg" in html
    typed = ApiCaseComparison.model_validate(case)
    for label, cells in comparison_rows(typed, figures["ceiling_pods_per_s"]["median"]):
        assert label in result.output and f"<th>{escape(label)}</th>" in html
        assert all(f'<td class="n">{escape(cell)}</td>' in html for cell in cells)
    client = kube_api.client()
    assert list_all(client, "/api/v1/nodes")[0] == []
    namespaces = {n["metadata"]["name"] for n in list_all(client, "/api/v1/namespaces")[0]}
    assert "optimist-ceiling" not in namespaces
    pods = list_all(client, "/api/v1/pods")[0]
    assert Counter(p["metadata"]["namespace"] for p in pods) == Counter()


@pytest.mark.usefixtures("ray_session")
def test_the_null_scheduler_binds_every_pod_round_robin_deciding_nothing(tmp_path, control_plane):
    """The limit of the path beside optimist: it binds the measured pods in turn over
    the nodes, each once, with optimist's writes (a Scheduled event each), and both
    read as a share of its pods/s."""
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 4},
            {"opcode": "startCollectingMetrics"},
            {"opcode": "createPods", "count": 12},  # upstream's default pod
            {"opcode": "stopCollectingMetrics"},
        ],
        {},
    )
    report = tmp_path / "report.json"
    placements = tmp_path / "placements.csv"
    kubeconfig = str(control_plane.admin_kubeconfig)
    result = CliRunner().invoke(
        app,
        [
            "bench", str(path), "--cluster", "apiserver", "--compare", "null-scheduler",
            "--kubeconfig", kubeconfig, "--shards", "1", "--timeout", "120", "--no-progress",
            "--report", str(report), "--placements", str(placements), *NO_CEILING,
            *joined(),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    figures = json.loads(report.read_text())
    assert [r["scheduler"] for r in figures["runs"]] == ["optimist", "null-scheduler"]
    assert all(r["pods_scheduled"] == 12 and r["error"] is None for r in figures["runs"])
    _, *rows = [line.split(",") for line in placements.read_text().splitlines()]
    spread = Counter(node for scheduler, _, _, node in rows if scheduler == "null-scheduler")
    assert sorted(spread.values()) == [3, 3, 3, 3]  # in turn: 12 pods over 4 nodes
    assert "of the null scheduler's pods/s" in result.output and "100%" in result.output


@pytest.mark.usefixtures("ray_session")
def test_pods_bound_at_creation_are_made_bound_and_counted_apart(tmp_path, control_plane):
    """boundAtCreation through a server given: 40 pods made with spec.nodeName, ten to
    each node in turn, none bound by optimist; the 8 measured pods after them are, and
    the report counts the two apart. Removed after the run, as everything it made."""
    pod = {**POD, "spec": {**POD["spec"], "schedulerName": "elsewhere"}}
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 4},
            {"opcode": "createPods", "count": 40, "podTemplatePath": "config/pod.yaml"}
            | {"boundAtCreation": True},
            {"opcode": "createPods", "count": 8, "collectMetrics": True},
        ],
        {"pod.yaml": pod},
    )
    report = tmp_path / "report.json"
    args = ["bench", str(path), "--cluster", "apiserver", "--shards", "1", "--no-progress"]
    args += ["--kubeconfig", str(control_plane.admin_kubeconfig), "--report", str(report)]
    result = CliRunner().invoke(app, [*args, "--timeout", "120", *NO_CEILING, *joined()])
    assert result.exit_code == 0, result.output
    [run] = json.loads(report.read_text())["runs"]
    assert run["error"] is None and run["invariant_violations"] == [], run
    assert run["all_pods"] | {"deleted": 0} == {
        "created": 8, "bound": 8, "unschedulable": 0, "deleted": 0, "bound_at_creation": 40,
    }  # fmt: skip
    assert not control_plane.client.request("GET", "/api/v1/pods")["items"]  # removed


def test_a_failed_case_keeps_what_it_measured_through_the_api_server(tmp_path, control_plane):
    """As in the simulated bench: a createPods that waits for 10 pods that keep apart by
    hostname over 5 nodes fails the case (exit 1) naming the op, and the run keeps what
    it measured until then (5 scheduled, 5 unschedulable, over the time it ran), with
    no warning of a short phase."""
    report = tmp_path / "report.json"
    args = ["bench", str(waited_anti_affine_case(tmp_path)), "--cluster", "apiserver"]
    args += ["--scheduler", "kube-scheduler", "--timeout", "120", "--no-progress", *NO_CEILING]
    args += ["--kubeconfig", str(control_plane.admin_kubeconfig), "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    [run] = json.loads(report.read_text())["runs"]
    assert (run["failed"]["op"], run["failed"]["opcode"]) == (1, "createPods")
    assert run["error"].startswith("case Fidelity/small: op 1 (createPods): 5 of 10 pods not")
    assert (run["pods_created"], run["pods_scheduled"], run["pods_unschedulable"]) == (10, 5, 5)
    assert run["pods_pending"] == 0 and sum(run["unschedulable_reasons"].values()) == 5
    assert run["duration_s"] > 0 and sum(run["throughput_samples"]) == 5
    assert run["warnings"] == [] and "warning:" not in result.output


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "pod-"},
    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
}


def _sleepy_case(folder):
    """2 nodes, a 60-second sleep (the test acts meanwhile), then 4 pods waited for."""
    return write_case(
        folder,
        [
            {"opcode": "createNodes", "count": 2},
            {"opcode": "sleep", "duration": "60s"},
            {
                "opcode": "createPods",
                "count": 4,
                "podTemplatePath": "config/pod.yaml",
                "collectMetrics": True,
            },
        ],
        {"pod.yaml": POD},
    )


def _bench(path, *more):
    command = [sys.executable, "-c", "from optimist.cli.main import entry; entry()", "bench"]
    command += [
        str(path),
        "--cluster",
        "apiserver",
        "--shards",
        "1",
        "--no-progress",
        *NO_CEILING,
        *more,
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _scheduler_of(bench):
    for child in psutil.Process(bench.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if " run --config" in " ".join(child.cmdline()):
                return child
    return None


def _running(process: psutil.Process) -> bool:
    """Still running (a zombie init has not reaped runs no more)."""
    with contextlib.suppress(psutil.Error):
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    return False


def test_a_scheduler_that_dies_fails_its_case_at_once_not_at_the_timeout(tmp_path, control_plane):
    bench = _bench(
        _sleepy_case(tmp_path), "--kubeconfig", str(control_plane.admin_kubeconfig),
        "--timeout", "600",
    )  # fmt: skip
    try:
        # the nodes are made once the scheduler is ready: the sleep has begun
        wait_for(
            lambda: len(list_all(control_plane.client, "/api/v1/nodes")[0]) == 2,
            120,
            "the bench's nodes",
            every_s=0.5,
        )
        scheduler = wait_for(lambda: _scheduler_of(bench), 120, "optimist run", every_s=0.5)
        started = scheduler.children(recursive=True)  # its private Redis among them
        scheduler.kill()
        output, _ = bench.communicate(timeout=30)  # mid-sleep: the sleep is not waited out
    finally:
        stop_tree(bench)
    assert bench.returncode == 1, output
    assert "the scheduler exited during a sleep" in output
    # what the killed scheduler had started, left to init, the bench stopped
    assert [p for p in started if _running(p)] == []


def test_a_bench_stopped_by_sigterm_stops_what_it_started(tmp_path):
    bench = _bench(_sleepy_case(tmp_path), "--timeout", "600")
    try:
        wait_for(lambda: _scheduler_of(bench), 120, "optimist run", every_s=0.5)
        started = psutil.Process(bench.pid).children(recursive=True)
        names = {p.name() for p in started}
        assert {"etcd", "kube-apiserver"} <= names, names
        bench.send_signal(signal.SIGTERM)
        bench.communicate(timeout=120)
    finally:
        stop_tree(bench)
    _, alive = psutil.wait_procs(started, timeout=30)
    left = [(p.pid, p.name()) for p in alive]
    for process in alive:  # the test's own clean-up, should the bench have failed it
        with contextlib.suppress(psutil.Error):
            process.kill()
    assert left == []


def workloads_case(folder: Path) -> Path:
    """4 nodes; a Deployment of 12 and a Job of 6 completions, 3 at a time, whose pods
    run a second each; their pods made by the controllers, measured until a barrier."""
    app = {"name": "app", "image": "app", "resources": {"requests": {"cpu": "100m"}}}
    pod = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [app]}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 12, "selector": {"matchLabels": {"app": "web"}}, "template": pod},
    }
    runs = {"metadata": {"annotations": {JOB_RUNS_FOR: "1s"}}}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch"},
        "spec": {
            "parallelism": 3,
            "completions": 6,
            "template": {**runs, "spec": {"restartPolicy": "Never", "containers": [app]}},
        },
    }
    return write_case(
        folder,
        [
            {"opcode": "createNodes", "count": 4},
            {"opcode": "startCollectingMetrics"},
            {"opcode": "createAny", "templatePath": "config/web.yaml", "namespace": "apps"},
            {"opcode": "createAny", "templatePath": "config/batch.yaml", "namespace": "jobs"},
            {"opcode": "barrier"},
            {"opcode": "stopCollectingMetrics"},
        ],
        {"web.yaml": deployment, "batch.yaml": job},
    )


@pytest.mark.usefixtures("ray_session")
def test_a_living_cluster_s_workloads_are_made_by_controllers_and_each_stage_timed(tmp_path):
    """`--cluster kwok`: KWOK's nodes beside kube-controller-manager. createAny of a
    Deployment and a Job: the controllers make the pods, the bench measures each from
    when the watch first told of it, and the barrier waits for every pod they ask
    for (the Job's six come three at a time, as the first succeed). The report times
    created -> scheduled -> Running -> Ready, and counts what the controllers and
    KWOK cost."""
    report = tmp_path / "report.json"
    command = ["bench", str(workloads_case(tmp_path)), "--cluster", "kwok", "--shards", "1"]
    command += ["--timeout", "120", "--no-progress", "--report", str(report), *NO_CEILING]
    command += joined()
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    [run] = json.loads(report.read_text())["runs"]
    assert run["error"] is None and run["invariant_violations"] == [], run
    assert run["pods_created"] == run["pods_scheduled"] == 18, run
    stages = run["latency_s"]
    for stage in ("scheduled", "running", "ready"):
        assert stages[f"created_to_{stage}"]["count"] == 18, stages
    assert stages["running_to_ready"]["p50"] >= 0
    assert {"kube-controller-manager", "kwok"} <= run["cpu_s"].keys()
    # added, bound, and Running and Ready (KWOK writes both at once): one more than on a
    # cluster where pods never run
    assert run["pod_events_per_pod"] >= 3
    assert "created -> Ready p99, ms" in result.output
    assert "CPU s per 1,000 pods: kwok" in result.output


@pytest.mark.usefixtures("ray_session")
def test_a_workload_where_no_controller_runs_fails_its_case_naming_why(tmp_path):
    """No controller would make a Deployment's pods through a bare API server: the
    case fails at its op, saying where it can run."""
    report = tmp_path / "report.json"
    command = ["bench", str(workloads_case(tmp_path)), "--no-progress", "--report", str(report)]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 1, result.output
    [case] = json.loads(report.read_text())["cases"]
    assert case["failed"]["opcode"] == "createAny" and case["failed"]["op"] == 2
    assert "made by controllers, which run only on --cluster kwok" in case["failed"]["reason"]


@pytest.mark.faults
@pytest.mark.parametrize(
    ("cluster", "kinds"), [("apiserver", PLANE_FAULTS), ("kwok", LIVING_FAULTS)]
)
def test_every_fault_of_the_control_plane_and_of_optimist_loses_and_doubles_nothing(
    tmp_path, cluster, kinds
):
    """`--chaos all` through an API server started for the run: kube-apiserver and etcd
    killed and started again, etcd compacted under the watches, the scheduler's
    connections stalled and cut, a shard and optimist's private Redis killed, and
    optimist's leader killed with a warm standby running;
    on a living cluster, KWOK stopped past the nodes' grace too (they turn NotReady and
    are tainted). Once each while 1,800 pods are scheduled. Every pod ends bound, once,
    on a node with room, as the server holds them at the end (on a living cluster,
    Running and Ready); each fault is recovered from (a pod bound after it) and its
    pause in bindings measured."""
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 40},
            {
                "opcode": "createPods",
                "count": 1800,
                "podTemplatePath": "config/pod.yaml",
                "collectMetrics": True,
            },
        ],
        {"pod.yaml": POD},
    )
    report = tmp_path / "report.json"
    command = ["bench", str(path), "--cluster", cluster, "--shards", "2", "--chaos", "all"]
    command += ["--chaos-faults", str(len(kinds)), "--timeout", "300", "--no-progress"]
    result = CliRunner().invoke(app, [*command, "--report", str(report), *NO_CEILING])
    assert result.exit_code == 0, result.output
    [run] = json.loads(report.read_text())["runs"]
    assert run["error"] is None and run["invariant_violations"] == [], run
    assert run["pods_scheduled"] == run["all_pods"]["bound"] == 1800, run["all_pods"]
    chaos = run["chaos"]
    assert chaos["faults_injected"] == {kind: 1 for kind in kinds}, chaos
    for fault in chaos["faults"]:
        assert fault["recovered_s"] is not None and fault["stalled_s"] is not None, fault
    assert "longest pause in bindings" in result.output


@pytest.mark.faults
def test_a_scheduler_restarted_cold_and_failed_over_binds_again_and_says_how_soon(
    tmp_path, control_plane
):
    """restartScheduler, beside kube-scheduler: each as two replicas sharing a Lease
    (the case fails over too), on 4 nodes running 20 pods made bound. Cold, both
    replicas killed and two started afresh; then the leader killed while the standby
    waits. After each, 4 pods are measured, all bound once by the replicas left, and
    the report times each restart from the kill to the next binding, and gives each
    part of the scheduler's memory."""
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 4},
            {"opcode": "createPods", "count": 20, "podTemplatePath": "config/pod.yaml"}
            | {"boundAtCreation": True, "namespace": "running"},
            {"opcode": "restartScheduler"},
            {"opcode": "createPods", "count": 4, "collectMetrics": True},
            {"opcode": "restartScheduler", "failover": True},
            {"opcode": "createPods", "count": 4, "collectMetrics": True},
        ],
        {"pod.yaml": {**POD, "spec": {**POD["spec"], "schedulerName": "elsewhere"}}},
    )
    report = tmp_path / "report.json"
    args = ["bench", str(path), "--cluster", "apiserver", "--shards", "1", "--no-progress"]
    args += ["--compare", "kube-scheduler", "--timeout", "120", *NO_CEILING]
    args += ["--kubeconfig", str(control_plane.admin_kubeconfig), "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    runs = json.loads(report.read_text())["runs"]
    assert sorted(run["scheduler"] for run in runs) == ["kube-scheduler", "optimist"]
    for run in runs:
        assert run["error"] is None and run["invariant_violations"] == [], run
        assert run["pods_scheduled"] == run["all_pods"]["bound"] == 8, run["all_pods"]
        assert [r["failover"] for r in run["restarts"]] == [False, True], run["restarts"]
        assert all(r["first_binding_s"] > 0 for r in run["restarts"]), run["restarts"]
        memory = run["scheduler_memory"]  # by part: optimist's own Ray, shards and Redis
        parts = {"main", "shards", "redis", "ray"} if run["scheduler"] == "optimist" else {"main"}
        assert set(memory["peak_bytes"]) == set(memory["end_bytes"]) == parts, memory
        assert all(memory["peak_bytes"][p] >= memory["end_bytes"][p] > 0 for p in parts)
    assert not control_plane.client.request("GET", "/api/v1/pods")["items"]  # removed


@pytest.mark.parametrize(
    ("more", "told"),
    [
        (["--chaos", "kill-binder"], "kill-binder is not one of kill-apiserver"),
        (["--chaos", "all", "--kubeconfig", __file__], "not with --kubeconfig"),
    ],
)
def test_faults_the_api_server_bench_cannot_inject_are_refused(tmp_path, more, told):
    path = anti_affine_case(tmp_path)
    result = CliRunner().invoke(app, ["bench", str(path), "--cluster", "apiserver", *more])
    assert result.exit_code == 2 and told in result.output, result.output
