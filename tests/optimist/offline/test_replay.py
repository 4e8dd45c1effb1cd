"""`optimist replay` on a synthetic snapshot (tests/optimist/offline/snapshot.yaml), end to end."""

import copy
import csv
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from optimist.cli.main import app
from optimist.offline.replay import SnapshotError, load_snapshot, read_snapshot, run_replay
from optimist.settings import Settings

SNAPSHOT = Path(__file__).parent / "snapshot.yaml"
OURS = frozenset({"default-scheduler"})


def snapshot_doc() -> dict:
    return yaml.safe_load(SNAPSHOT.read_text())


def test_pods_are_sorted_into_replayed_background_and_left_out():
    snap = load_snapshot(SNAPSHOT, OURS)
    assert len(snap.node_manifests) == 10 and len(snap.group_manifests) == 1
    replayed = [p.key for p in snap.replayed]
    assert len(replayed) == 23
    assert replayed[:2] == ["shop/web-0", "shop/web-1"]  # creation order
    assert replayed[-2:] == ["ml/ring-0", "ml/ring-1"]
    nodes = [f"cpu-{i}" for i in range(6)] + [f"gpu-{i}" for i in range(4)]
    assert {p.key for p in snap.background} == {
        *(f"monitoring/node-exporter-{n}" for n in nodes),  # DaemonSet pods of default-scheduler
        "kube-system/kube-apiserver-cpu-0",  # static (mirror) pod of default-scheduler
        *(f"batch/other-{i}" for i in range(3)),  # bound by volcano
    }
    assert snap.left_out == {"pending pod, scheduler volcano": 1, "pod Succeeded": 1}
    assert snap.errors == [
        "Pod shop/broken: spec.containers[0].resources.requests.cpu='two': "
        "quantity 'two' does not match <number><suffix>"
    ]
    assert len(snap.actual) == 15 and snap.actual["ml/cpu-hog"] == "gpu-3"


def test_replayed_pods_lose_what_the_server_added():
    snap = load_snapshot(SNAPSHOT, OURS)
    web = next(p for p in snap.replayed if p.key == "shop/web-0")
    assert web.node_name == "" and "status" not in web.manifest
    assert web.manifest["metadata"].keys() == {"name", "namespace", "labels"}
    exporter = next(p for p in snap.background if p.key == "monitoring/node-exporter-cpu-0")
    assert exporter.node_name == "cpu-0" and "status" not in exporter.manifest
    node = snap.node_manifests[0]
    assert node["status"]["allocatable"]["cpu"] == "16" and "uid" not in node["metadata"]


def test_bad_objects_are_named_and_the_rest_is_kept():
    doc = snapshot_doc()
    web = next(i for i in doc["items"] if i["metadata"]["name"] == "web-0")
    odd = copy.deepcopy(web)
    odd["metadata"]["name"] = "odd-owner"
    odd["metadata"]["ownerReferences"] = "DaemonSet"
    n = len(doc["items"])
    doc["items"] += [copy.deepcopy(web), "not an object", {"metadata": {}}, odd]
    snap = read_snapshot(doc, OURS, "snap.yaml")
    assert snap.errors[1:] == [
        "Pod shop/web-0: metadata.name='shop/web-0': appears twice",
        f"snap.yaml: items[{n + 1}]: kind=None: must be a string",
        f"snap.yaml: items[{n + 2}]: kind=None: must be a string",
        "Pod shop/odd-owner: metadata.ownerReferences='DaemonSet': must be a list",
    ]
    assert len(snap.replayed) == 23


