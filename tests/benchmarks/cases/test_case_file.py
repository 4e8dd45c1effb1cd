"""The case-file parser: upstream's format read strictly, params filled, bad input named."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from benchmarks.cases import (
    case_fields,
    case_ops,
    cases_file,
    op_walker,
    template,
    workload_objects,
)
from benchmarks.cases import case_file as pc

FIXTURE = Path(__file__).parent / "performance-config.yaml"
NODE = template("node-default.yaml")


def load(path: Path = FIXTURE) -> dict[str, pc.CaseWorkload]:
    return {run.name: run for run in pc.load(path, NODE)}


def write(tmp_path: Path, ops: list, params: dict | None = None) -> Path:
    """A one-case file beside copies of the fixture's templates."""
    (tmp_path / "templates").mkdir(exist_ok=True)
    for src in (FIXTURE.parent / "templates").iterdir():
        (tmp_path / "templates" / src.name).write_text(src.read_text())
    case = {
        "name": "Bad",
        "defaultPodTemplatePath": "templates/pod.yaml",
        "workloadTemplate": ops,
        "workloads": [{"name": "w", "params": params or {}}],
    }
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump([case]))
    return path


def test_upstream_format_is_read_and_params_are_filled():
    runs = load()
    assert list(runs) == ["Everything/small", "Volumes/one", "DynamicResources/one"]
    run = runs["Everything/small"]
    ops = run.ops
    assert [op.opcode for op in ops][:3] == ["createNodes", "createNodes", "createNamespaces"]
    nodes = ops[0]
    assert isinstance(nodes, case_ops.CreateNodes)
    assert nodes.count == 4 and nodes.template["metadata"]["generateName"] == "fixture-node-"
    assert nodes.allocatable == case_fields.NodeAllocatable(
        {"cpu": "4", "memory": "16Gi", "pods": "60"}, {}
    )
    assert nodes.label_values == case_fields.LabelValues(
        "topology.kubernetes.io/zone", ("zone1", "zone2")
    )
    assert ops[1].unique_label == "kubernetes.io/hostname"
    init = ops[7]
    assert isinstance(init, case_ops.CreatePods) and init.count == 10 and init.namespace == "init-0"
    assert init.template["metadata"]["generateName"] == "fixture-pod-"  # defaultPodTemplatePath
    assert ops[8] == case_ops.DeletePods("init-0", 50, {"app": "web"}, False)
    assert ops[9] == case_ops.Churn("create", (ops[9].templates[0],), "namespace-9", 0.2, 2)
    assert isinstance(ops[12], case_ops.CreatePodGroups) and ops[12].name_prefix == "group"
    assert ops[14] == case_ops.Sleep(0.3)
    assert run.params["measurePods"] == 12 and ops[11].count == 12
    assert run.threshold == 5
    assert run.labels == ("integration-test", "fast")
    assert run.feature_gates == {"SchedulerQueueingHints": False}  # the workload's wins


def test_ops_optimist_cannot_run_load_and_name_themselves():
    runs = load()
    volumes = runs["Volumes/one"].unsupported()
    assert volumes is not None and (volumes.opcode, volumes.index) == ("createPods", 1)
    assert volumes.reason == (
        "persistentVolumeClaimTemplatePath: needs persistentVolumeTemplatePath beside it"
    )
    dra = runs["DynamicResources/one"].unsupported()
    assert dra is not None and (dra.opcode, dra.index) == ("createAny", 1)
    assert "kind ResourceClaim (resource.k8s.io/v1alpha2)" in dra.reason
    assert runs["DynamicResources/one"].ops[2].opcode == "createResourceClaims"
    assert runs["Everything/small"].unsupported() is None


