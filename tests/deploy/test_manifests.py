"""deploy/kubernetes: every overlay renders, every object is valid against the Kubernetes
schemas, the configuration inside is one optimist accepts, and the RBAC grants exactly
what the adapter uses."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from cluster.adapter import Binding
from cluster.kube.adapter import KubernetesAdapter
from cluster.kube.client import KubeClient
from cluster.kube.lease import LeaderElector, LeaseConfig
from optimist.configuration import parse_configuration
from tests.cluster.kube.test_adapter import node_doc, pod_doc
from tests.cluster.kube.test_informer import until
from tests.deploy.kustomize import render

DEPLOY = Path(__file__).parents[2] / "deploy" / "kubernetes"
OVERLAYS = ["small", "large"]
KUBERNETES = "1.30.0"
# custom resources: their schemas are the operators', not Kubernetes'
CUSTOM = {("ray.io/v1", "RayCluster"), ("monitoring.coreos.com/v1", "ServiceMonitor")}
NAMESPACE = "optimist-system"


@pytest.fixture(scope="module", params=OVERLAYS)
def rendered(request):
    return request.param, render(DEPLOY / "overlays" / request.param)


def find(objects, kind, name):
    [obj] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


def test_every_object_is_valid_against_the_kubernetes_schemas(rendered):
    _, objects = rendered
    kinds = {o["kind"] for o in objects}
    assert {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "Role",
        "ConfigMap",
        "Deployment",
        "Service",
        "RayCluster",
        "ServiceMonitor",
    } <= kinds
    for obj in objects:
        if (obj["apiVersion"], obj["kind"]) in CUSTOM:
            assert obj["metadata"]["namespace"] == NAMESPACE and obj["spec"]
            continue
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]


def test_an_invalid_object_would_be_caught():
    bad = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"replicas": "two", "selector": {}, "template": {}},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES, strict=True)


def test_the_configuration_inside_is_one_optimist_runs_as_a_second_scheduler(rendered):
    overlay, objects = rendered
    text = find(objects, "ConfigMap", "optimist-config")["data"]["config.yaml"]
    configuration = parse_configuration(text)
    names = [p.scheduler_name for p in configuration.profiles]
    assert "default-scheduler" not in names  # never kube-scheduler's pods, unless widened
    election = configuration.component["leaderElection"]
    assert election["resourceName"] != "kube-scheduler"
    assert election["resourceNamespace"] == NAMESPACE  # where the Role grants the lease
    shards = configuration.optimist.shards
    ray_cluster = find(objects, "RayCluster", "optimist-ray")["spec"]
    workers = ray_cluster["workerGroupSpecs"][0]
    # a shard per worker: only the workers offer the resource each shard asks for, and
    # the autoscaler adds workers up to maxReplicas while shards wait for one
    assert (overlay, shards, workers["replicas"]) in {("small", 2, 2), ("large", 8, 8)}
    assert configuration.optimist.shard_resources == {"optimist-shard": 1.0}
    offered = json.loads(json.loads(workers["rayStartParams"]["resources"]))
    assert offered == {"optimist-shard": 1}
    assert "resources" not in ray_cluster["headGroupSpec"]["rayStartParams"]
    assert ray_cluster["enableInTreeAutoscaling"] and workers["maxReplicas"] >= shards
    # Ray's token authentication on, from one Secret, wherever Ray runs
    for pod in [ray_cluster["headGroupSpec"]["template"], workers["template"]]:
        ray_env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        assert ray_env["RAY_AUTH_MODE"]["value"] == "token"
        token = ray_env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
        assert token["name"] == "optimist-ray-token"
    # two control replicas, and the Redis password only ever from the Secret
    control = find(objects, "Deployment", "optimist-control")
    assert control["spec"]["replicas"] == 2
    env = {e["name"]: e for e in control["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["OPTIMIST_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "optimist-redis"
    assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "optimist-ray-token"
    assert "@" not in configuration.optimist.redis_url  # no password in the URL
    assert not any(o["kind"] == "Secret" for o in objects)  # the admin makes it (README)


def rules(objects):
    """(api group, resource, verb) the RBAC grants."""
    granted = set()
    for obj in objects:
        if obj["kind"] in ("ClusterRole", "Role"):
            for rule in obj["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        for verb in rule["verbs"]:
                            granted.add((group, resource, verb))
    return granted


_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/[^/]+)?/(?P<resource>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[a-z]+))?$"
)
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def used(requests):
    """(api group, resource, verb) of each request, as the API server's authorizer sees it."""
    out = set()
    for method, path, watch in requests:
        m = _PATH.match(path)
        assert m, path
        resource = m["resource"] + (f"/{m['sub']}" if m["sub"] else "")
        if method == "GET":
            verb = "get" if m["name"] else "watch" if watch else "list"
        else:
            verb = _VERBS[method]
        out.add((m["group"] or "", resource, verb))
    return out


def test_the_rbac_grants_exactly_what_the_adapter_uses(kube_api):
    api, url = kube_api
    objects = render(DEPLOY / "overlays" / "small")
    api.put("nodes", node_doc("n1"))
    api.put("priorityclasses", {"metadata": {"name": "low"}, "value": 1})
    api.put(
        "podgroups", {"metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 2}}
    )
    api.put(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "b", "namespace": "default"},
            "spec": {"maxUnavailable": 1, "selector": {}},
        },
    )
    api.put("pods", pod_doc("victim", scheduler="default-scheduler", node="n1"))
    client = KubeClient.for_host(url)
    adapter = KubernetesAdapter(client, frozenset({"optimist"})).start()
    try:
        api.put("pods", pod_doc("p", scheduler="optimist"))
        until(lambda: adapter.take_new_pods()[0])
        assert adapter.bind([Binding("default/p", "n1", gpus=(0,))]) == [None]
        for _ in range(2):  # the second counts up on the first event
            adapter.report_unschedulable([("default/p", "Unschedulable", "0/1 nodes")])
        adapter.nominate({"default/p": "n1"})
        assert adapter.evict(["default/victim"]) == [None]
        assert adapter.flush_reports()
    finally:
        adapter.stop()
    lease = LeaseConfig(namespace=NAMESPACE, name="optimist")
    elector = LeaderElector(client, "me", lease)
    assert elector.acquire(threading.Event())
    elector.release()
    granted, asked = rules(objects), used(api.requests)
    assert asked - granted == set(), "the adapter needs more than the RBAC grants"
    assert granted - asked == set(), "the RBAC grants what the adapter never uses"


def test_the_dockerfile_installs_the_packages_the_image_runs():
    dockerfile = (DEPLOY.parents[1] / "Dockerfile").read_text()
    for package in ("cluster", "dispatcher", "shards", "binder", "optimist"):
        assert f"COPY {package} {package}" in dockerfile
    assert "USER 1000" in dockerfile  # the Deployment runs as non-root uid 1000
    control = yaml.safe_load((DEPLOY / "base" / "control.yaml").read_text().split("---")[0])
    assert control["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == 1000