def test_a_file_that_is_no_snapshot_is_refused(tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text("kind: Pod\nmetadata: {name: x}\n")
    with pytest.raises(SnapshotError, match="items: expected the list"):
        load_snapshot(path, OURS)
    result = CliRunner().invoke(app, ["replay", str(path)])
    assert result.exit_code == 2 and "items: expected the list" in result.output


def test_kubectl_json_reads_as_its_yaml(tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot_doc(), indent=4))
    from_json, from_yaml = load_snapshot(path, OURS), load_snapshot(SNAPSHOT, OURS)
    assert [p.key for p in from_json.replayed] == [p.key for p in from_yaml.replayed]
    assert from_json.background == from_yaml.background
    assert from_json.errors == from_yaml.errors
    path.write_text('{"kind": "List", "items": [')
    with pytest.raises(SnapshotError, match=r"snapshot\.json: Expecting value"):
        load_snapshot(path, OURS)


@pytest.mark.usefixtures("ray_session")
def test_replay_command_compares_placements(tmp_path, redis_url):
    report, placements, html = tmp_path / "r.json", tmp_path / "p.csv", tmp_path / "r.html"
    args = ["replay", str(SNAPSHOT), "--shards", "2", "--redis-url", redis_url]
    for flag, path in (("--report", report), ("--placements", placements), ("--html", html)):
        args += [flag, str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Pod shop/broken: spec.containers[0].resources.requests.cpu='two'" in result.output
    r = json.loads(report.read_text())
    assert r["invariant_violations"] == []
    assert (r["pods_replayed"], r["pods_background"], r["pods_bound_in_snapshot"]) == (23, 14, 15)
    # Only `huge` (100 CPUs) fits nowhere; the gang and the pending batch pods are placed.
    assert (r["pods_placed"], r["pods_unplaced"]) == (22, 1)
    assert r["pods_kept"] + r["pods_moved"] + r["pods_displaced"] == 15
    assert r["pods_newly_placed"] == 7
    [reason] = r["unplaced_reasons"]
    assert "Insufficient cpu" in reason
    snapshot, optimist = r["quality"]["snapshot"], r["quality"]["optimist"]
    assert snapshot["resources"]["nvidia.com/gpu"]["stranded"] == 6  # cpu-hog's gpu-3
    assert snapshot["workload_pods_bound"] == 15 and optimist["workload_pods_bound"] == 22
    assert snapshot["whole_free_nodes"] == 3  # cpu-3..5 run only background pods
    # Background pods count as requested in both placements.
    background_cpu = 10 * 100 + 250 + 3 * 1000
    assert optimist["resources"]["cpu"]["requested"] == background_cpu + sum(
        [10 * 2000, 4 * 8000, 52000, 5 * 1000, 2 * 16000]
    )
    rows = list(csv.DictReader(placements.open()))
    assert len(rows) == 23
    huge = next(row for row in rows if row["pod"] == "huge")
    assert huge["optimist_node"] == "" and huge["unplaced_reason"] == reason
    assert html.read_text().count("<svg") == 2  # stranded resources, pods per zone


@pytest.mark.usefixtures("ray_session")
def test_background_pods_that_cannot_be_where_they_are_are_reported(redis_url, key_prefix):
    doc = snapshot_doc()
    exporter = next(i for i in doc["items"] if i["metadata"]["name"] == "node-exporter-cpu-0")
    ghost, crowd = copy.deepcopy(exporter), copy.deepcopy(exporter)
    ghost["metadata"]["name"], ghost["spec"]["nodeName"] = "on-ghost", "ghost"
    crowd["metadata"]["name"] = "crowd"
    crowd["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "16"
    doc["items"] += [ghost, crowd]
    snap = read_snapshot(doc, OURS, "snap.yaml")
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix)
    run = run_replay(snap, settings)
    errors = run.report["errors"]
    assert (
        "Pod monitoring/on-ghost: spec.nodeName='ghost': no such node in the snapshot"
        in (errors[1])
    )
    assert errors[2].startswith("Pod monitoring/crowd: spec.nodeName='cpu-0': conflict: ")
    assert "insufficient cpu" in errors[2]
    assert run.report["pods_background"] == 14 and run.ok
    assert "monitoring/crowd" not in run.cluster.bindings