@pytest.mark.parametrize(
    ("ops", "params", "expected"),
    [
        (
            [{"opcode": "createNodes", "count": 1}, {"opcode": "scaleNodes", "count": 2}],
            {},
            "case Bad/w: op 1 (scaleNodes): opcode='scaleNodes': unknown op",
        ),
        (
            [{"opcode": "createNodes", "count": 1, "nodeTemplatPath": "x.yaml"}],
            {},
            "case Bad/w: op 0 (createNodes): nodeTemplatPath='x.yaml': unknown field",
        ),
        (
            [{"opcode": "createPods", "count": -1}],
            {},
            "case Bad/w: op 0 (createPods): count=-1: must be an integer >= 0",
        ),
        (
            [
                {
                    "opcode": "createPods",
                    "count": 1,
                    "collectMetrics": True,
                    "skipWaitToCompletion": True,
                }
            ],
            {},
            "op 0 (createPods): skipWaitToCompletion=True: collectMetrics measures until",
        ),
        (
            [{"opcode": "createPods", "count": 1, "collectMetrics": True, "boundAtCreation": True}],
            {},
            "op 0 (createPods): boundAtCreation=True: pods bound at creation are not scheduled",
        ),
        (
            [{"opcode": "churn", "mode": "sometimes", "templatePaths": ["templates/pod.yaml"]}],
            {},
            "op 0 (churn): mode='sometimes': must be one of recreate, create",
        ),
        (
            [{"opcode": "createPods", "count": 1, "podTemplatePath": "templates/node.yaml"}],
            {},
            "op 0 (createPods): podTemplatePath='templates/node.yaml': kind Node: must be Pod",
        ),
        (
            [{"opcode": "createPodGroups", "count": 1, "minMember": 4, "podsPerGroup": 3}],
            {},
            "op 0 (createPodGroups): minMember=4: exceeds podsPerGroup 3",
        ),
        (
            [{"opcode": "sleep", "duration": "soon"}],
            {},
            "op 0 (sleep): duration='soon'",
        ),
    ],
)
def test_bad_files_are_refused_naming_case_op_field_and_value(tmp_path, ops, params, expected):
    with pytest.raises(case_fields.PerfConfigError) as err:
        pc.load(write(tmp_path, ops, params), NODE)
    assert expected in str(err.value)


@pytest.mark.parametrize(
    ("ops", "params", "opcode", "index", "reason"),
    [
        (
            [{"opcode": "createPods", "countParam": "$pods"}],
            {},
            "createPods",
            0,
            "case Bad/w: op 0 (createPods): countParam='$pods': no param 'pods' in the "
            "workload's params",
        ),
        (
            [{"opcode": "createPods", "countParam": "$pods"}],
            {"pods": 1, "spare": 2},
            "params",
            1,
            "params=['spare']: not used by any op (upstream's Go test code",
        ),
    ],
)
def test_what_upstream_s_harness_fails_when_it_runs_a_workload_fails_that_one_alone(
    tmp_path, ops, params, opcode, index, reason
):
    """A missing or an unused param fails upstream's workload as it runs, not the file."""
    [run] = pc.load(write(tmp_path, ops, params), NODE)
    refused = run.unsupported()
    assert refused is not None and (refused.opcode, refused.index) == (opcode, index)
    assert refused.reason.startswith(reason)


def test_selection_by_case_workload_or_both():
    runs = pc.load(FIXTURE, NODE)
    assert [r.name for r in pc.select(runs, "Volumes", None)] == ["Volumes/one"]
    assert [r.name for r in pc.select(runs, None, "one")] == ["Volumes/one", "DynamicResources/one"]
    assert [r.name for r in pc.select(runs, None, "Everything/small")] == ["Everything/small"]
    with pytest.raises(
        case_fields.PerfConfigError, match="the file has: Everything/small, Volumes/one"
    ):
        pc.select(runs, "Nope", None)


def test_a_label_filter_picks_as_upstream_s_harness_does():
    """`performance`, `+fast`: must have; `-fast`: must not have; a case's labels count
    for each of its workloads."""
    runs = pc.load(FIXTURE, NODE)
    assert [r.name for r in pc.select(runs, None, None, "integration-test")] == ["Everything/small"]
    assert [r.name for r in pc.select(runs, None, None, "+fast,integration-test")] == [
        "Everything/small"
    ]
    assert [r.name for r in pc.select(runs, None, None, "-fast")] == [
        "Volumes/one",
        "DynamicResources/one",
    ]
    assert [r.name for r in pc.select(runs, None, "one", ",,-integration-test")] == [
        "Volumes/one",
        "DynamicResources/one",
    ]
    with pytest.raises(case_fields.PerfConfigError, match="label-filter='performance'"):
        pc.select(runs, None, None, "performance")


