"""Small hand-checked cases in upstream's format, each asserting the placements upstream's
scheduler would allow: what scheduler_perf's harness does to its objects, optimist's does."""

from __future__ import annotations

import json
import re
from collections import Counter
from html import escape
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from benchmarks.simulated.sim_bench import load_plan, run_bench
from optimist.cli.main import app
from optimist.settings import Settings

pytestmark = pytest.mark.usefixtures("ray_session")

ANTI_AFFINE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "anti-", "labels": {"app": "solo"}},
    "spec": {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "solo"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
    },
}


def write_case(folder: Path, ops: list[dict], templates: dict[str, dict]) -> Path:
    """A one-case file in upstream's layout: the file in config/, its templates named
    from the folder above, as scheduler_perf's own are."""
    config = folder / "config"
    config.mkdir(parents=True, exist_ok=True)
    for name, doc in templates.items():
        (config / name).write_text(yaml.safe_dump(doc))
    case = {"name": "Fidelity", "workloadTemplate": ops, "workloads": [{"name": "small"}]}
    path = config / "performance-config.yaml"
    path.write_text(yaml.safe_dump([case]))
    return path


def anti_affine_case(folder: Path) -> Path:
    """5 nodes, then 10 pods measured that keep apart by hostname: 5 can bind."""
    return write_case(
        folder,
        [
            {"opcode": "createNodes", "count": 5},
            {"opcode": "startCollectingMetrics"},
            {
                "opcode": "createPods",
                "count": 10,
                "podTemplatePath": "config/pod-anti.yaml",
                "skipWaitToCompletion": True,  # five never fit: upstream's wait would not end
            },
            {"opcode": "barrier", "stageRequirement": "Attempted"},
            {"opcode": "stopCollectingMetrics"},
        ],
        {"pod-anti.yaml": ANTI_AFFINE},
    )


def run(path: Path, redis_url: str, key_prefix: str) -> tuple[dict, dict[str, str]]:
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=1)
    bench = run_bench(settings, load_plan(path, timeout_s=60))
    [case] = bench.report.model_dump()["cases"]
    assert case["invariant_violations"] == [], case
    [cluster] = bench.clusters.values()
    return case, dict(cluster.bindings)


def test_createnodes_labels_each_node_with_its_hostname(tmp_path, redis_url, key_prefix):
    """10 pods with required anti-affinity on the hostname key over 5 nodes: 5 bound, one
    a node, 5 unschedulable. Without the label no node has the key, and none binds."""
    case, bound = run(anti_affine_case(tmp_path), redis_url, key_prefix)
    assert case["pods_scheduled"] == 5 and case["pods_unschedulable"] == 5
    assert sorted(Counter(bound.values()).values()) == [1] * 5


def _pod(name: str, labels: dict, affinity: dict | None = None) -> dict:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": f"{name}-", "labels": labels},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]
        },
    }
    if affinity:
        doc["spec"]["affinity"] = affinity
    return doc


def _away_from(labels: dict, namespaces: dict | None = None) -> dict:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
    if namespaces is not None:
        term["namespaceSelector"] = {"matchLabels": namespaces}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_createpodsets_and_namespace_labels_reach_the_namespace_selector(
    tmp_path, redis_url, key_prefix
):
    """Three blue pods (one a node) in team-0, a namespace labelled team=devops by its
    template, made by createPodSets; five pods that keep away from blue pods in devops
    namespaces may use only the two nodes without one."""
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 5},
            {
                "opcode": "createNamespaces",
                "prefix": "team",
                "count": 1,
                "namespaceTemplatePath": "config/ns-devops.yaml",
            },
            {
                "opcode": "createPodSets",
                "count": 1,
                "namespacePrefix": "team",
                "createPodsOp": {
                    "opcode": "createPods",
                    "count": 3,
                    "podTemplatePath": "config/pod-blue.yaml",
                },
            },
            {
                "opcode": "createPods",
                "count": 5,
                "namespace": "measure",
                "podTemplatePath": "config/pod-avoid.yaml",
                "collectMetrics": True,
            },
        ],
        {
            "ns-devops.yaml": {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"labels": {"team": "devops"}},
            },
            "pod-blue.yaml": _pod("blue", {"color": "blue"}, _away_from({"color": "blue"})),
            "pod-avoid.yaml": _pod("avoid", {}, _away_from({"color": "blue"}, {"team": "devops"})),
        },
    )
    case, bound = run(path, redis_url, key_prefix)
    blue = {node for pod, node in bound.items() if pod.startswith("team-0/")}
    avoiding = {node for pod, node in bound.items() if pod.startswith("measure/")}
    assert len(blue) == 3 and case["pods_scheduled"] == 5
    assert avoiding and not avoiding & blue and len(avoiding) <= 2


