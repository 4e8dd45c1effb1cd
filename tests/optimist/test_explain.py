"""`optimist explain` the whole way: over HTTP from a running loop (real Ray, real Redis),
and in-process from a snapshot, through the command line."""

from __future__ import annotations

import json
import threading

import pytest
import yaml
from typer.testing import CliRunner

from cluster.objects import POD_GROUP_LABEL
from optimist.cli.main import app
from optimist.explain import Explainer, ExplainError, ask_endpoint
from optimist.loop import SchedulingLoop
from optimist.metrics.definitions import SchedulerMetrics
from optimist.metrics.server import MetricsServer
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.test_binders_end_to_end import labelled_nodes, pod_doc

runner = CliRunner()


def named_pod(name: str, cpu: str, group: str = "") -> dict:
    doc = pod_doc(name)
    doc["metadata"] = {"name": name, "labels": {POD_GROUP_LABEL: group} if group else {}}
    doc["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return doc


class Stepping(threading.Thread):
    """The control loop, stepping as `optimist run` does until stopped."""

    def __init__(self, loop: SchedulingLoop) -> None:
        super().__init__(daemon=True)
        self.loop, self.stop = loop, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.loop.step(timeout_s=0.02)


@pytest.fixture(scope="module")
def running(ray_session, redis_url):
    """A loop over 20 nodes that bound 30 pods and holds one that fits nowhere, serving
    /debug/explain on loopback while it steps."""
    settings = Settings(shards=2, redis_url=redis_url, key_prefix="explain", batch_pods=16)
    cluster = SimulatedCluster(settings.scheduler_names)
    labelled_nodes(cluster, 20)
    explainer = Explainer(settings.scheduler_names)
    with Platform(settings) as platform:
        platform.store.clear()
        loop = SchedulingLoop(platform, cluster, explainer=explainer)
        cluster.create_pods(pod_doc("web"), 30)
        cluster.create_pods(named_pod("big", "64"), 1)
        # a gang whose second pod fits nowhere: neither is placed
        cluster.create_pod_group({"metadata": {"name": "ring"}, "spec": {"minMember": 2}})
        cluster.create_pods(named_pod("ring-0", "1", "ring"), 1)
        cluster.create_pods(named_pod("ring-1", "64", "ring"), 1)
        loop.run_until_settled()
        stepping = Stepping(loop)
        stepping.start()
        server = MetricsServer(SchedulerMetrics(), "127.0.0.1:0", explainer=explainer)
        try:
            with server:
                yield server.address, cluster, explainer
        finally:
            stepping.stop.set()
            stepping.join()
            explainer.detach()
        unschedulable = loop.dispatcher.unschedulable()
        assert check_invariants(cluster, unschedulable, platform.store) == []


def test_a_pending_pod_is_explained_with_where_it_waits(running):
    address, _, _ = running
    found = ask_endpoint(address, "default/big")
    standing = found.standing
    assert found.source == "running" and not found.bound_to and standing is not None
    assert standing.state == "unschedulable" and standing.attempts >= 1
    assert standing.plugins == ["NodeResourcesFit"] and "NodeAdd" in standing.waits_for
    assert standing.preemption.startswith("not tried")
    [pod] = found.unit.pods
    assert not pod.chosen and not found.unit.fits and pod.feasible == 0
    # the shard's verdict now is the one the last attempt reported
    assert pod.summary == standing.reason == "0/20 nodes are available: 20 Insufficient cpu."
    assert {v.node for v in pod.verdicts()} == {f"node-{i}" for i in range(20)}


def test_a_gang_is_judged_whole_pod_after_pod(running):
    address, _, _ = running
    found = ask_endpoint(address, "default/ring-1", top=2)
    assert found.standing is not None and found.standing.group == "default/ring"
    assert found.standing.min_member == 2 and found.standing.state == "unschedulable"
    unit = found.unit
    assert [p.pod for p in unit.pods] == ["default/ring-0", "default/ring-1"]
    assert unit.pods[0].chosen and not unit.pods[1].chosen and not unit.fits


def test_a_bound_pod_is_judged_with_its_room_given_back(running):
    address, cluster, _ = running
    key, node = sorted(cluster.bindings.items())[0]
    found = ask_endpoint(address, key, top=3)
    assert found.bound_to == node and found.standing is None
    [pod] = found.unit.pods
    assert pod.feasible == 20 and len(pod.verdicts()) == 3
    assert pod.chosen == pod.verdicts()[0].node and pod.margin >= 0


def test_a_what_if_pod_is_judged_as_if_created_now(running):
    address, cluster, _ = running
    doc = pod_doc("what")
    doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-7"}
    found = ask_endpoint(address, manifest=doc)
    assert found.source == "what-if" and found.unit.pods[0].chosen == "node-7"
    assert not any(key.startswith("default/what") for key in cluster.pod_manifests)


@pytest.mark.parametrize(
    ("pod", "manifest", "status", "words"),
    [
        ("default/nobody", None, 404, "pod default/nobody: not found"),
        ("nobody", None, 400, "'nobody' is not namespace/name"),
        (
            "",
            {"spec": {"schedulerName": "other", "containers": [{"name": "c"}]}},
            400,
            "spec.schedulerName: 'other' is not a profile",
        ),
        ("", {"spec": {"containers": "x"}}, 400, "spec.containers"),
        ("", [1, 2], 400, "must be a Pod object"),
    ],
)
def test_what_cannot_be_explained_says_why(running, pod, manifest, status, words):
    address, _, _ = running
    with pytest.raises(ExplainError, match=words) as err:
        ask_endpoint(address, pod, manifest)
    assert err.value.status == status


def test_served_to_loopback_only(running):
    _, _, explainer = running
    server = MetricsServer(SchedulerMetrics(), "127.0.0.1:0", explainer=explainer)
    status, _, body = server._explain({"REMOTE_ADDR": "10.1.2.3"}, explainer)
    assert status.startswith("403") and b"loopback" in body


def test_the_command_line_prints_a_table_json_and_a_sortable_page(running):
    address, _, _ = running
    table = runner.invoke(app, ["explain", "default/big", "--endpoint", address])
    assert table.exit_code == 0, table.output
    assert "default/big: pending, unschedulable" in table.output
    assert "20 Insufficient cpu" in table.output
    doc = json.loads(
        runner.invoke(app, ["explain", "default/big", "--endpoint", address, "-o", "json"]).output
    )
    assert (
        doc["standing"]["state"] == "unschedulable"
        and len(doc["unit"]["pods"][0]["ranked"]["node"]) == 20
    )
    page = runner.invoke(app, ["explain", "default/big", "--endpoint", address, "-o", "html"])
    assert "table class=sortable" in page.output and page.output.count("<tr>") >= 20
    missing = runner.invoke(app, ["explain", "default/nobody", "--endpoint", address])
    assert missing.exit_code == 1 and "not found" in missing.output


def test_nothing_answering_is_one_line_that_says_where():
    result = runner.invoke(app, ["explain", "default/p", "--endpoint", "127.0.0.1:9"])
    assert result.exit_code == 1
    assert "nothing answers at 127.0.0.1:9" in result.output


SNAPSHOT = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "kind": "Node",
            "metadata": {"name": "a"},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}},
        },
        {
            "kind": "Node",
            "metadata": {"name": "b"},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
        },
        {
            "kind": "Node",
            "metadata": {"name": "c"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        },
        {
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "nodeName": "c",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}],
            },
        },
        {
            "kind": "Pod",
            "metadata": {"name": "big", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]},
        },
    ],
}