def test_overrides_replace_params_where_a_workload_has_them():
    runs = pc.load(FIXTURE, NODE, {"initNodes": 7, "nodes": 3})
    assert runs[0].ops[0].count == 7 and runs[2].ops[0].count == 3


def test_a_run_is_named_by_the_params_it_ran_with():
    """`--nodes 7 --pods 12` on Everything/small (initNodes 4, measurePods 12): the
    name says initNodes was 7, not measurePods, which the file already set to 12; the
    case and the workload stay the file's, and --workload still picks it by them."""
    runs = pc.load(FIXTURE, NODE, {"initNodes": 7, "measurePods": 12})
    everything, volumes, _ = runs
    assert everything.name == "Everything/small[initNodes=7]"
    assert (everything.case, everything.workload) == ("Everything", "small")
    assert everything.overrides == {"initNodes": 7}
    assert everything.params["initNodes"] == 7 and everything.params["measurePods"] == 12
    assert volumes.name == "Volumes/one" and volumes.overrides == {}  # no such params
    assert pc.select(runs, None, "Everything/small") == [everything]
    with pytest.raises(
        case_fields.PerfConfigError, match="the file has: Everything/small, Volumes/one"
    ):
        pc.select(runs, "Nope", None)
    shipped = pc.load(cases_file(), NODE, {"initNodes": 20000, "measurePods": 50000})
    [basic] = pc.select(shipped, None, "SchedulingBasic/5000Nodes_10000Pods")
    assert basic.name == "SchedulingBasic/5000Nodes_10000Pods[initNodes=20000,measurePods=50000]"


def test_the_shipped_cases_all_load_with_a_tiny_workload():
    runs = pc.load(cases_file(), NODE)
    cases = {r.case for r in runs}
    assert cases >= {
        "SchedulingBasic",
        "SchedulingNodeAffinity",
        "TopologySpreading",
        "PreferredTopologySpreading",
        "SchedulingPodAntiAffinity",
        "SchedulingPodAffinity",
        "Unschedulable",
        "UnschedulableStorm",
        "SchedulingWithMixedChurn",
        "SchedulingWhileGated",
        "Gang",
        "SchedulingHeterogeneous",
        "PreemptionBasic",
        "Tenants",
        "GpuFragmentation",
    }
    assert {r.case for r in runs if r.workload == "tiny"} == cases
    assert not [r.name for r in runs if r.unsupported()]
    thresholds = {r.case: r.threshold for r in runs if r.threshold is not None}
    assert thresholds == {
        "SchedulingBasic": 680,
        "SchedulingNodeAffinity": 220,
        "TopologySpreading": 460,
        "SchedulingPodAntiAffinity": 60,
        "Unschedulable": 600,
        "SchedulingWithMixedChurn": 710,
    }


def test_per_index_strategy_makes_every_pod_different():
    strategy = case_fields.PerIndex(
        (50, 59), (64, 73), case_fields.LabelValues("rack", ("r0", "r1", "r2")), 2
    )
    pods = [
        m
        for m, n in workload_objects.pod_batches(
            case_ops.CreatePods(
                100,
                yaml.safe_load(template("pod-default.yaml").read_text()),
                "n",
                per_index=strategy,
            )
        )
    ]
    requests = {tuple(p["spec"]["containers"][0]["resources"]["requests"].values()) for p in pods}
    assert len(requests) == 100  # 10 CPU x 10 memory amounts
    term = pods[4]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "rack", "operator": "In", "values": ["r1", "r2"]}