def waited_anti_affine_case(folder: Path) -> Path:
    """5 nodes, then 10 pods measured that keep apart by hostname, and a createPods that
    waits for all 10, as upstream's do: 5 can never be scheduled."""
    return write_case(
        folder,
        [
            {"opcode": "createNodes", "count": 5},
            {
                "opcode": "createPods",
                "count": 10,
                "podTemplatePath": "config/pod-anti.yaml",
                "collectMetrics": True,
            },
        ],
        {"pod-anti.yaml": ANTI_AFFINE},
    )


def test_pods_a_waiting_createpods_cannot_place_fail_the_case_saying_why(tmp_path, redis_url):
    """Upstream's createPods waits for every pod to be scheduled: where some never can,
    its run fails; so does optimist's (exit 1), naming the op, where it once exited 0
    having bound none. The case keeps what it measured until the op failed (it once
    reported 0 pods over 0 s), and no warning asks for more pods: its phase ended at the
    failure, not for want of pods."""
    report, page = tmp_path / "r.json", tmp_path / "r.html"
    args = ["bench", str(waited_anti_affine_case(tmp_path)), "--shards", "1", "--seed", "1"]
    args += ["--timeout", "60", "--no-progress", "--redis-url", redis_url]
    args += ["--report", str(report), "--html", str(page)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    r = json.loads(report.read_text())
    [case] = r["cases"]
    failed = case["failed"]
    assert (failed["op"], failed["opcode"]) == (1, "createPods")
    assert failed["reason"].startswith("5 of 10 pods not scheduled")
    assert case["error"] == f"case Fidelity/small: op 1 (createPods): {failed['reason']}"
    assert r["errors"] == [case["error"]]
    assert "didn't match pod anti-affinity rules" in case["error"]
    assert (case["pods_created"], case["pods_scheduled"]) == (10, 5)
    assert (case["pods_unschedulable"], case["pods_pending"]) == (5, 0)
    [(reason, count)] = case["unschedulable_reasons"].items()
    assert count == 5 and "didn't match pod anti-affinity rules" in reason
    assert case["duration_s"] > 0 and sum(case["throughput_samples"]) == 5
    assert case["throughput_pods_per_s"]["average"] == 5 / case["duration_s"]
    assert case["warnings"] == r["warnings"] == [] and "warning:" not in result.output
    shown = " ".join(result.output.split())
    assert "Fidelity/small (failed at op 1, createPods)" in shown
    assert re.search(r"pods scheduled │ 5 │", shown) and re.search(r"unschedulable │ 5 │", shown)
    assert "case failed: case Fidelity/small: op 1 (createPods): 5 of 10 pods" in shown
    html = page.read_text()
    assert "<h2>Workloads</h2>" in html and escape(case["error"]) in html


def test_template_keys_match_case_insensitively_as_upstream_s_decoder_does(
    tmp_path, redis_url, key_prefix
):
    """`NodeTaintsPolicy: Honor`, as an upstream template writes it, is the
    nodeTaintsPolicy field: the node whose taint the pods do not tolerate is no domain
    of the spreading, so 4 pods spread 2 and 2 over the two others. Ignored, that node
    counts with 0 pods, and only 2 of the 4 could be placed."""
    spread = _pod("spread", {"app": "s"})
    spread["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "s"}},
            "NodeTaintsPolicy": "Honor",  # as upstream's pod-with-node-inclusion-policy.yaml
        }
    ]
    tainted = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": "tainted-"},
        "spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 2},
            {"opcode": "createNodes", "count": 1, "nodeTemplatePath": "config/node-tainted.yaml"},
            {"opcode": "createPods", "count": 4, "podTemplatePath": "config/pod-spread.yaml"},
        ],
        {"pod-spread.yaml": spread, "node-tainted.yaml": tainted},
    )
    case, bound = run(path, redis_url, key_prefix)
    assert case["error"] is None and len(bound) == 4, case["error"]
    assert not any(node.startswith("tainted-") for node in bound.values())
    assert sorted(Counter(bound.values()).values()) == [2, 2]