def test_a_snapshot_is_explained_in_process(tmp_path):
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump(SNAPSHOT))
    out = runner.invoke(app, ["explain", "default/big", "--snapshot", str(path), "-o", "json"])
    assert out.exit_code == 0, out.output
    [pod] = json.loads(out.output)["unit"]["pods"]
    # c holds web's 3 cpus, a has 2, b's taint is not tolerated
    assert pod["summary"] == (
        "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {k: }."
    )
    web = runner.invoke(app, ["explain", "default/web", "--snapshot", str(path), "-o", "json"])
    doc = json.loads(web.output)
    assert doc["bound_to"] == "c" and doc["unit"]["pods"][0]["chosen"] == "c"
    gone = runner.invoke(app, ["explain", "default/gone", "--snapshot", str(path)])
    assert gone.exit_code == 1 and "pod default/gone: not in" in gone.output


def test_usage_errors_exit_2():
    assert runner.invoke(app, ["explain"]).exit_code == 2
    assert runner.invoke(app, ["explain", "a/b", "--config", "x.yaml"]).exit_code == 2


def test_an_ask_goes_to_the_shard_with_the_fewest_batches_out():
    explainer = Explainer(frozenset({"default-scheduler"}))
    explainer.attach(["shard-0", "shard-1", "shard-2"])
    out = {0: 2, 1: 0, 2: 1}
    assert explainer._least_busy("default/p", out.__getitem__) == 1
    # all alike: the key picks, the same one each time
    picked = {explainer._least_busy("default/p", lambda shard: 1) for _ in range(3)}
    assert len(picked) == 1
