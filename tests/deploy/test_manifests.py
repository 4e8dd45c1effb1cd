"""deploy/kubernetes: every overlay renders with the real `kubectl kustomize`, every object
is valid against the Kubernetes schemas and is accepted by the real API server (server
side dry run, strict field validation), the configuration inside is one optimist
accepts, and the RBAC allows every request optimist makes, as the real authorizer
judges it, and no rule can go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import kubernetes_validate
import pytest
import ray
import yaml

from benchmarks.controlplane.control_plane import ControlPlaneMissing, User, binaries
from cluster.cluster_adapter import Binding
from optimist.configuration import parse_configuration
from optimist.kube.adapter import KubernetesAdapter
from optimist.kube.client import KubeClient
from optimist.kube.lease import LeaderElector, LeaseConfig
from tests.optimist.kube.test_adapter import node_doc, pod_doc
from tests.optimist.kube.test_informer import until

DEPLOY = Path(__file__).parents[2] / "deploy" / "kubernetes"
OVERLAYS = ["small", "large"]
KUBERNETES = "1.30.0"
# custom resources: their schemas are the operators', not Kubernetes'
CUSTOM = {("ray.io/v1", "RayCluster"), ("monitoring.coreos.com/v1", "ServiceMonitor")}
NAMESPACE = "optimist-system"


def render(overlay: Path) -> list[dict]:
    """The overlay as `kubectl apply -k` sees it: the pinned kubectl's kustomize."""
    try:
        kubectl = binaries() / "kubectl"
    except ControlPlaneMissing as missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must render the overlays: {missing}")
        pytest.skip(str(missing))
    out = subprocess.run(
        [str(kubectl), "kustomize", str(overlay)], capture_output=True, text=True, check=True
    )
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


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
    election = configuration.leader_election
    assert election.resource_name != "kube-scheduler"
    assert election.resource_namespace == NAMESPACE  # where the Role grants the lease
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
    # the admin makes it (docs/kubernetes.md)
    assert not any(o["kind"] == "Secret" for o in objects)


def kubectl(plane, kubeconfig, *args, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(plane.bin_dir / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_real_server_accepts_every_object_strictly(kube_api, overlay):
    """A server-side dry run with strict field validation: an unknown or misplaced
    field, a wrong type, a missing CRD or a bad reference is refused by the server."""
    plane = kube_api.plane
    objects = render(DEPLOY / "overlays" / overlay)
    namespace = find(objects, "Namespace", NAMESPACE)
    kube_api.put("namespaces", {"metadata": namespace["metadata"]})  # the rest goes in it
    applied = kubectl(
        plane,
        plane.admin_kubeconfig,
        *("apply", "--server-side", "--dry-run=server", "--validate=strict"),
        *("--field-manager=optimist-tests", "-f", "-"),
        stdin=yaml.safe_dump_all(objects),
    )
    assert applied.returncode == 0, applied.stderr
    lines = applied.stdout.splitlines()
    assert len(lines) == len(objects) and all(line.endswith("(server dry run)") for line in lines)


def test_a_field_the_schema_does_not_have_is_refused_by_the_server(kube_api):
    plane = kube_api.plane
    bad = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default"},
        "data": {"a": "b"},
        "dataa": {"typo": "here"},
    }
    applied = kubectl(
        plane,
        plane.admin_kubeconfig,
        *("apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", "-"),
        stdin=yaml.safe_dump(bad),
    )
    assert applied.returncode != 0 and ".dataa: field not declared in schema" in applied.stderr


def as_optimist(kube_api, objects) -> Path:
    """The overlay's ServiceAccount, roles and bindings made for real, and a kubeconfig
    with a token of that account from the TokenRequest API, through the fault proxy: the
    authorizer judges each request as a cluster would the Deployment's."""
    kube_api.put("namespaces", {"metadata": find(objects, "Namespace", NAMESPACE)["metadata"]})
    kinds = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    access = [o for o in objects if o["kind"] in kinds]
    plane = kube_api.plane
    made = kubectl(
        plane, plane.admin_kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(access)
    )
    assert made.returncode == 0, made.stderr
    account = find(objects, "ServiceAccount", "optimist")["metadata"]["name"]
    token = kube_api.admin.request(
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{account}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )["status"]["token"]
    user = User(f"system:serviceaccount:{NAMESPACE}:{account}", token)
    return plane.kubeconfig(user, server=kube_api.proxy.url, name="optimist-sa")


def exercise(kube_api, client):
    """Every kind of request optimist makes: list and watch of what it reads, a binding
    (GPU indices first), reports (a condition, an event counted up, a nomination), an
    eviction, the leader's lease, and VolumeBinding's PreBind (a volume's claimRef and a
    claim's selected node, then, with no PV controller here, the pod read again once
    its binding timed out). Returns what each binding, eviction and lease call
    answered, for a test that takes a right away."""
    api = kube_api
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
    wffc = "WaitForFirstConsumer"
    for name, provisioner in (("local", "kubernetes.io/no-provisioner"), ("made", "x.io/y")):
        api.put(
            "storageclasses",
            {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": wffc},
        )
        claim = {"accessModes": ["ReadWriteOnce"], "storageClassName": name,
                 "resources": {"requests": {"storage": "1Gi"}}}  # fmt: skip
        meta = {"name": name, "namespace": "default"}
        api.put("persistentvolumeclaims", {"metadata": meta, "spec": claim})
    volume = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
              "storageClassName": "local", "hostPath": {"path": "/tmp/unused"}}  # fmt: skip
    api.put("persistentvolumes", {"metadata": {"name": "pv"}, "spec": volume})
    api.admin.request(  # as the PV controller would (none runs here)
        "PATCH",
        "/api/v1/persistentvolumes/pv/status",
        body={"status": {"phase": "Available"}},
        content_type="application/merge-patch+json",
    )
    claims = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in ("local", "made")]
    adapter = KubernetesAdapter(
        client, frozenset({"optimist"}), volume_bind_timeouts={"optimist": 1}
    ).start()
    try:
        api.put("pods", pod_doc("p", scheduler="optimist"))
        until(lambda: adapter.take_new_pods()[0])
        bound = adapter.bind([Binding("default/p", "n1", gpus=(0,))])
        api.put("pods", pod_doc("v", scheduler="optimist", volumes=claims))
        # (p may come again first: its GPU annotation changed it while unbound)
        until(lambda: "default/v" in {p.key for p in adapter.take_new_pods()[0]})
        index = adapter.prebind.index
        until(lambda: getattr(index.volume("pv"), "phase", "") == "Available")
        until(lambda: index.claim("default/local") and index.claim("default/made"))
        until(lambda: index.storage_class("local") and index.storage_class("made"))
        given = (("default/local", "pv"),)  # the volume the commit gave its claim
        assert adapter.bind([Binding("default/v", "n1", volumes=given)]) == [None]  # waits
        until(lambda: "default/v" in adapter.take_deleted_pods(), timeout_s=10)
        for _ in range(2):  # the second counts up on the first event
            adapter.report_unschedulable([("default/p", "Unschedulable", "0/1 nodes")])
        adapter.nominate({"default/p": "n1"})
        evicted = adapter.evict(["default/victim"])
        adapter.flush_reports()
    finally:
        adapter.stop()
    elector = LeaderElector(client, "me", LeaseConfig(namespace=NAMESPACE, name="optimist"))
    led = elector.acquire(threading.Event())
    if led:
        elector.release()
    return bound, evicted, led