def test_a_workload_below_its_threshold_fails_the_run(tmp_path, redis_url, key_prefix):
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 5},
            {"opcode": "createPods", "count": 10, "collectMetrics": True},
        ],
        {},
    )
    case = yaml.safe_load(path.read_text())
    case[0]["defaultPodTemplatePath"] = "config/pod.yaml"
    case[0]["workloads"][0]["threshold"] = 10**9
    path.write_text(yaml.safe_dump(case))
    (path.parent / "pod.yaml").write_text(yaml.safe_dump(_pod("p", {})))
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=1)
    bench = run_bench(settings, load_plan(path, timeout_s=60))
    assert not bench.ok
    [error] = bench.report.errors
    assert error.startswith("case Fidelity/small: ") and "below the workload's threshold" in error
    assert bench.report.cases[0].pods_scheduled == 10  # it ran; it was slow


def test_go_templates_are_rendered_per_object_with_upstream_s_functions(
    tmp_path, redis_url, key_prefix
):
    """Left as text, `{{.Index}}` named every pod alike and the run exited 0. Rendered as
    upstream renders them: 6 pods `pod-0`..`pod-5` in groups `{{div .Index 2}}`, each
    group pinned by its label to node `{{mod .Index 3}}` of three made the same way."""
    pod = _pod("p", {})
    pod["metadata"] = {"name": "pod-{{.Index}}", "labels": {"group": "g{{ div .Index 2 }}"}}
    pod["spec"]["nodeSelector"] = {"slot": "s{{ div .Index 2 }}"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "node-{{.Index}}-of-{{.Count}}",
            "labels": {"slot": "s{{mod .Index 3}}"},
        },
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 3, "nodeTemplatePath": "config/node-indexed.yaml"},
            {"opcode": "createPods", "count": 6, "podTemplatePath": "config/pod-indexed.yaml"},
        ],
        {"pod-indexed.yaml": pod, "node-indexed.yaml": node},
    )
    case, bound = run(path, redis_url, key_prefix)
    assert case["error"] is None, case["error"]
    assert bound == {f"namespace-1/pod-{i}": f"node-{i // 2}-of-3" for i in range(6)}, bound


def test_a_go_template_where_optimist_does_not_render_one_stops_its_case_alone(
    tmp_path, redis_url, key_prefix
):
    """createPodGroups makes its pods of one template: a Go template there stops that
    case, naming the field, and the next case runs."""
    templated = _pod("p", {})
    templated["metadata"] = {"name": "pod-{{.Index}}"}
    path = write_case(tmp_path, [], {"pod-indexed.yaml": templated, "pod.yaml": _pod("p", {})})
    cases = [
        {
            "name": "Templated",
            "workloadTemplate": [
                {"opcode": "createNodes", "count": 2},
                {
                    "opcode": "createPodGroups",
                    "count": 1,
                    "minMember": 2,
                    "podsPerGroup": 2,
                    "podTemplatePath": "config/pod-indexed.yaml",
                },
            ],
            "workloads": [{"name": "small"}],
        },
        {
            "name": "Plain",
            "workloadTemplate": [
                {"opcode": "createNodes", "count": 2},
                {
                    "opcode": "createPods",
                    "count": 2,
                    "collectMetrics": True,
                    "podTemplatePath": "config/pod.yaml",
                },
            ],
            "workloads": [{"name": "small"}],
        },
    ]
    path.write_text(yaml.safe_dump(cases))
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=1)
    bench = run_bench(settings, load_plan(path, timeout_s=60))
    templated_run, plain = bench.report.model_dump()["cases"]
    assert templated_run["error"] == (
        "case Templated/small: op 1 (createPodGroups): optimist cannot run it: "
        "podTemplatePath='config/pod-indexed.yaml': a Go template ({{.Index}} and the "
        "like, upstream's since v1.31), which upstream renders for createPods, createNodes, "
        "createAny, createPodGroups and updateAny only"
    )
    assert plain["error"] is None and plain["pods_scheduled"] == 2


def test_restarting_the_scheduler_fails_its_case_alone_on_the_simulated_cluster(
    tmp_path, redis_url, key_prefix
):
    """restartScheduler runs through a server only: here the scheduler is the bench's
    own process. The case fails at that op, saying so, after what it made before."""
    path = write_case(
        tmp_path,
        [
            {"opcode": "createNodes", "count": 2},
            {"opcode": "createPods", "count": 2, "podTemplatePath": "config/pod.yaml"},
            {"opcode": "restartScheduler", "failover": True},
        ],
        {"pod.yaml": _pod("p", {})},
    )
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=1)
    [case] = run_bench(settings, load_plan(path, timeout_s=60)).report.model_dump()["cases"]
    assert case["failed"]["opcode"] == "restartScheduler" and case["failed"]["op"] == 2
    assert "--cluster apiserver or kwok restarts it" in case["error"], case["error"]
    assert case["invariant_violations"] == []