def test_node_strategies_label_every_node():
    [run] = [r for r in pc.load(FIXTURE, NODE) if r.case == "Everything"]
    unique = iter(range(100))
    zoned = workload_objects.node_batches(run.ops[0], random.Random(1), unique)
    assert sum(n for _, n in zoned) == 4
    assert {m["metadata"]["labels"]["topology.kubernetes.io/zone"] for m, _ in zoned} <= {
        "zone1",
        "zone2",
    }
    assert all(m["status"]["allocatable"]["cpu"] == "4" for m, _ in zoned)
    hosts = workload_objects.node_batches(run.ops[1], random.Random(1), unique)
    assert [n for _, n in hosts] == [1, 1]
    assert len({m["metadata"]["labels"]["kubernetes.io/hostname"] for m, _ in hosts}) == 2


def test_a_case_may_name_its_own_scheduler_configuration(tmp_path):
    (tmp_path / "scheduler.yaml").write_text("apiVersion: kubescheduler.config.k8s.io/v1\n")
    case = {
        "name": "Own",
        "schedulerConfigPath": "scheduler.yaml",
        "workloadTemplate": [{"opcode": "createNodes", "count": 1}],
        "workloads": [{"name": "w"}],
    }
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump([case]))
    [run] = pc.load(path, NODE)
    assert run.scheduler_config == (tmp_path / "scheduler.yaml").resolve()
    case["schedulerConfigPath"] = "missing.yaml"
    path.write_text(yaml.safe_dump([case]))
    with pytest.raises(case_fields.PerfConfigError, match=r"schedulerConfigPath.*no such file"):
        pc.load(path, NODE)


def test_upstream_s_v1_37_fields_are_read_as_its_harness_reads_them(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "g.yaml").write_text(
        "kind: Pod\nmetadata:\n  name: p-{{.Index}}\n  labels: {n: '{{.n}}', d: '{{.d}}', l: x}\n"
    )
    ops = [
        {"opcode": "createNodes", "countParam": "$nodes", "templateParams": {"n": "$nodes"}},
        {
            "opcode": "createPods",
            "countParam": "$groups",
            "countMultiplierParam": "$per",
            "podTemplatePath": "templates/g.yaml",
            "templateParams": {"n": "$per", "d": "$absent|7"},
            "signatureBatchSizeParam": "$per",
            "skipWaitToCompletion": True,
        },
        {"opcode": "createPods", "count": 2, "namespace": "plain", "steadyState": False},
        {"opcode": "deletePods", "namespace": "plain", "skipWaitToCompletion": True},
        {"opcode": "churn", "mode": "create", "templatePaths": ["templates/pod.yaml"]},
        {
            "opcode": "churn",
            "mode": "recreate",
            "number": 3,
            "namespace": "c",
            "templatePaths": ["templates/pod.yaml"],
            "intervalMilliseconds": 0,
        },
        {"opcode": "barrier", "labelSelector": {"l": "x"}, "stageRequirement": "Attempted"},
    ]
    [run] = pc.load(write(tmp_path, ops, {"nodes": 2, "groups": 2, "per": 3}), NODE)
    nodes, pods, plain, delete, create, recreate, barrier = run.ops
    assert run.unsupported() is None and nodes.count == 2
    assert (pods.count, pods.signature_batch, pods.template.params) == (6, 3, {"n": 3.0, "d": 7.0})
    made = workload_objects.pod_batches(pods)
    assert [m["metadata"]["labels"] for m, _ in made[2:4]] == [
        {"n": "3", "d": "7", "l": "x", "signature": f"signature-label-{i}"} for i in (0, 1)
    ]
    assert plain.template["metadata"]["generateName"] == "fixture-pod-"  # the case's default
    path = write(tmp_path, [ops[2]])
    path.write_text(path.read_text().replace("defaultPodTemplatePath: templates/pod.yaml\n  ", ""))
    assert pc.load(path, NODE)[0].ops[0].template is case_ops.BASE_POD  # else upstream's pod
    assert delete == case_ops.DeletePods("plain", 0, None, True)
    assert (create.namespace, create.interval_s, create.number) == ("namespace-4", 0.5, 0)
    assert (recreate.namespace, recreate.interval_s, recreate.number) == ("c", 0.5, 3)
    assert barrier == case_ops.Barrier((), {"l": "x"}, attempted=True)


