"""Scheduler extenders over real HTTP on loopback, through the whole platform."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from benchmarks.cases import template
from optimist.loop import SchedulingLoop
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from shards.extender_config import ExtenderConfig
from tests.shards.test_extender import config

pytestmark = pytest.mark.usefixtures("ray_session")


class Extender(BaseHTTPRequestHandler):
    """Filter: no node labelled disk=hdd. Prioritize: 10 for zone z1, else 0. /broken: 500."""

    def do_POST(self) -> None:
        args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.startswith("/broken"):
            self.send_response(500)
            self.end_headers()
            return
        nodes = args["Nodes"]["items"]
        if self.path.endswith("/filter"):
            ok = [n for n in nodes if n["metadata"].get("labels", {}).get("disk") != "hdd"]
            failed = {n["metadata"]["name"]: "disk is hdd" for n in nodes if n not in ok}
            body = {"Nodes": {"items": ok}, "FailedNodes": failed, "Error": ""}
        else:
            body = [
                {
                    "Host": n["metadata"]["name"],
                    "Score": 10 if n["metadata"]["labels"].get("zone") == "z1" else 0,
                }
                for n in nodes
            ]
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def extender_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Extender)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run(settings: Settings, pods: int) -> tuple[SimulatedCluster, dict[str, str], int]:
    cluster = SimulatedCluster(settings.scheduler_names)
    node_doc = yaml.safe_load(template("node-default.yaml").read_text())
    for i in range(6):
        doc = copy.deepcopy(node_doc)
        labels = {"zone": f"z{i % 3}", "disk": "hdd" if i < 2 else "ssd"}
        doc["metadata"] = {"name": f"node-{i}", "labels": labels}
        cluster.create_nodes(doc, 1)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        cluster.create_pods(yaml.safe_load(template("pod-default.yaml").read_text()), pods)
        loop.run_until_settled()
        unschedulable = loop.dispatcher.unschedulable()
        assert check_invariants(cluster, unschedulable, platform.store) == []
        return cluster, unschedulable, loop.dispatcher.stats.extender_errors


def extender(url: str, **fields: object) -> ExtenderConfig:
    return config(url, weight=5, **fields)


def test_extender_filters_and_scores(redis_url, key_prefix, extender_url):
    settings = Settings(
        shards=2, redis_url=redis_url, key_prefix=key_prefix, extenders=(extender(extender_url),)
    )
    cluster, unschedulable, _ = run(settings, 30)
    assert not unschedulable
    labels = [cluster.nodes[n].labels for n in cluster.bindings.values()]
    assert all(label["disk"] == "ssd" for label in labels)  # the extender's filter held
    z1 = sum(label["zone"] == "z1" for label in labels)
    assert z1 > len(labels) / 2  # its score (x5 weight x10) pulls pods to z1


def test_failing_extender_fails_the_attempt_unless_ignorable(redis_url, key_prefix, extender_url):
    broken = extender(f"{extender_url}/broken")
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, extenders=(broken,))
    cluster, unschedulable, _ = run(settings, 5)
    assert not cluster.bindings and len(unschedulable) == 5
    assert all("extender" in reason and "failed" in reason for reason in unschedulable.values())

    settings = Settings(
        shards=1,
        redis_url=redis_url,
        key_prefix=key_prefix + "i:",
        extenders=(extender(f"{extender_url}/broken", ignorable=True),),
    )
    cluster, unschedulable, errors = run(settings, 5)
    assert len(cluster.bindings) == 5 and not unschedulable
    assert errors >= 5  # each pod's filter call failed and was skipped, and counted