def test_the_real_authorizer_allows_every_request_optimist_makes(kube_api):
    objects = render(DEPLOY / "overlays" / "small")
    client = KubeClient.for_kubeconfig(str(as_optimist(kube_api, objects)))
    bound, evicted, led = exercise(kube_api, client)
    assert bound == [None] and evicted == [None] and led
    refused = [r for r in kube_api.requests if r.status == 403]
    assert refused == [], "the RBAC does not allow what optimist asks"
    asked = {(r.method, r.path.rsplit("/", 1)[-1]) for r in kube_api.requests}
    assert {("POST", "binding"), ("PATCH", "status"), ("POST", "events")} <= asked
    assert {("PATCH", "pv"), ("PATCH", "made"), ("GET", "v")} <= asked  # PreBind's


def test_without_a_rule_optimist_fails_saying_which_verb_and_resource(kube_api):
    objects = render(DEPLOY / "overlays" / "small")
    role = find(objects, "ClusterRole", "optimist-scheduler")
    role["rules"] = [r for r in role["rules"] if r["resources"] != ["pods/binding"]]
    client = KubeClient.for_kubeconfig(str(as_optimist(kube_api, objects)))
    [error], evicted, _ = exercise(kube_api, client)
    assert evicted == [None]  # the rest goes on
    assert "403" in error and 'cannot create resource "pods/binding"' in error, error
    assert 'User "system:serviceaccount:optimist-system:optimist"' in error


@pytest.mark.usefixtures("ray_session")
def test_optimist_run_with_the_account_s_token_alone_is_never_refused(
    tmp_path, kube_api, redis_url, key_prefix
):
    """`optimist run` as the Deployment runs it, the overlay's configuration and the
    ServiceAccount's token its only credential: it leads, binds, reports, and not one
    of its requests is refused."""
    objects = render(DEPLOY / "overlays" / "small")
    kubeconfig = as_optimist(kube_api, objects)
    text = find(objects, "ConfigMap", "optimist-config")["data"]["config.yaml"]
    scheduling = next(
        d for d in yaml.safe_load_all(text) if d["kind"] == "KubeSchedulerConfiguration"
    )
    own = {"apiVersion": "optimist.io/v1alpha1", "kind": "OptimistConfiguration"}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump_all([scheduling, {**own, "keyPrefix": key_prefix}]))
    kube_api.put("nodes", node_doc("n1"))
    log = open(tmp_path / "run.log", "w")  # noqa: SIM115 - the process writes to it
    run = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("optimist")),
            *("run", "--config", str(config), "--kubeconfig", str(kubeconfig)),
            *("--redis-url", redis_url, "--shards", "1", "--identity", "deployed"),
            *("--ray-address", ray.get_runtime_context().gcs_address),
            *("--metrics-address", "127.0.0.1:0"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        kube_api.put("pods", pod_doc("p", scheduler="optimist"))
        kube_api.put("pods", pod_doc("big", scheduler="optimist", cpu="64"))  # reported
        until(lambda: kube_api.pods_bound().get("default/p") == "n1", 60)
        until(lambda: kube_api.events_for("default/big"), 30)
        lease = kube_api.get("leases", NAMESPACE, "optimist")
        assert lease["spec"]["holderIdentity"] == "deployed"
    finally:
        run.terminate()
        run.wait(30)
        log.close()
    refused = [r for r in kube_api.requests if r.status == 403]
    assert refused == [], (tmp_path / "run.log").read_text()[-3000:]


def test_the_dockerfile_installs_the_packages_the_image_runs():
    dockerfile = (DEPLOY.parents[1] / "Dockerfile").read_text()
    for package in ("cluster", "dispatcher", "shards", "binder", "optimist"):
        assert f"COPY {package} {package}" in dockerfile
    assert "setup.py" in dockerfile  # the build that leaves the plugins' tests out
    assert "USER 1000" in dockerfile  # the Deployment runs as non-root uid 1000
    control = yaml.safe_load((DEPLOY / "base" / "control.yaml").read_text().split("---")[0])
    assert control["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == 1000