def test_batches_of_one_signature_are_made_alike():
    op = case_ops.CreatePods(5, {"kind": "Pod"}, "n", signature_batch=2)
    assert [
        (m["metadata"]["labels"]["signature"], n) for m, n in workload_objects.pod_batches(op)
    ] == [("signature-label-0", 2), ("signature-label-1", 2), ("signature-label-2", 1)]


@pytest.mark.parametrize(
    ("op", "opcode", "said"),
    [
        (
            {"opcode": "updateAny", "templatePath": "templates/pod.yaml", "count": 2},
            "updateAny",
            "updating 2 object(s): objects are not updated in place",
        ),
        (
            {"opcode": "createPods", "count": 1, "steadyState": True, "duration": "1s"},
            "createPods",
            "steadyState: steady-state pod creation is not implemented",
        ),
        (
            {
                "opcode": "createPodGroups",
                "templatePath": "templates/wl-group.yaml",
                "namespace": "g",
                "count": 1,
            },
            "createPodGroups",
            "scheduling.k8s.io/v1beta1 PodGroup: optimist models gangs",
        ),
        (
            {"opcode": "createAny", "templatePath": "templates/slice.yaml"},
            "createAny",
            "kind ResourceSlice (resource.k8s.io/v1): optimist does not model dynamic resource",
        ),
        ({"opcode": "startCollectingProfile"}, "startCollectingProfile", "profiles kube-scheduler"),
    ],
)
def test_what_optimist_cannot_run_of_v1_37_is_refused_for_its_case(tmp_path, op, opcode, said):
    path = write(tmp_path, [op])
    (tmp_path / "templates" / "wl-group.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g-{{.Index}}}\n"
    )
    (tmp_path / "templates" / "slice.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
    )
    refused = pc.load(path, NODE)[0].unsupported()
    assert refused is not None and refused.opcode == opcode and said in refused.reason


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (
            {"opcode": "updateAny", "templatePath": "templates/pod.yaml", "cont": 2},
            "op 0 (updateAny): cont=2: unknown field",
        ),
        (
            {"opcode": "churn", "mode": "recreate", "templatePaths": ["templates/pod.yaml"]},
            "op 0 (churn): number=0: must be an integer >= 1 in recreate mode",
        ),
        (
            {"opcode": "createPods", "count": 1, "steadyState": True},
            "op 0 (createPods): duration=0.0",
        ),
        (
            {"opcode": "createPods", "count": 1, "signatureBatchSize": -1},
            "op 0 (createPods): signatureBatchSize=-1: must be an integer >= 0",
        ),
        ({"opcode": "barrier", "labelSelector": ["x"]}, "op 0 (barrier): labelSelector=['x']"),
    ],
)
def test_v1_37_fields_written_wrong_are_errors_naming_them(tmp_path, op, expected):
    with pytest.raises(case_fields.PerfConfigError) as err:
        pc.load(write(tmp_path, [op]), NODE)
    assert expected in str(err.value)


def test_upstream_s_map_threshold_gives_none_here(tmp_path):
    path = write(tmp_path, [{"opcode": "createPods", "count": 1}])
    [case] = yaml.safe_load(path.read_text())
    case["workloads"][0]["threshold"] = {"dra": 56}
    path.write_text(yaml.safe_dump([case]))
    assert pc.load(path, NODE)[0].threshold is None


def test_churn_s_create_mode_makes_one_of_each_template_number_times():
    made = []
    task = op_walker.ChurnTask(case_ops.Churn("create", ({"kind": "Pod"},), "ns", 0.0, 2), 0.0)
    for now in range(4):
        task.turn(float(now), lambda m, ns: made.append(ns) or [("Pod", ns)], lambda gone: None)
    assert made == ["ns", "ns"]
